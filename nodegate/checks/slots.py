"""Per-GPU test items: ``gpu_slots(facts, spec) -> list[GpuSlot]``.

- GPUs as observed, in index order.
- When ``spec.gpu.count`` exceeds what is seen: extra slots with ``present=False`` (named by
  the spec's ``gpu.bus_ids`` not observed, else by the next indexes), so the missing GPU shows
  up as a FAIL of the model check and ERROR of the other per-GPU checks.
- When GPUs cannot be read at all (driver/library mismatch, no driver): one slot per spec
  count, or a single slot 0, so every per-GPU check reports ERROR naming the cause; none when
  the spec says the node has no GPUs (``gpu.count: 0``, a login or storage node).
Never raises EvidenceError.

``identity_conflicts(gpus)``: GPUs of one node that share a PCI bus id, serial, UUID or index;
their per-GPU items cannot be told apart (``checks.evaluate`` makes them ERROR, NG-INV-001
FAILs naming them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EvidenceError
from ..facts import NA, normalize_bus_id
from ._util import same_bus, spec_or_default


@dataclass(frozen=True)
class GpuSlot:
    """One per-GPU test item: ``index`` and ``pci_bus_id`` as observed (or expected when the
    GPU is missing: then ``present`` is False)."""

    index: int
    pci_bus_id: str | None = None
    present: bool = True

    @property
    def label(self) -> str:
        return f"gpu{self.index}"


def gpu_slots(facts, spec=None) -> list[GpuSlot]:
    spec = spec_or_default(spec)
    want = spec.gpu.count
    bus_ids = [normalize_bus_id(b) for b in (spec.gpu.bus_ids or [])]
    try:
        gpus = list(facts.gpus)
    except EvidenceError:
        if want == 0:   # the spec says the node has no GPUs: no per-GPU item (NG-INV-001 judges PCI)
            return []
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


def _ident_value(field: str, v) -> str | None:
    """The comparable form of one identity field, or None when it identifies nothing: not
    reported, N/A (GeForce boards have no serial), or a serial of zeros (workstation boards)."""
    if v is None or v is NA:
        return None
    t = str(v).strip().lower()
    if not t or t in ("n/a", "[n/a]", "unknown") or (field == "serial" and not t.strip("0")):
        return None
    return normalize_bus_id(t) if field == "pci_bus_id" else t


_FIELDS = (("pci_bus_id", "PCI bus id"), ("serial", "serial"), ("uuid", "UUID"), ("index", "index"))


def identity_conflicts(gpus) -> dict[int, str]:
    """``{position in gpus: why}`` for each GPU that shares its PCI bus id, serial, UUID or
    index with another GPU of the same node (``GPU 1 shares PCI bus id 0000:19:00.0 with GPU
    0``); ``{}`` when every GPU is its own. Such GPUs are one board reported twice or a broken
    report: a check matched by bus id would judge one GPU's facts for both (issue 17)."""
    out: dict[int, list[str]] = {}
    for field, label in _FIELDS:
        seen: dict[str, list[int]] = {}
        for pos, g in enumerate(gpus):
            v = _ident_value(field, g.index if field == "index" else getattr(g, field, None))
            if v is not None:
                seen.setdefault(v, []).append(pos)
        for v, poss in seen.items():
            if len(poss) < 2:
                continue
            for pos in poss:
                others = ", ".join(f"GPU {_idx(gpus, o)}" for o in poss if o != pos)
                out.setdefault(pos, []).append(f"shares {label} {v} with {others}")
    return {pos: f"GPU {_idx(gpus, pos)} " + "; ".join(why) for pos, why in out.items()}


def _idx(gpus, pos: int):
    g = gpus[pos]
    return g.index if g.index is not None else pos


def slot_conflict(facts, slot) -> str | None:
    """Why ``slot``'s GPU cannot be told apart from another GPU of the node, or None (also
    when the GPUs cannot be read: the check itself reports that). Cached on ``facts``."""
    if slot is None or not getattr(slot, "present", True):
        return None
    try:
        gpus = facts.gpus
    except EvidenceError:
        return None
    cache = getattr(facts, "__dict__", {})
    got = cache.get("_ng_identity_conflicts")
    if got is None or got[0] is not gpus:
        got = (gpus, identity_conflicts(gpus))
        if hasattr(facts, "__dict__"):
            facts.__dict__["_ng_identity_conflicts"] = got
    conflicts = got[1]
    if not conflicts:
        return None
    bus = normalize_bus_id(slot.pci_bus_id) if slot.pci_bus_id else None
    by_index = [why for pos, why in conflicts.items() if _idx(gpus, pos) == slot.index]
    if by_index:   # the slot's own GPU (slots are made from the GPUs' indexes)
        return by_index[0]
    for pos, why in conflicts.items():
        g = gpus[pos]
        if bus and g.pci_bus_id and normalize_bus_id(g.pci_bus_id) == bus:
            return why
    return None
