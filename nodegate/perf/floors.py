"""The versioned SKU floor table (nodegate/data/perf_floors.yaml) and the spec's overrides.

``sku_for(gpu_name)`` -> table key or None; ``floor_for(table, sku, m, overrides)`` -> Floor or
None (no public floor: the peer and fleet rules carry the verdict); ``hca_floor(table, rate)``.
Entries match a measurement on (metric, engine, direction, unit): a copy-engine floor never
applies to an SM figure, nor a one-way floor to a bidirectional one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from ..yamlio import safe_load
from .model import Measurement


@dataclass(frozen=True)
class Floor:
    value: float | None          # None: reference figure only
    measured: float | None
    source: str
    ref_size_b: int | None = None


@dataclass(frozen=True)
class FloorTable:
    version: str
    skus: dict
    hca: list


@functools.lru_cache(maxsize=1)
def load_table() -> FloorTable:
    """The packaged table. Raises ValueError when it is malformed (a packaging bug)."""
    raw = safe_load(resources.files("nodegate.data").joinpath("perf_floors.yaml").read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("skus"), dict):
        raise ValueError("perf_floors.yaml: no skus mapping")
    return FloorTable(str(raw.get("version", "")), raw["skus"], list(raw.get("hca") or []))


def sku_for(gpu_name: str | None, table: FloorTable | None = None) -> str | None:
    """The table key whose ``match`` patterns fit ``gpu_name`` (nvidia-smi's product name)."""
    if not gpu_name:
        return None
    table = table or load_table()
    for key, sku in table.skus.items():
        if any(re.search(p, gpu_name.strip(), re.I) for p in sku.get("match", [])):
            return key
    return None


def sku_name(key: str | None, table: FloorTable | None = None) -> str:
    table = table or load_table()
    return str((table.skus.get(key) or {}).get("name", key or "unknown SKU"))


def _override(m: Measurement, overrides: dict | None) -> float | None:
    if not overrides:
        return None
    for k in (f"{m.metric}.{m.engine}.{m.direction}", f"{m.metric}.{m.engine}", m.metric):
        if k in overrides:
            return float(overrides[k])
    return None


def floor_for(m: Measurement, sku: str | None, overrides: dict | None = None,
              table: FloorTable | None = None) -> Floor | None:
    """The floor for ``m`` on ``sku``; a spec override (``perf.floors``: ``metric``,
    ``metric.engine`` or ``metric.engine.direction`` -> value in the measurement's unit) wins."""
    table = table or load_table()
    ov = _override(m, overrides)
    entry = None
    for e in (table.skus.get(sku) or {}).get("entries", []) if sku else []:
        if (e.get("metric") == m.metric and (e.get("engine") or "") == m.engine
                and (e.get("direction") or "uni") == m.direction and e.get("unit") == m.unit):
            entry = e
            break
    if ov is not None:
        # the spec's own floor: judged at whatever size the sweep reached
        return Floor(ov, entry.get("measured") if entry else None, "spec perf.floors")
    if entry is None:
        return None
    fl = entry.get("floor")
    return Floor(float(fl) if fl is not None else None, entry.get("measured"), str(entry.get("source", "")),
                 entry.get("ref_size_b"))


def hca_floor(rate_gbps: float | None, overrides: dict | None = None,
              table: FloorTable | None = None) -> Floor | None:
    """ib_write_bw floor (Gb/s) for a port of ``rate_gbps``; override key ``ib_write_bw``."""
    if overrides and "ib_write_bw" in overrides:
        return Floor(float(overrides["ib_write_bw"]), None, "spec perf.floors")
    table = table or load_table()
    for e in table.hca:
        if rate_gbps is not None and float(e.get("rate_gbps", -1)) == float(rate_gbps):
            return Floor(float(e["floor"]), None, str(e.get("source", "")))
    return None
