"""Real outputs of a pytest run (subprocess, replayed hand-built bundles, the real suite and
reports plugins, a synthetic two-check suite): JUnit properties, RMA files, archives, HTML,
terminal summary, and that no hostile node string survives as markup or control character."""

from __future__ import annotations

import csv
import json
import re
import tarfile

import pytest
from junitparser import Error, Failure
from junitparser.xunit2 import JUnitXml  # testcase <properties> are xunit2

from nodegate.reports.text import safe_filename

from .fleetgen import CTRL, HEALTHY_GPUS, HOSTILE_NODE, IMG_SERIAL, SCRIPT_NAME, make_bundle
from .runner import run_pytest, synth_suite

PROPS = ["node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "expected",
         "observed", "remediation", "spec_source"]
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
PAYLOADS = ("<script>document", "<img src=x", "<img src=\"x\"")


def build_fleet(root):
    make_bundle(root, "a1")
    bad = list(HEALTHY_GPUS)
    bad[1] = bad[1][:6] + ("xid79",)
    make_bundle(root, "b2", gpus=bad, driver="570.124.06")
    hostile = [(0, "0000:18:00.0", IMG_SERIAL, "GPU-x", SCRIPT_NAME, "96.00" + CTRL, "rowremap"),
               (1, "0000:19:00.0", "s1", "GPU-y", SCRIPT_NAME, "96.00.99.00.01", "error")]
    make_bundle(root, "evil", node=HOSTILE_NODE, hostname=HOSTILE_NODE, gpus=hostile)
    make_bundle(root, "down", status="unreachable", error="connect timeout after 10s")
    return root


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("run")
    suite = synth_suite(base / "suite")
    return run_pytest(suite, ".", build_fleet(base / "fleet"), base / "out")


def test_exit_code_and_terminal_summary(fleet_run):
    assert fleet_run.rc == 1, fleet_run.output
    summary = fleet_run.output.split("nodegate summary", 1)[1]
    assert "4 node(s): 1 healthy, 3 with problems; checks: 5 pass, 3 fail, 0 skip, 3 error" in summary
    assert re.search(r"\ndown +0 +0 +0 +2  unreachable: connect timeout after 10s\n", summary)
    assert re.search(r"\nb2 +1 +2 +0 +0  ok\n", summary)
    assert f"RMA (CSV): {fleet_run.out / 'rma.csv'}" in summary
    assert "warning" not in fleet_run.output.lower()


def test_junit_properties(fleet_run):
    xml = JUnitXml.fromfile(str(fleet_run.junit))
    cases = {c.name: c for suite in xml for c in suite}
    assert len(cases) == 11
    case = cases["test_gpu_health[b2-gpu1]"]
    props = [(p.name, p.value) for p in case.properties()]
    assert props == [("node", "b2"), ("check_id", "SYN-GPU-001"), ("severity", "critical"), ("gpu_index", "1"),
                     ("pci_bus_id", "0000:19:00.0"), ("gpu_serial", "1652420000001"),
                     ("gpu_uuid", "GPU-00000001-aaaa"), ("expected", "healthy"),
                     ("observed", "xid79 on NVIDIA H200"),
                     ("remediation", "Reseat the GPU or replace the riser; RMA if it recurs."),
                     ("spec_source", "bundle meta.json (no spec in it: built-in defaults)")]
    assert isinstance(case.result[0], Failure)
    assert isinstance(cases["test_driver_version[down]"].result[0], Error)
    for c in cases.values():
        assert [p.name for p in c.properties()] == PROPS


def test_junit_hostile_values_are_text(fleet_run):
    xml = JUnitXml.fromfile(str(fleet_run.junit))
    case = next(c for s in xml for c in s if c.name == f"test_gpu_health[{HOSTILE_NODE}-gpu0]")
    props = dict((p.name, p.value) for p in case.properties())
    assert (props["node"], props["gpu_serial"], props["observed"]) == (
        HOSTILE_NODE, IMG_SERIAL, f"rowremap on {SCRIPT_NAME}")


