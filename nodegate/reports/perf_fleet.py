"""report.html's "Performance" section: per GPU SKU and per perf metric, the distribution of every
measured figure in the run (issue 29 item 7, docs/perf.md "Reports"), drawn as inline SVG.

Built from the results.jsonl records as ``render.render_all`` streams them node by node
(``PerfFleet.add``), so memory holds, per (SKU, metric), the figures as 8-byte floats
(``array('d')``) and at most ``MAX_OUTLIERS`` outliers with their node page links: about 1.8 MB
for 4,096 nodes x 56 GPU pairs, never the records themselves.

- A figure is a perf item's ``value`` (records with ``check_id`` ``NG-PERF-*``, nodegate.perf.present)
  that PASSed or FAILed: an ERROR ("invalid measurement", nothing to judge against) was not
  judged and is counted under the chart, not drawn.
- The SKU is the node's GPU model (``NodeInfo.gpu_model``, from the probe's facts) mapped to the
  floor table's SKU (nodegate.perfmodel.floors.sku_for); a node with mixed or unknown GPUs is shown
  under its model text (or "unknown SKU"). The metric is the item's title (its label names the
  metric, engine, direction and unit: nodegate.perfmodel.model.Measurement.label), so copy-engine and
  SM figures, one-way and bidirectional, before and after burn-in never share a chart.
- An outlier is an item the rules FAILed (SKU floor, in-node peers, fleet, baseline, data
  corruption: the record's ``rule``): drawn red, linked to its node page, and listed under the
  chart with its rules.
- The floor lines are the absolute floors that judged the items: each record's ``floor`` (the SKU
  table's, or a site's ``perf.floors`` override for the nodes whose spec sets one: issue 36 item 9),
  one line per distinct floor with the number of nodes it judged; records from before the
  ``floor`` field fall back to the SKU table's floor for the metric. The median line is the median
  of the drawn figures.

Every string from a node (node names, SKU and metric titles, rules) goes through ``text.esc``.
"""

from __future__ import annotations

import re
import statistics
from array import array
from dataclasses import dataclass, field

from .text import esc

#: charts (SKU x metric) kept at most; figures of further ones are counted, not drawn
MAX_CHARTS = 200
#: figures kept per chart (bounded memory whatever the run)
MAX_VALUES = 1_000_000
#: outliers kept per chart (drawn and listed), the rest counted
MAX_OUTLIERS = 50
#: distinct floors drawn per chart (site overrides): the rest are counted under the chart
MAX_FLOORS = 4
#: up to this many figures one dot each; above, one bar per pixel column (its height the count)
DOTS_MAX = 2000
WIDTH, HEIGHT, PAD_L, PAD_R = 640, 96, 70, 70

_TITLE = re.compile(r"^performance(?: \((?P<phase>[^)]{1,40}) burn-in\))?: (?P<label>.+)$")
_SUBJECT = re.compile(r"-(gpu\d+-gpu\d+|gpu\d+|hca-[A-Za-z0-9_.-]{1,64}|node)\]$")
_MIXED = re.compile(r" x\d+(,|$)")


@dataclass
class Outlier:
    node: str
    subject: str
    value: float
    rules: str
    href: str


@dataclass
class Dist:
    """One chart: every figure of one metric on one SKU."""

    sku: str
    sku_key: str | None
    title: str
    unit: str
    values: array = field(default_factory=lambda: array("d"))
    nodes: int = 0
    dropped: int = 0          # figures past MAX_VALUES
    invalid: int = 0          # ERROR items with a figure (not judged, not drawn)
    outliers: list[Outlier] = field(default_factory=list)
    n_outliers: int = 0
    last_node: str = ""
    floors: dict = field(default_factory=dict)     # floor value -> nodes it judged (records' ``floor``)


def _float(s: str) -> float | None:
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def sku_of(gpu_model: str | None) -> tuple[str | None, str]:
    """(floor table key or None, label) for a node's GPU model text."""
    if not gpu_model or _MIXED.search(gpu_model):
        return None, gpu_model or "unknown SKU"
    try:
        from ..perfmodel.floors import sku_for, sku_name
        key = sku_for(gpu_model)
        return (key, sku_name(key)) if key else (None, gpu_model)
    except Exception:  # noqa: BLE001 - no floor table: the model text still groups the nodes
        return None, gpu_model


def table_floor(sku_key: str | None, title: str, unit: str) -> float | None:
    """The SKU floor table's floor for the metric a perf item's title names, or None."""
    m = _TITLE.match(title)
    if not sku_key or not m:
        return None
    try:
        from ..perfmodel.floors import load_table
        from ..perfmodel.model import Measurement
        for e in (load_table().skus.get(sku_key) or {}).get("entries", []):
            if e.get("unit") != unit or e.get("floor") is None:
                continue
            ms = Measurement("", str(e.get("metric")), 0.0, unit, engine=e.get("engine") or "",
                             direction=e.get("direction") or "uni")
            if ms.label == m.group("label"):
                return float(e["floor"])
    except Exception:  # noqa: BLE001 - a malformed table is a packaging bug: no line rather than no report
        return None
    return None


