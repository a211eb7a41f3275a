"""Perf and burn-in outputs that look clean but come from a run that is no result: a data check's
"0 errors" is PASS only from a valid run (nodegate's rule: a figure never measured, or measured
by a run that died or contradicts itself, is ERROR, never a silent PASS). Synthetic outputs in
each tool's real format; judged by the pure rules (no node, no run)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.rules import NodeInput, fleet_stats, judge_node
from tests.perf.test_samples import body

E, P = Outcome.ERROR, Outcome.PASS


def _items(tool, text, sku="a100_80gb", gpus=2, invalid=()):
    rep = extract(tool, text)
    rep.invalid.extend(invalid)
    ni = NodeInput("n", sku, str(sku), {tool: rep}, gpu_count=gpus)
    return {i.id: i for i in judge_node(ni, fleet_stats([ni]))}


def _burn(last_pct: float, summary: bool, n: int = 2) -> str:
    rec = (f"{last_pct:.1f}%  proc'd: " + " - ".join("678 (16942 Gflop/s)" for _ in range(n))
           + "   errors: " + " - ".join("0" for _ in range(n)) + "   temps: " + " - ".join("62 C" for _ in range(n)))
    head = "".join(f"GPU {g}: NVIDIA A100-SXM4-80GB (UUID: GPU-{g})\n" for g in range(n))
    tail = f"Killing processes.. done\nTested {n} GPUs:\n" + "".join(f"\tGPU {g}: OK\n" for g in range(n))
    return head + rec + "\n" + (tail if summary else "")


def test_zero_wrong_of_an_nccl_run_that_exited_non_zero_is_not_a_pass():
    # the perf phase marks a non-zero exit status invalid (judge.node_input): the #wrong 0 rows
    # printed before it failed prove nothing about the data
    items = _items("nccl", body("304"), sku="h100_sxm", gpus=8, invalid=["nccl exit status 1: boom"])
    it = items["nccl-integrity-node"]
    assert it.outcome is E and it.message.startswith("not checked: invalid run: nccl exit status 1"), it.message


def test_zero_errors_of_a_gpu_burn_that_contradicts_its_own_gpu_count_is_not_a_pass():
    text = _burn(100.0, True).replace("Tested 2 GPUs", "Tested 3 GPUs")
    items = _items("gpu_burn", text)
    for g in (0, 1):
        assert items[f"gpu_burn-integrity-gpu{g}"].outcome is E, items[f"gpu_burn-integrity-gpu{g}"].message


def test_the_complete_gpu_burn_run_still_passes_its_integrity():
    items = _items("gpu_burn", _burn(100.0, True))
    assert {items[f"gpu_burn-integrity-gpu{g}"].outcome for g in (0, 1)} == {P}


def test_a_gpu_burn_that_stopped_at_10_percent_without_its_summary_is_error_not_pass():
    # a worker segfault or OOM kill part-way: gpu_burn's exit status is not read (it exits 0 even
    # when FAULTY), so the output itself must say the run did not end: no 100 % record, no summary
    items = _items("gpu_burn", _burn(10.0, False))
    for g in (0, 1):
        for what in ("integrity", "gflops-sm"):
            it = items[f"gpu_burn-{what}-gpu{g}"]
            assert it.outcome is E and "stopped at 10 % without its 'Tested N GPUs' summary" in it.message, it.message


def test_a_gpu_burn_at_100_percent_without_its_summary_still_passes():
    # the summary trimmed from a ticket after a complete run: the records cover the whole burn
    items = _items("gpu_burn", _burn(100.0, False))
    assert {items[f"gpu_burn-integrity-gpu{g}"].outcome for g in (0, 1)} == {P}


_H2D = """Running host_to_device_memcpy_ce.
memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)
           0
 0     {v}