def test_rma_files(fleet_run):
    rows = list(csv.DictReader((fleet_run.out / "rma.csv").open()))
    assert [(r["node"], r["gpu_index"], r["pci_bus_id"], r["gpu_serial"], r["failed_checks"], r["severity"],
             r["action"]) for r in rows] == [
        ("b2", "", "", "", "SYN-DRV-001", "major", "reboot"),
        ("b2", "1", "0000:19:00.0", "1652420000001", "SYN-GPU-001", "critical", "reseat/replace riser"),
        (HOSTILE_NODE, "0", "0000:18:00.0", IMG_SERIAL, "SYN-GPU-001", "critical", "reseat/replace riser")]
    assert (rows[1]["gpu_uuid"], rows[1]["board_part_number"], rows[1]["vbios_version"], rows[1]["driver_version"],
            rows[1]["observed"], rows[1]["expected"]) == (
        "GPU-00000001-aaaa", "692-2G520-0200-000", "96.00.99.00.01", "570.124.06",
        "SYN-GPU-001: xid79 on NVIDIA H200", "SYN-GPU-001: healthy")
    assert rows[2]["vbios_version"] == "96.00\\x1b[31mred\\x1b[0m\\x07bell\\x00nul\\x0bvt"
    doc = json.loads((fleet_run.out / "rma.json").read_text())
    assert [(r["node"], r["gpu_index"]) for r in doc["rows"]] == [("b2", None), ("b2", 1), (HOSTILE_NODE, 0)]
    assert sorted((e["node"], str(e["gpu_index"]), e["check_id"]) for e in doc["errors"]) == [
        ("down", "0", "SYN-GPU-001"), ("down", "None", "SYN-DRV-001"), (HOSTILE_NODE, "1", "SYN-GPU-001")]


def test_archives_for_nodes_with_problems(fleet_run):
    d = fleet_run.out / "bundles"
    assert sorted(p.name for p in d.iterdir()) == sorted(
        ["b2.tar.gz", "down.tar.gz", f"{safe_filename(HOSTILE_NODE)}.tar.gz"])
    with tarfile.open(d / "b2.tar.gz") as t:
        res = json.load(t.extractfile("b2/results.json"))
        assert "b2/test.gpus.out" in t.getnames()
    assert sorted((r["check_id"], r["gpu_index"], r["outcome"]) for r in res["results"]) == [
        ("SYN-DRV-001", "", "fail"), ("SYN-GPU-001", "0", "pass"), ("SYN-GPU-001", "1", "fail")]
    failing = next(r for r in res["results"] if r["outcome"] == "fail" and r["gpu_index"] == "1")
    assert failing["evidence"].startswith("NVRM: Xid (PCI:0000:19:00.0): 79")


def test_html_structure(fleet_run):
    text = fleet_run.html.read_text()
    for th in ("Node", "GPU", "Serial", "Check id", "Severity", "Expected", "Observed"):
        assert re.search(rf'<th( class="sortable")? data-column-type="\w+">{th}</th>', text), th
    assert 'id="ng-nodes"' in text and 'id="ng-drift"' in text
    assert "&#34;renderCollapsed&#34;: [&#34;passed&#34;]" in text
    assert "nodegate acceptance: replay" in text
    # links from failing rows to the node's archive, relative to the report
    assert "bundles/b2.tar.gz" in text


def _output_texts(run):
    yield "report.html", run.html.read_text()
    yield "junit.xml", run.junit.read_text()
    yield "rma.csv", (run.out / "rma.csv").read_text()
    yield "rma.json", (run.out / "rma.json").read_text()
    for a in (run.out / "bundles").glob("*.tar.gz"):
        with tarfile.open(a) as t:
            for m in t.getmembers():
                if m.name.endswith("results.json"):
                    yield m.name, t.extractfile(m).read().decode()


def test_no_control_characters_or_markup_in_outputs(fleet_run):
    for name, text in _output_texts(fleet_run):
        assert not CONTROL.search(text), name
        if name in ("report.html", "junit.xml"):
            for payload in PAYLOADS:
                assert payload not in text, (name, payload)


def test_healthy_run_writes_empty_rma(tmp_path):
    make_bundle(tmp_path / "fleet", "a1")
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", tmp_path / "fleet", tmp_path / "out")
    assert run.rc == 0, run.output
    assert (run.out / "rma.csv").read_text().splitlines() == [
        "node,gpu_index,pci_bus_id,gpu_serial,gpu_uuid,board_part_number,vbios_version,driver_version,"
        "failed_checks,severity,action,observed,expected"]
    assert json.loads((run.out / "rma.json").read_text())["rows"] == []
    assert not (run.out / "bundles").exists()


def test_xdist_run_writes_the_same_rma(fleet_run, tmp_path):
    pytest.importorskip("xdist")
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", build_fleet(tmp_path / "fleet"), tmp_path / "out",
                     "-n", "2")
    assert run.rc == 1, run.output
    assert (run.out / "rma.csv").read_text() == (fleet_run.out / "rma.csv").read_text()
    xml = JUnitXml.fromfile(str(run.junit))
    assert sum(1 for s in xml for _ in s) == 11
    assert "ng-evidence" in run.html.read_text()
