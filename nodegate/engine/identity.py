"""GPU identity for the reports: what names a GPU on an RMA sheet, from every piece of evidence.

nvidia-smi names the GPUs it sees (index, bus id, serial, UUID, part number, VBIOS:
``engine.evaluate.gpu_identity``). A GPU missing from nvidia-smi (fallen off the bus, not initialised)
has only its slot: its bus id from the spec's ``gpu.bus_ids`` (else the driver's or PCI's list)
and an item label after the present GPUs' indices (the ``gpu7`` of its test id); no ``gpu_index``
(nvidia-smi's numbering, which does not list it). Its other evidence still names it:

- ``driver.gpus_information`` (/proc/driver/nvidia/gpus/<bus>/information: the driver bound it):
  ``GPU UUID``, ``Video BIOS`` and ``Model``. Its ``Device Minor`` (/dev/nvidiaN) is not taken as
  its index: nvidia-smi numbers the GPUs it lists in bus order, so with 0000:5d:00.0 (minor 3)
  missing, nvidia-smi's GPU 3 is the next GPU (0000:9b:00.0), and one index would name two GPUs;
- ``kernel.log``: the driver's ``NVRM: GPU at PCI:<bus>: GPU-<uuid>`` line names its UUID, and its
  Xid lines its codes.

``Xids`` per GPU: the codes of the kernel log's Xid lines for that bus (``KernelEvent.xid``).
"""

from __future__ import annotations

import re

from ..checks._util import same_bus

_UUID = re.compile(r"\bGPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")


def xids_by_bus(facts) -> dict[str, list[int]]:
    """{bus id of the Xid line: sorted distinct Xid codes}; {} when the kernel log is unreadable."""
    out: dict[str, set[int]] = {}
    try:
        events = facts.kernel_events
    except Exception:  # noqa: BLE001 - the kernel-log checks report the problem
        return {}
    for e in events:
        if e.kind == "xid" and e.xid is not None:
            out.setdefault(e.bus_id or "", set()).add(int(e.xid))
    return {b: sorted(v) for b, v in out.items()}


def xids_for(xids: dict[str, list[int]], bus_id: str | None) -> list[int]:
    """The Xids of the GPU at ``bus_id``; every Xid of the node for ``bus_id`` None (node items)."""
    if bus_id is None:
        return sorted({x for v in xids.values() for x in v})
    return sorted({x for b, v in xids.items() if b and same_bus(b, bus_id) for x in v})


def missing_gpu_identity(facts, bus_id: str | None) -> dict[str, str]:
    """What the driver and the kernel log say about the GPU at ``bus_id`` (absent from nvidia-smi):
    ``gpu_uuid``, ``vbios_version``, ``gpu_name``; only the keys the evidence gives."""
    out: dict[str, str] = {}
    if not bus_id:
        return out
    try:
        for g in facts.driver_gpus:
            if same_bus(g.get("Bus Location"), bus_id, function=True):
                for key, field in (("gpu_uuid", "GPU UUID"), ("vbios_version", "Video BIOS"), ("gpu_name", "Model")):
                    v = (g.get(field) or "").strip()
                    if v and v.lower() not in ("n/a", "unknown"):
                        out[key] = v
                break
    except Exception:  # noqa: BLE001 - best effort: the identity stays what the slot gives
        pass
    if "gpu_uuid" not in out:
        try:
            for e in facts.kernel_events:
                if e.bus_id and same_bus(e.bus_id, bus_id):
                    m = _UUID.search(e.text)
                    if m:
                        out["gpu_uuid"] = m.group(0)
                        break
        except Exception:  # noqa: BLE001
            pass
    return out
