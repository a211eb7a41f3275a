"""NG-IB-001/002/003: InfiniBand ports, GPU rails, HCA firmware: one test per rule and per trap."""

from nodegate.facts import IbPort
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, missing, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR
NDR = {"ib": {"ports": 8, "rate_gbps": 400}}


def port(dev, state="ACTIVE", phys="LinkUp", rate=400.0, layer="InfiniBand", fw="28.39.1002", source="sysfs"):
    return IbPort(dev, 1, state, phys, rate, layer, fw, "MT4129", source)


def rails(n=8, **over):
    return [over.get(f"mlx5_{i}", port(f"mlx5_{i}")) for i in range(n)]


def node(ports, ibstat=None, **kw):
    return healthy(ib_ports=ports, ibstat_ports=ibstat, **kw)


@covers("NG-IB-001")
def test_eight_ndr_ports_pass_and_ethernet_functions_are_ignored():
    eth = [port("mlx5_8", "DOWN", "Disabled", 40.0, "Ethernet"), port("mlx5_9", rate=100.0, layer="Ethernet")]
    r = run("NG-IB-001", node(rails() + eth), spec(**NDR))
    assert r.outcome is P
    assert r.observed == "8/8 port(s) Active/LinkUp at 400 Gb/s; 2 Ethernet-layer ignored"


@covers("NG-IB-001")
def test_a_down_port_or_a_slow_port_fails_naming_it():
    r = run("NG-IB-001", node(rails(mlx5_3=port("mlx5_3", "DOWN", "Disabled"))), spec(**NDR))
    assert r.outcome is F and "mlx5_3 port 1 DOWN/Disabled" in r.message
    r = run("NG-IB-001", node(rails(mlx5_5=port("mlx5_5", rate=200.0))), spec(**NDR))
    assert r.outcome is F and "mlx5_5 port 1 at 200 Gb/s below 400" in r.message
    # without ib.rate_gbps the rate is shown, not enforced
    assert run("NG-IB-001", node(rails(mlx5_5=port("mlx5_5", rate=200.0)))).outcome is P


@covers("NG-IB-001")
def test_fewer_ports_than_specified_fails_and_more_is_fine():
    assert run("NG-IB-001", node(rails(7)), spec(**NDR)).outcome is F
    assert run("NG-IB-001", node(rails(10)), spec(**NDR)).outcome is P


@covers("NG-IB-001")
def test_no_infiniband_port_skips_naming_the_key_unless_ports_are_specified():
    r = run("NG-IB-001", node([port("mlx5_0", layer="Ethernet")]))
    assert r.outcome is S and r.message.startswith("ib.ports not set and no InfiniBand-layer port")
    assert run("NG-IB-001", node([]), spec(**NDR)).outcome is F


@covers("NG-IB-001")
def test_named_devices_are_judged_whatever_their_link_layer():
    ports = rails(2) + [port("mlx5_8", "DOWN", "Disabled", 100.0, "Ethernet")]
    r = run("NG-IB-001", node(ports), spec(ib={"devices": ["mlx5_0", "mlx5_8"]}))
    assert r.outcome is F and "mlx5_8 port 1 DOWN/Disabled" in r.message
    r = run("NG-IB-001", node(ports), spec(ib={"devices": ["mlx5_0", "mlx5_7"]}))
    assert r.outcome is F and "not present: mlx5_7" in r.message


@covers("NG-IB-001")
def test_ibstat_is_the_source_without_sysfs_and_a_disagreement_is_error():
    ibs = [port(p.device, source="ibstat") for p in rails()]
    assert run("NG-IB-001", node([], ibs), spec(**NDR)).outcome is P
    clash = [port("mlx5_0", "DOWN", "Disabled", source="ibstat")]
    r = run("NG-IB-001", node(rails(), clash), spec(**NDR))
    assert r.outcome is E and "sysfs and ibstat disagree: mlx5_0 port 1: sysfs ACTIVE, ibstat DOWN" in r.message


@covers("NG-IB-001")
def test_unreadable_port_state_is_error_and_missing_evidence_too():
    r = run("NG-IB-001", node(rails(mlx5_2=port("mlx5_2", state=None))), spec(**NDR))
    assert r.outcome is E
    assert run("NG-IB-001", healthy(ib_ports=missing("ib_ports"))).outcome is E


@covers("NG-IB-002")
def test_gpu_rail_follows_the_spec_mapping():
    gs = [gpu(i, bus=f"0000:{0x19 + i:02x}:00.0") for i in range(2)]
    f = node(rails(2, mlx5_1=port("mlx5_1", "DOWN", "Polling")), gpus=gs, driver_gpus=[])
    sp = spec(ib={"gpu_hca": {0: "mlx5_0", 1: "mlx5_1"}, "rate_gbps": 400})
    assert run("NG-IB-002", f, sp, gpu=0).outcome is P
    r = run("NG-IB-002", f, sp, gpu=1)
    assert r.outcome is F and "rail mlx5_1 port 1 DOWN/Polling" in r.message
    assert run("NG-IB-002", f, spec(ib={"gpu_hca": {0: "mlx5_0"}}), gpu=1).outcome is S
    r = run("NG-IB-002", f, spec(ib={"gpu_hca": {0: "mlx5_9"}}), gpu=0)
    assert r.outcome is F and "mlx5_9 (ib.gpu_hca) is not present" in r.message
    assert run("NG-IB-002", f, gpu=0).outcome is S


@covers("NG-IB-003")
def test_hca_firmware_as_specified():
    f = node(rails(2, mlx5_1=port("mlx5_1", fw="28.37.1014")))
    assert run("NG-IB-003", f).outcome is S
    r = run("NG-IB-003", f, spec(ib={"firmware": "28.39.1002"}))
    assert r.outcome is F and "mlx5_1 28.37.1014" in r.message
    assert run("NG-IB-003", f, spec(ib={"firmware": ["28.39.1002", "28.37.1014"]})).outcome is P
    assert run("NG-IB-003", node(rails(1, mlx5_0=port("mlx5_0", fw=None))), spec(ib={"firmware": "x"})).outcome is E
