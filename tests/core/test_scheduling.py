"""How `make test` spreads the test files over xdist workers (tests/conftest.py): the files that
share a session fixture run on one worker, whatever pytest-xdist's own ``xdist_group`` does
(pytest-dev/pytest-xdist#1386: with pytest 9.2 the mark no longer groups)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FILE_GROUPS, PROFILE_FLEET, unit_of

ROOT = Path(__file__).resolve().parents[2]
#: session fixtures shared by several files (tests/conftest.py); tests/fleet/conftest.py's ``fleet``
#: is ``profile_fleet`` under another name for the files of tests/fleet/ that do not define their own
SHARED = {"profile_fleet", "profile_fleet_run"}


def _uses_shared_fixture(path: Path) -> bool:
    tree = ast.parse(path.read_text())
    defs = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    wanted = set(SHARED)
    if path.parent.name == "fleet" and "fleet" not in defs:
        wanted.add("fleet")
    for n in ast.walk(tree):
        if not isinstance(n, ast.FunctionDef):
            continue
        requests = n.name.startswith("test") or any("fixture" in ast.unparse(d) for d in n.decorator_list)
        if requests and any(a.arg in wanted for a in n.args.args):
            return True
    return False


def test_files_of_a_group_are_one_unit_and_others_their_own():
    units = {unit_of(f"{f}::test_x[a-b]") for f in FILE_GROUPS}
    assert units == {PROFILE_FLEET}
    assert unit_of("tests/core/test_a.py::test_x[p@q]") == "tests/core/test_a.py"
    assert unit_of("tests/core/test_a.py::test_x@g") == "g"


def test_every_file_using_a_shared_session_fixture_is_in_its_group():
    users = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
             if _uses_shared_fixture(p)}
    assert users == set(FILE_GROUPS), "tests/conftest.py FILE_GROUPS must list exactly these files"
    marked = {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
              if "mark.xdist_group(" + "PROFILE_FLEET)" in p.read_text()}
    assert marked == set(FILE_GROUPS)


def test_an_xdist_run_builds_a_groups_session_fixture_once(tmp_path):
    """Three grouped files and three others on 3 workers, with tests/conftest.py's scheduler: the
    group's session fixture is built by one worker only (xdist's own loadgroup builds it on each
    worker under pytest 9.2)."""
    conf = f'''import importlib.util, os, sys, pytest
_s = importlib.util.spec_from_file_location("ng_tests_conftest", {str(ROOT / "tests" / "conftest.py")!r})
_m = importlib.util.module_from_spec(_s); sys.modules[_s.name] = _m; _s.loader.exec_module(_m)
pytest_xdist_make_scheduler = _m.pytest_xdist_make_scheduler

@pytest.fixture(scope="session")
def shared():
    with open({str(tmp_path / "built.txt")!r}, "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
'''
    (tmp_path / "conftest.py").write_text(conf)
    for f in FILE_GROUPS:
        p = tmp_path / f
        p.parent.mkdir(parents=True, exist_ok=True)
        for d in (p.parent, tmp_path / "tests"):
            (d / "__init__.py").touch()
        p.write_text("import pytest, time\n\n@pytest.mark.parametrize('n', range(4))\n"
                     "def test_g(shared, n):\n    time.sleep(0.02)\n")
    for i in range(3):
        (tmp_path / "tests" / f"test_other{i}.py").write_text(
            "import time\n\ndef test_a():\n    time.sleep(0.2)\n\ndef test_b():\n    time.sleep(0.2)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "3",
                        "--dist", "loadgroup", "--rootdir", str(tmp_path), "tests"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    built = (tmp_path / "built.txt").read_text().split()
    assert len(built) == 1, built
