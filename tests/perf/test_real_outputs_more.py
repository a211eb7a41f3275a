"""More real outputs from public notes (tests/perf/fixtures 313, 314, 358, 366-368, 373; source and expected verdict in
each header): parser -> model -> rules with the exact outcome and message."""

from __future__ import annotations

from nodegate.perf.extract import extract
from nodegate.perf.rules import NodeInput, judge_node

from .test_samples import body, by_id, judge, outcomes

E, F, P = "error", "fail", "pass"


def _o(it) -> str:
    return it.outcome.value


# ---------------------------------------------------------------- nccl-tests
def test_313_two_ranks_on_one_gpu_measure_no_link():
    # nccl-tests 2.18.0 via mpirun --tag-output: both rank lines name 'lab device 0 [0000:02:00]' (one RTX 5090,
    # NCCL_HOSTID faked per rank). Before: with a floor set, 2.30 GB/s PASSed; it measured no GPU-to-GPU path
    rep, items = judge("313", gpus=1, floors={"allreduce_busbw": 1.0})
    assert rep.info["version"] == "2.18.0" and rep.info["nranks"] == 2 and rep.info["collective"] == "all_reduce"
    assert rep.invalid == ["ranks 0 and 1 ran on one GPU (lab device 0 [0000:02:00]): the collective measured no "
                           "link between GPUs"]
    it = by_id(items)
    assert [(_o(i), i.value) for i in items] == [(E, 2.3), (E, 2.31), (E, None)]
    assert it["nccl-allreduce_busbw-oop-node"].message == (
        "invalid measurement: ranks 0 and 1 ran on one GPU (lab device 0 [0000:02:00]): the collective measured no "
        "link between GPUs (2.30 GB/s not judged)")
    assert it["nccl-integrity-node"].message.startswith("not checked: invalid run: ranks 0 and 1 ran on one GPU")


def test_ranks_on_distinct_gpus_of_one_host_are_not_shared():
    # the same host and bus text on different device numbers (superbench's '[0x00]' on every rank) is 8 GPUs
    rep, _ = judge("301")
    assert rep.invalid == [] and rep.info["nranks"] == 8


def test_314_indented_h100_sweep_to_2g_is_no_floor_integrity_pass():
    rep, items = judge("314", sku="h100_sxm")
    it = by_id(items)
    assert rep.info["nranks"] == 8 and rep.info["plateau_size_b"] == 2147483648 and rep.invalid == []
    oop = it["nccl-allreduce_busbw-oop-node"]
    assert (_o(oop), oop.value) == (E, 470.73)
    assert "the sweep stopped at 2147483648 B, below the 17179869184 B the H100 SXM floor 460.0 was measured at" \
        in oop.message
    assert it["nccl-integrity-node"].message == "#wrong 0 in every row (4 rows, out of bounds values 0 OK)"
    assert _o(it["nccl-integrity-node"]) == P


# ---------------------------------------------------------------- gpu_burn
def test_358_tail_with_ok_lines_and_no_progress_record_is_not_measured():
    rep, items = judge("358")
    assert rep.info == {"records": 0, "tested": 8, "percent": None}
    assert len(items) == 16 and {_o(i) for i in items} == {E}
    assert by_id(items)["gpu_burn-gflops-sm-gpu7"].message == "not measured: gpu_burn printed no progress record"
    assert by_id(items)["gpu_burn-integrity-gpu0"].message == "not checked: gpu_burn printed no progress record"


# ---------------------------------------------------------------- perftest (ConnectX-7, IB NDR)
def _hca(n: str, tool: str, rate=400.0):
    rep = extract(tool, body(n), hca="ib0")
    ni = NodeInput("n1", reports={tool: rep}, hca_rates={"ib0": rate} if rate else {}, gpu_count=8)
    return rep, judge_node(ni, {})


def test_366_ndr_write_passes_past_the_cpu_frequency_warning():
    rep, items = _hca("366", "ib_write_bw")
    (it,) = items
    assert rep.info["unit"] == "Gb/sec" and rep.invalid == []
    assert (_o(it), it.value, it.threshold) == (P, 392.34, 360.0)


def test_367_ndr_send_in_mib_converted_passes():
    rep, items = _hca("367", "ib_send_bw")
    (it,) = items
    assert rep.info["unit"] == "MiB/sec"
    assert (_o(it), it.value, it.threshold) == (P, 390.55, 360.0)


