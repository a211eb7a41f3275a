"""Installing nodegate changes no other pytest run (issue 30, item 3).

nodegate's wheel is installed non-editable into a throw-away environment (tests/install/
conftest.py); a second project with its own ``plugins/`` and ``suites/`` packages, its own
``--target`` option, ``critical`` marker and ``target`` fixture runs there and in the same
environment without nodegate: same output, same exit code, same files, the same modules
imported (none of nodegate's; the start-up figure is bench/install_startup.py's). And the
installed ``nodegate`` command still runs its suites with the ids and JUnit classnames of a
checkout (``suites/test_pcie.py::...``, ``suites.test_pcie``).
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from tools.isolated_install import SECOND_PROJECT, clean_env, write_second_project

from .conftest import ROOT

SAMPLE = ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"


def _run(py: Path, args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), *args], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=timeout)


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _same_output(text: str) -> str:
    """pytest's output without the run's duration (`in 0.12s`)."""
    return re.sub(r"\bin \d+\.\d+s\b", "in Ns", text)


def test_the_wheel_installs_everything_under_the_nodegate_name(envs):
    with zipfile.ZipFile(envs.wheel) as z:
        names = z.namelist()
        dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = z.read(f"{dist}/entry_points.txt").decode() if f"{dist}/entry_points.txt" in names else ""
        top = z.read(f"{dist}/top_level.txt").decode().split()
    assert {n.split("/")[0] for n in names} == {"nodegate", dist}
    assert top == ["nodegate"]
    assert "pytest11" not in entry_points                 # no plugin registered by installation
    assert "nodegate = nodegate.cli:main" in entry_points
    for f in ("nodegate/plugins/__init__.py", "nodegate/plugins/nodegate_plugin.py", "nodegate/suites/__init__.py",
              "nodegate/suites/test_pcie.py", "nodegate/data/pytest.ini", "nodegate/probe/probe.sh"):
        assert f in names, f
    # every module of the checkout's plugins/ and suites/ is in the wheel, under the nodegate name
    for d in ("plugins", "suites"):
        for p in (ROOT / d).glob("*.py"):
            assert f"nodegate/{d}/{p.name}" in names, p


def test_the_wheel_builds_without_setuptools_warnings(envs):
    """The build says nothing a new user has to wonder about (setuptools warned, on every
    ``make venv``, that nodegate.data was absent from the packages configuration), and every
    data file of nodegate/data is in the wheel."""
    log = (envs.wheel.parent.parent / "build.log").read_text()
    assert "absent from the `packages` configuration" not in log, log[-2000:]
    with zipfile.ZipFile(envs.wheel) as z:
        names = z.namelist()
    for p in (ROOT / "nodegate" / "data").iterdir():
        if p.suffix in (".yaml", ".json", ".ini"):
            assert f"nodegate/data/{p.name}" in names, p


COMMAND_LINES = {   # a run (its JUnit file among the files compared) and what pytest lists
    "run": ["-m", "pytest", "-rA", "--target", "prod", "--junitxml", "out/junit.xml"],
    "markers": ["-m", "pytest", "--markers"],
    "fixtures": ["-m", "pytest", "--fixtures"],
    "help": ["-m", "pytest", "--help"],
}


@pytest.mark.parametrize("name", list(COMMAND_LINES))
def test_another_project_runs_identically_with_nodegate_installed(envs, tmp_path, name):
    """Same output, exit code and files (the project written afresh at the same path for each)."""
    proj = tmp_path / "proj"
    got = {}
    for env, py in (("bare", envs.bare), ("installed", envs.installed)):
        write_second_project(proj)
        r = _run(py, COMMAND_LINES[name], proj)
        files = _files(proj)
        if "out/junit.xml" in files:   # the run's timestamp, durations and host name
            files["out/junit.xml"] = re.sub(rb'(timestamp|time|hostname)="[^"]*"', b"", files["out/junit.xml"])
        got[env] = (r.returncode, _same_output(r.stdout), _same_output(r.stderr), files)
    assert got["installed"] == got["bare"]
    rc, out, err, files = got["bare"]
    if name == "run":   # the project's own option, marker, fixture and packages were used
        assert rc == 1 and "1 failed, 3 passed" in out, out[-2000:] + err[-2000:]
        assert files["out/target.txt"] == b"prod"
    if name == "markers":
        assert "@pytest.mark.critical: our own severity" in out
    assert set(SECOND_PROJECT) <= set(files)


_MODULES = ("import sys, pytest\n"
            "rc = pytest.main(['-q', '-p', 'no:cacheprovider', '--collect-only'])\n"
            "print('MODULES', ' '.join(sorted(sys.modules)))\n")


def test_no_nodegate_module_is_imported_by_another_projects_run(envs, tmp_path):
    """The structural bound behind "start-up under 50 ms more": with nodegate installed, a pytest
    run of another project imports exactly the modules it imports without it (none of
    nodegate's). The timing itself: bench/install_startup.py."""
    proj = write_second_project(tmp_path / "proj")
    mods = {}
    for env, py in (("bare", envs.bare), ("installed", envs.installed)):
        r = _run(py, ["-c", _MODULES], proj)
        line = next(ln for ln in r.stdout.splitlines() if ln.startswith("MODULES "))
        mods[env] = set(line.split()[1:])
    assert not [m for m in mods["installed"] if m == "nodegate" or m.startswith("nodegate.")]
    assert mods["installed"] == mods["bare"]
    assert "plugins.ours" in mods["installed"]   # the project's own plugins package


def test_installed_command_runs_its_suites_with_the_checkouts_ids(envs, tmp_path):
    """``nodegate`` from the wheel (non-editable): the installed suites, ids and JUnit
    classnames as in a checkout, from a directory with a test file and conftest.py of its own."""
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    (cwd / "conftest.py").write_text("raise SystemExit('the working directory conftest.py was loaded')\n")
    (cwd / "test_mine.py").write_text("def test_mine():\n    pass\n")
    nodegate = envs.installed.parent / "nodegate"
    r = subprocess.run([str(nodegate), "--replay", str(SAMPLE), "-q", "--tb=no", "-p", "no:cacheprovider"],
                       cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]   # a healthy sample node
    ids = [json.loads(ln)["nodeid"] for ln in (cwd / "reports" / "results.jsonl").read_text().splitlines()
           if '"nodeid"' in ln]
    assert ids and all(i.startswith("suites/test_") for i in ids), ids[:5]
    assert "suites/test_pcie.py::test_pcie_link_trained[h200-580-open-healthy-gpu0]" in ids
    classnames = set(re.findall(r'classname="([^"]*)"', (cwd / "reports" / "junit.xml").read_text()))
    assert classnames and all(c.startswith("suites.test_") for c in classnames), classnames
    assert "test_mine" not in r.stdout
    # the suites that ran are the installed copy's (site-packages/nodegate/suites), not the checkout's
    r = _run(envs.installed, ["-c", "import importlib.util as u; print(u.find_spec('nodegate.suites').origin)"], cwd)
    assert Path(r.stdout.strip()).is_relative_to(envs.installed.parent.parent), r.stdout

def test_plain_pytest_loads_nodegate_with_p(envs, tmp_path):
    """``pytest -p nodegate.plugins``: nodegate's options, markers and fixtures are there when
    asked for (and, per the tests above, only then)."""
    r = _run(envs.installed, ["-m", "pytest", "-p", "nodegate.plugins", "--help"], tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "--inventory" in r.stdout and "--replay" in r.stdout
    r = _run(envs.installed, ["-m", "pytest", "-p", "nodegate.plugins", "--markers"], tmp_path)
    assert "@pytest.mark.critical" in r.stdout


_TOP = ("import importlib.util as u\n"
        "print([n for n in ('plugins', 'suites') if u.find_spec(n) is not None],"
        " u.find_spec('nodegate.suites').origin, u.find_spec('nodegate.plugins').origin)\n")


def test_no_top_level_plugins_or_suites_in_either_install(envs, tmp_path):
    """Neither the wheel (site-packages) nor this editable install (``make venv``) puts a top-level
    ``plugins`` or ``suites`` on the path; ``nodegate.suites``/``nodegate.plugins`` are the
    installed copy's, or the checkout's for the editable one. Run outside the checkout (the
    working directory is on sys.path)."""
    import sys
    for py, home in ((envs.installed, envs.installed.parent.parent), (Path(sys.executable), ROOT)):
        r = _run(py, ["-c", _TOP], tmp_path)
        assert r.returncode == 0, r.stderr[-2000:]
        top, suites, plugins = r.stdout.rsplit(None, 2)
        assert top == "[]", (py, r.stdout)
        assert Path(suites).is_relative_to(home) and Path(plugins).is_relative_to(home), (py, r.stdout)
