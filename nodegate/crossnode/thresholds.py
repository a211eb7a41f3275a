"""Three thresholds per measurement, each with its rule and source (issue 38 item 6).

1. **absolute**: a per-SKU x fabric floor (nodegate/data/crossnode_floors.yaml, or the site's
   ``nodegate.crossnode.floors``): ib_write_bw >= 90 % of the negotiated port rate; bus
   bandwidth (the maximum over sizes >= 1 GiB) >= a fraction of the line rate the job crosses;
   ib_write_lat p99 <= 4.2 us.
2. **relative**: within the run, bandwidth below 93 % of the best figure of the same payload, or
   latency above 2.1x the lowest (ClusterKit's defaults), so one slow job stands out even on a
   fabric whose floor is not known precisely; a uniformly slow fabric still fails rule 1.
3. **fail-closed**: ``#wrong`` > 0 (FAIL: data corruption), rc != 0, a timeout, missing output,
   ranks that did not form one communicator, an unknown SKU or fabric (ERROR): never PASS.

``combine`` turns the checks into the job's Outcome: corruption FAIL, else any rule that could
not be applied ERROR (a figure of a job that died is not a measurement, whatever its value),
else any rule that fired FAIL, else PASS.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from importlib import resources

from ..outcomes import Outcome
from ..yamlio import safe_load
from .model import RuleCheck


@functools.lru_cache(maxsize=1)
def floors_data() -> dict:
    """nodegate/data/crossnode_floors.yaml as loaded (cached)."""
    text = resources.files("nodegate").joinpath("data/crossnode_floors.yaml").read_text()
    data = safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("crossnode_floors.yaml is not a mapping")
    return data


@dataclass
class Measured:
    """What a payload yielded, before any rule. ``value`` None when nothing usable was measured;
    ``problems``: why the figure cannot be trusted (rc, timeout, missing rows, ranks): each makes
    the job ERROR; ``corruption``: the tool's own data check failed (``#wrong`` > 0): FAIL.
    ``extra``: further figures of the same launch (ib_write_lat beside ib_write_bw)."""

    metric: str
    unit: str
    value: float | None = None
    problems: list[str] = field(default_factory=list)
    corruption: str = ""
    extra: list["Measured"] = field(default_factory=list)
    detail: str = ""
    versions: dict[str, str] = field(default_factory=dict)


@dataclass
class Floors:
    """The absolute floors that apply to one job, each with its source; None: unknown (the
    rule then cannot be applied: ERROR naming why)."""

    busbw_gbs: dict[str, tuple[float | None, str]] = field(default_factory=dict)  # payload -> (floor, source)
    ib_write_bw_fraction: tuple[float, str] = (0.90, "")
    ib_write_lat_p99_us: tuple[float, str] = (4.2, "")
    relative_bw: tuple[float, str] = (0.93, "")
    relative_lat: tuple[float, str] = (2.1, "")
    min_size_bytes: int = 1 << 30
    why_unknown: str = ""


def resolve_floors(skus: list[str], fabric: str | None, overrides: dict | None = None,
                   payloads=("all_reduce_perf", "all_reduce_perf:split", "alltoall_perf")) -> Floors:
    """The floors for a job over nodes whose GPU product names are ``skus`` on ``fabric``.

    ``overrides`` (the spec's ``nodegate.crossnode.floors``): ``all_reduce_busbw_gbs``,
    ``all_reduce_split_busbw_gbs``, ``alltoall_busbw_gbs``, ``ib_write_bw_fraction``,
    ``ib_write_lat_p99_us``: a figure there wins and its source is the spec key. A job over
    nodes of two SKU profiles takes the lower floor. Unknown SKU or fabric: the busbw floors are
    None with ``why_unknown`` (fail-closed)."""
    data = floors_data()
    rules = data.get("rules", {})
    f = Floors()
    bw = rules.get("ib_write_bw", {})
    lat = rules.get("ib_write_lat", {})
    rel = rules.get("relative", {})
    f.ib_write_bw_fraction = (float(bw.get("fraction_of_port_rate", 0.9)), str(bw.get("source", "")))
    f.ib_write_lat_p99_us = (float(lat.get("max_p99_us", 4.2)), str(lat.get("source", "")))
    f.relative_bw = (float(rel.get("bandwidth_fraction_of_best", 0.93)), str(rel.get("source", "")))
    f.relative_lat = (float(rel.get("latency_factor_of_lowest", 2.1)), str(rel.get("source", "")))
    f.min_size_bytes = int(rules.get("busbw", {}).get("min_size_bytes", 1 << 30))
    ov = dict(overrides or {})
    spec_keys = {"all_reduce_perf": "all_reduce_busbw_gbs", "all_reduce_perf:split": "all_reduce_split_busbw_gbs",
                 "alltoall_perf": "alltoall_busbw_gbs"}
    if ov.get("ib_write_bw_fraction") is not None:
        f.ib_write_bw_fraction = (float(ov["ib_write_bw_fraction"]), "spec: nodegate.crossnode.floors.ib_write_bw_fraction")
    if ov.get("ib_write_lat_p99_us") is not None:
        f.ib_write_lat_p99_us = (float(ov["ib_write_lat_p99_us"]), "spec: nodegate.crossnode.floors.ib_write_lat_p99_us")
    fab = (data.get("fabrics") or {}).get(fabric or "")
    profiles = []
    unknown = []
    for sku in sorted(set(skus)) or [""]:
        prof = next((p for p in data.get("skus", []) if any(m.lower() in sku.lower() for m in p.get("match", []))
                     and sku), None)
        if prof is None:
            unknown.append(f"no floor profile for the GPU {sku!r}" if sku else "the GPU model is not known")
        else:
            profiles.append(prof)
    if fabric is None:
        unknown.append("no fabric given (nodegate.crossnode.fabric)")
    elif fab is None:
        unknown.append(f"unknown fabric {fabric!r} (known: {', '.join(sorted(data.get('fabrics', {})))})")
    for p in profiles:
        if fab is not None and fabric not in p.get("fabrics", []):
            unknown.append(f"no floors for {p['match'][0]}-class GPUs on {fabric}")
    for payload in payloads:
        key = spec_keys.get(payload)
        if key and ov.get(key) is not None:
            f.busbw_gbs[payload] = (float(ov[key]), f"spec: nodegate.crossnode.floors.{key}")
            continue
        if unknown:
            f.busbw_gbs[payload] = (None, "; ".join(unknown))
            continue
        figures = []
        for p in profiles:
            rule = p.get(payload)
            if not isinstance(rule, dict):
                figures = None
                f.busbw_gbs[payload] = (None, f"no public floor for {payload} on {p['match'][0]}-class GPUs x "
                                              f"{fabric}: set nodegate.crossnode.floors.{key}")
                break
            rails = 1 if payload.endswith(":split") else int(p.get("rails", 1))
            line = rails * float(fab["rate_gbps"]) / 8.0
            figures.append((round(float(rule["fraction_of_line_rate"]) * line, 2),
                            f"{rule['fraction_of_line_rate']:g} x {rails} x {fab['rate_gbps']} Gb/s / 8 "
                            f"({rule.get('source', '')})"))
        if figures:
            f.busbw_gbs[payload] = min(figures)
    f.why_unknown = "; ".join(unknown)
    return f


# ---------------------------------------------------------------------------------- the rules
def fail_closed(m: Measured) -> RuleCheck:
    """Rule 3. passed False for corruption, None for any problem (ERROR), True otherwise."""
    rule = "#wrong == 0, rc == 0, no timeout, output complete, one communicator"
    src = "issue 38 item 6; CRE PR #6 (fail closed on a missing measurement)"
    if m.corruption:
        return RuleCheck("fail-closed", rule, src, False, why=m.corruption)
    if m.problems:
        return RuleCheck("fail-closed", rule, src, None, why="; ".join(m.problems))
    if m.value is None or not math.isfinite(m.value) or m.value < 0:
        return RuleCheck("fail-closed", rule, src, None, why=f"no {m.metric} figure was measured")
    return RuleCheck("fail-closed", rule, src, True)


def absolute(m: Measured, limit: float | None, source: str, *, upper: bool = False) -> RuleCheck:
    """Rule 1: ``value >= limit`` (``upper``: ``value <= limit``)."""
    op = "<=" if upper else ">="
    if limit is None:
        return RuleCheck("absolute", f"{m.metric} {op} floor", source or "no floor", None, unit=m.unit,
                         value=m.value, why=f"no absolute floor: {source}")
    rule = f"{m.metric} {op} {limit:g} {m.unit}"
    if m.value is None or not math.isfinite(m.value):
        return RuleCheck("absolute", rule, source, None, limit, None, m.unit, why="nothing measured")
    ok = m.value <= limit if upper else m.value >= limit
    return RuleCheck("absolute", rule, source, ok, limit, m.value, m.unit,
                     why="" if ok else f"{m.value:g} {m.unit} {'above' if upper else 'below'} {limit:g}")


def relative(m: Measured, best: float | None, factor: float, source: str, *, upper: bool = False) -> RuleCheck:
    """Rule 2: bandwidth >= ``factor`` x the run's best (``upper``: latency <= ``factor`` x the
    run's lowest). ``best`` None: this is the first figure of its kind (it is the best)."""
    if m.value is None or not math.isfinite(m.value):
        return RuleCheck("relative", f"{m.metric} within the run", source, None, why="nothing measured")
    ref = m.value if best is None else best
    limit = round(ref * factor, 4)
    if upper:
        ok = m.value <= limit
        rule = f"{m.metric} <= {factor:g} x the run's lowest ({ref:g} {m.unit})"
    else:
        ok = m.value >= limit
        rule = f"{m.metric} >= {factor:g} x the run's best ({ref:g} {m.unit})"
    return RuleCheck("relative", rule, source, ok, limit, m.value, m.unit,
                     why="" if ok else f"{m.value:g} {m.unit} vs {limit:g} {m.unit}")


def combine(checks: list[RuleCheck]) -> Outcome:
    """Corruption FAIL > any rule not applied ERROR > any rule fired FAIL > PASS."""
    if any(c.kind == "fail-closed" and c.passed is False for c in checks):
        return Outcome.FAIL
    if any(c.passed is None for c in checks):
        return Outcome.ERROR
    if any(c.passed is False for c in checks):
        return Outcome.FAIL
    return Outcome.PASS if checks else Outcome.ERROR


class RunBest:
    """The run's best bandwidth and lowest latency so far, per (metric, payload): rule 2's
    reference. Figures of jobs that failed rule 3 never become a reference."""

    def __init__(self):
        self.best: dict[tuple[str, str], float] = {}

    def get(self, metric: str, payload: str) -> float | None:
        return self.best.get((metric, payload))

    def offer(self, metric: str, payload: str, value: float | None, *, lower_is_better: bool = False) -> None:
        if value is None or not math.isfinite(value):
            return
        k = (metric, payload)
        cur = self.best.get(k)
        if cur is None or (value < cur if lower_is_better else value > cur):
            self.best[k] = value


def judge(m: Measured, floors: Floors, payload: str, best: RunBest, *,
          port_rate_gbps: float | None = None) -> list[RuleCheck]:
    """The three checks of ``m`` (and of each ``m.extra``). ``port_rate_gbps``: the negotiated
    rate of an HCA pair's ports (the lower end), for ib_write_bw's floor."""
    checks: list[RuleCheck] = []
    for x in [m] + list(m.extra):
        fc = fail_closed(x)
        if x.metric == "busbw":
            limit, src = floors.busbw_gbs.get(payload, (None, f"no floor known for {payload}"))
            ab = absolute(x, limit, src)
            rel = relative(x, best.get(x.metric, payload), floors.relative_bw[0], floors.relative_bw[1])
        elif x.metric == "ib_write_bw":
            frac, src = floors.ib_write_bw_fraction
            if port_rate_gbps:
                ab = absolute(x, round(frac * port_rate_gbps, 2), f"{frac:g} x negotiated {port_rate_gbps:g} Gb/s ({src})")
            else:
                ab = absolute(x, None, "the negotiated port rate is not known (no ib.ports evidence for this HCA)")
            rel = relative(x, best.get(x.metric, payload), floors.relative_bw[0], floors.relative_bw[1])
        elif x.metric == "ib_write_lat_p99":
            lim, src = floors.ib_write_lat_p99_us
            ab = absolute(x, lim, src, upper=True)
            rel = relative(x, best.get(x.metric, payload), floors.relative_lat[0], floors.relative_lat[1], upper=True)
        else:
            ab = absolute(x, None, f"no rule for {x.metric}")
            rel = relative(x, None, 1.0, "")
        for c in (ab, rel, fc):
            c.rule = c.rule if c.rule.startswith(x.metric) or x is m else f"{x.metric}: {c.rule}"
        checks += [ab, rel, fc]
    return checks


def offer_all(m: Measured, checks: list[RuleCheck], payload: str, best: RunBest) -> None:
    """Feed the run's references with the figures of a job whose rule 3 passed."""
    for x in [m] + list(m.extra):
        if fail_closed(x).passed:
            best.offer(x.metric, payload, x.value, lower_is_better=x.metric.startswith("ib_write_lat"))