"""


def test_a_gpu_the_output_leaves_out_is_error_not_a_node_that_passes_on_the_others():
    # an 8-GPU node whose nvbandwidth printed one column (no 'Device N:' lines to compare with):
    # GPUs 1-7 had no item at all and the node passed on GPU 0
    items = _items("nvbandwidth", _H2D.format(v="55.20"), sku="h100_sxm", gpus=8)
    it = items["nvbandwidth-h2d-ce-node"]
    assert it.outcome is E and it.message.startswith("not measured: GPU(s) 1-7 of the node's 8 absent"), it.message
    assert items["nvbandwidth-h2d-ce-gpu0"].outcome is P


def test_missing_gpu_pairs_of_a_matrix_are_error():
    text = ("Running device_to_device_memcpy_read_ce.\nmemcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)\n"
            "          0         1\n0       N/A    370.90\n1    370.90       N/A\n")
    it = _items("nvbandwidth", text, sku="h100_sxm", gpus=8)["nvbandwidth-p2p_read-ce-node"]
    assert it.outcome is E and it.message.startswith("not measured: 54 of the 56 GPU pairs"), it.message


def test_a_gpu_the_node_does_not_have_is_contradictory():
    # gpu_burn lists 3 GPUs on a node whose probe lists 2: GPU 2's figure is not this node's
    items = _items("gpu_burn", _burn(100.0, True, n=3), gpus=2)
    it = items["gpu_burn-gflops-sm-gpu2"]
    assert it.outcome is E and it.message.startswith("contradictory: gpu_burn measured gpu2, but this node has 2"), \
        it.message


def test_one_subject_printed_twice_with_different_figures_is_error_not_pass_and_fail():
    # the same test twice (two runs' outputs concatenated): one PASS and one FAIL item under one id
    text = _H2D.format(v="55.20") + _H2D.format(v="5.20")
    items = [i for i in judge_node(NodeInput("n", "h100_sxm", "h100", {"nvbandwidth": extract("nvbandwidth", text)},
                                             gpu_count=1), {}) if i.subject == "gpu0"]
    assert [(i.outcome, i.message[:60]) for i in items] == [
        (E, "contradictory: nvbandwidth printed gpu0 2 times with differe")]


def _dcgmi(results) -> str:
    import json
    return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [
        {"name": "targeted_stress", "results": results, "test_summary": {"status": "Pass"}}]}]}})


def _gpu(i, status, **kw):
    return {"entity_group": "GPU", "entity_id": i, "status": status, **kw}


def test_dcgmi_giving_one_gpu_pass_and_fail_is_one_error_not_a_pass_and_a_fail():
    text = _dcgmi([_gpu(0, "Pass"), _gpu(0, "Fail", warnings=[{"warning": "bad", "error_id": 3}])])
    items = [i for i in judge_node(NodeInput("n", "h100_sxm", "h100", {"dcgmi": extract("dcgmi", text)}, gpu_count=1),
                                   {}) if i.subject == "gpu0"]
    assert [(i.outcome, i.message[:80]) for i in items] == [
        (E, "dcgmi targeted_stress: error: contradictory: dcgmi gave targeted_stress on GPU 0")]


def test_dcgmi_passing_a_gpu_the_node_does_not_have_is_contradictory():
    items = _items("dcgmi", _dcgmi([_gpu(0, "Pass"), _gpu(5, "Pass")]), gpus=1)
    assert items["dcgmi-targeted_stress-gpu5"].outcome is E
    assert items["dcgmi-targeted_stress-gpu0"].outcome is P


def test_dcgmi_results_for_one_gpu_of_eight_leave_seven_unproven():
    items = _items("dcgmi", _dcgmi([_gpu(0, "Pass")]), gpus=8)
    it = items["dcgmi-targeted_stress_gpus-node"]
    assert it.outcome is E and it.message.startswith("not checked: GPU(s) 1-7 of the node's 8 absent"), it.message


def test_a_burnin_dcgmi_output_nested_past_the_recursion_limit_is_a_parse_error():
    # the burn-in's own dcgmi reader: a RecursionError escaped it (the node's every burn-in item
    # became an internal error, the samples' rules with them); a ParseError errs the dcgmi rule only
    import pytest

    from nodegate.burnin.dcgm import parse_dcgm
    from nodegate.errors import ParseError
    with pytest.raises(ParseError, match="nested too deep"):
        parse_dcgm('{"DCGM Diagnostic": ' + "[" * 100_000 + "]" * 100_000 + "}")
