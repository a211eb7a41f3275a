"""Reports at fleet scale (docs/performance.md "4,096 nodes"): the JUnit of 4,096 nodes x 8 GPUs
validates against junit-10.xsd and stays under GitLab's limits (250,000 XML objects: every element,
its XmlAdapter's object_count; 500,000 test cases), a fleet too large for one file is split into
parts plus a summary, each within the budget; and the cheap paths (clean's fast path, one record
fill per test) give the same values."""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as DET
import pytest
import xmlschema
from junitparser import JUnitXml

from nodegate.checks import load_all
from nodegate.reports import junit, text
from nodegate.reports.records import RecordBook

from .helpers import ng, report
from .scalegen import info, node_records

XSD = Path(__file__).resolve().parent / "data" / "junit-10.xsd"


def _objects(path: Path) -> tuple[int, int]:
    """(elements, testcases) as GitLab counts them (text is no object)."""
    elements = testcases = 0
    for _, el in DET.iterparse(str(path), events=("start",)):
        elements += 1
        testcases += el.tag == "testcase"
    return elements, testcases


@pytest.fixture(scope="module")
def fleet4096(tmp_path_factory):
    out = tmp_path_factory.mktemp("junit4096") / "junit.xml"
    w = junit.JUnitWriter(out)
    for i in range(4096):
        n = f"n{i:05d}"
        bad = i % 512 == 7
        w.add_node(info(n, "need action" if bad else "accepted"),
                   node_records(n, fail={"NG-PCIE-002", "NG-DRV-001"} if bad else set()))
    return out, w.finish()


def test_4096_nodes_one_junit_file_under_gitlab_limits(fleet4096):
    path, files = fleet4096
    assert [f[0] for f in files] == ["JUnit XML"]            # fits one file by design
    elements, testcases = _objects(path)
    assert (elements, testcases) == (files[0][2], files[0][3])  # the writer's count is GitLab's count
    assert elements < junit.MAX_OBJECTS < junit.GITLAB_MAX_OBJECTS
    assert testcases < junit.MAX_TESTCASES < junit.GITLAB_MAX_TESTCASES
    # a healthy node: one testcase per check (a GPU check's GPUs counted on one); a failing GPU has its own
    checks = len(load_all())
    assert testcases == 4088 * checks + 8 * (checks + 1)
    xmlschema.XMLSchema(str(XSD)).validate(str(path))


def test_4096_nodes_junit_reads_in_junitparser_with_per_gpu_failures(fleet4096):
    path, _ = fleet4096
    xml = JUnitXml.fromfile(str(path))
    suites = {s.name: s for s in xml}
    assert len(suites) == 4096
    bad = suites["n00007"]
    # the counts of the testcases (junit.py "Counts"): a check each, its passed GPUs folded, the
    # failing gpu3 its own; the check skipped on every GPU one skipped testcase
    assert (bad.tests, bad.failures, bad.errors, bad.skipped) == (len(load_all()) + 1, 2, 0, 1)
    root = DET.parse(path).getroot()
    gpu3 = next(s for s in root.iter("testsuite") if s.get("name") == "n00007 gpu3 NG-PCIE-002")
    props = {p.get("name"): p.get("value") for p in gpu3.iter("property")}
    assert (props["node"], props["gpu_index"], props["pci_bus_id"], props["gpu_serial"], props["check_id"],
            props["severity"]) == ("n00007", "3", "0000:4c:00.0", "1652420000003", "NG-PCIE-002", "major")
    assert props["remediation"].startswith("Drain the node, reseat the GPU")


def test_a_fleet_too_large_for_one_file_is_split_into_parts_and_a_summary(tmp_path):
    out = tmp_path / "junit.xml"
    w = junit.JUnitWriter(out, max_objects=20_000)
    for i in range(40):   # every item ERRORs: each has its own suite with properties (~14 objects)
        n = f"e{i:03d}"
        w.add_node(info(n, "need action"), node_records(n, error=True))
    files = w.finish()
    assert files[0][:2] == ("JUnit XML (summary)", str(out)) and len(files) > 2
    schema = xmlschema.XMLSchema(str(XSD))
    seen = 0
    for what, path, objects, testcases in files:
        schema.validate(path)
        assert _objects(Path(path)) == (objects, testcases)
        assert objects <= 20_000, what
        if what.startswith("JUnit part"):
            seen += sum(1 for _ in DET.parse(path).getroot().iter("testcase"))
    assert seen == 40 * sum(8 if c.scope == "gpu" else 1 for c in load_all().values())
    summary = DET.parse(out).getroot()
    cases = list(summary.iter("testcase"))
    assert len(cases) == 40 and cases[0].find("failure").get("message").startswith("e000: need action: NG-")
    parts = [p.get("value") for p in summary.iter("property") if p.get("name") == "part"]
    assert parts == [Path(f[1]).name for f in files[1:]]


def test_error_items_carry_the_error_remediation_not_the_fail_text(tmp_path):
    out = tmp_path / "junit.xml"
    w = junit.JUnitWriter(out)
    w.add_node(info("e1", "need action"), node_records("e1", error=True))
    w.finish()
    root = DET.parse(out).getroot()
    for suite in root.iter("testsuite"):
        if len(suite.findall("testcase")) == 1 and suite.find("testcase/error") is not None:
            rem = next(p.get("value") for p in suite.iter("property") if p.get("name") == "remediation")
            assert rem == "nvidia-smi cannot talk to the loaded driver"
            break
    else:
        pytest.fail("no ERROR testcase")


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
