"""Burn-in end to end on local:// with time-varying shims: each scenario's outcomes, exactly.

Every scenario is a 2-GPU H200 node (tests/burnin/shims.py); time runs from the script's start.
"""

from __future__ import annotations

import json

from .shims import Phase, Scenario, OLD_DRIVER_FIELDS

HEALTHY = {
    "burnin_load": "pass", "burnin_gpu_count": "pass",
    "burnin_clocks[gpu0]": "pass", "burnin_clocks[gpu1]": "pass",
    "burnin_pcie_link[gpu0]": "pass", "burnin_pcie_link[gpu1]": "pass",
    "burnin_ecc[gpu0]": "pass", "burnin_ecc[gpu1]": "pass",
    "burnin_remapped_rows[gpu0]": "pass", "burnin_remapped_rows[gpu1]": "pass",
    "burnin_xid[gpu0]": "pass", "burnin_xid[gpu1]": "pass",
    "burnin_temperature[gpu0]": "pass", "burnin_temperature[gpu1]": "pass",
}


def test_healthy_node_passes_everything(scenario):
    b, data, got = scenario(Scenario())
    assert got == HEALTHY
    assert data.load.kind == "gpu-burn" and data.load.rc == 0
    # sample.0 before the load, the sampler's from sample.1 on, sample.end after the load
    seqs = [s.seq for s in data.samples]
    assert (seqs[0], seqs[1], seqs[-1]) == ("0", "1", "end")
    assert data.samples[-1].gpus[0].link_gen == 5
    assert json.loads(b.text("burnin.run"))["status"] == "ok"


def test_node_that_starts_throttling_fails_clocks_on_that_gpu(scenario):
    # HW thermal slowdown (0x40 with its parent HW slowdown 0x8) from second 3 on GPU 1, counter growing
    sc = Scenario(phases=[Phase(3, 1, {"clocks_event_reasons.active": "0x0000000000000048",
                                       "clocks_event_reasons_counters.hw_thermal_slowdown": "=(t-2)*1000000"})])
    _, _, got = scenario(sc)
    assert got == {**HEALTHY, "burnin_clocks[gpu1]": "fail"}


def test_sw_power_cap_at_full_load_is_healthy(scenario):
    sc = Scenario(phases=[Phase(2, 0, {"clocks_event_reasons.active": "0x0000000000000004"})])
    _, _, got = scenario(sc)
    assert got == HEALTHY


def test_single_sample_blip_without_counters_is_not_confirmed(scenario):
    # old driver: no counters, throttle field names; HW slowdown in exactly one sample (second 3)
    sc = Scenario(fields=OLD_DRIVER_FIELDS,
                  phases=[Phase(3, 0, {"clocks_event_reasons.active": "0x0000000000000008"}),
                          Phase(4, 0, {"clocks_event_reasons.active": "0x0000000000000000"})])
    b, data, got = scenario(sc, max_temperature_c=85)
    assert "clocks_throttle_reasons.active" in data.fields and not any("counters" in f for f in data.fields)
    # the blip lasts one sampling interval (1 s of wall time): on a loaded machine two samples can
    # both fall inside it, and then the next sample does confirm it (checks.md: a reason counts when
    # the next sample shows it too). The verdict follows the samples actually taken, either way.
    hits = [s.seq for s, g in data.series(0) if isinstance(g.mask, int) and g.mask & 0x8]
    want = HEALTHY if len(hits) <= 1 else {**HEALTHY, "burnin_clocks[gpu0]": "fail"}
    assert got == want, hits


def test_link_that_trains_down_under_load_fails(scenario):
    sc = Scenario(phases=[Phase(3, 0, {"pcie.link.gen.current": "3", "pcie.link.width.current": "8"})])
    _, _, got = scenario(sc)
    assert got == {**HEALTHY, "burnin_pcie_link[gpu0]": "fail"}


def test_ecc_errors_appearing_mid_run_fail_ecc_and_remap(scenario):
    sc = Scenario(phases=[Phase(3, 1, {"ecc.errors.uncorrected.volatile.total": "2",
                                       "remapped_rows.uncorrectable": "1", "remapped_rows.pending": "Yes"})],
                  klog_new=[(3, "[ 1600.100000] NVRM: Xid (PCI:0000:3b:00): 48, pid=1234, name=gpu_burn, "
                                "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer")])
    _, _, got = scenario(sc)
    assert got == {**HEALTHY, "burnin_ecc[gpu1]": "fail", "burnin_remapped_rows[gpu1]": "fail",
                   "burnin_xid[gpu1]": "fail"}


def test_gpu_falling_off_the_bus_fails_gpu_count_and_xid(scenario):
    sc = Scenario(vanish={1: 3},
                  klog_new=[(3, "[ 1601.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, name=, "
                                "GPU has fallen off the bus.")])
    _, _, got = scenario(sc)
    assert got == {**HEALTHY, "burnin_gpu_count": "fail", "burnin_xid[gpu1]": "fail"}


