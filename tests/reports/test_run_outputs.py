"""Real outputs of a pytest run (subprocess, replayed hand-built bundles, the real suite and
reports plugins, a synthetic two-check suite): JUnit properties, RMA files, archives, HTML,
terminal summary, and that no hostile node string survives as markup or control character."""

from __future__ import annotations

import csv
import json
import re
import tarfile

import pytest
import defusedxml.ElementTree as DET

from nodegate.reports.text import safe_filename

from .fleetgen import CTRL, HEALTHY_GPUS, HOSTILE_NODE, IMG_SERIAL, SCRIPT_NAME, make_bundle
from .runner import run_pytest, synth_suite

XSD = __import__("pathlib").Path(__file__).resolve().parent / "data" / "junit-10.xsd"

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
    assert "nodegate verdict: 1 accepted, 3 need action, 0 not evaluated" in summary
    assert "4 node(s): 1 healthy, 3 with problems; checks: 5 pass, 3 fail, 0 skip, 3 error" in summary
    assert re.search(r"\ndown +0 +0 +0 +2  unreachable: connect timeout after 10s\n", summary)
    assert re.search(r"\nb2 +1 +2 +0 +0  ok\n", summary)
    assert f"RMA (CSV): {fleet_run.out / 'rma.csv'}" in summary
    assert f"Actions (CSV): {fleet_run.out / 'actions.csv'}" in summary
    assert "warning" not in fleet_run.output.lower()


def _lines(run):
    return [json.loads(ln) for ln in (run.out / "results.jsonl").read_text().splitlines()]


def test_results_jsonl_one_line_per_item(fleet_run):
    lines = _lines(fleet_run)
    assert len(lines) == 11
    assert list(lines[0])[:12] == ["node", "check_id", "scope", "gpu_index", "pci_bus_id", "gpu_serial", "outcome",
                                   "message", "observed", "expected", "severity", "action"]
    got = {(d["node"], d["check_id"], d["gpu_index"]): (d["outcome"], d["action"]) for d in lines}
    assert got == {
        ("a1", "SYN-DRV-001", None): ("pass", ""), ("a1", "SYN-GPU-001", 0): ("pass", ""),
        ("a1", "SYN-GPU-001", 1): ("pass", ""), ("b2", "SYN-DRV-001", None): ("fail", "reboot"),
        ("b2", "SYN-GPU-001", 0): ("pass", ""), ("b2", "SYN-GPU-001", 1): ("fail", "reseat"),
        (HOSTILE_NODE, "SYN-DRV-001", None): ("pass", ""),
        (HOSTILE_NODE, "SYN-GPU-001", 0): ("fail", "reseat"),
        (HOSTILE_NODE, "SYN-GPU-001", 1): ("error", "obtain evidence"),
        ("down", "SYN-DRV-001", None): ("error", "obtain evidence"),
        ("down", "SYN-GPU-001", 0): ("error", "obtain evidence")}
    # an ERROR carries how to obtain the evidence, never the check's FAIL remediation
    down = next(d for d in lines if d["node"] == "down" and d["check_id"] == "SYN-DRV-001")
    assert down["remediation"].startswith("Make the node reachable over SSH")
    assert "Reboot into" not in down["remediation"]
    b2 = next(d for d in lines if d["node"] == "b2" and d["gpu_index"] == 1)
    assert (b2["scope"], b2["pci_bus_id"], b2["gpu_serial"], b2["observed"], b2["expected"], b2["severity"]) == (
        "gpu", "0000:19:00.0", "1652420000001", "xid79 on NVIDIA H200", "healthy", "critical")


def _junit_items(run):
    from tests.junit_view import cases
    return {name: (kind, dict(props), msg) for _, name, kind, msg, props in cases(run.junit)}


def test_junit_validates_and_carries_item_properties(fleet_run):
    import xmlschema
    xmlschema.XMLSchema(str(XSD)).validate(str(fleet_run.junit))
    items = _junit_items(fleet_run)
    assert {k: v[0] for k, v in items.items()} == {
        "test_driver_version[a1]": "pass", "test_gpu_health[a1-gpu0]": "pass", "test_gpu_health[a1-gpu1]": "pass",
        "test_driver_version[b2]": "fail", "test_gpu_health[b2-gpu0]": "pass", "test_gpu_health[b2-gpu1]": "fail",
        f"test_driver_version[{HOSTILE_NODE}]": "pass", f"test_gpu_health[{HOSTILE_NODE}-gpu0]": "fail",
        f"test_gpu_health[{HOSTILE_NODE}-gpu1]": "error", "test_driver_version[down]": "error",
        "test_gpu_health[down-gpu0]": "error"}
    kind, props, msg = items["test_gpu_health[b2-gpu1]"]
    assert list(props.items()) == [
        ("node", "b2"), ("check_id", "SYN-GPU-001"), ("severity", "critical"), ("gpu_index", "1"),
        ("pci_bus_id", "0000:19:00.0"), ("gpu_serial", "1652420000001"), ("gpu_uuid", "GPU-00000001-aaaa"),
        ("expected", "healthy"), ("observed", "xid79 on NVIDIA H200"),
        ("remediation", "Reseat the GPU or replace the riser; RMA if it recurs."),
        ("spec_source", "bundle meta.json (no spec in it: built-in defaults)")]
    assert msg.startswith("[SYN-GPU-001] gpu1 NVIDIA H200: xid79")
    for name, (kind, props, _) in items.items():
        if kind in ("fail", "error"):
            assert list(props) == PROPS, name
    # the ERROR's remediation: how to obtain the evidence
    assert items["test_driver_version[down]"][1]["remediation"].startswith("Make the node reachable over SSH")
    # passed GPUs counted on their check's testcase
    root = DET.parse(fleet_run.junit).getroot()
    assert any(tc.get("name") == "test_gpu_health[a1-gpu0..1]" and not list(tc) for tc in root.iter("testcase"))


