"""The ``nodegate`` command's ``suites`` paths, from a directory without a ``suites/`` of its own
(nodegate/cli.py, nodegate.cmdline.installed_suites): only pytest's positional test
paths name the installed suites; an option's value is never rewritten, whatever it starts with.

- ``--deselect suites/...`` and ``--deselect=suites/...`` deselect the same items (a deselect is
  a test id, relative to the rootdir, the installed suites' parent);
- ``--reports-dir suites/out`` writes the reports and the cache under ``./suites/out``, never in
  the installed package; the same for every option whose value is a path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from .test_cli_selection import NODEGATE, ROOT, SAMPLES, run

NODE = "ecc-uncorrectable-volatile"
ECC = "suites/test_memory.py::test_ecc_counters"

#: a plugin that prints what pytest parsed (the positional paths and every option's value) and
#: stops before nodegate reads any of it (tryfirst, registered after nodegate's own plugins)
PROBE = textwrap.dedent("""
    import json
    import pytest

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(config):
        print("PROBE" + json.dumps({"args": [str(a) for a in config.args],
                                    "options": {k: v for k, v in vars(config.option).items()}}, default=str))
        pytest.exit("probed", returncode=0)
""")

#: every nodegate or pytest option whose value is a path (an option of a plugin nodegate loads
#: included): the value ``suites/<name>`` must reach the option unchanged
PATH_OPTIONS = ["--reports-dir", "--junitxml", "--html", "--spec", "--baseline", "--bundles-dir", "--save-bundles",
                "--known-hosts", "--replay", "--inventory", "--deselect", "--ignore", "--ignore-glob", "--basetemp",
                "--log-file"]


@pytest.fixture
def site(tmp_path):
    """A working directory without suites/ of its own, with a hostile conftest.py and the probe."""
    d = tmp_path / "site"
    d.mkdir()
    (d / "conftest.py").write_text("raise SystemExit('the working directory conftest.py was loaded')\n")
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "ngprobe.py").write_text(PROBE)
    return d


def probed(site: Path, argv: list[str]) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(site.parent / "probe"))
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([str(NODEGATE), "-p", "ngprobe", *argv], cwd=site, env=env, capture_output=True, text=True,
                       timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("PROBE")), None)
    assert line, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(line[len("PROBE"):])


def _values(options: dict) -> list[str]:
    out = []
    for v in options.values():
        out += [str(x) for x in v] if isinstance(v, list) else [str(v)]
    return out


@pytest.mark.parametrize("form", ["space", "equals"])
def test_option_values_starting_with_suites_are_never_rewritten(site, form):
    """Each path option gets ``suites/<its name>`` verbatim, in both forms; the positional
    ``suites/test_pcie.py`` is the installed suites' module."""
    argv = []
    for opt in PATH_OPTIONS:
        value = f"suites/v{opt.lstrip('-')}"
        argv += [opt, value] if form == "space" else [f"{opt}={value}"]
    got = probed(site, [*argv, "suites/test_pcie.py"])
    values = _values(got["options"])
    for opt in PATH_OPTIONS:
        want = f"suites/v{opt.lstrip('-')}"
        assert any(v == want or v.endswith("/" + want) and not v.startswith(str(ROOT)) for v in values), (opt, values)
    assert not any(v.startswith(str(ROOT / "suites")) for v in values if "test_pcie" not in v), values
    assert got["args"] == [str(ROOT / "suites" / "test_pcie.py")]


@pytest.mark.parametrize("argv,want", [
    (["suites"], [str(ROOT / "suites")]),
    (["suites/test_memory.py::test_ecc_counters"], [str(ROOT / "suites" / "test_memory.py") + "::test_ecc_counters"]),
    (["-k", "suites/x", "suites/test_pcie.py"], [str(ROOT / "suites" / "test_pcie.py")]),
    (["--", "suites/test_pcie.py"], [str(ROOT / "suites" / "test_pcie.py")]),
], ids=["suites", "test-id", "after-option-value", "after-double-dash"])
def test_positional_suites_paths_name_the_installed_suites(site, argv, want):
    assert probed(site, argv)["args"] == want


def test_a_directory_with_its_own_suites_keeps_its_paths(site):
    (site / "conftest.py").unlink()   # a path into the directory loads its conftest.py, as pytest does
    (site / "suites").mkdir()
    assert probed(site, ["suites"])["args"] == ["suites"]


def _collected(site: Path, *extra: str) -> list[str]:
    r = run([str(NODEGATE), "--replay", str(SAMPLES), "--limit", NODE, "--collect-only", "-q",
             "-p", "no:cacheprovider", *extra], site)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return [ln for ln in r.stdout.splitlines() if "::" in ln]


@pytest.mark.parametrize("form", ["space", "equals"])
def test_deselect_of_the_installed_suites_in_both_forms(site, form):
    everything = _collected(site)
    assert f"{ECC}[{NODE}]" in everything
    argv = ["--deselect", ECC] if form == "space" else [f"--deselect={ECC}"]
    assert _collected(site, *argv) == [i for i in everything if not i.startswith(ECC)]


def test_reports_dir_under_suites_is_the_working_directory(site):
    """``--reports-dir suites/out``: the report, the JUnit and the cache under ./suites/out."""
    leak = ROOT / "suites" / "out"
    before = leak.exists()
    try:
        r = run([str(NODEGATE), "--replay", str(SAMPLES), "--limit", NODE, "-k", "test_ecc_counters", "-q",
                 "--tb=no", "--reports-dir", "suites/out", "--junitxml", "suites/j.xml"], site)
        assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
        out = site / "suites" / "out"
        assert (out / "report.html").is_file() and (out / ".pytest_cache").is_dir()
        assert (site / "suites" / "j.xml").is_file()
        assert before or not leak.exists()
        assert not (ROOT / "suites" / "j.xml").exists()
    finally:
        if not before and leak.exists():
            shutil.rmtree(leak)
        (ROOT / "suites" / "j.xml").unlink(missing_ok=True)