def test_368_ndr_read_at_82_percent_fails_the_line_rate_rule():
    _, items = _hca("368", "ib_read_bw")
    (it,) = items
    assert (_o(it), it.value, it.threshold) == (F, 328.61, 360.0)
    assert it.message.startswith("rule sku_floor: 328.6 Gb/s below the HCA ib0 floor 360.0 (90% of the port's 400 Gb/s")


def test_373_send_latency_row_after_two_warnings():
    _, items = _hca("373", "ib_send_lat", rate=None)
    it = by_id(items)
    typ, p99 = it["ib_send_lat-ib_send_lat-typical-hca-ib0"], it["ib_send_lat-ib_send_lat-p99-hca-ib0"]
    assert (_o(typ), typ.value, typ.threshold) == (P, 1.27, 2.5)
    assert (_o(p99), p99.value) == (E, 1.37) and p99.message.startswith("no floor: HCA ib0 ib_send_lat p99")
    assert outcomes(items) == {typ.outcome, p99.outcome}


# ---------------------------------------------------------------- dcgmi
def test_346_json_with_a_warning_preamble_and_null_tests_is_read_and_level_1_proves_no_hardware():
    rep, items = judge("346")
    assert rep.info["layout"] == "json3" and rep.invalid == []
    by = by_id(items)
    sw = [i for i in items if i.id != "dcgmi-run-node"]
    assert len(sw) == 80 and {_o(i) for i in sw} == {P}            # 10 tests x 8 GPUs, the nulls skipped
    assert by["dcgmi-denylist-gpu7"].message == "dcgmi Denylist: pass"
    run = by["dcgmi-run-node"]
    assert _o(run) == E and run.message == ("dcgmi diag ran no hardware, integration or stress test: every one was "
                                            "skipped or not run (nothing about the GPUs was proven)")


# ---------------------------------------------------------------- nvbandwidth v0.10.0
def test_329_v010_d2d_write_with_coefficient_of_variation_line_passes_by_peers():
    rep, items = judge("329", sku="h100_sxm")
    assert rep.info["version"] == "v0.10.0" and rep.invalid == []
    assert len(items) == 56 and {_o(i) for i in items} == {P}
    it = by_id(items)["nvbandwidth-p2p_write-ce-gpu0-gpu1"]
    assert it.value == 397.44 and "judged by in-node peers only: 55 peers median 397.5" in it.message


def test_330_v010_h2d_clears_the_azure_floor():
    rep, items = judge("330", sku="h100_sxm", tool="nvbandwidth")
    assert [(i.subject, _o(i), i.value) for i in items][:2] == [("gpu0", P, 55.37), ("gpu1", P, 55.36)]
    assert len(items) == 8 and {_o(i) for i in items} == {P} and all("floor 48.0" in i.message for i in items)


def test_331_single_laptop_gpu_run_with_a_stray_line_reads_every_figure_and_judges_none():
    rep, items = judge("331", gpus=1, tool="nvbandwidth")
    assert rep.info["devices"] == {0: "NVIDIA GeForce RTX 3050 Laptop GPU"} and rep.invalid == []
    vals = {i.id: (_o(i), i.value) for i in items}
    assert vals["nvbandwidth-h2d-ce-gpu0"] == (E, 12.98) and vals["nvbandwidth-d2h-sm-gpu0"] == (E, 8.76)
    assert vals["nvbandwidth-waived-test"] == ("skip", None)
    assert all(i.message.startswith("no floor: unknown GPU model") for i in items if i.value is not None)


def test_332_v010_two_gpus_without_the_header_are_read_and_judged_only_with_a_model():
    # Azure NHC's own test input: no version/device lines, so no GPU model: every figure is read, none judged
    rep, items = judge("332", gpus=2, tool="nvbandwidth")
    assert rep.info["devices"] == {} and rep.invalid == []
    assert [(i.id, _o(i), i.value) for i in items] == [
        ("nvbandwidth-h2d-ce-gpu0", E, 26.03), ("nvbandwidth-h2d-ce-gpu1", E, 25.94),
        ("nvbandwidth-d2h-ce-gpu0", E, 25.97), ("nvbandwidth-d2h-ce-gpu1", E, 26.0),
        ("nvbandwidth-p2p_read-ce-gpu0-gpu1", E, 276.07), ("nvbandwidth-p2p_read-ce-gpu1-gpu0", E, 276.19)]
    assert all(i.message.startswith("no floor: unknown GPU model") for i in items)
    # the same figures on an H100 SXM node: below the Azure NHC floors (48 GB/s host<->device, 335 GB/s read)
    _, items = judge("332", sku="h100_sxm", gpus=2, tool="nvbandwidth")
    assert {_o(i) for i in items} == {F} and len(items) == 6
