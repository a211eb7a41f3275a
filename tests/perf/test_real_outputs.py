"""Golden: real outputs found in public issues, docs and mailing lists (tests/perf/fixtures 308-391,
each with its source and expected verdict in its header; MORE.md lists them), and the session's own
real H200 run, through parser -> model -> rules with the exact outcome and message. Each test says
why its verdict is what it is."""

from __future__ import annotations

import pytest

from nodegate.outcomes import Outcome
from nodegate.perf.rules import NodeInput, judge_node
from nodegate.perf.validity import gpu_states

from .test_samples import FIX, body, by_id, judge, outcomes

E, F, P, S = Outcome.ERROR, Outcome.FAIL, Outcome.PASS, Outcome.SKIP


def test_every_new_fixture_names_its_source_and_verdict():
    for f in sorted(FIX.glob("3*.txt")):
        head = f.read_text().split("\n---\n", 1)[0]
        assert "source: " in head and "expected_verdict: " in head and "kind: " in head, f.name


# ---------------------------------------------------------------- nccl-tests
def test_308_sixteen_single_rank_runs_are_not_measured_and_interleaved():
    # busbw 0.00 with algbw up to 7 TB/s: one rank moves nothing (factor 2(n-1)/n = 0); the rows of
    # 16 runs interleave (sizes out of one sweep's order): ERROR naming both, never the best row
    rep, items = judge("308", sku="h100_sxm")
    it = by_id(items)["nccl-allreduce_busbw-oop-node"]
    assert it.outcome is E and it.value is None
    assert it.message == ("not measured: bus bandwidth 0.00 at 2147483648 B with algorithm bandwidth 248.39 GB/s: a "
                          "collective of a single rank (nranks 1) moves nothing between GPUs; rows of several runs "
                          "interleaved (sizes out of one run's order: [134217728, 134217728, 536870912, 536870912, "
                          "268435456, 268435456]...)")
    assert "rows without their column header (output trimmed): columns read from the row shape" in rep.notes


def test_309_rows_without_header_read_from_their_shape_two_nodes_no_floor():
    rep, items = judge("309", sku="h100_sxm")
    it = by_id(items)
    assert rep.info["nranks"] == 16 and rep.info["plateau_size_b"] == 2147483648
    assert (it["nccl-allreduce_busbw-oop-node"].outcome, it["nccl-allreduce_busbw-oop-node"].value) == (E, 444.25)
    assert "the run spans more than this node (16 ranks, 8 GPUs here)" in it["nccl-allreduce_busbw-oop-node"].message
    assert it["nccl-integrity-node"].outcome is P


def test_310_a_run_that_died_names_the_failure_not_unparsable():
    _, items = judge("310", sku="h100_sxm")
    (it,) = items
    assert it.outcome is E and it.message.startswith(
        "invalid measurement: nccl-tests printed no result row: the run failed: h100-4:739790:739878 [4] "
        "misc/socket.cc:397 NCCL WARN Net : connecting to address  with family 33621")
    assert "Test NCCL failure common.cu:1057 'internal error / '" in it.message


def test_311_pre213_error_column_is_a_deviation_within_tolerance():
    # 2e-06 is the largest deviation, not a count; nccl-tests' own tolerance is 1e-5 x (nranks - 1)
    rep, items = judge("311")
    it = by_id(items)
    assert it["nccl-integrity-node"].outcome is P
    assert it["nccl-integrity-node"].message.startswith("error within nccl-tests' tolerance in every row (2 rows")
    assert it["nccl-allreduce_busbw-oop-node"].outcome is E                 # V100: no floor
    assert it["nccl-allreduce_busbw-oop-node"].value == 4.32          # the largest size, 512 MiB


