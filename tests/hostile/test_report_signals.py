"""Reports survive any number of signals (issue 31, item 7; docs/security.md "Interruptions").

Once the reports are being written, SIGINT, SIGTERM and SIGHUP are deferred
(``nodegate.session.exitcodes``): each is said on stderr and the writing goes on; the third one
deferred ends the run at once, naming the reports not written. The signals are sent by the run
to itself at a known point of report writing (``tests/hostile/sigplugin.py``: before the second
node page, or before the RMA files are finished), never after a sleep. What is asserted is the
bound: every report there (JUnit, HTML and all node pages, RMA, actions), the exit status the
run had without the signals."""

from __future__ import annotations

import os
import subprocess
import sys

import defusedxml.ElementTree as DET
import pytest

from tests.hostile.harness import default_sigint
from tests.reports.runner import ROOT, synth_suite
from tests.reports.test_run_outputs import build_fleet

PAGE2 = "nodegate.reports.nodepage:node_page:2"
RMA_FINISH = "nodegate.reports.rma:RmaWriter.finish:1"
REPORTS = ("junit.xml", "report.html", "rma.csv", "rma.json", "actions.csv", "results.jsonl")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("sigfleet")
    return build_fleet(base / "fleet"), synth_suite(base / "suite")


def _run(fleet, out, at: str, sigs: str):
    root, suite = fleet
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", NG_SIGNAL_AT=at, NG_SIGNALS=sigs)
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", ".", "-p", "no:cacheprovider", "-p", "tests.hostile.sigplugin",
           "--replay", str(root), "--reports-dir", str(out)]
    return subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=default_sigint)


@pytest.mark.parametrize("at,sigs", [
    (PAGE2, "INT,INT"),          # the two Ctrl-C
    (PAGE2, "INT,TERM"),         # Ctrl-C, then a CI cancel
    (PAGE2, "HUP,HUP"),          # the terminal closed, twice
    (RMA_FINISH, "TERM,INT"),    # another point: the RMA files being finished
], ids=["int-int-page", "int-term-page", "hup-hup-page", "term-int-rma"])
def test_two_signals_while_the_reports_are_written_lose_no_report(fleet, tmp_path, at, sigs):
    out = tmp_path / "out"
    p = _run(fleet, out, at, sigs)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]      # as judged: b2 FAILs
    for name in REPORTS:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, (name, p.stderr[-2000:])
    DET.parse(out / "junit.xml")                                          # whole, valid XML
    assert "</html>" in (out / "report.html").read_text()
    assert len(list((out / "nodes").glob("*.html"))) == 4                 # every node page
    deferred = [ln for ln in p.stderr.splitlines() if "received while the reports are written: deferred" in ln]
    assert len(deferred) == 2, p.stderr[-2000:]
    assert not list(out.rglob(".*.tmp"))


def test_a_third_signal_ends_the_run_naming_the_reports_not_written(fleet, tmp_path):
    out = tmp_path / "out"
    p = _run(fleet, out, PAGE2, "INT,TERM,HUP")
    assert p.returncode == 128 + 1, p.stderr[-2000:]   # SIGHUP, the last one
    line = next(ln for ln in p.stderr.splitlines() if "stopped now" in ln)
    assert line.startswith("nodegate: 3 signals received while the reports were written (the last SIGHUP): "
                           "stopped now; not written: ")
    for name in ("junit.xml", "report.html", "rma.csv", "rma.json", "actions.csv"):
        assert str(out / name) in line and not (out / name).exists(), name
    assert str(out / "results.jsonl") not in line       # written before the reports: not missing
