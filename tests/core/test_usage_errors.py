"""A usage error (README "Exit codes": 2) is printed once: every nodegate site stops the run
through ``nodegate.session.exitcodes.usage_error``, which writes the message (escaped) on stderr
and raises ``pytest.Session.Failed``, which pytest stops on silently.

Before, ``pytest.exit(msg, returncode=2)`` printed the message two or three times: pytest's own
"Exit: msg" (stderr, raised before the session started: _pytest/main.py ``wrap_session``), the
terminal reporter's "!!! _pytest.outcomes.Exit: msg !!!" (``pytest_keyboard_interrupt``, printed at
session finish or unconfigure: _pytest/terminal.py) and, at some sites, nodegate's own line.

Each case runs the ``nodegate`` command (or ``python -m pytest`` of the checkout) in a subprocess
on the sample fleet: exit 2, the message exactly once in stdout + stderr, and the reports
directory (a previous run's sentinel results.jsonl and report.html) exactly as it was.
``test_pytest_stops_silently_on_session_failed`` pins the pytest behaviour ``usage_error`` relies
on, without nodegate: it fails if pytest starts printing ``Session.Failed`` or stops returning
the status pytest_unconfigure leaves in ``session.exitstatus``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "inventories" / "samples" / "fleet"
NODEGATE = Path(sys.executable).parent / "nodegate"
#: two sample nodes: enough for every case, a replay of the whole fleet is not the property
LIMIT = "--limit=h100-535-healthy,pcie-gen4-slot"

#: name: (when the error is found, arguments ({d}: a scratch directory, {fleet}: the sample
#: fleet), the message's words)
CASES = {
    # pytest_configure
    "list-hosts-without-inventory": ("configure", ["--list-hosts"], "nodegate: --list-hosts needs --inventory"),
    "bad-k-expression": ("configure", ["--replay", "{fleet}", "-k", "a and ("],
                         "nodegate: wrong expression passed to '-k'"),
    "spec-not-yaml": ("configure", ["--replay", "{fleet}", "--spec", "{d}/bad.yaml"], "bad.yaml"),
    "spec-missing": ("configure", ["--replay", "{fleet}", "--spec", "{d}/nope.yaml"], "nope.yaml"),
    "inventory-missing": ("configure", ["--inventory", "{d}/noinv.yml"], "noinv.yml"),
    "forks-0": ("configure", ["--forks", "0"], "nodegate: --forks 0: at least 1"),
    "connect-timeout-negative": ("configure", ["--connect-timeout", "-5"],
                                 "nodegate: --connect-timeout -5.0: a deadline in seconds above 0"),
    "probe-timeout-0": ("configure", ["--probe-timeout", "0"], "nodegate: --probe-timeout 0.0: a deadline"),
    "command-timeout-nan": ("configure", ["--command-timeout", "nan"], "nodegate: --command-timeout nan: a deadline"),
    "shard-nodes-negative": ("configure", ["--replay", "{fleet}", "--shard-nodes", "-1"], "nodegate: --shard-nodes -1"),
    "junit-max-objects-0": ("configure", ["--replay", "{fleet}", "--junit-max-objects", "0"],
                            "nodegate: --junit-max-objects 0: at least 1"),
    "known-hosts-missing": ("configure", ["--known-hosts", "{d}/nokh"], "nodegate: --known-hosts"),
    "bundles-dir-is-a-file": ("configure", ["--bundles-dir", "{d}/afile"], "nodegate: --bundles-dir"),
    "html-is-a-directory": ("configure", ["--replay", "{fleet}", "--html", "{d}/adir"],
                            "is a directory, not a file"),
    "baseline-not-bundles": ("configure", ["--replay", "{fleet}", "--baseline", "{d}/adir"],
                             "not a directory of bundles"),
    "burn-in-bad-duration": ("configure", ["--replay", "{fleet}", "--burn-in", "forever"],
                             "nodegate: --burn-in: burn-in duration 'forever'"),
    "testinfra-option": ("configure", ["--replay", "{fleet}", "--ssh-extra-args=-v"],
                         "nodegate: --ssh-extra-args is testinfra's"),
    "crossnode-plan-alone": ("configure", ["--replay", "{fleet}", "--crossnode-plan"],
                             "nodegate: --crossnode-plan needs --crossnode FILE"),
    "crossnode-spec-invalid": ("configure", ["--replay", "{fleet}", "--crossnode", "{d}/cn.yaml"],
                               "crossnode.bogus_key"),
    # pytest_sessionstart
    "replay-no-such-path": ("sessionstart", ["--replay", "{d}/nowhere"], "neither a bundle directory"),
    "replay-empty-directory": ("sessionstart", ["--replay", "{d}/adir"], "no bundles found"),
    "replay-limit-matches-nothing": ("sessionstart", ["--replay", "{fleet}", "--limit", "nomatch*"],
                                     "matches no bundle"),
    "list-hosts-selects-nothing": ("sessionstart", ["--inventory", "{d}/inv.yml", "--list-hosts", "-k", "zzz"],
                                   "nodegate: no nodegate check selected"),
    # pytest_collection_finish
    "k-selects-nothing": ("collection", ["--replay", "{fleet}", LIMIT, "-k", "zzznomatch"],
                          "nodegate: no nodegate check selected"),
    "baseline-k-selects-nothing": ("collection", ["--replay", "{fleet}", LIMIT, "--baseline", "{fleet}", "-k", "zzz"],
                                   "nodegate: no nodegate check selected"),
    "m-selects-nothing": ("collection", ["--replay", "{fleet}", LIMIT, "-m", "nosuchmarker"],
                          "nodegate: no nodegate check selected"),
}

#: the same through ``python -m pytest suites`` in the checkout: README's codes are the same there
PYTEST_CASES = ["replay-no-such-path", "crossnode-plan-alone", "k-selects-nothing"]


@pytest.fixture
def scratch(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "bad.yaml").write_text("nodegate:\n  pcie: [unclosed\n")
    (d / "afile").write_text("x")
    (d / "adir").mkdir()
    (d / "cn.yaml").write_text("crossnode:\n  bogus_key: 1\n")
    (d / "inv.yml").write_text("all:\n  hosts:\n    n1: {ansible_host: 127.0.0.9}\n")
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "results.jsonl").write_text('{"previous": "run"}\n')
    (reports / "report.html").write_text("<html>previous run</html>\n")
    return d, reports


def _snapshot(d: Path) -> dict:
    """Every file under ``d``, with its time and bytes; pytest's cache aside (the nodegate command
    keeps it in ``<reports-dir>/.pytest_cache``: a stop after collection records the collected ids
    there, as pytest does, for ``--nf``)."""
    return {str(p.relative_to(d)): (p.stat().st_mtime_ns, p.read_bytes() if p.is_file() else None)
            for p in sorted(d.rglob("*")) if ".pytest_cache" not in p.relative_to(d).parts}


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="160")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def _check(p: subprocess.CompletedProcess, words: str, reports: Path, before: dict) -> None:
    both = p.stdout + p.stderr
    shown = f"rc={p.returncode}\nSTDOUT:\n{p.stdout[-2000:]}\nSTDERR:\n{p.stderr[-2000:]}"
    assert p.returncode == 2, shown
    assert both.count(words) == 1, shown
    assert "_pytest.outcomes.Exit" not in both and "Exit: nodegate" not in both, shown
    assert "Traceback" not in both, shown
    assert _snapshot(reports) == before, shown


def _args(args: list[str], d: Path) -> list[str]:
    return [a.format(d=d, fleet=FLEET) for a in args]


@pytest.mark.parametrize("case", list(CASES))
def test_nodegate_usage_error_exit_2_printed_once_no_report(scratch, case):
    d, reports = scratch
    _, args, words = CASES[case]
    before = _snapshot(reports)
    # pytest's cache is on (the nodegate command puts it under --reports-dir): nothing written there either
    p = _run([str(NODEGATE), *_args(args, d), "--reports-dir", str(reports)], cwd=d)
    _check(p, words, reports, before)


@pytest.mark.parametrize("case", PYTEST_CASES)
def test_pytest_usage_error_exit_2_printed_once_no_report(scratch, case):
    d, reports = scratch
    _, args, words = CASES[case]
    before = _snapshot(reports)
    p = _run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", *_args(args, d),
              "--reports-dir", str(reports)], cwd=ROOT)
    _check(p, words, reports, before)


def test_cases_cover_every_stage():
    assert {stage for stage, _, _ in CASES.values()} == {"configure", "sessionstart", "collection"}


def test_message_is_escaped_once(scratch):
    """A control character of the operator's input is shown escaped, never sent to the terminal."""
    d, reports = scratch
    before = _snapshot(reports)
    p = _run([str(NODEGATE), "--replay", str(d / "no\x1b]0;title\x07where"), "--reports-dir", str(reports)], cwd=d)
    _check(p, "no\\x1b]0;title\\x07where", reports, before)
    assert "\x1b]0;" not in p.stdout + p.stderr


