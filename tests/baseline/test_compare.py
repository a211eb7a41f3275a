"""Pure comparison rules (nodegate.baseline.compare): facts before/after -> Change/Regression."""

from __future__ import annotations

import pytest

from nodegate.baseline.compare import (Unreadable, check_regressions, compare_driver, compare_ecc, compare_flavor,
                                       compare_kernel, compare_pcie, compare_persistence_mode, compare_presence,
                                       compare_remapped, compare_values, compare_xid, ecc_growth, match_gpus)
from nodegate.baseline.model import GpuRef
from nodegate.baseline.spec import EccGrowth
from nodegate.facts import NA, EccCounters, GpuFacts, KernelEvent, PcieLink, RemappedRows, RetiredPages

BUS = "0000:19:00.0"


def gpu(index=0, bus=BUS, serial="1650000000001", uuid="GPU-aaaa", **kw) -> GpuFacts:
    kw.setdefault("link", PcieLink(current_gen=5, max_gen=5, device_max_gen=5, host_max_gen=NA, current_width=16,
                                   max_width=16))
    kw.setdefault("pstate", "P0")
    kw.setdefault("clocks_event_reasons", {"gpu_idle": False})
    return GpuFacts(index=index, pci_bus_id=bus, serial=serial, uuid=uuid, **kw)


REF = GpuRef(0, BUS, "1650000000001", "GPU-aaaa", 0, BUS, "uuid")


def link(cg=5, mg=5, cw=16, mw=16, dg=5):
    return PcieLink(current_gen=cg, max_gen=mg, device_max_gen=dg, host_max_gen=NA, current_width=cw, max_width=mw)


# ---------------------------------------------------------------------------- GPU matching
def test_match_by_uuid_when_bus_ids_shift():
    b = [gpu(0, "0000:19:00.0", "s0", "GPU-0"), gpu(1, "0000:3b:00.0", "s1", "GPU-1")]
    a = [gpu(0, "0000:3b:00.0", "s1", "GPU-1")]           # GPU-0 vanished, GPU-1 is now index 0
    pairs, new = match_gpus(b, a)
    assert [(r.label, r.matched_by, r.after_index, x is not None) for r, _, x in pairs] == [
        ("gpu0", "", None, False), ("gpu1", "uuid", 0, True)]
    assert new == []


def test_match_by_serial_then_bus_id():
    b = [gpu(0, BUS, "s0", None), gpu(1, "0000:3b:00.0", "N/A", None)]
    a = [gpu(0, BUS, "s0", None), gpu(1, "0000:3b:00.0", "N/A", None)]
    pairs, _ = match_gpus(b, a)
    assert [r.matched_by for r, _, _ in pairs] == ["serial", "bus_id"]


def test_new_gpu_is_returned():
    pairs, new = match_gpus([gpu(0)], [gpu(0), gpu(1, "0000:3b:00.0", "s9", "GPU-9")])
    assert [g.uuid for g in new] == ["GPU-9"]


def test_missing_gpu_is_a_regression():
    f = compare_presence(REF, gpu(), None)
    assert [(r.kind, r.field, r.after) for r in f.regressions] == [("gpu_missing", "gpu", None)]


def test_replaced_gpu_at_same_bus_is_a_change():
    ref = GpuRef(0, BUS, "s0", "GPU-old", 0, BUS, "bus_id")
    f = compare_presence(ref, gpu(serial="s0", uuid="GPU-old"), gpu(serial="s1", uuid="GPU-new"))
    assert f.regressions == []
    assert [(c.kind, c.before["serial"], c.after["serial"]) for c in f.changes] == [("gpu_serial", "s0", "s1")]


def test_vbios_change_is_a_change():
    f = compare_presence(REF, gpu(vbios_version="96.00.A5.00.1A"), gpu(vbios_version="96.00.A5.00.2B"))
    assert [(c.kind, c.before, c.after) for c in f.changes] == [("vbios", "96.00.A5.00.1A", "96.00.A5.00.2B")]


