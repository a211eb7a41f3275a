"""NG-PCIERR-001: PCIe replays and AER counters of the GPU and its upstream ports."""

from nodegate.facts import NA
from nodegate.outcomes import Outcome

from .fakes import aer, covers, gpu, healthy, missing, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR


@covers("NG-PCIERR-001")
def test_zero_counters_pass():
    r = run("NG-PCIERR-001", healthy())
    assert r.outcome is P
    assert r.observed.startswith("replays 0 (limit 11520: DCGM 8/min over 1440 min of uptime)")


@covers("NG-PCIERR-001")
def test_replays_above_dcgm_rate_over_uptime_fail_and_below_pass():
    # one day up: 8/min x 1440 min = 11520
    assert run("NG-PCIERR-001", healthy(gpus=[gpu(pcie_replay_counter=11520)])).outcome is P
    r = run("NG-PCIERR-001", healthy(gpus=[gpu(pcie_replay_counter=50000)]))
    assert r.outcome is F and "50000 PCIe replays, above 11520 (DCGM 8/min over 1440 min of uptime)" in r.message
    # a freshly booted node: the same count is a far higher rate
    assert run("NG-PCIERR-001", healthy(uptime_s=600.0, gpus=[gpu(pcie_replay_counter=200)])).outcome is F
    # an absolute spec limit replaces the rate
    assert run("NG-PCIERR-001", healthy(gpus=[gpu(pcie_replay_counter=1)]), spec(pcie={"max_replays": 0})).outcome is F


@covers("NG-PCIERR-001")
def test_replay_rollover_fails():
    r = run("NG-PCIERR-001", healthy(gpus=[gpu(pcie_replay_rollover=1)]))
    assert r.outcome is F and "rolled over 1 time(s)" in r.message


@covers("NG-PCIERR-001")
def test_fatal_or_nonfatal_aer_on_the_gpu_or_an_upstream_port_fails_naming_it():
    r = run("NG-PCIERR-001", healthy(pci_aer=aer(up_fatal=1)))
    assert r.outcome is F and "upstream port 0000:00:01.0: 1 AER fatal error(s) (DLP 1), above 0" in r.message
    r = run("NG-PCIERR-001", healthy(pci_aer=aer(gpu_nonfatal=2)))
    assert r.outcome is F and "GPU 0000:00:06.0: 2 AER nonfatal error(s)" in r.message
    # correctable errors are shown, enforced only with a limit
    assert run("NG-PCIERR-001", healthy(pci_aer=aer(gpu_correctable=7))).outcome is P
    sp = spec(pcie={"max_aer_correctable": 5})
    assert run("NG-PCIERR-001", healthy(pci_aer=aer(gpu_correctable=7)), sp).outcome is F


@covers("NG-PCIERR-001")
def test_other_gpus_upstream_ports_are_not_this_gpus():
    recs = aer() + aer(bus="0000:3b:00.0", up="0000:3a:00.0", up_fatal=3)
    assert run("NG-PCIERR-001", healthy(pci_aer=recs)).outcome is P


@covers("NG-PCIERR-001")
def test_absent_counters_are_error_unless_not_verified():
    vm = aer(up=None)
    vm[0].files, vm[0].fatal_total, vm[0].nonfatal_total, vm[0].correctable_total = 0, None, None, None
    r = run("NG-PCIERR-001", healthy(pci_aer=vm))
    assert r.outcome is E and "no AER counters for GPU 0000:00:06.0" in r.message
    r = run("NG-PCIERR-001", healthy(pci_aer=vm), spec(pcie={"errors": "not_verified"}))
    assert r.outcome is S and r.message.startswith("pcie.errors=not_verified: ")
    assert run("NG-PCIERR-001", healthy(gpus=[gpu(pcie_replay_counter=NA)])).outcome is E
    assert run("NG-PCIERR-001", healthy(pci_aer=missing("pci_aer"))).outcome is E
    assert run("NG-PCIERR-001", healthy(uptime_s=missing("uptime_s"))).outcome is E


@covers("NG-PCIERR-001")
def test_a_failure_wins_over_missing_counters():
    vm = aer(up=None)
    vm[0].files = 0
    f = healthy(pci_aer=vm, gpus=[gpu(pcie_replay_rollover=2)])
    assert run("NG-PCIERR-001", f, spec(pcie={"errors": "not_verified"})).outcome is F
