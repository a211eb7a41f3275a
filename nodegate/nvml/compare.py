"""Cross-check two GpuFacts of the same GPU from different sources (NVML vs nvidia-smi).

Only fields BOTH sources carry are compared (a leaf that is None on either side is skipped);
dicts are compared over their common keys. NA is a value here: NA on one side and a number on
the other is a difference. Pure; used by tests/nvml and device/run.sh.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..facts import GpuFacts

#: Fields sampled live: two reads seconds apart may legitimately differ (P-state, idle
#: reasons, link power-down, temperature, power). Reported, never a mismatch of the mapping.
LIVE_FIELDS = frozenset({
    "pstate", "temperature_c", "power_draw_w", "clocks_event_reasons", "clocks_event_reasons_mask",
    "link.current_gen", "link.current_width",
})


@dataclass(frozen=True)
class FieldDiff:
    """One compared leaf whose values differ: ``path`` like ``link.max_gen`` or
    ``ecc_volatile.by_location.dram_correctable``; ``live`` when under LIVE_FIELDS."""

    path: str
    left: Any
    right: Any
    live: bool = False


def _is_live(path: str) -> bool:
    return any(path == f or path.startswith(f + ".") for f in LIVE_FIELDS)


def _walk(a: Any, b: Any, path: str, compared: list[str], diffs: list[FieldDiff]) -> None:
    if a is None or b is None:
        return
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b) and type(a) is type(b):
        for f in dataclasses.fields(a):
            _walk(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}" if path else f.name,
                  compared, diffs)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) & set(b)):
            _walk(a[k], b[k], f"{path}.{k}", compared, diffs)
        return
    compared.append(path)
    if a != b or type(a) is not type(b):
        diffs.append(FieldDiff(path, a, b, _is_live(path)))


def compare_gpu_facts(left: GpuFacts, right: GpuFacts,
                      ignore: tuple[str, ...] = ("source",)) -> tuple[list[str], list[FieldDiff]]:
    """Return ``(compared leaf paths, differences)`` for fields both carry. ``ignore`` lists
    top-level field names left out (``source`` always differs)."""
    compared: list[str] = []
    diffs: list[FieldDiff] = []
    for f in dataclasses.fields(GpuFacts):
        if f.name in ignore:
            continue
        _walk(getattr(left, f.name), getattr(right, f.name), f.name, compared, diffs)
    return compared, diffs


def pair_by_bus_id(left: list[GpuFacts], right: list[GpuFacts]):
    """Pairs ``(bus id, left or None, right or None)`` matched on pci_bus_id (index order can
    differ between tools when CUDA_DEVICE_ORDER or MIG is involved), in bus id order."""
    lm = {g.pci_bus_id: g for g in left}
    rm = {g.pci_bus_id: g for g in right}
    return [(b, lm.get(b), rm.get(b)) for b in sorted(set(lm) | set(rm), key=str)]
