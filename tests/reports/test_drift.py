"""drift.py: fleet mode and outliers."""

from nodegate.reports.drift import drifting, fleet_modes, outliers
from nodegate.reports.records import NodeInfo


def _n(node, drv, kernel="6.8.0", model="NVIDIA H200"):
    return NodeInfo(node=node, driver_version=drv, flavor="open", kernel=kernel, gpu_model=model,
                    vbios="96.00.99.00.01")


def test_mode_and_outliers():
    infos = [_n("a", "580.159.04"), _n("b", "580.159.04"), _n("c", "570.124.06", kernel="6.5.0"),
             _n("d", None)]
    modes, drift = fleet_modes(infos), drifting(infos)
    assert modes == {"driver_version": "580.159.04", "flavor": "open", "vbios": "96.00.99.00.01",
                     "kernel": "6.8.0", "gpu_model": "NVIDIA H200"}
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