def test_load_that_dies_early_fails_with_its_output(scenario):
    b, data, got = scenario(Scenario(gpu_burn_die_at=2), duration=8)
    assert got == {**HEALTHY, "burnin_load": "fail"}
    assert "CUDA error 999" in data.load.output and data.load.rc == 1


def test_hot_gpu_fails_temperature(scenario):
    sc = Scenario(phases=[Phase(2, 0, {"temperature.gpu": "91", "temperature.gpu.tlimit": "-1"})])
    _, _, got = scenario(sc)
    assert got == {**HEALTHY, "burnin_temperature[gpu0]": "fail"}


def test_no_load_tool_errors_every_item(scenario):
    b, data, got = scenario(Scenario(gpu_burn=False))
    assert data is None
    assert got == {"error": "no load available: dcgmi not found, gpu_burn not found, no burnin.command in the "
                            "spec [burnin.tools]"}
    assert not b.has("burnin.samples")


def test_command_load_from_spec_runs_for_the_duration(scenario):
    b, data, got = scenario(Scenario(gpu_burn=False), command="sleep {seconds}", load="command")
    assert got == HEALTHY
    assert data.load.kind == "command" and data.load.rc == 0


def test_dcgmi_results_become_items_per_gpu_and_test(scenario):
    js = {"DCGM Diagnostic": {"test_categories": [
        {"category": "Stress", "tests": [{"name": "targeted_stress", "results": [
            {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
            {"entity_group": "GPU", "entity_id": 1, "status": "Fail",
             "warnings": [{"warning": "GPU 1 throttled: HW slowdown", "error_id": 3}]}]}]},
        {"category": "Hardware", "tests": [{"name": "memtest", "results": [
            {"entity_group": "GPU", "entity_id": 0, "status": "Skip"},
            {"entity_group": "GPU", "entity_id": 1, "status": "Pass"}]}]}]}}
    _, data, got = scenario(Scenario(gpu_burn=False, dcgmi={"seconds": 3, "json": js, "rc": 226}), duration=6)
    assert data.load.kind == "dcgmi"
    assert got == {**HEALTHY, "burnin_dcgm[gpu0-targeted_stress]": "pass", "burnin_dcgm[gpu1-targeted_stress]": "fail",
                   "burnin_dcgm[gpu0-memtest]": "skip", "burnin_dcgm[gpu1-memtest]": "pass"}


def test_dcgmi_still_running_at_the_deadline_is_stopped(scenario):
    _, data, got = scenario(Scenario(gpu_burn=False, dcgmi={"seconds": 60, "json": {}, "rc": 0}), duration=4)
    assert data.load.stopped == "deadline"
    assert data.load.rc == 130  # the shim's SIGINT handler (dcgmi stops its diag on SIGINT)
    assert got == HEALTHY


def test_load_that_exits_0_long_before_the_window_ends_is_run_again_until_the_window_is_spent(scenario):
    # issue 37.6: the window is the window; "sleep 1" in an 8 s window runs about 8 times (was a FAIL
    # "died early"; before that, a dcgmi returning at once ended the window and PASSed)
    _, data, got = scenario(Scenario(gpu_burn=False), duration=8, load="command", command="sleep 1",
                            early_exit_tolerance_s=2)
    assert got == HEALTHY
    assert data.load.rc == 0
    runs = data.load.output.count("NODEGATE-BURNIN-RUN ")
    assert runs >= 3, data.load.output
    assert data.load.exit_epoch - data.load.started_epoch >= 8 - 2


def test_dcgmi_that_returns_at_once_is_repeated_and_a_failure_in_any_run_fails(scenario, tmp_path):
    # the shim's answer changes after its first run: run 1 passes, later runs fail GPU 1's memtest
    js = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name": "memtest", "results": [
        {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
        {"entity_group": "GPU", "entity_id": 1, "status": "Pass"}]}]}]}}
    bad = json.loads(json.dumps(js))
    bad["DCGM Diagnostic"]["test_categories"][0]["tests"][0]["results"][1].update(
        status="Fail", warnings=[{"warning": "Memory test failed on GPU 1", "error_id": 12}])
    _, data, got = scenario(Scenario(gpu_burn=False, dcgmi={"seconds": 0, "json": js, "json_later": bad, "rc": 0}),
                            duration=6)
    assert data.load.kind == "dcgmi"
    assert data.load.output.count("NODEGATE-BURNIN-RUN ") >= 3
    assert got == {**HEALTHY, "burnin_dcgm[gpu0-memtest]": "pass", "burnin_dcgm[gpu1-memtest]": "fail"}


def test_nvidia_smi_refusing_every_field_errors_every_item_naming_it(scenario):
    # every name refused: no field, so no sample and no load; burnin.fields says why (it was an empty,
    # "ok" item and every item read "evidence not collected: burnin.samples")
    b, data, got = scenario(Scenario(fields=("no.such.field",)), duration=2)
    assert data is None
    assert list(got) == ["error"]
    assert got["error"].startswith("exit code 1: nvidia-smi accepted none of the sample fields; its answer to index,")
    assert "is not a valid field to query" in got["error"] and got["error"].endswith("[burnin.fields]")
    assert not b.has("burnin.samples") and not b.has("burnin.load")