def test_312_alltoall_blank_redop_read_and_the_contradiction_named():
    # the header has a redop column the rows leave blank (11 of 12 tokens: once the whole output's
    # ParseError); the in-place error 1e+00 is far above the tolerance while the footer counts 0
    rep, items = judge("312")
    it = by_id(items)
    assert it["nccl-integrity-node"].outcome is E and it["nccl-integrity-node"].message.startswith(
        "contradictory: error 1 at 268435456 B above nccl-tests' tolerance 0.00063 (float x (nranks - 1)) but the "
        "footer says 'Out of bounds values : 0 OK'")
    assert {i.metric for i in items if i.value is not None} == {"busbw"}        # all_gather or alltoall: not named
    assert rep.info["nranks"] == 64


# ---------------------------------------------------------------- nvbandwidth
def test_325_quoted_running_lines_sm_copies_pass_by_peers_only():
    _, items = judge("325", sku="h100_sxm")
    assert len(items) == 16 and outcomes(items) == {P}
    h2d = by_id(items)["nvbandwidth-h2d-sm-gpu3"]
    assert h2d.value == 35.03 and h2d.message.startswith(
        "35.0 GB/s: no absolute floor (no published H100 SXM floor for it; set perf.floors.h2d.sm): judged by in-node "
        "peers only: 7 peers median 35.2")


def test_326_pattern_assert_is_node_data_corruption():
    _, items = judge("326", sku="a100_80gb")
    (it,) = items
    assert (it.id, it.outcome, it.rules) == ("nvbandwidth-integrity-node", F, ["data_corruption"])
    assert it.message.startswith("rule data_corruption: device_to_device_memcpy_read_ce: Invalid value when checking "
                                 "the pattern at 0x70a640000000")


def test_327_trimmed_running_line_named_by_its_sum_line():
    rep, items = judge("327", gpus=6)
    assert "test named from its SUM line (device_to_device_memcpy_read_ce): its 'Running' line is missing" in rep.notes
    assert len(items) == 30 and outcomes(items) == {P}
    assert not rep.invalid                                   # the cells' sum agrees with SUM 715.53


def test_328_one_gpu_sm_copy_has_no_floor():
    _, items = judge("328", sku="a100_40gb", gpus=1)
    (it,) = items
    assert it.outcome is E and it.message.startswith(
        "no floor: A100-40GB h2d (set perf.floors.h2d.sm in GB/s to judge it): 25.1 GB/s not judged")


# ---------------------------------------------------------------- dcgmi
def test_342_internal_error_is_error_and_gpu_lines_after_wrapped_warnings_are_read():
    _, items = judge("342", gpus=4)
    it = by_id(items)
    assert {i.outcome for i in items if i.metric in ("software", "memory")} == {P}
    assert {i.subject for i in items if i.metric == "memory"} == {"gpu0", "gpu1", "gpu2", "gpu3"}
    pcie = [i for i in items if i.metric == "pcie"]
    assert [i.subject for i in pcie] == ["gpu0", "gpu1", "gpu2", "gpu3"] and outcomes(pcie) == {E}
    assert it["dcgmi-pcie-gpu0"].message.startswith(
        "dcgmi pcie: error: the test did not run: DCGM could not run it (There was an internal error during the test:")
    assert it["dcgmi-pcie-gpu0"].message.endswith("the GPU line says pass")


def test_343_slurm_affinity_refusal_is_error_on_all_eight_gpus():
    _, items = judge("343")
    pcie = [i for i in items if i.metric == "pcie"]
    assert len(pcie) == 8 and outcomes(pcie) == {E}
    assert outcomes([i for i in items if i.metric != "pcie"]) == {P}


def test_344_everything_skipped_is_a_node_error():
    _, items = judge("344", gpus=1)
    it = by_id(items)
    assert it["dcgmi-software-gpu0"].outcome is P
    assert {i.outcome for i in items if i.metric not in ("software", "run")} == {S}
    assert it["dcgmi-run-node"].outcome is E and it["dcgmi-run-node"].message == (
        "dcgmi diag ran no hardware, integration or stress test: every one was skipped or not run (nothing about "
        "the GPUs was proven)")


def test_345_user_guide_4x_table_all_pass():
    _, items = judge("345", gpus=4)
    assert len(items) == 28 and outcomes(items) == {P}


