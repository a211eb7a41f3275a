"""NG-CFG-001..004: firmware versions, power limit, MIG mode, compute mode."""

from nodegate.facts import NA
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR


def eight(per_gpu=None):
    gs = [gpu(i, bus=f"0000:{0x19 + i:02x}:00.0", **(per_gpu or {}).get(i, {})) for i in range(8)]
    return healthy(gpus=gs, driver_gpus=[])


@covers("NG-CFG-001")
def test_same_firmware_on_every_gpu_passes_and_the_odd_one_fails():
    assert [run("NG-CFG-001", eight(), gpu=i).outcome for i in range(8)] == [P] * 8
    f = eight({5: {"vbios_version": "96.00.74.00.0B"}})
    r = run("NG-CFG-001", f, gpu=5)
    assert r.outcome is F
    assert "VBIOS 96.00.74.00.0B differs from the node's other GPUs (96.00.A5.00.1A on 7 of 8)" in r.message
    assert run("NG-CFG-001", f, gpu=0).outcome is P


@covers("NG-CFG-001")
def test_no_majority_fails_every_gpu_of_the_tie():
    f = eight({i: {"inforom_image": "G520.0200.00.05"} for i in range(4)})
    assert {run("NG-CFG-001", f, gpu=i).outcome for i in range(8)} == {F}
    assert "no majority" in run("NG-CFG-001", f, gpu=7).message


@covers("NG-CFG-001")
def test_spec_versions_exact_or_list():
    sp = spec(config={"vbios": "96.00.A5.00.1B"})
    r = run("NG-CFG-001", healthy(), sp)
    assert r.outcome is F and "not the specified 96.00.A5.00.1B" in r.message
    assert run("NG-CFG-001", healthy(), spec(config={"vbios": ["96.00.A5.00.1B", "96.00.A5.00.1A"],
                                                     "inforom": "G520.0282.02.02"})).outcome is P
    assert run("NG-CFG-001", healthy(gpus=[gpu(inforom_image=NA)]), spec(config={"inforom": "G1"})).outcome is E
    assert run("NG-CFG-001", healthy(gpus=[gpu(vbios_version=None)])).outcome is E


@covers("NG-CFG-001")
def test_different_models_are_not_compared():
    gs = [gpu(0), gpu(1, bus="0000:00:07.0", pci_device_id="2330", vbios_version="96.00.74.00.0D")]
    f = healthy(gpus=gs, driver_gpus=[])
    assert run("NG-CFG-001", f, gpu=1).outcome is P


@covers("NG-CFG-002")
def test_power_limit_default_or_spec():
    assert run("NG-CFG-002", healthy()).outcome is P
    r = run("NG-CFG-002", healthy(gpus=[gpu(power_limit_w=500.0)]))
    assert r.outcome is F and r.message.startswith("GPU 0 (0000:00:06.0, serial 1650000000001): enforced power limit "
                                                   "500 W lowered from 700 W (the board default)")
    assert run("NG-CFG-002", healthy(gpus=[gpu(power_limit_w=500.0)]), spec(config={"power_limit_w": 500})).outcome is P
    assert run("NG-CFG-002", healthy(gpus=[gpu(power_limit_w=699.5)])).outcome is P      # within 1 W
    assert run("NG-CFG-002", healthy(gpus=[gpu(power_limit_w=NA, power_limit_default_w=NA)])).outcome is E


@covers("NG-CFG-003")
def test_mig_mode_disabled_by_default_enabled_on_request():
    assert run("NG-CFG-003", healthy()).outcome is P
    on = healthy(gpus=[gpu(mig_mode_current=True, mig_mode_pending=True)])
    r = run("NG-CFG-003", on)
    assert r.outcome is F and "MIG Enabled, config.mig=disabled" in r.message
    assert run("NG-CFG-003", on, spec(config={"mig": "enabled"})).outcome is P
    assert run("NG-CFG-003", on, spec(config={"mig": "any"})).outcome is S


@covers("NG-CFG-003")
def test_mig_pending_change_fails_and_unsupported_counts_as_disabled():
    r = run("NG-CFG-003", healthy(gpus=[gpu(mig_mode_current=False, mig_mode_pending=True)]))
    assert r.outcome is F and "MIG change pending (Disabled -> Enabled after a GPU reset)" in r.message
    a10g = healthy(gpus=[gpu(mig_mode_current=NA, mig_mode_pending=NA)])
    assert run("NG-CFG-003", a10g).outcome is P
    assert run("NG-CFG-003", a10g, spec(config={"mig": "enabled"})).outcome is F
    assert run("NG-CFG-003", healthy(gpus=[gpu(mig_mode_current=None)])).outcome is E


@covers("NG-CFG-004")
def test_compute_mode():
    assert run("NG-CFG-004", healthy()).outcome is P
    ex = healthy(gpus=[gpu(compute_mode="Exclusive_Process")])
    assert run("NG-CFG-004", ex).outcome is F
    assert run("NG-CFG-004", ex, spec(config={"compute_mode": ["Default", "Exclusive_Process"]})).outcome is P
    assert run("NG-CFG-004", ex, spec(config={"compute_mode": "any"})).outcome is S
    assert run("NG-CFG-004", healthy(gpus=[gpu(compute_mode=NA)])).outcome is E
