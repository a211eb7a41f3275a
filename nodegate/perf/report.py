"""HTML for people: a node's performance table (GPU x metric: value, floor, node median, fleet
median, verdict) and an inline SVG bar chart per metric (bars per subject, the floor and the
median drawn in). Every text is HTML-escaped; numbers are formatted here, never node text raw.
The fleet's per-SKU distribution page is nodegate.reports.perf_fleet."""

from __future__ import annotations

from html import escape

from ..outcomes import Outcome
from .rules import Item

_COLOR = {Outcome.PASS: "#2e7d32", Outcome.FAIL: "#c62828", Outcome.ERROR: "#ef6c00", Outcome.SKIP: "#757575"}
MAX_ROWS = 2000


def _f(v) -> str:
    return "" if v is None else (f"{v:.1f}" if abs(v) < 10000 else f"{v:,.0f}")


def table_html(items: list[Item]) -> str:
    rows = [i for i in items if i.value is not None][:MAX_ROWS]
    head = ("<tr><th>subject</th><th>metric</th><th>value</th><th>floor</th><th>node median</th>"
            "<th>fleet median</th><th>verdict</th><th>rule</th></tr>")
    body = "".join(
        f"<tr><td>{escape(i.subject)}</td><td>{escape(i.label)}</td><td>{_f(i.value)} {escape(i.unit)}</td>"
        f"<td>{_f(i.floor.value) if i.floor and i.floor.value is not None else ''}</td><td>{_f(i.node_median)}</td>"
        f"<td>{_f(i.fleet_median)}</td><td style=\"color:{_COLOR[i.outcome]}\">{i.outcome.value.upper()}</td>"
        f"<td>{escape(', '.join(i.rules))}</td></tr>" for i in rows)
    return f"<table class=\"ng-perf\">{head}{body}</table>"


def svg_chart(items: list[Item], width: int = 480) -> str:
    """One metric (items of one kind): a bar per subject, floor (red) and median (blue) lines."""
    rows = [i for i in items if i.value is not None][:128]
    if not rows:
        return ""
    floor = next((i.floor.value for i in rows if i.floor and i.floor.value is not None), None)
    med = next((i.node_median for i in rows if i.node_median is not None), None)
    top = max([i.value for i in rows] + [v for v in (floor, med) if v is not None]) * 1.1 or 1.0
    bar_h, label_w = 14, 110
    h = len(rows) * (bar_h + 4) + 30
    scale = (width - label_w - 70) / top
    parts = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{h}\" role=\"img\">",
             f"<title>{escape(rows[0].label)}</title>",
             f"<text x=\"4\" y=\"14\" font-size=\"12\">{escape(rows[0].label)}</text>"]
    for n, i in enumerate(rows):
        y = 22 + n * (bar_h + 4)
        w = max(1.0, i.value * scale)
        parts.append(f"<text x=\"4\" y=\"{y + 11}\" font-size=\"10\">{escape(i.subject)}</text>"
                     f"<rect x=\"{label_w}\" y=\"{y}\" width=\"{w:.1f}\" height=\"{bar_h}\" "
                     f"fill=\"{_COLOR[i.outcome]}\"/><text x=\"{label_w + w + 4:.1f}\" y=\"{y + 11}\" "
                     f"font-size=\"10\">{_f(i.value)}</text>")
    for v, color, name in ((floor, "#c62828", "floor"), (med, "#1565c0", "median")):
        if v is not None:
            x = label_w + v * scale
            parts.append(f"<line x1=\"{x:.1f}\" y1=\"18\" x2=\"{x:.1f}\" y2=\"{h - 4}\" stroke=\"{color}\" "
                         f"stroke-dasharray=\"4 2\"><title>{name} {_f(v)}</title></line>")
    parts.append("</svg>")
    return "".join(parts)


def node_html(node: str, items: list[Item]) -> str:
    """The node page's performance section: the table, then one chart per metric kind."""
    kinds: dict[tuple, list[Item]] = {}
    for i in items:
        if i.value is not None:
            kinds.setdefault((i.key, i.kind), []).append(i)
    charts = "".join(svg_chart(v) for v in list(kinds.values())[:24])
    return (f"<div class=\"ng-perf\"><h3>Performance: {escape(node)}</h3>{table_html(items)}"
            f"<div class=\"ng-perf-charts\">{charts}</div></div>")
