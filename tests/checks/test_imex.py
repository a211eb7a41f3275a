"""Issue 39.5: the IMEX daemon of an NVL72 tray (GB200/GB300: NVLink switches outside the node)
is read (systemctl show nvidia-imex) and judged; other nodes SKIP naming fabric.imex."""

from __future__ import annotations

from nodegate.facts import SystemdUnit
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, run, spec


def gb200(unit):
    gs = [gpu(index=i, bus=f"00{b}:01:00.0", name="NVIDIA GB200", pci_device_id="2941", architecture="Blackwell")
          for i, b in enumerate(("08", "09", "18", "19"))]
    return healthy(gpus=gs, imex_unit=unit)


def unit(load="loaded", active="active", sub="running"):
    return SystemdUnit(load_state=load, active_state=active, sub_state=sub, unit_file_state="enabled",
                       raw={"LoadState": load, "ActiveState": active, "SubState": sub})


@covers("NG-FAB-002")
def test_an_nvl72_tray_needs_imex_active():
    assert run("NG-FAB-002", gb200(unit())).outcome is Outcome.PASS
    r = run("NG-FAB-002", gb200(unit(active="failed", sub="failed")))
    assert r.outcome is Outcome.FAIL and "nvidia-imex is failed" in r.message
    r = run("NG-FAB-002", gb200(unit(load="not-found", active="inactive", sub="dead")))
    assert r.outcome is Outcome.FAIL and "not installed" in r.message


@covers("NG-FAB-002")
def test_other_nodes_skip_naming_fabric_imex_unless_required():
    r = run("NG-FAB-002", healthy(imex_unit=None))
    assert r.outcome is Outcome.SKIP and r.message.startswith("fabric.imex=auto")
    assert run("NG-FAB-002", healthy(imex_unit=unit()), spec(fabric={"imex": True})).outcome is Outcome.PASS
    assert run("NG-FAB-002", gb200(unit()), spec(fabric={"imex": False})).outcome is Outcome.SKIP