# ---------------------------------------------------------------- gpu_burn
@pytest.mark.parametrize("n,init", [("352", 'Error in "init": CUBLAS_STATUS_NOT_INITIALIZED'),
                                    ("353", "Error: CUDA_ERROR_UNKNOWN")])
def test_init_error_with_0_gflops_and_ok_is_not_measured_never_pass(n, init):
    _, items = judge(n)
    assert len(items) == 16 and outcomes(items) == {E}
    it = by_id(items)
    assert it["gpu_burn-gflops-sm-gpu0"].message == (
        f"not measured: 0 Gflop/s in every progress record: the GPU never computed (Couldn't init a GPU test: {init})")
    assert it["gpu_burn-integrity-gpu0"].message == (
        f"not checked: 0 Gflop/s in every progress record: the GPU never computed (Couldn't init a GPU test: {init})")


@pytest.mark.parametrize("n,gpus", [("354", 1), ("355", 8)])
def test_died_is_could_not_evaluate_not_data_corruption(n, gpus):
    _, items = judge(n, gpus=gpus)
    assert len(items) == 2 * gpus and outcomes(items) == {E}
    assert all("died (DIED!)" in i.message for i in items)
    assert not any(i.rules for i in items)


def test_356_faulty_is_integrity_fail_throughput_judged_apart():
    _, items = judge("356", gpus=16)
    it = by_id(items)
    assert {i.outcome for i in items if i.metric == "integrity"} == {F}
    assert {i.outcome for i in items if i.metric == "gflops"} == {P}
    assert it["gpu_burn-integrity-gpu0"].message.startswith("rule data_corruption: gpu_burn says FAULTY (errors 0)")
    assert "error count -524288000 is negative: not a count" in it["gpu_burn-integrity-gpu1"].message


def test_357_trimmed_output_died_gpu_and_never_computed_gpus():
    rep, items = judge("357")
    it = by_id(items)
    assert rep.notes == ["output trimmed at line 15: rows may be missing"]
    assert it["gpu_burn-gflops-sm-gpu0"].message == "not measured: its gpu_burn worker died (DIED!) (Error in \"load module\":)"
    assert it["gpu_burn-gflops-sm-gpu1"].message.startswith("not measured: 0 Gflop/s in every progress record")
    assert outcomes(items) == {E}


# ---------------------------------------------------------------- perftest
def test_363_bidirectional_sum_judged_against_twice_the_rate():
    _, items = judge("363", rates={"ib0": 100.0})
    (it,) = items
    assert (it.id, it.outcome, it.value, it.threshold) == ("ib_write_bw-ib_write_bw-bidir-hca-ib0", F, 98.02, 180.0)
    assert it.message.startswith("rule sku_floor: 98.0 Gb/s below the HCA ib0 floor 180.0 (90% of 2 x the port's 100 Gb/s")
    _, items = judge("363")
    assert items[0].outcome is E and items[0].message.startswith(
        "no floor: HCA ib0 ib_write_bw (set perf.floors.ib_write_bw.bidir in Gb/s to judge it): 98.0 Gb/s not judged; "
        "the negotiated rate of HCA ib0 is unknown")


def test_364_quoted_server_output_mib_converted():
    rep, items = judge("364", tool="ib_send_bw", rates={"ib0": 100.0})
    (it,) = items
    assert (it.outcome, it.value, it.threshold) == (P, 96.56, 90.0)
    assert rep.notes == ["quoted output ('> ' markers removed)"]


def test_365_ndr_send_at_88_percent_of_line_rate_fails():
    _, items = judge("365", tool="ib_send_bw", rates={"ib0": 400.0})
    (it,) = items
    assert (it.outcome, it.value, it.threshold) == (F, 353.53, 360.0)


