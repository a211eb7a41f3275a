"""JUnit counts say what the testcase elements hold (nodegate/reports/junit.py "Counts").

Jenkins' JUnit plugin and GitLab count ``<testcase>`` elements; other tools read the ``tests``,
``failures``, ``errors``, ``skipped`` attributes. A node's passed GPUs of a GPU check are one
testcase (``test_x[n-gpu0..7]``), so a suite that counted its records (199 for a demo node of 46
testcases) disagreed with every tool of the first kind. Each ``<testsuite>`` counts the testcases
it holds, those of the suites nested in it included (junitparser's ``TestSuite.update_statistics``
counts so), and the root ``<testsuites>`` every testcase of the file.
"""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as DET
import xmlschema
from junitparser import JUnitXml

from nodegate.reports import junit

from .scalegen import info, node_records

XSD = Path(__file__).resolve().parent / "data" / "junit-10.xsd"
KINDS = ("failure", "error", "skipped")


def _held(el) -> dict[str, int]:
    """What the testcase elements under ``el`` (nested suites included) hold."""
    n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for tc in el.iter("testcase"):
        n["tests"] += 1
        for k, attr in zip(KINDS, ("failures", "errors", "skipped")):
            n[attr] += tc.find(k) is not None
    return n


def _attrs(el, names=("tests", "failures", "errors", "skipped")) -> dict[str, int]:
    return {k: int(el.get(k)) for k in names}


def assert_counts_agree(path: Path) -> int:
    root = DET.parse(path).getroot()
    suites = list(root.iter("testsuite"))
    assert suites
    for s in suites:
        assert _attrs(s) == _held(s), s.get("name")
    held = _held(root)
    # junit-10.xsd allows tests, failures and errors on <testsuites> (no skipped)
    assert _attrs(root, ("tests", "failures", "errors")) == {k: held[k] for k in ("tests", "failures", "errors")}
    # junitparser recomputes the same from the testcases
    xml = JUnitXml.fromfile(str(path))
    for s in xml:
        before = (s.tests, s.failures, s.errors, s.skipped)
        s.update_statistics()
        assert (s.tests, s.failures, s.errors, s.skipped) == before, s.name
    xmlschema.XMLSchema(str(XSD)).validate(str(path))
    return held["tests"]


def test_suite_and_root_counts_are_the_testcases(tmp_path):
    out = tmp_path / "junit.xml"
    w = junit.JUnitWriter(out)
    w.add_node(info("ok", "accepted"), node_records("ok"))
    w.add_node(info("bad", "need action"), node_records("bad", fail={"NG-PCIE-002", "NG-DRV-001"}))
    w.add_node(info("err", "need action"), node_records("err", error=True))
    w.finish()
    total = assert_counts_agree(out)
    root = DET.parse(out).getroot()
    ok = next(s for s in root if s.get("name") == "ok")
    # the healthy node: one testcase per check, its passed GPUs folded (their records are 8 a check)
    assert int(ok.get("tests")) == len(ok.findall("testcase")) < len(node_records("ok"))
    bad = next(s for s in root if s.get("name") == "bad")
    assert (int(bad.get("failures")), int(bad.get("errors"))) == (2, 0)
    assert total == sum(1 for _ in root.iter("testcase"))


def test_every_part_of_a_split_run_counts_its_testcases(tmp_path):
    out = tmp_path / "junit.xml"
    w = junit.JUnitWriter(out, max_objects=20_000)
    for i in range(30):
        n = f"e{i:03d}"
        w.add_node(info(n, "need action"), node_records(n, error=i % 3 == 0, fail={"NG-PCIE-002"}))
    files = w.finish()
    assert len(files) > 2
    for _, path, _, testcases in files:
        assert assert_counts_agree(Path(path)) == testcases
