"""Issue 37 item 3: contradictory evidence is ERROR naming both values, never merged with the best
figure winning; #wrong is judged per row, never summed with signs; a cumulative error count that
goes down is a contradiction. Repeated rows of one figure are a distribution (issue 36 item 4):
the median is judged, the spread reported, a bimodal run flagged. Inputs: real fixtures rearranged
as ``srun --ntasks=2`` / ``mpirun -np 2`` / ``-N`` would print them (synthetic variants, said so)."""

from __future__ import annotations

import pytest

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.rules import NodeInput, judge_node
from nodegate.perf.stable import stable

from .test_samples import body

E, F, P = Outcome.ERROR, Outcome.FAIL, Outcome.PASS


def _items(tool, text, sku="h100_sxm", gpus=8, **kw):
    rep = extract(tool, text, **kw)
    return rep, {i.id: i for i in judge_node(NodeInput("n", sku, "H100 SXM", {tool: rep}, gpu_count=gpus,
                                                      hca_rates={"ib0": 200.0}), {})}


def _half(text: str, size: str, factor: float) -> str:
    """``text`` with the out-of-place and in-place busbw of the row of ``size`` bytes scaled."""
    out = []
    for ln in text.splitlines():
        toks = ln.split()
        if toks and toks[0].split(":")[-1] == size or size in toks[:2]:
            i = toks.index(size)
            for k in (i + 7, i + 11):
                if k < len(toks):
                    ln = ln.replace(toks[k], f"{float(toks[k]) * factor:.2f}", 1)
        out.append(ln)
    return "\n".join(out) + "\n"


def test_two_runs_in_sequence_are_error_naming_both_values():
    # synthetic: fixture 306 printed twice, the second run at half the bandwidth (two headers)
    a = body("306")
    b = _half(a, "17179869184", 0.5)
    rep, items = _items("nccl", a + b)
    it = items["nccl-allreduce_busbw-oop-node"]
    assert it.outcome is E and rep.info["runs"] == 2
    assert "2 runs in one output (2 result tables): plateau bus bandwidth 483.35 and 241.68 GB/s" in it.message


def test_two_runs_interleaved_by_rank_prefix_are_error():
    # synthetic: fixture 304's rows printed by two single-rank runs under srun --label (0: and 1:)
    lines = body("304").splitlines()
    other = [ln.replace("0: ", "1: ", 1) for ln in lines]
    mixed = "\n".join(x for pair in zip(lines, other) for x in pair) + "\n"
    rep, items = _items("nccl", mixed)
    it = items["nccl-allreduce_busbw-oop-node"]
    assert it.outcome is E and "2 runs in one output (2 output streams (0, 1))" in it.message


def test_one_run_repeated_by_N_is_a_distribution_judged_on_its_median():
    # synthetic: fixture 306's sweep printed three times in one table (nccl-tests -N 3), the plateau
    # slightly different each cycle: the median is judged and the spread said
    head, _, rest = body("306").partition("[1,0]<stdout>:           8 ")
    rows = ("[1,0]<stdout>:           8 " + rest).splitlines()
    table = [r for r in rows if r.split(":", 1)[-1].split()[:1] and r.split(":", 1)[-1].split()[0].isdigit()]
    foot = [r for r in rows if r not in table]
    cycles = table + _half("\n".join(table), "17179869184", 0.98).splitlines() + \
        _half("\n".join(table), "17179869184", 1.01).splitlines()
    rep, items = _items("nccl", head + "\n".join(cycles + foot) + "\n")
    it = items["nccl-allreduce_busbw-oop-node"]
    assert rep.info["runs"] == 1 and not rep.invalid
    assert it.outcome is P and it.value == 483.05
    assert "median of 3 rows at 17179869184 B 473.39-487.88 (spread 3.0%)" in it.message


def test_two_blocks_of_one_size_disagreeing_2x_are_error_naming_both():
    # synthetic: -N 2 where the second cycle ran at half speed
    head, _, rest = body("306").partition("[1,0]<stdout>:           8 ")
    rows = ("[1,0]<stdout>:           8 " + rest).splitlines()
    table = [r for r in rows if r.split(":", 1)[-1].split()[:1] and r.split(":", 1)[-1].split()[0].isdigit()]
    text = head + "\n".join(table + _half("\n".join(table), "17179869184", 0.5).splitlines()) + "\n"
    _, items = _items("nccl", text)
    it = items["nccl-allreduce_busbw-oop-node"]
    assert it.outcome is E and it.message == ("unstable measurement: two rows at 17179869184 B of one measurement "
                                              "disagree: 483.05 and 241.53 (no one figure to judge; re-run the test)")


