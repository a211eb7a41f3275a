"""The bare ``nodegate`` command checks the local machine, nothing else (issue 31, item 12).

Without ``--inventory``, ``--replay`` or ``--target`` the command runs the installed suites
against ``local://`` exactly as ``--target local://`` does, whatever the working directory
holds: its own test files, a conftest.py, a pytest.ini with addopts, a ``suites/`` folder, or
nothing at all. Compared with ``--collect-only`` (contacts nobody, writes nothing), and once
with a real run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

NODEGATE = Path(sys.executable).parent / "nodegate"


def run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="160")
    for k in ("PYTEST_ADDOPTS", "NODEGATE_CLI"):
        env.pop(k, None)
    return subprocess.run([str(NODEGATE), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def collected(r: subprocess.CompletedProcess) -> list[str]:
    """The node ids ``--collect-only -q`` printed."""
    return [ln for ln in r.stdout.splitlines() if "::" in ln and not ln.startswith(("ERROR", "FAILED"))]


@pytest.fixture(scope="module")
def local_items(tmp_path_factory) -> list[str]:
    """What ``nodegate --target local://`` collects from an empty directory."""
    d = tmp_path_factory.mktemp("target-local")
    r = run(["--target", "local://", "--collect-only", "-q", "-p", "no:cacheprovider"], d)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    items = collected(r)
    assert items and all(i.startswith("suites/test_") for i in items)
    assert not any(d.iterdir())   # --collect-only writes nothing
    return items


def _own_tests(d: Path) -> None:
    (d / "conftest.py").write_text("import pytest\n\n@pytest.fixture\ndef mine():\n    return 1\n")
    (d / "test_mine.py").write_text("def test_mine(mine):\n    assert mine == 1\n")


def _only_test_file(d: Path) -> None:
    (d / "test_mine.py").write_text("def test_mine():\n    pass\n")


def _ini_and_suites(d: Path) -> None:
    """A pytest.ini whose addopts would select the directory's own test, and a suites/ of its own."""
    (d / "pytest.ini").write_text("[pytest]\naddopts = -k test_mine -p no:nodegate.plugins\ntestpaths = suites\n")
    (d / "suites").mkdir()
    (d / "suites" / "__init__.py").write_text("")
    (d / "suites" / "test_mine.py").write_text("def test_mine():\n    pass\n")


def _empty(d: Path) -> None:
    pass


@pytest.mark.parametrize("setup", [_own_tests, _only_test_file, _ini_and_suites, _empty],
                         ids=["conftest-and-test-file", "test-file", "pytest-ini-and-suites-dir", "empty"])
def test_bare_command_collects_what_target_local_collects(tmp_path, local_items, setup):
    setup(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run(["--collect-only", "-q", "-p", "no:cacheprovider"], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert collected(r) == local_items
    assert "test_mine" not in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # nothing written


def test_bare_command_runs_the_suites_on_the_local_machine(tmp_path, local_items):
    """A real run where the directory holds its own passing test: the suites run against
    local:// (this machine), the directory's test does not ("1 passed" was the bug)."""
    _own_tests(tmp_path)
    r = run(["-q", "--tb=no", "-p", "no:cacheprovider"], tmp_path)
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]   # 1: this machine may have no GPU
    assert "test_mine" not in r.stdout
    cases = ET.parse(tmp_path / "reports" / "junit.xml").getroot().iter("testcase")
    ids = {f"{c.get('classname').replace('.', '/')}.py::{c.get('name')}" for c in cases}
    host = os.uname().nodename.split(".")[0] or "localhost"
    assert ids and all(i.startswith("suites/test_") and f"[{host}" in i for i in ids), sorted(ids)[:5]
    # every node item of --target local:// ran (GPU items: folded in JUnit, and as many as the
    # machine reports GPUs)
    from nodegate.checks import by_name
    node_items = {i for i in local_items if not i.rsplit("[", 1)[1].startswith(f"{host}-gpu")
                  and by_name(i.split("::", 1)[1].split("[", 1)[0].removeprefix("test_")).scope == "node"}
    assert node_items and node_items <= ids, sorted(node_items - ids)[:5]


@pytest.mark.parametrize("opt", ["--markers", "--help"])
def test_bare_command_listing_writes_nothing(tmp_path, opt):
    """``nodegate --markers``/``--help`` (a nodegate run now, as --target local://): pytest prints
    and exits after configuring; no reports folder, no bundle, no contact."""
    r = run([opt, "-p", "no:cacheprovider"], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert ("@pytest.mark.critical" if opt == "--markers" else "--inventory") in r.stdout
    assert not any(tmp_path.iterdir())
