"""Clocks event reasons (checks.md "Clocks event reasons")."""

from nodegate.facts import GpuFacts
from nodegate.outcomes import Outcome

from .fakes import BUS, covers, gpu, healthy, reasons, run, spec


def sample(mask, pstate="P0"):
    return {0: GpuFacts(index=0, pci_bus_id=BUS, pstate=pstate, clocks_event_reasons_mask=mask, source="smi_csv")}


@covers("NG-CLK-001")
def test_only_gpu_idle_passes():
    r = run("NG-CLK-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "active: none of the fail reasons; 1 sample(s)"


@covers("NG-CLK-001")
def test_hw_slowdown_confirmed_by_samples_fails():
    g = gpu(clocks_event_reasons=reasons(hw_slowdown=True, hw_power_brake_slowdown=True), clocks_event_reasons_mask=0x88)
    f = healthy(gpus=[g], clocks_samples=[sample(0x88), sample(0x88), sample(0x88)])
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "active: hw_slowdown, hw_power_brake_slowdown; 3 sample(s)"


@covers("NG-CLK-001")
def test_power_brake_active_while_parent_not_active_fails():
    g = gpu(clocks_event_reasons=reasons(hw_power_brake_slowdown=True), clocks_event_reasons_mask=None)
    r = run("NG-CLK-001", healthy(gpus=[g], clocks_samples=[sample(0x80)] * 3))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "active: hw_power_brake_slowdown; 3 sample(s)"


@covers("NG-CLK-001")
def test_transient_reason_cleared_in_later_sample_passes():
    g = gpu(clocks_event_reasons=reasons(sw_thermal_slowdown=True), clocks_event_reasons_mask=0x20)
    r = run("NG-CLK-001", healthy(gpus=[g], clocks_samples=[sample(0x20), sample(0x0), sample(0x0)]))
    assert r.outcome is Outcome.PASS
    assert r.observed == "active: none of the fail reasons; 3 sample(s); transient: sw_thermal_slowdown (1/3 samples)"


@covers("NG-CLK-001")
def test_sustained_in_samples_though_snapshot_clear_fails():
    r = run("NG-CLK-001", healthy(clocks_samples=[sample(0x40)] * 3))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "active: hw_thermal_slowdown; 3 sample(s)"


@covers("NG-CLK-001")
def test_sw_power_cap_is_healthy():
    g = gpu(clocks_event_reasons=reasons(sw_power_cap=True), clocks_event_reasons_mask=0x4)
    assert run("NG-CLK-001", healthy(gpus=[g], clocks_samples=[sample(0x4)])).outcome is Outcome.PASS


@covers("NG-CLK-001")
def test_snapshot_without_samples_fails_unconfirmed():
    g = gpu(clocks_event_reasons=reasons(hw_slowdown=True), clocks_event_reasons_mask=0x8)
    f = healthy(gpus=[g]).without("clocks_samples")
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.FAIL
    assert "single snapshot" in r.message


@covers("NG-CLK-001")
def test_mask_only_source_is_read_by_bits():
    g = gpu(clocks_event_reasons={}, clocks_event_reasons_mask=0x8)
    r = run("NG-CLK-001", healthy(gpus=[g], clocks_samples=[sample(0x8)] * 3))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "active: hw_slowdown; 3 sample(s)"


@covers("NG-CLK-001")
def test_fail_reason_set_is_spec():
    g = gpu(clocks_event_reasons=reasons(sw_thermal_slowdown=True), clocks_event_reasons_mask=0x20)
    f = healthy(gpus=[g], clocks_samples=[sample(0x20)] * 3)
    r = run("NG-CLK-001", f, spec(clocks={"fail_reasons": ["hw_slowdown"]}))
    assert r.outcome is Outcome.PASS


@covers("NG-CLK-001")
def test_reasons_not_reported_is_error():
    r = run("NG-CLK-001", healthy(gpus=[gpu(clocks_event_reasons={}, clocks_event_reasons_mask=None)]))
    assert r.outcome is Outcome.ERROR
    assert r.observed == "not reported"


@covers("NG-CLK-001")
def test_later_sample_not_reporting_reason_is_not_cleared_fails():
    # samples without the mask (None) are no evidence the reason cleared: confirmed active
    g = gpu(clocks_event_reasons=reasons(hw_slowdown=True), clocks_event_reasons_mask=0x8)
    f = healthy(gpus=[g], clocks_samples=[sample(None), sample(None)])
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("active: hw_slowdown; 2 sample(s)")
    assert "transient" not in r.observed


@covers("NG-CLK-001")
def test_fail_reason_not_reported_is_error():
    rs = reasons(gpu_idle=True)
    del rs["hw_power_brake_slowdown"]
    g = gpu(clocks_event_reasons=rs, clocks_event_reasons_mask=None)
    r = run("NG-CLK-001", healthy(gpus=[g]))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("clocks event reason(s) not reported: hw_power_brake_slowdown")
    assert r.observed.endswith("; not reported: hw_power_brake_slowdown")


@covers("NG-CLK-001")
def test_fail_reason_unsupported_by_driver_stays_listed_and_passes():
    from nodegate.facts import NA
    rs = reasons(gpu_idle=True)
    rs["hw_power_brake_slowdown"] = NA
    g = gpu(clocks_event_reasons=rs, clocks_event_reasons_mask=None)
    r = run("NG-CLK-001", healthy(gpus=[g]))
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("; not reported by this driver: hw_power_brake_slowdown")
