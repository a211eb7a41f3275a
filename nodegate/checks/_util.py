"""Helpers shared by the check rules: find a GPU, label it, read optional facts, format values.

Pure functions over facts (NodeFacts or a fake with the same attribute names).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ..errors import EvidenceError
from ..facts import NA, GpuFacts
from ..outcomes import Result
from ..spec import spec_or_default

__all__ = ["NA", "gpu_for", "gpu_label", "raw_gpu", "CheckedGpu", "SOURCE_KEYS", "optional", "version_matches", "loaded_driver_version",
           "fmt", "same_bus", "spec_or_default", "skip_by_spec", "lines"]


def optional(facts, name: str) -> tuple[Any, EvidenceError | None]:
    """``(value, None)`` or ``(None, error)``: for facts that only refine a verdict."""
    try:
        return getattr(facts, name), None
    except EvidenceError as e:
        return None, e


#: GpuFacts.source -> the evidence key it was read from (for ERROR messages)
SOURCE_KEYS = {"smi_xml": "smi.qx", "smi_text": "smi.q", "smi_csv": "smi.query_csv", "nvml": "nvml.json",
               "lspci": "pci.lspci_vvv"}


class CheckedGpu:
    """A GpuFacts whose unreadable attributes (``field_errors``, set by the parser for a malformed
    value) raise EvidenceError("output unparsable: <attribute>: <why>") when a check reads them:
    one bad field makes only the checks that need it ERROR. Every other attribute reads through."""

    __slots__ = ("_gpu",)

    def __init__(self, gpu: GpuFacts):
        object.__setattr__(self, "_gpu", gpu)

    def __getattr__(self, name):
        g = object.__getattribute__(self, "_gpu")
        why = g.field_errors.get(name)
        if why is not None:
            if why.startswith("section not collected"):   # nvidia-smi -q -d: not asked for, not malformed
                raise EvidenceError(SOURCE_KEYS.get(g.source, "smi.qx"), f"{name}: {why}")
            raise EvidenceError(SOURCE_KEYS.get(g.source, "smi.qx"), f"output unparsable: {name}: {why}")
        return getattr(g, name)

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_gpu"), name, value)

    @property
    def unchecked(self) -> GpuFacts:
        return object.__getattribute__(self, "_gpu")


def _checked(g: GpuFacts):
    return CheckedGpu(g) if getattr(g, "field_errors", None) else g


def raw_gpu(g) -> GpuFacts:
    """The GpuFacts behind a CheckedGpu (labels and identities never raise)."""
    return g.unchecked if isinstance(g, CheckedGpu) else g


def gpu_for(facts, slot) -> GpuFacts:
    """The GpuFacts of ``slot`` (matched by bus id, else index); a CheckedGpu when the parser
    could not read some of its values (see CheckedGpu).

    Raises EvidenceError when the GPUs cannot be read or the slot's GPU is not there (a
    missing GPU is the inventory check's FAIL; other per-GPU checks report ERROR)."""
    gpus = facts.gpus
    if slot is None:
        raise EvidenceError("smi.qx", "per-GPU check called without a GPU slot")
    if getattr(slot, "present", True):
        for i, g in enumerate(gpus):
            if slot.pci_bus_id and g.pci_bus_id and same_bus(g.pci_bus_id, slot.pci_bus_id, function=True):
                return _checked(g)
        for i, g in enumerate(gpus):
            if (g.index if g.index is not None else i) == slot.index:
                return _checked(g)
    raise EvidenceError("smi.qx", f"{missing_gpu_name(slot)} not present on the node; see NG-INV-001")


def missing_gpu_name(slot) -> str:
    """A GPU nvidia-smi does not list, as every message names it: ``GPU 0000:5d:00.0 (gpu7, not
    listed by nvidia-smi)``. Its bus id identifies it (checks.slots: the spec's gpu.bus_ids, else
    the driver's or PCI's evidence); ``gpu7`` is its item label (the test id's ``-gpu7``), which
    follows the present GPUs' indices and is no nvidia-smi index (results.jsonl: gpu_index null)."""
    label = f"gpu{slot.index}"
    if slot.pci_bus_id:
        return f"GPU {slot.pci_bus_id} ({label}, not listed by nvidia-smi)"
    return f"GPU {label} (bus id unknown, not listed by nvidia-smi)"


def gpu_label(g: GpuFacts | None, slot=None) -> str:
    """``GPU 0 (0000:19:00.0, serial 1650000000001)``: index, PCI bus id, serial; a missing GPU's
    slot without facts: ``missing_gpu_name``."""
    g = raw_gpu(g)
    if g is None and slot is not None and not getattr(slot, "present", True):
        return missing_gpu_name(slot)
    idx = g.index if g is not None and g.index is not None else getattr(slot, "index", "?")
    bus = (g.pci_bus_id if g is not None else None) or getattr(slot, "pci_bus_id", None) or "bus id unknown"
    serial = g.serial if g is not None else None
    s = f", serial {fmt(serial)}" if serial not in (None,) else ""
    return f"GPU {idx} ({bus}{s})"


def fmt(v) -> str:
    if v is NA:
        return "N/A"
    if v is None:
        return "not reported"
    if isinstance(v, bool):
        return "Yes" if v else "No"
    return str(v)


_BUS = re.compile(r"^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})(?:\.([0-7]))?$")


@functools.lru_cache(maxsize=4096)  # pure; called for every GPU of every per-GPU item
def _bus_parts(b: str):
    m = _BUS.match(b.strip().lower())
    if not m:
        return None
    dom, bus, dev, fn = m.groups()
    return int(dom or "0", 16), int(bus, 16), int(dev, 16), (int(fn) if fn is not None else None)


def same_bus(a: str | None, b: str | None, function: bool = False) -> bool:
    """Same PCI device. Kernel log lines omit the function (``PCI:0000:19:00``): a missing
    function matches any; ``function=True`` compares functions when both carry one."""
    if not a or not b:
        return False
    pa, pb = _bus_parts(a), _bus_parts(b)
    if pa is None or pb is None:
        return a.strip().lower() == b.strip().lower()
    if pa[:3] != pb[:3]:
        return False
    if function and pa[3] is not None and pb[3] is not None:
        return pa[3] == pb[3]
    return True


def version_matches(spec_version: str | None, observed: str | None) -> bool:
    """Spec '580' (branch) or '580.159.04' (exact): compare dotted components as a prefix."""
    if spec_version is None:
        return True
    if not observed:
        return False
    want, got = spec_version.split("."), observed.strip().split(".")
    return got[: len(want)] == want


def loaded_driver_version(facts) -> str:
    """Loaded kernel module version: /sys/module/nvidia/version, else /proc/driver/nvidia/version.
    Raises the first EvidenceError when neither is readable."""
    v, err = optional(facts, "nvidia_module_version")
    if v:
        return v
    banner, err2 = optional(facts, "driver_banner")
    if banner is not None and banner.version:
        return banner.version
    raise err or err2 or EvidenceError("modules.nvidia_version", "nvidia module version not reported")


def skip_by_spec(key: str, value, why: str, **kw) -> Result:
    return Result.skipped(f"{key}={value}: {why}", expected=f"{key}={value}", **kw)


def lines(*items) -> str:
    return "\n".join(str(i) for i in items if i not in (None, ""))
