"""The phase's rows as nodegate items (nodegate.crossnode.present), the HTML section
(report_html: escaped, the SVG tree), the RMA parts of NG-XN records, the input files
(inputs.py) and bundle discovery beside the phase's evidence. No launcher: rows made by hand."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodegate.bundle import discover
from nodegate.crossnode.inputs import load_spec, phase_config, recorded_runs
from nodegate.crossnode.model import CableRow, FaultRow, JobRow, NodeRow, NodeState, PhaseResult, RuleCheck
from nodegate.crossnode.phase import PhaseError
from nodegate.crossnode.present import cable_item, fault_items, items, job_item, item_id, node_item
from nodegate.crossnode.report_html import section_html, tree_svg
from nodegate.outcomes import Outcome
from nodegate.reports.parts import CABLE, HCA, part_of, part_serial
from nodegate.reports.records import Record

EVIL = '<img src=x onerror=alert(1)>"&\'n9'


def _result() -> PhaseResult:
    chk = [RuleCheck("absolute", "busbw >= 368 GB/s", "CRE ADR-021", False, 368.0, 189.6, "GB/s", "below")]
    jobs = [JobRow("r01-screen-a", "screen", 1, ["n1", "n2", EVIL], "all_reduce_perf", "mpirun", ["mpirun", "x"],
                   metric="busbw", value=189.6, unit="GB/s", checks=chk, verdict=Outcome.FAIL,
                   message="absolute: 189.6 GB/s below 368", suspects=["n1", "n2", EVIL], evidence="crossnode/t/jobs/a"),
            JobRow("r02-confirm-b", "confirm", 2, [EVIL, "n1"], "all_reduce_perf", "mpirun", verdict=Outcome.ERROR,
                   message="rc 1: exit code 1", duration_s=1.5)]
    nodes = [NodeRow("n1", NodeState.CLEARED, "passed", ["r01-screen-a"]),
             NodeRow("n2", NodeState.UNTESTED, "no job judged"),
             NodeRow(EVIL, NodeState.CONFIRMED_FAULTY, "failed again", ["r02-confirm-b"], ["F001"])]
    faults = [FaultRow("F001", "hca", f"{EVIL}:mlx5_1", "leaf<b>:7", "failed with 2 partners", ["r02-confirm-b"],
                       guid="0xb8590000abcd0001"),
              FaultRow("F002", "path", "n1:mlx5_1", "n2:mlx5_1", "fails together", ["r01-screen-a"],
                       cables=["n1:mlx5_1/1 <-> leaf-r1:1"]),
              FaultRow("F003", "boundary", "group A", "group B", "halves pass")]
    cables = [CableRow("n1:mlx5_0/1", f"leaf{EVIL}:1", Outcome.FAIL, "miswired", "leaf-r0:1", "leaf-r1:1", 0),
              CableRow("gpu99:mlx5_0/1", "leaf-r0:9", Outcome.ERROR, "unknown-node", "a node", "not in inventory")]
    return PhaseResult("t", jobs, nodes, faults, cables, [["r01-screen-a"], ["r02-confirm-b"]], [], "/b/crossnode/t")


@pytest.mark.parametrize("state, outcome", [(NodeState.CLEARED, Outcome.PASS),
                                            (NodeState.CONFIRMED_FAULTY, Outcome.FAIL),
                                            (NodeState.SUSPECT, Outcome.ERROR), (NodeState.NOT_USED, Outcome.ERROR),
                                            (NodeState.UNTESTED, Outcome.ERROR)])
def test_a_node_passes_only_when_cleared_and_fails_only_when_confirmed(state, outcome):
    it = node_item("n1", NodeRow("n1", state, "why"), PhaseResult("t"))
    assert it.result.outcome is outcome and it.node == "n1" and it.check[0] == "NG-XN-001"


def test_a_phase_that_did_not_run_leaves_every_node_error():
    got = items(None, ["n1", "n2"], why_not="launcher mpijob")
    assert [(i.kind, i.node, i.result.outcome) for i in got] == [
        ("node", "n1", Outcome.ERROR), ("node", "n2", Outcome.ERROR), ("phase", "", Outcome.ERROR)]
    assert all("launcher mpijob" in i.result.message for i in got)


def test_a_phase_that_ran_no_job_is_error_never_pass():
    """``--limit`` down to one usable node: no job is possible; the phase item said PASS
    ('ran: 0 jobs in 0 rounds') while the terminal said cross-node ERROR."""
    from nodegate.crossnode.present import phase_item
    res = PhaseResult("t", nodes=[NodeRow("n1", NodeState.UNTESTED, "fewer than two usable nodes")])
    it = phase_item(res)
    assert it.result.outcome is Outcome.ERROR and "fewer than two usable nodes" in it.result.message


def test_owners_of_jobs_faults_and_cables():
    res = _result()
    nodes = {"n1", "n2", EVIL}
    assert job_item(res.jobs[0]).node == "" and job_item(res.jobs[0]).extra["threshold"] == "368"
    assert job_item(res.jobs[1]).result.outcome is Outcome.ERROR
    assert [i.node for i in fault_items(res.faults[0], nodes)] == [EVIL]
    assert [i.node for i in fault_items(res.faults[1], nodes)] == ["n1", "n2"]
    assert [i.node for i in fault_items(res.faults[2], nodes)] == [""]
    assert cable_item(res.cables[0], nodes).node == "n1" and cable_item(res.cables[1], nodes).node == ""
    assert cable_item(res.cables[1], nodes).result.outcome is Outcome.ERROR
    keys = [(i.kind, i.key) for i in items(res, ["n1", "n2", EVIL])]
    assert len(keys) == len(set(keys))
    assert "<" not in item_id(node_item(EVIL, None, res)) and "\\x3c" in item_id(node_item(EVIL, None, res))


def test_the_section_escapes_every_node_text_and_draws_the_tree():
    html = section_html(_result())
    assert "<img" not in html and "<b>" not in html and "&lt;img src=x" in html
    assert 'id="ng-xn-tree"' in html and 'id="ng-xn-cables"' in html and 'id="ng-xn-faults"' in html
    svg = tree_svg(_result())
    assert svg.startswith("<svg") and svg.count('class="ng-xn-job"') == 2 and svg.count('class="ng-xn-node"') == 3
    assert "<line" in svg                                  # the failed screen leads to the confirm job


def test_the_section_shows_control_characters_of_node_text_escaped():
    """A replayed node's text with terminal escapes (ESC, BEL, a bidi override) reaches no HTML raw:
    the tree's tooltips held them unescaped."""
    res = _result()
    hostile = "\x1b[2J\x1b]0;pwned\x07\u202e"
    res.nodes[0].why = hostile
    res.jobs[0].message = hostile
    for out in (section_html(res), tree_svg(res)):
        assert not any(c in out for c in "\x1b\x07\u202e")
        assert "\\x1b[2J" in out