def test_junit_hostile_values_are_text(fleet_run):
    _, props, _ = _junit_items(fleet_run)[f"test_gpu_health[{HOSTILE_NODE}-gpu0]"]
    assert (props["node"], props["gpu_serial"], props["observed"]) == (
        HOSTILE_NODE, IMG_SERIAL, f"rowremap on {SCRIPT_NAME}")


def test_rma_has_vendor_rows_and_actions_the_site_work(fleet_run):
    """A reseat is the site's work, done before any RMA (issue 32): its row is in actions.csv with the
    GPU it is about and the RMA to open if the fault persists; rma.csv has no row."""
    assert list(csv.DictReader((fleet_run.out / "rma.csv").open())) == []
    doc = json.loads((fleet_run.out / "rma.json").read_text())
    assert doc["format"] == "nodegate-rma/3" and doc["rows"] == []
    acts = list(csv.DictReader((fleet_run.out / "actions.csv").open()))
    assert [(a["node"], a["gpu_index"], a["failed_checks"], a["action"]) for a in acts] == [
        ("b2", "", "SYN-DRV-001", "reboot"), ("b2", "1", "SYN-GPU-001", "reseat"),
        ("down", "", "SYN-DRV-001", "obtain evidence"), ("down", "0", "SYN-GPU-001", "obtain evidence"),
        (HOSTILE_NODE, "0", "SYN-GPU-001", "reseat"), (HOSTILE_NODE, "1", "SYN-GPU-001", "obtain evidence")]
    r = acts[1]
    assert (r["part"], r["part_location"], r["part_serial"], r["pci_bus_id"], r["gpu_serial"], r["gpu_uuid"],
            r["board_part_number"], r["vbios_version"], r["driver_version"], r["observed"], r["expected"], r["xids"],
            r["evidence_archive"]) == (
        "GPU", "0000:19:00.0", "1652420000001", "0000:19:00.0", "1652420000001", "GPU-00000001-aaaa",
        "692-2G520-0200-000", "96.00.99.00.01", "570.124.06", "SYN-GPU-001: xid79 on NVIDIA H200",
        "SYN-GPU-001: healthy", "", "bundles/b2.tar.gz")
    assert r["if_it_persists"] == ("re-run nodegate on the node; still failing: RMA the GPU (0000:19:00.0, "
                                   "serial 1652420000001)")
    assert r["run_started_at"] and r["system_serial"].startswith("unknown: ")   # no dmi.id in these bundles
    assert acts[4]["vbios_version"] == "96.00\\x1b[31mred\\x1b[0m\\x07bell\\x00nul\\x0bvt"
    acts = [a for a in acts if a["action"] == "obtain evidence"]
    assert acts[0]["observed"] == "could not evaluate: node not gathered: unreachable: connect timeout after 10s"
    assert acts[0]["remediation"].startswith("Make the node reachable over SSH")


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
    assert ('<p class="verdict" id="ng-verdict">4 node(s): <b class="st-ok">1 accepted</b>, '
            '<b class="st-bad">3 need action</b>, <b class="st-ne">0 not evaluated</b></p>') in text
    assert "nodegate acceptance: replay" in text
    # matrix: one row per node, worst first; the node links to its page
    rows = re.findall(r'<tr id="n-([^"]*)" data-status="([^"]*)" data-cells="[^"]*"><td class="nm"><a href="([^"]*)">', text)
    assert [(n, s) for n, s, _ in rows] == [
        ("b2", "need action"), ("evil&lt;img src=x onerror=document.documentElement.dataset.pwned=1&gt;",
                                "need action"), ("down", "need action"), ("a1", "accepted")]
    assert rows[0][2] == "nodes/b2.html"
    page = (fleet_run.out / "nodes" / "b2.html").read_text()
    assert '<b class="st st-bad" id="ng-status">need action</b>' in page
    assert "../bundles/b2.tar.gz" in page
    assert 'id="ng-findings"' in text and 'id="ng-drift"' in text