def test_signed_wrong_counts_never_cancel():
    # synthetic: fixture 306 with +3 in one row and -3 in another: a sum with signs would read 0
    text = body("306").replace("483.05      0", "483.05      3", 1).replace("0.00      0    12.87", "0.00     -3    12.87", 1)
    text = text.replace("Out of bounds values : 0 OK", "Out of bounds values : 1 FAILED")
    assert text.count("483.05      3") == 1 and "-3    12.87" in text
    rep, items = _items("nccl", text)
    it = items["nccl-integrity-node"]
    assert it.outcome is F and it.message.startswith("rule data_corruption: #wrong 3 at 17179869184 B")


def test_wrong_rows_the_footer_does_not_count_are_contradictory():
    # nccl-tests counts every checked row with a #wrong into "Out of bounds values" (common.cu
    # CheckData: errors[0]++): a row with #wrong 3 under a footer of "0 OK" contradicts it
    text = body("306").replace("483.05      0", "483.05      3", 1)
    _, items = _items("nccl", text)
    it = items["nccl-integrity-node"]
    assert it.outcome is E and it.message.startswith("contradictory: #wrong 3 at 17179869184 B but the footer says")


def test_a_negative_wrong_count_alone_is_an_invalid_figure_not_zero():
    text = body("306").replace("0.00      0    12.87", "0.00     -3    12.87", 1)
    _, items = _items("nccl", text)
    assert items["nccl-integrity-node"].outcome is E
    assert items["nccl-integrity-node"].message.startswith("invalid figure: out-of-place #wrong '-3'")


def test_a_cumulative_error_count_going_down_is_a_contradiction():
    # synthetic gpu_burn output: GPU 1's (cumulative) error count 5 then 2
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n"
            "50.0%  proc'd: 100 (50000 Gflop/s) - 100 (50100 Gflop/s)   errors: 0 - 5   temps: 60 C - 61 C \n"
            "100.0%  proc'd: 200 (50000 Gflop/s) - 200 (50100 Gflop/s)   errors: 0 - 2   temps: 60 C - 61 C \n")
    _, items = _items("gpu_burn", text)
    it = items["gpu_burn-integrity-gpu1"]
    assert it.outcome is E and it.message == "contradictory: cumulative error count went down from 5 to 2"
    assert items["gpu_burn-integrity-gpu0"].outcome is P


def test_perftest_server_and_client_disagreeing_are_error():
    # synthetic variant of fixture 361: the second (client) row of 8 MiB at half the average
    text = body("361")
    i = text.rfind("24056.72")
    text = text[:i] + "12028.36" + text[i + len("24056.72"):]
    _, items = _items("ib_write_bw", text, hca="ib0")
    (it,) = items.values()
    assert it.outcome is E and it.message.startswith("unstable measurement: two rows at 8388608 B of one measurement "
                                                     "disagree: 201.8 and 100.9")


def test_perftest_peak_far_above_the_average_is_unstable():
    # synthetic variant of fixture 361: BW peak tenfold the average
    text = body("361").replace("24056.74", "240567.40")
    _, items = _items("ib_write_bw", text, hca="ib0")
    (it,) = items.values()
    assert it.outcome is E and "the transfer stalled" in it.message and "is 10.0x the average" in it.message


def test_nvbandwidth_sum_disagreeing_with_its_cells_is_contradictory():
    # synthetic variant of fixture 327: the SUM line doubled
    text = body("327").replace("SUM device_to_device_memcpy_read_ce 715.53", "SUM device_to_device_memcpy_read_ce 1431.06")
    rep, items = _items("nvbandwidth", text, sku=None)
    assert rep.invalid == ["device_to_device_memcpy_read_ce: SUM 1431.06 disagrees with its cells' sum 715.56: "
                           "contradictory output"]
    assert {i.outcome for i in items.values()} == {E}


def test_stable_rules():
    assert stable([]).value is None
    assert stable([5.0]).value == 5.0 and not stable([5.0]).unstable
    s = stable([10.0, 10.5, 9.8])
    assert s.value == 10.0 and s.note == "median of 3 rows 9.8-10.5 (spread 7.0%)"
    assert stable([10.0, 20.0]).unstable == "two rows of one measurement disagree: 10 and 20"
    assert stable([10.0, 10.1, 20.0, 20.2]).unstable == "bimodal rows: 2 around 10.05 and 2 around 20.1"
    s = stable([10.0, 10.1, 10.2, 100.0])                # a tenfold outlier: the median, not the max
    assert s.value == pytest.approx(10.15) and not s.unstable and "one outlier 100 left out" in s.note
    assert stable([1.0, 5.0, 9.0, 100.0]).unstable.startswith("scattered rows")
