"""Real kernel-log excerpts quoted verbatim in public GitHub threads (tests/fixtures/kernel_log/public-*.txt; sources
in tests/fixtures/smi_xml/PUBLIC_SOURCES.md), each with its exact NG-LOG-001 / NG-LOG-002 verdicts on a node holding
the GPUs the lines name (checks.md "Kernel log")."""

from __future__ import annotations

from pathlib import Path

from nodegate.outcomes import Outcome
from nodegate.parsers.kernel_log import parse_kernel_log

from .fakes import covers, gpu, healthy, run

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "kernel_log"


def node(name: str, *buses: str):
    events = parse_kernel_log((LOG / f"public-{name}.txt").read_text())
    gs = [gpu(index=i, bus=b) for i, b in enumerate(buses)]
    return events, healthy(gpus=gs, kernel_events=events,
                           driver_gpus=[{"Model": "NVIDIA H200", "Bus Location": b, "Device Minor": str(i)}
                                        for i, b in enumerate(buses)])


def gpu_letters(f, n: int) -> str:
    return "".join(run("NG-LOG-002", f, gpu=i).outcome.name[0] for i in range(n))


@covers("NG-LOG-001", "NG-LOG-002")
def test_nvsentinel_155_fallen_off_the_bus_at_probe_without_an_xid():
    # three NVRM lines (the two continuations indented 15 spaces, no stamp) make one record naming 0000:b3:00.0
    events, f = node("nvsentinel155-fallen-off-bus-at-probe-open-570", "0000:b3:00.0", "0000:19:00.0")
    (ev,) = [e for e in events if e.kind == "fallen_off_bus"]
    assert ev.bus_id == "0000:b3:00.0" and ev.text.endswith("fallen off the bus and is not responding to commands.")
    assert run("NG-LOG-001", f).outcome is Outcome.PASS
    assert gpu_letters(f, 2) == "FP"
    # the GPU that fell off at probe is usually absent from nvidia-smi: the node's check names it then
    _, f = node("nvsentinel155-fallen-off-bus-at-probe-open-570", "0000:19:00.0")
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL and "GPU has fallen off the bus at 0000:b3:00.0" in r.message


@covers("NG-LOG-002")
def test_bumblebee_554_old_gpu_at_has_fallen_off_the_bus_form():
    events, f = node("bumblebee554-gpu-at-fallen-off-bus-invalid-context", "0000:01:00.0")
    assert [(e.kind, e.bus_id) for e in events if e.kind != "other"] == [("fallen_off_bus", "0000:01:00.0")] * 2
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.FAIL and r.message.endswith("GPU has fallen off the bus at 0000:01:00.0 x2")


@covers("NG-LOG-002")
def test_okgm_1150_xid_45_judged_as_the_nvlink5_xid_that_caused_it():
    # journal lines without a stamp ('kernel: NVRM: ...'); Xid 45 'caused by previous Xid 149/145' is the
    # NVLink5 Xid's verdict (NVIDIA's catalog: 144-150 WORKFLOW_NVLINK5_ERR)
    _, f = node("okgm1150-xid45-caused-by-xid149-xid145", "0000:97:00.0", "0000:ba:00.0", "0000:dc:00.0",
                "0000:ed:00.0", "0000:1b:00.0")
    assert run("NG-LOG-001", f).outcome is Outcome.PASS
    assert gpu_letters(f, 5) == "FFFFP"
    r = run("NG-LOG-002", f, gpu=2)
    assert r.message == ("GPU 2 (0000:dc:00.0, serial 1650000000003): Xid 45 caused by previous Xid 149 (NVLink5 "
                         "network interface (NETIR) Error; critical; action: WORKFLOW_NVLINK5_ERR) at 0000:dc:00.0 x2")
