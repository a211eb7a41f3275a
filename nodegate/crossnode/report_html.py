"""The cross-node section of nodegate's HTML report: the cable table (Stage A), the localisation
tree drawn as an inline SVG picture, the faults and the jobs. Pure: a PhaseResult in, escaped
markup out (``section_html(result) -> str``); every text that came from a node, a file or a
launcher (node names, switch names, messages) goes through ``html.escape``, in elements and in
attributes alike, and is capped.

The tree: one row per round, top to bottom; a box per job (its stage, round and hosts or HCAs),
green PASS, red FAIL, amber ERROR; a line from a job that did not pass to each job of the next
round that shares a host or HCA with it (the bisection and confirmation it led to); the last row
holds the nodes, coloured by their roll-up (cleared, confirmed_faulty, suspect, not_used,
untested), each linked to the jobs that prove it. docs/crossnode.md "Reading the cable table
and the tree".
"""

from __future__ import annotations

from html import escape

from ..outcomes import Outcome
from ..textsafe import shown
from .model import NodeState, PhaseResult

_COLOUR = {Outcome.PASS: "#2e7d32", Outcome.FAIL: "#c62828", Outcome.ERROR: "#ef6c00", Outcome.SKIP: "#757575"}
_STATE_COLOUR = {NodeState.CLEARED: "#2e7d32", NodeState.CONFIRMED_FAULTY: "#c62828",
                 NodeState.SUSPECT: "#ef6c00", NodeState.NOT_USED: "#757575", NodeState.UNTESTED: "#ef6c00"}
BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 150, 34, 12, 40, 10
#: at most this many boxes a row are drawn (the rest counted in the row's label): a picture of a
#: 4,096-node run stays a few hundred KB
MAX_BOXES = 40


def e(v, cap: int = 300) -> str:
    """Escaped text (elements and attributes), capped to ``cap`` characters; control characters
    shown as ``\\x1b`` (a tooltip held the raw ESC/BEL of a replayed node's text)."""
    s = shown(v)
    return escape(s[:cap] + ("…" if len(s) > cap else ""), quote=True)


def cable_table(res: PhaseResult) -> str:
    """One row per cable compared (Stage A), failures first: both ends, verdict, problem,
    expected, observed, rail, GUID, source."""
    if not res.cables:
        return "<p>No cable was compared (no cable plan, topology file or discovered fabric).</p>"
    order = {Outcome.FAIL: 0, Outcome.ERROR: 1, Outcome.PASS: 2, Outcome.SKIP: 3}
    rows = []
    for c in sorted(res.cables, key=lambda c: (order.get(c.verdict, 9), c.node_end))[:5000]:
        rows.append(f'<tr class="{e(c.verdict.value)}"><td>{e(c.node_end)}</td><td>{e(c.switch_end)}</td>'
                    f"<td>{e(c.verdict.value.upper())}</td><td>{e(c.problem or 'as planned')}</td>"
                    f"<td>{e(c.expected)}</td><td>{e(c.observed)}</td><td>{e('' if c.rail is None else c.rail)}</td>"
                    f"<td>{e(c.guid)}</td><td>{e(c.source)}</td></tr>")
    more = f"<p>{len(res.cables) - 5000} more cable rows in result.json.</p>" if len(res.cables) > 5000 else ""
    return ('<table class="ng" id="ng-xn-cables"><thead><tr><th>node end (node:hca/port)</th>'
            "<th>switch end (switch:port)</th><th>verdict</th><th>problem</th><th>expected</th><th>observed</th>"
            f"<th>rail</th><th>GUID</th><th>source</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{more}")


def _label(job) -> str:
    return ", ".join(job.hcas) if job.hcas else ", ".join(job.hosts)