def test_371_latency_typical_against_the_ceiling_p99_needs_a_site_ceiling():
    _, items = judge("371", tool="ib_read_lat")
    it = by_id(items)
    typ, p99 = it["ib_read_lat-ib_read_lat-typical-hca-ib0"], it["ib_read_lat-ib_read_lat-p99-hca-ib0"]
    assert (typ.outcome, typ.value, typ.threshold) == (P, 1.79, 4.5)
    assert typ.message == "1.79 usec: ceiling 4.50"
    assert p99.outcome is E and p99.message.startswith(
        "no floor: HCA ib0 ib_read_lat p99 (set perf.floors.ib_read_lat.p99 in usec to judge it): 1.88 usec not judged")
    _, items = judge("371", tool="ib_read_lat", floors={"ib_read_lat.p99": 1.5})
    assert by_id(items)["ib_read_lat-ib_read_lat-p99-hca-ib0"].outcome is F       # above the site's ceiling


def test_372_a_bare_figure_names_what_is_missing():
    _, items = judge("372", tool="ib_write_lat")
    assert [(i.id, i.outcome) for i in items] == [("ib_write_lat-ib_write_lat-typical-hca-ib0", E),
                                                  ("ib_write_lat-ib_write_lat-p99-hca-ib0", E)]
    assert items[0].message == (
        "ib_write_lat on ib0 printed only a bare figure (1.84657): perftest --output=bandwidth|latency names "
        "neither the test, the message size nor the unit")


# ---------------------------------------------------------------- dcgmproftester
def test_381_no_figure_printed_is_not_measured():
    _, items = judge("381", tool="dcgmproftester", hint="t1007", gpus=1)
    (it,) = items
    assert it.outcome is E and it.message == (
        "not measured: dcgmproftester printed no figure for test 1007 (32 lines without one; DCGM 4.x prints gflops "
        "only with --cublas: NVIDIA/DCGM issue 239)")


def test_382_first_zero_sample_left_out_median_judged():
    rep, items = judge("382", tool="dcgmproftester", hint="t1007", gpus=1)
    (it,) = items
    assert it.value == 12.254 and it.outcome is E and it.message.startswith("no floor: unknown GPU model fp32")
    _, items = judge("382", tool="dcgmproftester", hint="t1007", sku="h200", gpus=1)
    assert items[0].outcome is F and items[0].threshold == 37.5            # DCGM's H200 sm_stress target


def test_383_tensor_figures_read():
    _, items = judge("383", tool="dcgmproftester", hint="t1004", gpus=1)
    (it,) = items
    assert (it.metric, it.value, it.unit) == ("tensor", 252.889, "TFLOPS")


# ---------------------------------------------------------------- the session's real H200 run
def test_391_device_run_builtin_h200_new_verdicts():
    # device run 1 (real H200): gemm_bf16 659 TFLOPS and local_copy 4066 GB/s PASSed "uncertain: no
    # published H200 floor" before (issue 36 kind 2); now ERROR "no floor" (one GPU: no peers)
    rep, items = judge("391", sku="h200", tool="builtin")
    st = gpu_states((FIX / "391-builtin-h200-device-run-1.state").read_text())
    items = judge_node(NodeInput("gpu-node", "h200", "H200", {"builtin": rep}, states={"builtin": st}, gpu_count=1), {})
    it = by_id(items)
    assert [(i.id, i.outcome) for i in items] == [
        ("builtin-gemm_bf16-sm-gpu0", E), ("builtin-h2d-ce-gpu0", P), ("builtin-d2h-ce-gpu0", P),
        ("builtin-local_copy-sm-gpu0", E), ("builtin-integrity-gpu0", P)]
    assert it["builtin-gemm_bf16-sm-gpu0"].message.startswith(
        "no floor: H200 gemm_bf16 (set perf.floors.gemm_bf16.sm in TFLOPS to judge it): 659.0 TFLOPS not judged; "
        "no published H200 floor for it; in-node peers: 0 valid figure(s) of other subjects, 3 needed")
    assert it["builtin-h2d-ce-gpu0"].message == "54.4 GB/s: floor 48.0"
    assert "no throttling clocks event reason during the test" in it["builtin-h2d-ce-gpu0"].validity
    # the site's own floors judge them
    rep2 = judge("391", sku="h200", tool="builtin", gpus=1, floors={"gemm_bf16.sm": 600, "local_copy.sm": 3500})[1]
    assert outcomes(rep2) == {P}
    assert body("391").startswith('{"nodegate_perf": 1')
