"""Per-GPU test items: ``gpu_slots(facts, spec) -> list[GpuSlot]``.

- GPUs as observed, in index order.
- When ``spec.gpu.count`` exceeds what is seen: extra slots with ``present=False`` (named by
  the spec's ``gpu.bus_ids`` not observed, else by the next indexes), so the missing GPU shows
  up as a FAIL of the model check and ERROR of the other per-GPU checks.
- When GPUs cannot be read at all (driver/library mismatch, no driver): one slot per spec
  count, or a single slot 0, so every per-GPU check reports ERROR naming the cause.
Never raises EvidenceError.
"""

from __future__ import annotations

from ..errors import EvidenceError
from ..facts import normalize_bus_id
from . import GpuSlot
from ._util import same_bus, spec_or_default


def gpu_slots(facts, spec=None) -> list[GpuSlot]:
    spec = spec_or_default(spec)
    want = spec.gpu.count
    bus_ids = [normalize_bus_id(b) for b in (spec.gpu.bus_ids or [])]
    try:
        gpus = list(facts.gpus)
    except EvidenceError:
        n = want if want else max(1, len(bus_ids))
        return [GpuSlot(i, bus_ids[i] if i < len(bus_ids) else None, present=True) for i in range(n)]
    slots = sorted((GpuSlot(g.index if g.index is not None else i, g.pci_bus_id) for i, g in enumerate(gpus)),
                   key=lambda s: s.index)
    if want and want > len(slots):
        missing_bus = [b for b in bus_ids if not any(same_bus(b, s.pci_bus_id, function=True) for s in slots)]
        nxt = (max(s.index for s in slots) + 1) if slots else 0
        for k in range(want - len(slots)):
            slots.append(GpuSlot(nxt + k, missing_bus[k] if k < len(missing_bus) else None, present=False))
    return slots