# ---------------------------------------------------------------------------- PCIe
def test_pcie_capability_lowered_is_a_regression():
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link(mg=4, dg=4)))
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("max_link_gen", 5, 4),
                                                                     ("max_device_link_gen", 5, 4)]


def test_pcie_width_lowered_while_busy_is_a_regression():
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link(cw=8)))
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("current_link_width", 16, 8)]
    assert "while busy" in f.regressions[0].message


def test_pcie_trained_lower_at_idle_is_a_change():
    idle = dict(pstate="P8", clocks_event_reasons={"gpu_idle": True})
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link(cg=1), **idle))
    assert f.regressions == []
    assert [(c.kind, c.field, c.before, c.after) for c in f.changes] == [("link", "current_link_gen", 5, 1)]


def test_pcie_trained_lower_at_idle_with_idle_fail_is_a_regression():
    idle = dict(pstate="P8", clocks_event_reasons={"gpu_idle": True})
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link(cg=1), **idle), pcie_idle="fail")
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("current_link_gen", 5, 1)]


def test_pcie_trained_lower_activity_unknown_is_an_error():
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link(cg=3), pstate=None, clocks_event_reasons={}))
    assert f.regressions == [] and len(f.errors) == 1 and "cannot tell busy from idle" in f.errors[0]


def test_pcie_host_max_na_is_never_compared():
    f = compare_pcie(REF, gpu(link=link()), gpu(link=link()))
    assert (f.regressions, f.changes, f.errors) == ([], [], [])


def test_pcie_higher_link_is_a_change_not_a_regression():
    f = compare_pcie(REF, gpu(link=link(cg=4, mg=4, dg=4)), gpu(link=link()))
    assert f.regressions == [] and [c.kind for c in f.changes] == ["link"]


# ---------------------------------------------------------------------------- ECC
def ecc(vu=0, vc=0, au=0, ac=0) -> dict:
    return dict(ecc_volatile=EccCounters(correctable_total=vc, uncorrectable_total=vu),
                ecc_aggregate=EccCounters(correctable_total=ac, uncorrectable_total=au))


@pytest.mark.parametrize("scope,before,after,reloaded,want", [
    ("volatile", 3, 5, None, 2), ("volatile", 3, 1, None, 1), ("volatile", 3, 5, True, 5),
    ("aggregate", 3, 5, True, 2), ("aggregate", 5, 3, None, -2)],
    ids=["volatile_same_load", "volatile_went_down_reset", "volatile_after_reload", "aggregate", "aggregate_down"])
def test_ecc_growth(scope, before, after, reloaded, want):
    assert ecc_growth(scope, before, after, reloaded) == want


def test_ecc_uncorrectable_growth_is_a_regression():
    f = compare_ecc(REF, gpu(**ecc()), gpu(**ecc(vu=2, au=2)), EccGrowth(), None)
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("ecc.volatile.uncorrectable", 0, 2),
                                                                     ("ecc.aggregate.uncorrectable", 0, 2)]


def test_ecc_growth_within_allowance_is_a_change():
    f = compare_ecc(REF, gpu(**ecc()), gpu(**ecc(au=1)), EccGrowth(uncorrectable=1), None)
    assert f.regressions == [] and [(c.field, c.after) for c in f.changes] == [("ecc.aggregate.uncorrectable", 1)]


def test_ecc_correctable_growth_reported_not_enforced_by_default():
    f = compare_ecc(REF, gpu(**ecc()), gpu(**ecc(vc=40, ac=40)), EccGrowth(), None)
    assert f.regressions == [] and len(f.changes) == 2


def test_ecc_correctable_growth_enforced_when_set():
    f = compare_ecc(REF, gpu(**ecc()), gpu(**ecc(ac=40)), EccGrowth(correctable=10), None)
    assert [r.field for r in f.regressions] == ["ecc.aggregate.correctable"]


def test_ecc_volatile_after_driver_reload_counts_all_current_errors():
    f = compare_ecc(REF, gpu(**ecc(vu=1, au=1)), gpu(**ecc(vu=1, au=1)), EccGrowth(), True)
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("ecc.volatile.uncorrectable", 1, 1)]