def test_no_site_stops_with_pytest_exit_2():
    """Every usage error goes through ``usage_error``: ``pytest.exit`` only for a clean exit 0."""
    bad = []
    for base in (ROOT / "nodegate", ROOT / "plugins"):
        for f in sorted(base.rglob("*.py")):
            for n in ast.walk(ast.parse(f.read_text())):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "exit" \
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == "pytest":
                    rc = [k.value for k in n.keywords if k.arg == "returncode"]
                    if not (rc and isinstance(rc[0], ast.Constant) and rc[0].value == 0):
                        bad.append(f"{f.relative_to(ROOT)}:{n.lineno}")
    assert not bad, bad


_STOPPER = '''
import sys
import pytest

def _stop(stage):
    if stage == "{stage}":
        sys.stderr.write("usage-stop-message\\n")
        raise pytest.Session.Failed("usage-stop-message")

def pytest_configure(config):
    _stop("configure")

def pytest_sessionstart(session):
    _stop("sessionstart")

def pytest_collection_finish(session):
    _stop("collection")

def pytest_unconfigure(config):
    config.pluginmanager.get_plugin("session").exitstatus = 2
'''


@pytest.mark.parametrize("stage", ["configure", "sessionstart", "collection"])
def test_pytest_stops_silently_on_session_failed(tmp_path, stage):
    """The pytest behaviour ``usage_error`` relies on (_pytest/main.py wrap_session, pytest 9.2:
    ``except Failed: session.exitstatus = ExitCode.TESTS_FAILED``, nothing printed, around
    pytest_configure, pytest_sessionstart and the collection; ``return session.exitstatus``
    after pytest_unconfigure): ``pytest.Session.Failed`` from any of them prints nothing, and
    the exit status is the one pytest_unconfigure set."""
    (tmp_path / f"stopper_{stage}.py").write_text(_STOPPER.format(stage=stage))
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", f"stopper_{stage}", "-p", "no:cacheprovider",
                        "-c", os.devnull, "--rootdir", str(tmp_path), "test_a.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    both = p.stdout + p.stderr
    assert p.returncode == 2, both
    assert both.count("usage-stop-message") == 1, both
    assert "Failed" not in both and "Traceback" not in both and "INTERNALERROR" not in both, both


def test_nothing_selected_leaves_no_new_reports_directory_behind(tmp_path):
    """Exit 2 (nothing selected) with a --reports-dir that does not exist yet: the write test of
    the output directories (nodegate.cmdline.unusable_dir) removes what it created; an empty
    reports/bundles/ was left (found by a new-user trial). pytest's own cache aside."""
    reports = tmp_path / "fresh" / "reports"
    p = _run([str(NODEGATE), "--replay", str(FLEET), LIMIT, "-k", "zzznomatch", "--reports-dir", str(reports),
              "-p", "no:cacheprovider"], cwd=tmp_path)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert not (tmp_path / "fresh").exists()