class PerfFleet:
    """Per (SKU, metric) figures of a run, fed one node at a time."""

    def __init__(self) -> None:
        self.dists: dict[tuple[str, str, str], Dist] = {}
        self.dropped_charts = 0

    def add(self, node: str, gpu_model: str | None, href: str, recs) -> None:
        """One node's records (nodegate.reports.records.Record); ``href``: its page, relative to
        report.html ("" when there are no pages)."""
        sku = None
        for r in recs:
            if not r.check_id.startswith("NG-PERF-") or r.outcome not in ("pass", "fail", "error"):
                continue
            v = _float(r.value)
            if v is None:
                continue
            if sku is None:
                sku = sku_of(gpu_model)
            k = (sku[1], r.title, r.unit)
            d = self.dists.get(k)
            if d is None:
                if len(self.dists) >= MAX_CHARTS:
                    self.dropped_charts += 1
                    continue
                d = self.dists[k] = Dist(sku[1], sku[0], r.title, r.unit)
            if d.last_node != node:
                d.last_node, d.nodes = node, d.nodes + 1
                fl = _float(getattr(r, "floor", ""))
                if fl is not None and (fl in d.floors or len(d.floors) < MAX_FLOORS):
                    d.floors[fl] = d.floors.get(fl, 0) + 1
            if r.outcome == "error":
                d.invalid += 1
                continue
            if len(d.values) >= MAX_VALUES:
                d.dropped += 1
                continue
            d.values.append(v)
            if r.outcome == "fail":
                d.n_outliers += 1
                if len(d.outliers) < MAX_OUTLIERS:
                    m = _SUBJECT.search(r.nodeid)
                    subj = m.group(1) if m else (f"gpu{r.gpu_index}" if r.gpu_index else "node")
                    d.outliers.append(Outlier(node, subj, v, r.rule, href))

    def html(self) -> str:
        """The section's markup ("" when the run has no perf figure)."""
        if not self.dists:
            return ""
        out = ['<div id="ng-perf-fleet"><p class="small">Every judged figure per GPU SKU and metric: a dot per '
               'GPU, link or HCA (a bar per pixel column when there are many), the box from the first to the third '
               'quartile, the <span style="color:#1565c0">median</span> and the SKU table\'s '
               '<span style="color:#c62828">floor</span>; <span style="color:#c62828">outliers</span> (items the '
               'rules failed) drawn red and linked to their node page.</p>']
        for d in sorted(self.dists.values(), key=lambda d: (d.sku, d.title)):
            if d.values:
                out.append(chart_html(d))
        if self.dropped_charts:
            out.append(f'<p class="small">{self.dropped_charts} figure(s) of further metrics not charted '
                       f"(at most {MAX_CHARTS} charts).</p>")
        out.append("</div>")
        return "".join(out)


def _quartiles(vals: list[float]) -> tuple[float, float, float]:
    if len(vals) < 2:
        return vals[0], vals[0], vals[0]
    q = statistics.quantiles(vals, n=4, method="inclusive")
    return q[0], q[1], q[2]


def _fmt(v: float) -> str:
    return f"{v:.1f}" if abs(v) < 10000 else f"{v:,.0f}"


