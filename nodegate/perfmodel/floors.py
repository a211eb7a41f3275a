"""The versioned SKU floor table (nodegate/data/perf_floors.yaml) and the spec's overrides.

``sku_for(gpu_name)`` -> table key or None; ``floor_for(m, sku, overrides)`` -> Floor or None (no
floor: the relative rules may carry the verdict, else ERROR "no floor"); ``hca_floor(m, rate,
overrides)`` for perftest figures, from the port's negotiated rate.

Entries match a measurement on (metric, engine, direction, unit, mode): a copy-engine floor never
applies to an SM figure, nor a one-way floor to a bidirectional one; an entry without ``mode``
applies to every mode (a collective's in-place and out-of-place halves). A latency entry has a
``ceiling`` (the figure must stay at or below it).

Site overrides (``perf.floors``) are looked up by ``override_keys(m)``: ``metric.engine.direction``,
``metric.engine``, ``metric.mode``, ``metric`` (the first present wins), in the measurement's unit.
"""

from __future__ import annotations

import functools
import math
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
    ceiling: bool = False        # a latency: the figure must stay at or below ``value``
    site: bool = False           # from the spec's perf.floors (a site's own figure)


@dataclass(frozen=True)
class FloorTable:
    version: str
    skus: dict
    hca: dict


@functools.lru_cache(maxsize=1)
def load_table() -> FloorTable:
    """The packaged table. Raises ValueError when it is malformed (a packaging bug)."""
    raw = safe_load(resources.files("nodegate.data").joinpath("perf_floors.yaml").read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("skus"), dict):
        raise ValueError("perf_floors.yaml: no skus mapping")
    hca = raw.get("hca") or {}
    if not isinstance(hca, dict):
        raise ValueError("perf_floors.yaml: hca must be a mapping (bandwidth, latency)")
    return FloorTable(str(raw.get("version", "")), raw["skus"], hca)


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


def override_keys(m: Measurement) -> list[str]:
    """The ``perf.floors`` keys that name ``m``'s floor, most specific first."""
    keys = []
    if m.engine:
        keys += [f"{m.metric}.{m.engine}.{m.direction}", f"{m.metric}.{m.engine}"]
    elif m.direction != "uni":
        keys.append(f"{m.metric}.{m.direction}")
    if m.mode:
        keys.append(f"{m.metric}.{m.mode}")
    keys.append(m.metric)
    return keys


def _override(m: Measurement, overrides: dict | None) -> float | None:
    for k in override_keys(m) if overrides else ():
        if k in overrides:
            v = float(overrides[k])
            return v if math.isfinite(v) and v > 0 else None
    return None


def floor_for(m: Measurement, sku: str | None, overrides: dict | None = None,
              table: FloorTable | None = None) -> Floor | None:
    """The floor for ``m`` on ``sku``; a spec override (``perf.floors``, keys: ``override_keys``)
    wins, judged at whatever size the sweep reached."""
    table = table or load_table()
    ov = _override(m, overrides)
    entry = None
    for e in (table.skus.get(sku) or {}).get("entries", []) if sku else []:
        if (e.get("metric") == m.metric and (e.get("engine") or "") == m.engine
                and (e.get("direction") or "uni") == m.direction and e.get("unit") == m.unit
                and (e.get("mode") in (None, "") or e.get("mode") == m.mode)):
            entry = e
            break
    if ov is not None:
        return Floor(ov, entry.get("measured") if entry else None, "spec perf.floors",
                     ceiling=not m.higher_is_better, site=True)
    if entry is None:
        return None
    fl = entry.get("floor", entry.get("ceiling"))
    return Floor(float(fl) if fl is not None else None, entry.get("measured"), str(entry.get("source", "")),
                 entry.get("ref_size_b"), ceiling="ceiling" in entry)


def hca_floor(m: Measurement, rate_gbps: float | None, overrides: dict | None = None,
              table: FloorTable | None = None) -> tuple[Floor | None, str]:
    """(floor, why none) for a perftest figure of a port negotiated at ``rate_gbps``: bandwidth
    ``fraction`` x rate (x2 bidirectional), latency the table's ceiling per verb and mode."""
    ov = _override(m, overrides)
    if ov is not None:
        return Floor(ov, None, "spec perf.floors", ceiling=not m.higher_is_better, site=True), ""
    table = table or load_table()
    if not m.higher_is_better:
        verb = m.metric.removeprefix("ib_").split("_")[0]
        for e in table.hca.get("latency") or []:
            if e.get("verb") == verb and (e.get("mode") in (None, "") or e.get("mode") == m.mode):
                return Floor(float(e["ceiling"]), None, str(e.get("source", "")), ceiling=True), ""
        return None, f"no public ceiling for the {m.label} of an HCA"
    bw = table.hca.get("bandwidth") or {}
    if rate_gbps is None or not math.isfinite(rate_gbps) or rate_gbps <= 0:
        return None, f"the negotiated rate of HCA {m.hca} is unknown (no port rate in the probe's ib.ports/ibstat)"
    mult = 2 if m.direction == "bidir" else 1
    frac = float(bw.get("fraction", 0.9))
    what = f"{frac:.0%} of {'2 x ' if mult == 2 else ''}the port's {rate_gbps:g} Gb/s"
    return Floor(round(frac * rate_gbps * mult, 2), None, f"{what}: {bw.get('source', '')}"), ""