def _rec(it) -> Record:
    return Record("suites/test_crossnode.py::x", it.result.outcome.value, node=it.node, check_id=it.check[0],
                  message=it.result.message, observed=it.result.observed)


def test_rma_parts_an_hca_by_guid_and_a_cable_by_both_ends():
    res = _result()
    hca = _rec(fault_items(res.faults[0], {EVIL})[0])
    assert part_of(hca) == (HCA, f"{EVIL}:mlx5_1 <-> leaf<b>:7") and part_serial(HCA, [hca]) == "0xb8590000abcd0001"
    path = _rec(fault_items(res.faults[1], {"n1", "n2"})[0])
    assert part_of(path) == (CABLE, "n1:mlx5_1 <-> n2:mlx5_1")
    assert part_of(_rec(fault_items(res.faults[2], set())[0])) == ("", "")
    assert part_of(_rec(cable_item(res.cables[0], {"n1"}))) == (CABLE, f"n1:mlx5_0/1 <-> leaf{EVIL}:1")


def test_bad_spec_files_name_file_and_line(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("crossnode:\n  fabric: [\n")
    with pytest.raises(PhaseError, match=r"x\.yaml:\d+: not YAML"):
        load_spec(str(p))
    p.write_text("nodegate:\n  crossnode:\n    launcher: pdsh\n")
    with pytest.raises(PhaseError, match="crossnode.launcher"):
        load_spec(str(p))
    p.write_text("crossnode:\n  cable_plan: /nonexistent/cables.yaml\n")
    with pytest.raises(PhaseError, match="cable plan /nonexistent/cables.yaml"):
        phase_config(load_spec(str(p)))
    p.write_text("launcher: srun\npartition: gpu\n")
    assert load_spec(str(p)).partition == "gpu"


@pytest.mark.parametrize("text, match", [
    # a key no section has: the line it is written on (was: the file alone)
    ("nodegate:\n  crossnode:\n    fabric: ib-ndr400\n    floors:\n      busbw: 3\n",
     r"x\.yaml:5: crossnode\.floors\.busbw: Extra inputs"),
    # a misspelt fabric profile: refused before anything is launched, naming the known ones
    # (was: accepted, and every job of the run ERROR "unknown fabric" after the whole phase ran)
    ("crossnode:\n  launcher: mpirun\n  fabric: ib-ndr4000\n",
     r"x\.yaml:3: crossnode\.fabric: .*unknown fabric profile 'ib-ndr4000' \(known: .*ib-ndr400,"),
    # nccl-tests -b above -e measures nothing (was: accepted, every job ERROR)
    ("crossnode:\n  fabric: ib-ndr400\n  min_bytes: 8G\n  max_bytes: 1G\n",
     r"x\.yaml: crossnode: .*min_bytes 8G is above max_bytes 1G"),
    # an entry of a list: the line the entry starts on
    ("crossnode:\n  cables:\n    - {hca: mlx5_0, switch: leaf, switch_port: 1}\n    - {hca: mlx5_1, switch: leaf}\n",
     r"x\.yaml:4: crossnode\.cables\.1\.switch_port: Field required"),
])
def test_section_errors_name_the_line_and_refuse_what_no_job_could_measure(tmp_path, text, match):
    p = tmp_path / "x.yaml"
    p.write_text(text)
    with pytest.raises(PhaseError, match=match):
        load_spec(str(p))


def test_no_fabric_at_all_stays_allowed():
    """docs/crossnode.md: without crossnode.fabric the rate and floors cannot be judged; those
    items are ERROR no-fabric-profile (fail closed), the section itself is valid."""
    from nodegate.crossnode.spec import CrossnodeSpec
    assert CrossnodeSpec.model_validate({}).fabric is None


def test_files_the_section_names_are_read_beside_it_and_only_regular_ones(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    (site / "cables.yaml").write_text("gpu01:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1, rail: 0}\n")
    (site / "crossnode.yaml").write_text("crossnode:\n  cable_plan: cables.yaml\n  topology_file: fabric.topo\n")
    monkeypatch.chdir(tmp_path)   # not the section's folder: the paths must not depend on it
    spec = load_spec(str(site / "crossnode.yaml"))
    assert spec.cable_plan == str(site / "cables.yaml")
    assert spec.topology_file == str(site / "fabric.topo")
    os.mkfifo(site / "fabric.topo")   # a FIFO would block a plain read forever
    with pytest.raises(PhaseError, match="topology file .*fabric.topo: not a regular file"):
        phase_config(spec)
    (site / "fabric.topo").unlink()
    (site / "fabric.topo").write_text("")
    assert "gpu01" in phase_config(spec).cable_plan


def test_recorded_runs_and_discovery_skip_the_phase_evidence(tmp_path):
    node = tmp_path / "n1"
    node.mkdir()
    (node / "meta.json").write_text(json.dumps({"node": "n1"}))
    for rid in ("20261205-120000-aaaaaa", "20261205-130000-bbbbbb"):
        job = tmp_path / "crossnode" / rid / "jobs" / "r01-screen-x"
        job.mkdir(parents=True)
        (job / "meta.json").write_text("{}")
        (tmp_path / "crossnode" / rid / "plan.json").write_text("{}")
    assert discover(tmp_path) == [node]
    assert recorded_runs(tmp_path) == ["20261205-120000-aaaaaa", "20261205-130000-bbbbbb"]
    assert recorded_runs(Path("/nonexistent")) == []