def tree_svg(res: PhaseResult) -> str:
    """The localisation as a picture (module docstring); "" when no job ran."""
    jobs = {j.job_id: j for j in res.jobs}
    rounds = [[jobs[i] for i in r if i in jobs] for r in res.rounds]
    rounds = [r for r in rounds if r]
    if not rounds and not res.nodes:
        return ""
    widest = max([min(len(r), MAX_BOXES) for r in rounds] + [min(len(res.nodes), MAX_BOXES), 1])
    width = PAD * 2 + widest * (BOX_W + GAP_X)
    height = PAD * 2 + (len(rounds) + 1) * (BOX_H + GAP_Y) + 20
    parts: list[str] = []
    pos: dict[str, tuple[int, int]] = {}
    y = PAD + 16
    for r in rounds:
        shown = r[:MAX_BOXES]
        label = f"round {r[0].round}: {r[0].stage}" + (f" ({len(r) - len(shown)} more not drawn)" if len(r) > len(shown) else "")
        parts.append(f'<text x="{PAD}" y="{y - 4}" font-size="11" fill="#333">{e(label)}</text>')
        for i, j in enumerate(shown):
            x = PAD + i * (BOX_W + GAP_X)
            pos[j.job_id] = (x, y)
            col = _COLOUR.get(j.verdict, "#757575")
            tip = f"{j.job_id} {j.stage} r{j.round} {j.payload} on {_label(j)}: {j.verdict.value.upper()} {j.message}"
            parts.append(f'<g class="ng-xn-job"><title>{e(tip, 600)}</title>'
                         f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="4" fill="{col}" '
                         f'fill-opacity="0.15" stroke="{col}"/>'
                         f'<text x="{x + 4}" y="{y + 13}" font-size="10">{e(j.verdict.value.upper() + " " + j.payload, 28)}'
                         f'</text><text x="{x + 4}" y="{y + 27}" font-size="10">{e(_label(j), 26)}</text></g>')
        y += BOX_H + GAP_Y
    edges = []
    for a, b in zip(rounds, rounds[1:]):
        for ja in a:
            if ja.verdict is Outcome.PASS or ja.job_id not in pos:
                continue
            ea = set(ja.hcas or ja.hosts) | set(ja.hosts)
            for jb in b:
                if jb.job_id in pos and ea & (set(jb.hcas or jb.hosts) | set(jb.hosts)):
                    (xa, ya), (xb, yb) = pos[ja.job_id], pos[jb.job_id]
                    edges.append(f'<line x1="{xa + BOX_W // 2}" y1="{ya + BOX_H}" x2="{xb + BOX_W // 2}" y2="{yb}" '
                                 'stroke="#999" stroke-width="1"/>')
    parts.append(f'<text x="{PAD}" y="{y - 4}" font-size="11" fill="#333">nodes</text>')
    for i, n in enumerate(res.nodes[:MAX_BOXES]):
        x = PAD + i * (BOX_W + GAP_X)
        col = _STATE_COLOUR.get(n.state, "#757575")
        parts.append(f'<g class="ng-xn-node"><title>{e(n.node + ": " + n.state.value + " (" + n.why + ")", 600)}</title>'
                     f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="12" fill="{col}" fill-opacity="0.25" '
                     f'stroke="{col}"/><text x="{x + 6}" y="{y + 13}" font-size="10">{e(n.node, 26)}</text>'
                     f'<text x="{x + 6}" y="{y + 27}" font-size="10">{e(n.state.value)}</text></g>')
        for jid in n.jobs[-3:]:
            if jid in pos:
                xa, ya = pos[jid]
                edges.append(f'<line x1="{xa + BOX_W // 2}" y1="{ya + BOX_H}" x2="{x + BOX_W // 2}" y2="{y}" '
                             f'stroke="{col}" stroke-width="1" stroke-dasharray="3,2"/>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" id="ng-xn-tree" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="cross-node localisation tree">'
            + "".join(edges) + "".join(parts) + "</svg>")


def _faults(res: PhaseResult) -> str:
    if not res.faults:
        return "<p>No fault below the node was localised.</p>"
    rows = "".join(f'<tr class="fail"><td>{e(f.fault_id)}</td><td>{e(f.kind)}</td><td>{e(f.end_a)}</td>'
                   f"<td>{e(f.end_b)}</td><td>{e(f.guid)}</td><td>{e('; '.join(f.cables))}</td><td>{e(f.why, 1000)}</td>"
                   f"<td>{e(', '.join(f.jobs), 600)}</td></tr>" for f in res.faults[:2000])
    return ('<table class="ng" id="ng-xn-faults"><thead><tr><th>fault</th><th>kind</th><th>end A</th><th>end B</th>'
            f"<th>GUID</th><th>cables</th><th>why</th><th>jobs</th></tr></thead><tbody>{rows}</tbody></table>")


def _jobs(res: PhaseResult) -> str:
    rows = "".join(f'<tr class="{e(j.verdict.value)}"><td>{e(j.job_id)}</td><td>{e(j.stage)}</td><td>{j.round}</td>'
                   f"<td>{e(_label(j), 400)}</td><td>{e(j.launcher)}</td><td>{e(j.metric)}</td>"
                   f"<td>{e('' if j.value is None else j.value)} {e(j.unit)}</td><td>{e(j.threshold)}</td>"
                   f"<td>{e(j.verdict.value.upper())}</td><td>{e(j.message, 600)}</td><td>{e(j.evidence)}</td>"
                   f"<td>{j.duration_s:g}</td></tr>" for j in res.jobs[:5000])
    return ('<table class="ng" id="ng-xn-jobs"><thead><tr><th>job</th><th>stage</th><th>round</th><th>hosts / HCAs</th>'
            "<th>launcher</th><th>metric</th><th>value</th><th>threshold</th><th>verdict</th><th>why</th>"
            f"<th>evidence</th><th>s</th></tr></thead><tbody>{rows}</tbody></table>")


def section_html(res: PhaseResult) -> str:
    """The report section: a summary line, errors, the tree, the cables, the faults, the jobs."""
    head = (f"<p>Run {e(res.run_id)}: {e(res.outcome.value.upper())}; {len(res.jobs)} jobs in {len(res.rounds)} "
            f"rounds, {len(res.nodes)} nodes, {len(res.faults)} faults, {len(res.cables)} cables"
            f"{' (replayed: nothing launched)' if res.replayed else ''}; evidence {e(res.evidence, 500)}.</p>")
    errs = "".join(f"<li>{e(x, 1000)}</li>" for x in res.errors[:50])
    errs = f'<ul class="ng-xn-errors">{errs}</ul>' if errs else ""
    svg = tree_svg(res)
    return (head + errs + "<h3>Localisation tree</h3>" + (svg or "<p>No job ran.</p>")
            + "<h3>Cables (Stage A)</h3>" + cable_table(res) + "<h3>Faults</h3>" + _faults(res)
            + "<h3>Jobs</h3>" + _jobs(res))
