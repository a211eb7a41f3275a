"""A small dependency-free inline SVG of one node's burn-in: SM clock, power, temperature and PCIe
link generation over time, one line per GPU, four stacked panels.

``svg_for_node(bundle) -> str``: safe to inline in HTML: every number is formatted by us, every
text (node name, GPU labels) is escaped; no scripts, no external references. Returns a short
``<p>`` explaining why when the bundle has no burn-in samples.
"""

from __future__ import annotations

from html import escape

from ..bundle import Bundle
from ..errors import EvidenceError
from .series import parse_samples

PANELS = (("sm_mhz", "SM clock (MHz)"), ("power_w", "power (W)"), ("temperature_c", "temperature (C)"),
          ("link_gen", "PCIe gen"))
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
W, PH, PAD_L, PAD_R, GAP = 640, 90, 70, 90, 18


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def svg_for_node(bundle: Bundle) -> str:
    try:
        text = bundle.text("burnin.samples")
    except EvidenceError as e:
        return f"<p>no burn-in plot: {escape(str(e))}</p>"
    _, samples = parse_samples(text)
    if not samples:
        return "<p>no burn-in plot: no samples</p>"
    gpus = sorted({i for s in samples for i in s.gpus})
    t_max = max(s.t for s in samples) or 1.0
    h = len(PANELS) * (PH + GAP) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" '
           f'font-family="sans-serif" font-size="10" role="img">',
           f"<title>burn-in {escape(bundle.node)}</title>"]
    pw = W - PAD_L - PAD_R
    for p, (attr, label) in enumerate(PANELS):
        y0 = 10 + p * (PH + GAP)
        vals = [_num(getattr(s.gpus[i], attr)) for s in samples for i in s.gpus]
        vals = [v for v in vals if v is not None]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        if hi - lo < 1e-9:
            lo, hi = lo - 1, hi + 1
        out.append(f'<rect x="{PAD_L}" y="{y0}" width="{pw}" height="{PH}" fill="none" stroke="#ccc"/>')
        out.append(f'<text x="4" y="{y0 + 12}">{escape(label)}</text>')
        out.append(f'<text x="{PAD_L - 4}" y="{y0 + 10}" text-anchor="end">{hi:g}</text>')
        out.append(f'<text x="{PAD_L - 4}" y="{y0 + PH}" text-anchor="end">{lo:g}</text>')
        for k, i in enumerate(gpus):
            pts = []
            for s in samples:
                g = s.gpus.get(i)
                v = _num(getattr(g, attr)) if g is not None else None
                if v is None:
                    continue
                x = PAD_L + pw * (s.t / t_max)
                y = y0 + PH - PH * (v - lo) / (hi - lo)
                pts.append(f"{x:.1f},{y:.1f}")
            if pts:
                out.append(f'<polyline fill="none" stroke="{COLORS[k % len(COLORS)]}" stroke-width="1.5" '
                           f'points="{" ".join(pts)}"/>')
    for k, i in enumerate(gpus):
        y = 20 + k * 14
        out.append(f'<text x="{W - PAD_R + 8}" y="{y}" fill="{COLORS[k % len(COLORS)]}">gpu{int(i)}</text>')
    out.append(f'<text x="{PAD_L}" y="{h - 6}">0 s</text>')
    out.append(f'<text x="{W - PAD_R}" y="{h - 6}" text-anchor="end">{t_max:g} s</text>')
    out.append("</svg>")
    return "\n".join(out)
