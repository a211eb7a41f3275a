"""Per-GPU test items: ``gpu_slots(facts, spec) -> list[GpuSlot]``.

- GPUs as observed, in index order.
- When ``spec.gpu.count`` exceeds what is seen: extra slots with ``present=False``, so the
  missing GPU shows up as a FAIL of the model check and ERROR of the other per-GPU checks.
  The identity rule of a missing GPU, every report alike (docs/reports.md ``gpu_index``): it is
  identified by its PCI bus id, the spec's ``gpu.bus_ids`` not observed, else the bus ids the
  driver, PCI or the kernel log know and nvidia-smi does not list (``lost_bus_ids``, NG-INV-001's
  "missing"), in bus order; its item label ``gpu<N>`` (the test id's ``-gpu<N>``, ``GpuSlot.index``)
  takes the next numbers after the present GPUs' highest index, so it never equals a present
  GPU's; it has no ``gpu_index`` (nvidia-smi's numbering does not list it: null in
  results.jsonl, empty in JUnit properties and RMA rows; engine.evaluate.gpu_identity).
- When GPUs cannot be read at all (driver/library mismatch, no driver): one slot per spec
  count, or a single slot 0, so every per-GPU check reports ERROR naming the cause; none when
  the spec says the node has no GPUs (``gpu.count: 0``, a login or storage node).
Never raises EvidenceError.

``identity_conflicts(gpus)``: GPUs of one node that share a PCI bus id, serial, UUID or index
(a serial shared by GPUs with their own UUIDs and bus ids is one multi-GPU board, not a conflict);
their per-GPU items cannot be told apart (``checks.evaluate`` makes them ERROR, NG-INV-001
FAILs naming them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import EvidenceError
from ..facts import NA, normalize_bus_id
from ._util import optional, same_bus, spec_or_default


@dataclass(frozen=True)
class GpuSlot:
    """One per-GPU test item: ``index`` and ``pci_bus_id`` as observed (or expected when the
    GPU is missing: then ``present`` is False and ``index`` is only its item label, after the
    present GPUs' indices, never nvidia-smi's index of any GPU)."""

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
        if len(missing_bus) < want - len(slots):
            # not named by the spec: the bus ids the driver, PCI or the kernel log know but
            # nvidia-smi does not list (NG-INV-001's "missing"), in bus order
            seen = [s.pci_bus_id for s in slots if s.pci_bus_id]
            missing_bus += sorted(b for b in lost_bus_ids(facts, seen)
                                  if not any(same_bus(b, m, function=True) for m in missing_bus))
        nxt = (max(s.index for s in slots) + 1) if slots else 0
        for k in range(want - len(slots)):
            slots.append(GpuSlot(nxt + k, missing_bus[k] if k < len(missing_bus) else None, present=False))
    return slots


def lost_bus_ids(facts, seen: list[str], errors: list | None = None) -> dict[str, str]:
    """Bus ids the kernel log, the driver or PCI knows but nvidia-smi/NVML does not list -> why.
    EvidenceErrors of the kernel log / driver GPU list / PCI functions are appended to ``errors``."""
    lost: dict[str, str] = {}
    errors = errors if errors is not None else []
    events, eerr = optional(facts, "kernel_events")
    if eerr is not None:
        errors.append(eerr)
    for e in events or []:
        if e.bus_id and (e.kind == "fallen_off_bus" or (e.kind == "xid" and e.xid == 79)) and \
                not any(same_bus(e.bus_id, s) for s in seen):
            lost.setdefault(e.bus_id, "fell off the bus (kernel log" + (f" Xid {e.xid})" if e.xid else ")"))
        if e.bus_id and e.kind in ("rm_init_adapter_failed", "gsp_init_failed", "requires_open",
                                   "open_unsupported_gpu") and \
                not any(same_bus(e.bus_id, s) for s in seen):
            lost.setdefault(e.bus_id, f"failed to initialise (kernel log: {e.kind})")
    bound, berr = optional(facts, "driver_gpus")
    if berr is not None:
        errors.append(berr)
    for d in bound or []:
        b = d.get("Bus Location")
        if b and not any(same_bus(b, s, function=True) for s in seen):
            lost.setdefault(normalize_bus_id(b), "bound by the nvidia module (/proc/driver/nvidia/gpus) but not "
                                                 "reported by nvidia-smi/NVML")
    pci, where = pci_gpus(facts, errors)
    for b in pci:
        if not any(same_bus(b, s, function=True) for s in seen):
            lost.setdefault(normalize_bus_id(b), f"an NVIDIA display-class PCI function ({where}) that nvidia-smi/NVML "
                                                 "does not report")
    return lost


def pci_gpus(facts, errors: list) -> tuple[list[str], str]:
    """(bus ids of the NVIDIA display-class PCI functions, where from): ``pci.sysfs`` (SR-IOV VFs
    left out by the probe), else the alternative key ``pci.lspci_vvv`` (a converted
    nvidia-bug-report); ([], "") when neither can be read (the error is appended)."""
    links, lerr = optional(facts, "pci_links")
    if links is not None:
        return [ln.bdf for ln in links if ln.role == "gpu"], "sysfs"
    alt, _ = optional(facts, "lspci_links")
    if alt:
        return [ln.bdf for ln in alt if ln.display], "lspci -vvv"
    errors.append(lerr)
    return [], ""


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
            if field == "serial" and _one_board(gpus, poss):
                continue
            for pos in poss:
                others = ", ".join(f"GPU {_idx(gpus, o)}" for o in poss if o != pos)
                out.setdefault(pos, []).append(f"shares {label} {v} with {others}")
    return {pos: f"GPU {_idx(gpus, pos)} " + "; ".join(why) for pos, why in out.items()}


def _one_board(gpus, poss: list[int]) -> bool:
    """The GPUs at ``poss`` share a serial but each has its own UUID and PCI bus id: the GPUs of one
    multi-GPU board (Tesla K80/M60/M10, GRID K520: nvidia-smi prints the board's serial for each of
    its GPUs, e.g. microsoft/pai's 4x K80 capture in ../shared/sweep, where Hyper-V passthrough even reports
    multigpu_board No). They are told apart by UUID and bus id; only a serial shared by GPUs that
    cannot be told apart otherwise is a conflict."""
    uuids = [_ident_value("uuid", gpus[p].uuid) for p in poss]
    buses = [_ident_value("pci_bus_id", gpus[p].pci_bus_id) for p in poss]
    return (None not in uuids and len(set(uuids)) == len(poss)
            and None not in buses and len(set(buses)) == len(poss))


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
