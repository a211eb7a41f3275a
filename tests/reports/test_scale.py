"""Reports at fleet scale (docs/performance.md): passed rows folded into the per-node and
per-check counts above ``--html-passed-rows``, JUnit ``remediation`` only where it applies,
and the cheap paths (clean's fast path, one record fill per test) give the same values."""

from __future__ import annotations

import html as html_mod
import json
import re

import pytest
from junitparser.xunit2 import JUnitXml

from nodegate.reports import text
from nodegate.reports.records import RecordBook

from .fleetgen import HEALTHY_GPUS, make_bundle
from .helpers import ng, report
from .runner import run_pytest, synth_suite


def _fleet(root):
    """a1: 3 passes; b2: driver FAIL, gpu0 pass, gpu1 FAIL; s3: gpu0 SKIP, 2 passes; down: 2 ERRORs
    (no GPU known: one slot). 11 items, 6 of them passed."""
    make_bundle(root, "a1")
    bad = list(HEALTHY_GPUS)
    bad[1] = bad[1][:6] + ("xid79",)
    make_bundle(root, "b2", gpus=bad, driver="570.124.06")
    skip = list(HEALTHY_GPUS)
    skip[0] = skip[0][:6] + ("skip",)
    make_bundle(root, "s3", gpus=skip)
    make_bundle(root, "down", status="unreachable", error="connect timeout after 10s")
    return root


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return _fleet(tmp_path_factory.mktemp("scale") / "fleet")


def _run(tmp_path, fleet, *extra):
    return run_pytest(synth_suite(tmp_path / "suite"), ".", fleet, tmp_path / "out", *extra)


def _rows(run) -> dict[str, list[str]]:
    """pytest-html's JSON data: nodeid -> results of the rows it will render."""
    blob = re.search(r'data-jsonblob="([^"]*)"', run.html.read_text()).group(1)
    tests = json.loads(html_mod.unescape(blob))["tests"]
    return {k: [r["result"] for r in v] for k, v in tests.items()}


def _count(run, outcome: str) -> int:
    return int(re.search(rf'<span class="{outcome}">(\d+) ', run.html.read_text()).group(1))


@pytest.fixture(scope="module")
def folded(fleet, tmp_path_factory):
    return _run(tmp_path_factory.mktemp("folded"), fleet, "--html-passed-rows", "2")


def test_passed_rows_over_the_limit_are_folded(folded):
    assert folded.rc == 1, folded.output
    rows = _rows(folded)
    results = sorted(r for v in rows.values() for r in v)
    # 6 passes are over the limit of 2: none is listed; failures, skips and errors all are
    assert results == ["Error", "Error", "Failed", "Failed", "Skipped"]
    # pytest-html's outcome counts still count the folded rows
    assert (_count(folded, "passed"), _count(folded, "failed"), _count(folded, "skipped"),
            _count(folded, "error")) == (6, 2, 1, 2)
    page = folded.html.read_text()
    assert ('<p id="ng-passed-folded"><b>6 passed tests are not listed one row each</b> (more than '
            "--html-passed-rows 2)") in page
    # JUnit keeps every item
    assert sum(1 for s in JUnitXml.fromfile(str(folded.junit)) for _ in s) == 11


def test_checks_table_counts_every_outcome(folded):
    page = folded.html.read_text()
    table = re.search(r'<table class="ng-table" id="ng-checks">.*?</table>', page).group(0)
    cells = re.findall(r"<tr>((?:<td[^>]*>[^<]*</td>)+)</tr>", table)
    got = [re.findall(r"<td[^>]*>([^<]*)</td>", c) for c in cells]
    assert got == [["SYN-DRV-001", "Driver version", "major", "2", "1", "0", "1"],
                   ["SYN-GPU-001", "GPU health", "critical", "4", "1", "1", "1"]]


@pytest.mark.parametrize("limit", ["6", "-1"])
def test_passed_rows_within_the_limit_are_listed(fleet, tmp_path, limit):
    run = _run(tmp_path, fleet, "--html-passed-rows", limit)
    assert run.rc == 1, run.output
    results = sorted(r for v in _rows(run).values() for r in v)
    assert results == ["Error", "Error", "Failed", "Failed", "Passed", "Passed", "Passed", "Passed", "Passed",
                       "Passed", "Skipped"]
    assert _count(run, "passed") == 6
    assert 'id="ng-passed-folded"' not in run.html.read_text()


def test_junit_remediation_only_on_failures_and_errors(folded):
    cases = {c.name: c for s in JUnitXml.fromfile(str(folded.junit)) for c in s}
    rem = {name: dict((p.name, p.value) for p in c.properties())["remediation"] for name, c in cases.items()}
    assert rem == {
        "test_driver_version[a1]": "", "test_driver_version[b2]": "Reboot into the installed driver 580.159.04.",
        "test_driver_version[s3]": "", "test_driver_version[down]": "Reboot into the installed driver 580.159.04.",
        "test_gpu_health[a1-gpu0]": "", "test_gpu_health[a1-gpu1]": "",
        "test_gpu_health[b2-gpu0]": "", "test_gpu_health[b2-gpu1]": "Reseat the GPU or replace the riser; RMA if it recurs.",
        "test_gpu_health[s3-gpu0]": "", "test_gpu_health[s3-gpu1]": "",
        "test_gpu_health[down-gpu0]": "Reseat the GPU or replace the riser; RMA if it recurs."}


def _clean_reference(value, limit=text.CELL_CAP, keep_newlines=True):
    """clean() without its fast path (the code before it)."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    if not keep_newlines:
        s = s.replace("\n", " ").replace("\t", " ")
    s = text._SURROGATE_RE.sub("\ufffd", text._CTRL_RE.sub(text._ctrl_repl, s))
    if limit and len(s) > limit:
        s = f"{s[:limit]} … [{len(s) - limit} more characters]"
    return s


@pytest.mark.parametrize("value", ["plain", "x" * 2500, "é ü 中文 ≠", "tab\tin", "a\r\nb", "\x1b[31m", "\x85",
                                   "\u00a0nbsp", "\ud800", 42, None, "", " lead and trail "])
@pytest.mark.parametrize("keep", [True, False])
def test_clean_fast_path_gives_the_same_text(value, keep):
    assert text.clean(value, 2000, keep) == _clean_reference(value, 2000, keep)


def test_record_is_refilled_when_a_phase_brings_another_verdict():
    book = RecordBook()
    book.update(report(when="setup", outcome="passed", nodegate=ng(outcome="pass", observed="a")))
    r = book.update(report(when="call", outcome="failed", nodegate=ng(outcome="fail", observed="b")))
    assert (r.outcome, r.observed) == ("fail", "b")