def chart_html(d: Dist) -> str:
    """One chart: a heading, the SVG, and the outliers listed (linked)."""
    vals = sorted(d.values)
    q1, med, q3 = _quartiles(vals)
    floors = d.floors or ({tf: d.nodes} if (tf := table_floor(d.sku_key, d.title, d.unit)) is not None else {})
    # the floor most nodes were judged against is "the" floor; the others (site overrides) drawn too
    floor = max(floors, key=lambda f: (floors[f], -f)) if floors else None
    lo = min([vals[0], *floors])
    hi = max([vals[-1], *floors])
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - span * 0.05, hi + span * 0.05

    def x(v: float) -> float:
        return PAD_L + (v - lo) / (hi - lo) * (WIDTH - PAD_L - PAD_R)

    name = f"{d.sku}: {d.title}"
    mid = 44
    parts = [f'<svg class="ng-perf-dist" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
             f'role="img" data-sku="{esc(d.sku, 300)}" data-n="{len(vals)}" data-outliers="{d.n_outliers}">'
             f"<title>{esc(name, 600, keep_newlines=False)}</title>",
             f'<rect x="{x(q1):.1f}" y="{mid - 14}" width="{max(1.0, x(q3) - x(q1)):.1f}" height="28" '
             f'fill="#e3f2fd" stroke="#90caf9"/>',
             f'<line x1="{x(vals[0]):.1f}" y1="{mid}" x2="{x(vals[-1]):.1f}" y2="{mid}" stroke="#90caf9"/>']
    if len(vals) <= DOTS_MAX:
        for i, v in enumerate(vals):
            jitter = ((i * 0.618034) % 1.0 - 0.5) * 20   # deterministic spread so equal figures stay visible
            parts.append(f'<circle class="v" cx="{x(v):.1f}" cy="{mid + jitter:.1f}" r="2" fill="#455a64" '
                         f'fill-opacity="0.6"/>')
    else:
        cols: dict[int, int] = {}
        for v in vals:
            cols[int(x(v))] = cols.get(int(x(v)), 0) + 1
        top = max(cols.values())
        for c, n in sorted(cols.items()):
            h = max(1.0, 26 * (n / top) ** 0.5)
            parts.append(f'<rect class="v" x="{c}" y="{mid - h:.1f}" width="1" height="{2 * h:.1f}" '
                         f'fill="#455a64"><title>{n}</title></rect>')
    parts.append(f'<line class="median" x1="{x(med):.1f}" y1="{mid - 20}" x2="{x(med):.1f}" y2="{mid + 20}" '
                 f'stroke="#1565c0" stroke-width="2"><title>median {_fmt(med)}</title></line>')
    for fv, n in sorted(floors.items()):
        who = f" ({n} node{'s' if n != 1 else ''})" if len(floors) > 1 else ""
        parts.append(f'<line class="floor" x1="{x(fv):.1f}" y1="20" x2="{x(fv):.1f}" y2="{HEIGHT - 22}" '
                     f'stroke="#c62828" stroke-dasharray="4 2"><title>floor {_fmt(fv)}{who}</title></line>')
    for o in d.outliers:
        tip = esc(f"{o.node} {o.subject}: {_fmt(o.value)} {d.unit} ({o.rules})", 600, keep_newlines=False)
        dot = (f'<circle class="outlier" cx="{x(o.value):.1f}" cy="{mid}" r="4.5" fill="#c62828" '
               f'stroke="#fff"><title>{tip}</title></circle>')
        parts.append(f'<a href="{esc(o.href, 1000)}">{dot}</a>' if o.href else dot)
    # labels: min and max under the axis (max only when apart from min); median and floor above it,
    # each on its own side of its line so they never overlap
    parts.append(f'<text x="{x(vals[0]):.1f}" y="{HEIGHT - 8}" font-size="10" text-anchor="start">{_fmt(vals[0])}</text>')
    if x(vals[-1]) - x(vals[0]) > 60:
        parts.append(f'<text x="{x(vals[-1]):.1f}" y="{HEIGHT - 8}" font-size="10" text-anchor="end">'
                     f"{_fmt(vals[-1])}</text>")
    med_side = "end" if floor is not None and floor > med else "start"
    parts.append(f'<text x="{x(med) + (-4 if med_side == "end" else 4):.1f}" y="14" font-size="10" '
                 f'text-anchor="{med_side}" fill="#1565c0">median {_fmt(med)}</text>')
    if floor is not None:
        fl_side = "start" if med_side == "end" else "end"
        parts.append(f'<text x="{x(floor) + (4 if fl_side == "start" else -4):.1f}" y="14" font-size="10" '
                     f'text-anchor="{fl_side}" fill="#c62828">floor {_fmt(floor)}</text>')
    parts.append("</svg>")
    unit = esc(d.unit, 40)
    facts = [f"{len(vals)} figure(s) on {d.nodes} node(s)", f"median {_fmt(med)} {unit}",
             f"quartiles {_fmt(q1)}-{_fmt(q3)}"]
    if len(floors) > 1:
        facts.append("floors " + ", ".join(f"{_fmt(fv)} {unit} ({n} node{'s' if n != 1 else ''})"
                                           for fv, n in sorted(floors.items())) + " (site perf.floors)")
    else:
        facts.append(f"floor {_fmt(floor)} {unit}" if floor is not None else "no floor (SKU table or site)")
    if d.invalid:
        facts.append(f"{d.invalid} invalid measurement(s) not drawn")
    if d.dropped:
        facts.append(f"{d.dropped} figure(s) past {MAX_VALUES} not drawn")
    head = (f'<h3 class="ng-perf-dist">{esc(d.sku, 300, keep_newlines=False)}: '
            f'{esc(d.title, 300, keep_newlines=False)}</h3><p class="small">{"; ".join(facts)}</p>')
    listed = ""
    if d.outliers:
        links = ", ".join(
            (f'<a class="outlier" href="{esc(o.href, 1000)}">' if o.href else '<span class="outlier">')
            + f"{esc(o.node, 200, keep_newlines=False)} {esc(o.subject, 80)} {_fmt(o.value)}"
            + ("</a>" if o.href else "</span>") + f" ({esc(o.rules, 200)})" for o in d.outliers)
        more = f" and {d.n_outliers - len(d.outliers)} more" if d.n_outliers > len(d.outliers) else ""
        listed = f'<p class="small">Outliers ({d.n_outliers}): {links}{more}</p>'
    return f'<div class="ng-perf-chart">{head}{"".join(parts)}{listed}</div>'
