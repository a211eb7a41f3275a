"""Golden: every real published output in ../shared/perf (copied byte-exact into tests/perf/fixtures)
gives its verdict through parser -> model -> rules, with the exact outcome and message.

Where the shared README's verdict and issue 36 differ, the issue wins (each test says why): a
figure with no floor and no applicable relative rule is ERROR "no floor: <SKU> <metric> (set
perf.floors...)", never PASS "uncertain" (issue 36 item 2); a run spanning several nodes is never
held to a single-node floor (item 3: the rank count is read from the output, here from the
bus/algorithm bandwidth ratio 2(n-1)/n); perftest's MB is 2^20 bytes (perftest_parameters.c
format_factor 0x100000), so 24056.72 MB/s is 201.80 Gb/s, not the README's 192.5.
"""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.floors import sku_name
from nodegate.perf.rules import NodeInput, judge_node

FIX = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "perf"
TOOL = {"30": "nccl", "31": "nccl", "32": "nvbandwidth", "34": "dcgmi", "35": "gpu_burn", "36": "ib_write_bw"}
E, F, P, S = Outcome.ERROR, Outcome.FAIL, Outcome.PASS, Outcome.SKIP


def body(n: str) -> str:
    f = next(FIX.glob(f"{n}-*.txt"))
    return f.read_bytes().decode().split("\n---\n", 1)[1]


def judge(n: str, sku=None, floors=None, rates=None, gpus=8, tool=None, hint=None, hca="ib0"):
    tool = tool or TOOL[n[:2]]
    rep = extract(tool, body(n), hca=hca if tool.startswith("ib_") else None, hint=hint)
    ni = NodeInput("n1", sku=sku, sku_label=sku_name(sku) if sku else "", reports={tool: rep},
                   overrides=floors or {}, hca_rates=rates or {}, gpu_count=gpus)
    return rep, judge_node(ni, {})


def by_id(items):
    return {i.id: i for i in items}


def outcomes(items):
    return {i.outcome for i in items}


def test_every_shared_sample_is_copied_byte_exact():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} absent: nothing to compare the copies with")
    names = sorted(p.name for p in SHARED.iterdir() if p.is_file())
    assert set(names) <= {p.name for p in FIX.iterdir()}
    for n in names:
        assert filecmp.cmp(SHARED / n, FIX / n, shallow=False), n


def test_301_a100_allreduce_plateau_passes_its_floor_not_the_avg_line():
    # 8 ranks (busbw/algbw 1.75), 8 GiB reached: the A100 floor 228 at 8G applies; the Avg line
    # (68.4, a mean over every size) is never the figure; validation 0: correctness unverified
    rep, items = judge("301", sku="a100_40gb")
    it = by_id(items)
    oop, ip = it["nccl-allreduce_busbw-oop-node"], it["nccl-allreduce_busbw-ip-node"]
    assert (oop.outcome, oop.value, oop.threshold) == (P, 235.26, 228.0)
    assert (ip.outcome, ip.value) == (P, 235.03)
    assert oop.message.startswith("235.3 GB/s: floor 228.0 [")
    assert "correctness unverified" in oop.message and "collective all_reduce read from the numbers" in oop.message
    assert rep.info["avg_busbw"] == 68.4048 and rep.info["nranks"] == 8 and rep.info["collective"] == "all_reduce"
    assert not rep.integrity                                       # error column N/A: nothing was checked


def test_302_allgather_without_a_floor_is_error_no_floor_until_the_site_gives_one():
    # README: "PASS (plausible; no all_gather floor)". Issue 36 item 2: no floor and no relative
    # rule -> ERROR "no floor", never a silent PASS; a site floor makes it judged
    rep, items = judge("302", sku="a100_40gb", hint="all_gather_perf")
    it = by_id(items)["nccl-allgather_busbw-oop-node"]
    assert (it.outcome, it.value) == (E, 223.39)
    assert it.message.startswith("no floor: A100-40GB allgather_busbw oop (set perf.floors.allgather_busbw in GB/s "
                                 "to judge it): 223.4 GB/s not judged; no published A100-40GB floor for it; in-node peers:")
    _, items = judge("302", sku="a100_40gb", hint="all_gather_perf", floors={"allgather_busbw": 200})
    assert outcomes(items) == {P} and by_id(items)["nccl-allgather_busbw-ip-node"].threshold == 200
    _, items = judge("302", sku="a100_40gb", hint="all_gather_perf", floors={"allgather_busbw": 240})
    assert outcomes(items) == {F}


def test_302_without_the_binary_the_collective_is_named_as_ambiguous():
    rep, items = judge("302", sku="a100_40gb")
    assert {i.metric for i in items} == {"busbw"} and outcomes(items) == {E}
    assert any("all_gather or alltoall" in n for n in rep.notes)


def test_302_run_as_all_reduce_is_a_contradiction_never_an_allreduce_figure():
    rep, items = judge("302", sku="a100_40gb", hint="all_reduce_perf")
    assert rep.invalid == ["the output is not a all_reduce (the binary run, all_reduce_perf): its numbers read as "
                           "all_gather or alltoall (busbw/algbw 0.875, redop (none), no root column)"]
    assert outcomes(items) == {E}


@pytest.mark.parametrize("n,sku,value", [("303", "a100_80gb", 78.33), ("304", "h100_sxm", 487.09),
                                         ("305", "h100_sxm", 437.79), ("307", "h100_sxm", 338.82)])
