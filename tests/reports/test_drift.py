"""drift.py: fleet mode and outliers."""

from nodegate.facts import NA, GpuFacts
from nodegate.reports.drift import drifting, fleet_modes, gpu_config_values, outliers
from nodegate.reports.records import NodeInfo


def _n(node, drv, kernel="6.8.0", model="NVIDIA H200"):
    return NodeInfo(node=node, driver_version=drv, flavor="open", kernel=kernel, gpu_model=model,
                    vbios="96.00.99.00.01")


def test_mode_and_outliers():
    infos = [_n("a", "580.159.04"), _n("b", "580.159.04"), _n("c", "570.124.06", kernel="6.5.0"),
             _n("d", None)]
    modes, drift = fleet_modes(infos), drifting(infos)
    # issue 19 added the InfoROM, power limit, MIG and compute mode columns: unknown here (no mode)
    assert modes == {"driver_version": "580.159.04", "flavor": "open", "vbios": "96.00.99.00.01",
                     "kernel": "6.8.0", "gpu_model": "NVIDIA H200", "inforom": None, "power_limit": None,
                     "mig_mode": None, "compute_mode": None}
    assert drift == {"driver_version", "kernel"}
    assert [sorted(outliers(i, modes, drift)) for i in infos] == [[], [], ["driver_version", "kernel"], []]


def test_tie_has_no_mode_and_marks_every_known_value():
    infos = [_n("a", "2"), _n("b", "1"), _n("c", None)]
    modes, drift = fleet_modes(infos), drifting(infos)
    assert (modes["driver_version"], modes["kernel"]) == (None, "6.8.0")
    assert [sorted(outliers(i, modes, drift)) for i in infos] == [["driver_version"], ["driver_version"], []]


def test_unknown_everywhere_has_no_mode():
    assert fleet_modes([_n("a", None)])["driver_version"] is None
    assert drifting([_n("a", None)]) == set()


def _gpu(**kw):
    base = dict(index=0, inforom_image="G520.0282.02.02", power_limit_w=700.0, mig_mode_current=False,
                compute_mode="Default")
    base.update(kw)
    return GpuFacts(**base)


def test_gpu_config_fields_are_the_nodes_distinct_values():
    info = NodeInfo(node="a")
    gpu_config_values(info, [_gpu(), _gpu(index=1, power_limit_w=500.0), _gpu(index=2, mig_mode_current=NA)])
    assert (info.inforom, info.power_limit, info.mig_mode, info.compute_mode) == (
        "G520.0282.02.02", "500 W, 700 W", "Disabled, N/A", "Default")
    none = NodeInfo(node="b")
    gpu_config_values(none, [GpuFacts(index=0)])
    assert (none.inforom, none.power_limit, none.mig_mode, none.compute_mode) == (None, None, None, None)


def test_lowered_power_limit_and_mig_on_are_fleet_outliers():
    infos = []
    for name, gpus in (("a", [_gpu()]), ("b", [_gpu()]), ("c", [_gpu(power_limit_w=500.0, mig_mode_current=True)])):
        i = _n(name, "535.161.08")
        gpu_config_values(i, gpus)
        infos.append(i)
    modes, drift = fleet_modes(infos), drifting(infos)
    assert drift == {"power_limit", "mig_mode"}
    assert (modes["power_limit"], modes["mig_mode"]) == ("700 W", "Disabled")
    assert [sorted(outliers(i, modes, drift)) for i in infos] == [[], [], ["mig_mode", "power_limit"]]