def test_ecc_unsupported_on_both_sides_is_a_note():
    na = dict(ecc_volatile=EccCounters(NA, NA), ecc_aggregate=EccCounters(NA, NA))
    f = compare_ecc(REF, gpu(**na), gpu(**na), EccGrowth(), None)
    assert (f.regressions, f.errors, len(f.notes)) == ([], [], 4)


def test_ecc_not_reported_now_is_an_error():
    f = compare_ecc(REF, gpu(**ecc()), gpu(ecc_volatile=EccCounters(None, None), ecc_aggregate=EccCounters(0, 0)),
                    EccGrowth(), None)
    assert f.regressions == [] and len(f.errors) == 2


# ---------------------------------------------------------------------------- remapped rows / retired pages
def rr(corr=0, unc=0):
    return RemappedRows(correctable=corr, uncorrectable=unc, pending=False, failure=False)


def test_remapped_rows_increase_is_a_regression():
    f = compare_remapped(REF, gpu(remapped_rows=rr()), gpu(remapped_rows=rr(corr=1)))
    assert [(r.kind, r.field, r.before, r.after) for r in f.regressions] == [
        ("remapped_rows", "remapped_rows", {"correctable": 0, "uncorrectable": 0},
         {"correctable": 1, "uncorrectable": 0})]


def test_remapped_rows_within_allowance_is_a_change():
    f = compare_remapped(REF, gpu(remapped_rows=rr()), gpu(remapped_rows=rr(unc=1)), allowed_rows=1)
    assert f.regressions == [] and [c.kind for c in f.changes] == ["remapped_rows"]


def test_retired_pages_increase_is_a_regression():
    b = gpu(remapped_rows=NA, retired_pages=RetiredPages(sbe=1, dbe=0, pending=False))
    a = gpu(remapped_rows=NA, retired_pages=RetiredPages(sbe=1, dbe=1, pending=False))
    f = compare_remapped(REF, b, a)
    assert [(r.field, r.before, r.after) for r in f.regressions] == [("retired_pages", {"sbe": 1, "dbe": 0},
                                                                      {"sbe": 1, "dbe": 1})]


def test_remapped_rows_on_one_side_only_is_an_error():
    f = compare_remapped(REF, gpu(remapped_rows=rr()), gpu(remapped_rows=None))
    assert f.regressions == [] and len(f.errors) == 1


# ---------------------------------------------------------------------------- kernel log
def xid(x, bus="0000:19:00.0"):
    return KernelEvent(kind="xid", text=f"NVRM: Xid (PCI:{bus[:-2]}): {x}, pid=1", xid=x, bus_id=bus)


def test_new_critical_xid_is_a_regression():
    f = compare_xid([xid(13)], [xid(13), xid(79)])
    assert [(r.kind, r.after) for r in f.regressions] == [("xid", "NVRM: Xid (PCI:0000:19:00): 79, pid=1")]
    assert "Xid 79 (GPU has fallen off the bus; critical)" in f.regressions[0].message


def test_xid_already_in_baseline_is_not_new():
    f = compare_xid([xid(48)], [xid(48), xid(48)])
    assert (f.regressions, f.changes) == ([], [])


def test_same_xid_on_another_gpu_is_new():
    f = compare_xid([xid(48, "0000:19:00.0")], [xid(48, "0000:3b:00.0")])
    assert len(f.regressions) == 1


def test_new_minor_xid_is_a_change():
    f = compare_xid([], [xid(13)])
    assert f.regressions == [] and [c.kind for c in f.changes] == ["xid"]


def test_xid_min_severity_major():
    # Xid 64 (row remapping failure): the catalog's RESET_GPU, "major" (63 is IGNORE there: info)
    f = compare_xid([], [xid(64)], min_severity="major")
    assert len(f.regressions) == 1


def test_fallen_off_bus_without_xid_is_critical():
    ev = KernelEvent(kind="fallen_off_bus", text="NVRM: GPU 0000:19:00.0: GPU has fallen off the bus.", bus_id=BUS)
    assert len(compare_xid([], [ev]).regressions) == 1