def test_multi_node_runs_are_error_no_floor_never_the_single_node_floor(n, sku, value):
    # 16 ranks (busbw/algbw 1.875) on an 8-GPU node: two nodes. README: PASS (304 even against
    # the single-node 460). Issue 36 item 3: the rank count is read; no 16-rank floor is published
    rep, items = judge(n, sku=sku)
    it = by_id(items)["nccl-allreduce_busbw-oop-node"]
    assert rep.info["nranks"] == 16
    assert (it.outcome, it.value) == (E, value)
    assert "the run spans more than this node (16 ranks, 8 GPUs here)" in it.message
    assert it.message.startswith(f"no floor: {sku_name(sku)} allreduce_busbw oop")
    _, items = judge(n, sku=sku, floors={"allreduce_busbw": value * 0.9})
    assert by_id(items)["nccl-allreduce_busbw-oop-node"].outcome is P     # the site's own 2-node floor


def test_305_elided_output_is_read_and_the_trim_said():
    rep, items = judge("305", sku="h100_sxm")
    assert "output trimmed at line 5: rows may be missing" in rep.notes
    assert by_id(items)["nccl-integrity-node"].outcome is P


def test_306_single_node_h100_clears_460_and_every_row_checked():
    # 8 ranks (busbw/algbw 1.75): one p5 node, 16 GiB: the H100 floor 460 (Azure NHC) applies
    _, items = judge("306", sku="h100_sxm")
    it = by_id(items)
    assert [(i.outcome, i.value, i.threshold) for i in items if i.metric.endswith("busbw")] == \
        [(P, 483.05, 460.0), (P, 483.35, 460.0)]
    assert it["nccl-integrity-node"].message == "#wrong 0 in every row (32 rows, out of bounds values 0 OK)"


def test_321_edited_matrix_is_an_inconsistent_measurement():
    rep, items = judge("321")
    assert any("2x3 matrix" in w for w in rep.invalid)
    judged = [i for i in items if i.outcome is not S]
    assert judged and outcomes(judged) == {E}
    assert all(i.message.startswith("invalid measurement: host_to_device_memcpy_ce: 2x3 matrix") for i in judged)


def test_322_json_single_gpu_unknown_model_no_floor_and_waived_tests_skip():
    # README: "PASS if Gen3 SKU, else UNKNOWN; Waived=SKIP": an unknown model has no floor -> ERROR
    rep, items = judge("322", gpus=1)
    h2d = by_id(items)["nvbandwidth-h2d-ce-gpu0"]
    assert (h2d.outcome, h2d.value) == (E, 12.3964)
    assert h2d.message.startswith("no floor: unknown GPU model h2d (set perf.floors.h2d.ce in GB/s to judge it)")
    waived = [i for i in items if i.metric == "waived"]
    assert len(waived) == 17 and outcomes(waived) == {S}
    _, items = judge("322", gpus=1, floors={"h2d.ce": 11.0, "d2h.ce": 11.0})   # a PCIe Gen3 x16 part
    assert {i.outcome for i in items if i.metric in ("h2d", "d2h") and i.kind[3:5] == ("ce", "uni")} == {P}


def test_323_h100_p2p_read_all_56_pairs_pass_floor_and_peers():
    _, items = judge("323", sku="h100_sxm")
    assert len(items) == 56 and outcomes(items) == {P}
    assert min(i.value for i in items) == 370.26 and {i.threshold for i in items} >= {335.0}
    assert by_id(items)["nvbandwidth-p2p_read-ce-gpu0-gpu1"].message == "370.9 GB/s: floor 335.0, 55 peers median 370.9"


def test_324_zero_diagonal_is_not_measured_and_write_pairs_pass_by_peers():
    # the A100 floor is for p2p read; write CE has none: the 55 other pairs carry the verdict, said so
    _, items = judge("324", sku="a100_80gb")
    assert len(items) == 56 and outcomes(items) == {P}
    assert min(i.value for i in items) == 274.89
    assert by_id(items)["nvbandwidth-p2p_write-ce-gpu0-gpu1"].message.startswith(
        "276.1 GB/s: no absolute floor (no published A100-80GB floor for it; set perf.floors.p2p_write.ce): judged by "
        "in-node peers only: 55 peers median")


def test_341_dcgmi_table_all_pass_fans_out_to_8_gpus():
    rep, items = judge("341")
    assert rep.info["gpu_count"] == 8 and outcomes(items) == {P}
    assert {i.subject for i in items if i.metric == "gpu_memory"} == {f"gpu{g}" for g in range(8)}


def test_351_gpu_burn_throughput_by_peers_integrity_on_its_own():
    # no published A100 gpu_burn floor: 7 valid peers each carry the verdict; the error count (0)
    # is judged on its own whatever the throughput (issue 36 item 2)
    rep, items = judge("351", sku="a100_80gb")
    it = by_id(items)
    assert outcomes(items) == {P} and len(items) == 16
    g0 = it["gpu_burn-gflops-sm-gpu0"]
    assert g0.value == 16990.5 and "judged by in-node peers only: 7 peers median 16,954" in g0.message
    assert "median of 2 reported rates 16942-17039 (spread 0.6%)" in g0.message
    assert it["gpu_burn-integrity-gpu0"].message == "0 errors in every progress record; gpu_burn says OK"


@pytest.mark.parametrize("n,gbits", [("361", 201.8), ("362", 194.96)])
def test_ib_write_bw_mib_per_sec_converted_and_counted_once(n, gbits):
    _, items = judge(n, rates={"ib0": 200.0})
    assert [(i.outcome, i.value, i.threshold, i.unit) for i in items] == [(P, gbits, 180.0, "Gb/s")]
    _, items = judge(n)                                            # no port rate: no floor
    assert items[0].outcome is E and "the negotiated rate of HCA ib0 is unknown" in items[0].message