def test_html_findings_print_remediation_once_per_cause(fleet_run):
    page = (fleet_run.out / "nodes" / "down.html").read_text()
    # two items could not be evaluated for one reason: one finding, one remediation
    assert page.count('class="finding error"') == 1
    assert page.count("Make the node reachable over SSH") == 1
    assert "(2 item(s): SYN-DRV-001, SYN-GPU-001; node, gpu0)" in page


def _output_texts(run):
    yield "report.html", run.html.read_text()
    yield "junit.xml", run.junit.read_text()
    yield "rma.csv", (run.out / "rma.csv").read_text()
    yield "rma.json", (run.out / "rma.json").read_text()
    yield "actions.csv", (run.out / "actions.csv").read_text()
    yield "results.jsonl", (run.out / "results.jsonl").read_text()
    for page in sorted((run.out / "nodes").glob("*.html")):
        yield f"nodes/{page.name}", page.read_text()
    for a in (run.out / "bundles").glob("*.tar.gz"):
        with tarfile.open(a) as t:
            for m in t.getmembers():
                if m.name.endswith("results.json"):
                    yield m.name, t.extractfile(m).read().decode()


def test_no_control_characters_or_markup_in_outputs(fleet_run):
    for name, text in _output_texts(fleet_run):
        assert not CONTROL.search(text), name
        if name in ("report.html", "junit.xml") or name.startswith("nodes/"):
            for payload in PAYLOADS:
                assert payload not in text, (name, payload)


def test_healthy_run_writes_empty_rma(tmp_path):
    make_bundle(tmp_path / "fleet", "a1")
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", tmp_path / "fleet", tmp_path / "out")
    assert run.rc == 0, run.output
    from nodegate.reports.rma import CSV_COLUMNS
    assert (run.out / "rma.csv").read_text().splitlines() == [",".join(CSV_COLUMNS)]
    assert (run.out / "actions.csv").read_text().splitlines() == [",".join(CSV_COLUMNS)]
    assert json.loads((run.out / "rma.json").read_text())["rows"] == []
    assert not (run.out / "bundles").exists()
    assert "nodegate verdict: 1 accepted, 0 need action, 0 not evaluated" in run.output


def test_xdist_run_writes_the_same_reports(fleet_run, tmp_path):
    pytest.importorskip("xdist")
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", build_fleet(tmp_path / "fleet"), tmp_path / "out",
                     "-n", "2")
    assert run.rc == 1, run.output
    strip = lambda t: re.sub(r",[^,]*Z\n", "\n", t)   # noqa: E731 - the run's start time differs
    assert strip((run.out / "rma.csv").read_text()) == strip((fleet_run.out / "rma.csv").read_text())
    assert strip((run.out / "actions.csv").read_text()) == strip((fleet_run.out / "actions.csv").read_text())
    assert _junit_items(run) == _junit_items(fleet_run)
    same = lambda run: sorted(str({k: v for k, v in d.items() if k != "bundle_dir"}) for d in _lines(run))  # noqa: E731
    assert same(run) == same(fleet_run)


def test_a_smaller_run_in_the_same_folder_leaves_no_page_of_the_earlier_run(tmp_path):
    fleet = build_fleet(tmp_path / "fleet")
    suite = synth_suite(tmp_path / "suite")
    first = run_pytest(suite, ".", fleet, tmp_path / "out")
    assert len(list((first.out / "nodes").iterdir())) == 4   # a1, b2, down and the hostile-named node
    second = run_pytest(suite, ".", fleet, tmp_path / "out", "--limit", "a1")
    assert [p.name for p in (second.out / "nodes").iterdir()] == ["a1.html"]


def test_links_planted_in_the_reports_folder_are_never_written_through(tmp_path):
    """A shared reports folder (CI workspace, extracted tarball) with links planted at the names
    nodegate writes: every report is written as a regular file of its own, the link targets are
    untouched (nodegate.safeio)."""
    fleet = build_fleet(tmp_path / "fleet")
    suite = synth_suite(tmp_path / "suite")
    out = tmp_path / "out"
    (out / "bundles").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("operator's file\n")
    planted = [".rma.csv.tmp", ".rma.json.tmp", ".actions.csv.tmp", ".report.html.tmp", "results.jsonl",
               "bundles/.a1.tar.gz.tmp"]
    for name in planted:
        (out / name).symlink_to(victim)
    r = run_pytest(suite, ".", fleet, out)
    assert r.rc == 1, r.output[-2000:]
    assert victim.read_text() == "operator's file\n"
    for name in ("rma.csv", "rma.json", "actions.csv", "report.html", "results.jsonl", "bundles/b2.tar.gz"):
        assert (out / name).is_file() and not (out / name).is_symlink(), name