def test_new_critical_xid_with_unreadable_baseline_log_is_an_error():
    f = compare_xid(Unreadable("dmesg: read kernel buffer failed: Operation not permitted"), [xid(79)])
    assert f.regressions == [] and len(f.errors) == 1


# ---------------------------------------------------------------------------- node level
def test_driver_change_planned_when_spec_expects_it():
    f = compare_driver("570.124.06", "580.159.04", "580")
    assert [(c.kind, c.planned) for c in f.changes] == [("driver", True)]


def test_driver_change_unplanned_without_spec_version():
    f = compare_driver("570.124.06", "580.159.04", None)
    assert [(c.kind, c.planned) for c in f.changes] == [("driver", False)] and f.regressions == []


def test_kernel_change_is_a_change():
    f = compare_kernel("5.15.0-91-generic", "5.15.0-94-generic")
    assert [(c.kind, c.before, c.after) for c in f.changes] == [("kernel", "5.15.0-91-generic", "5.15.0-94-generic")]


def test_flavor_change_not_asked_for_is_a_regression():
    f = compare_flavor("open", "proprietary", "any", planned=False)
    assert [(r.kind, r.before, r.after) for r in f.regressions] == [("flavor", "open", "proprietary")]


def test_flavor_change_asked_for_by_spec_is_a_planned_change():
    f = compare_flavor("proprietary", "open", "open", planned=False)
    assert f.regressions == [] and [(c.kind, c.planned) for c in f.changes] == [("flavor", True)]


def test_flavor_change_listed_in_baseline_planned_is_a_change():
    f = compare_flavor("open", "proprietary", "any", planned=True)
    assert f.regressions == [] and f.changes[0].note == "planned: baseline.planned lists flavor"


def test_flavor_module_not_loaded_now_is_an_error():
    f = compare_flavor("open", None, "any", planned=False)
    assert f.regressions == [] and len(f.errors) == 1


def test_persistence_execstart_change_is_a_regression():
    old = ["/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode"]
    new = ["/usr/bin/nvidia-persistenced --verbose"]
    f = compare_values("persistence", {"ExecStart": (old, new), "DropInPaths": (["/etc/x.conf"], ["/etc/x.conf"])},
                       planned=False)
    assert [(r.kind, r.field, r.before, r.after) for r in f.regressions] == [("persistence", "ExecStart", old, new)]


def test_persistence_change_planned():
    f = compare_values("persistence", {"daemon --user": (["nvidia-persistenced"], ["(no --user)"])}, planned=True)
    assert f.regressions == [] and [c.planned for c in f.changes] == [True]


def test_persistence_unreadable_both_sides_is_a_note_one_side_an_error():
    u = Unreadable("tool missing (systemctl)")
    f = compare_values("persistence", {"ExecStart": (u, u), "User": ("", u)}, planned=False)
    assert (f.regressions, len(f.notes), len(f.errors)) == ([], 1, 1)


def test_persistence_mode_disabled_now_is_a_regression():
    f = compare_persistence_mode([(REF, gpu(persistence_mode=True), gpu(persistence_mode=False))])
    assert [(r.kind, r.before, r.after) for r in f.regressions] == [("persistence", "Enabled", "Disabled")]


def test_persistence_mode_enabled_now_is_a_change():
    f = compare_persistence_mode([(REF, gpu(persistence_mode=False), gpu(persistence_mode=True))])
    assert f.regressions == [] and [(c.before, c.after) for c in f.changes] == [("Disabled", "Enabled")]


def test_check_regressions_pass_to_fail_only():
    before = {("NG-A", None): "pass", ("NG-B", "gpu0"): "pass", ("NG-C", None): "fail", ("NG-D", None): "pass"}
    after = {("NG-A", None): "fail", ("NG-B", "gpu0"): "error", ("NG-C", None): "fail", ("NG-D", None): "skip"}
    assert check_regressions(before, after) == [("NG-A", None)]
