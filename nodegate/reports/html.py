"""``report.html``: the page a person opens first, at any fleet size (docs/reports.md "HTML").

Self-contained (inline CSS, no script, no external resource) and rendered from the records:

1. the verdict line: ``N accepted, N need action, N not evaluated`` (nodegate.reports.status);
2. the node x check matrix (a scrolling box of at most 62 % of the window, so the findings start
   on the first screen): one row per node, sorted by status, worst severity, then action; one
   cell per check coloured by its worst outcome on the node (pass, skip, fail, error, not run),
   the node's name linking to its page ``nodes/<node>.html`` (nodegate.reports.nodepage). Rows
   come in ``<tbody>`` blocks of ``ROWS_PER_BLOCK`` with ``content-visibility: auto``: the browser
   lays out only the blocks on screen, so 4,096 rows open in about a second;
3. findings: one row per root cause over the fleet (nodegate.reports.findings), its remediation
   printed once, the nodes it hits linked;
4. drift (driver, flavor, VBIOS, kernel, GPU model against the fleet's most common value), per
   check counts, the environment (secrets redacted) and the files written.

Every string from a node goes through ``text.esc``. Values are shown as the check reported them
(text, never a Python repr).
"""

from __future__ import annotations

from collections import Counter

from .drift import COLUMNS as DRIFT_COLUMNS
from .drift import drifting, fleet_modes, outliers
from .findings import FleetFinding
from .records import NodeInfo
from .status import ACCEPTED, NEED_ACTION, NOT_EVALUATED, verdict_line
from .text import esc

ROWS_PER_BLOCK = 128
#: drift rows listed one by one at most (outliers first); the rest are counted
DRIFT_ROWS = 500
FINDING_NODES_SHOWN = 30

#: matrix cell classes (one letter: the cells are most of the page's bytes)
CELL = {"pass": "p", "skip": "s", "fail": "f", "error": "e", "": "n"}
from ..outcomes import OUTCOME_RANK, worst_outcome  # noqa: E402,F401  (the one rank: nodegate.outcomes)
from .status import STATUS_CLASS_NAMES as STATUS_CLASS  # noqa: E402

STYLE = """<style>
body{font:13px/1.35 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:12px 16px;color:#111}
h1{font-size:18px;margin:0 0 6px 0}h2{font-size:15px;margin:18px 0 6px 0}
.verdict{font-size:16px;margin:6px 0 10px 0}.verdict b{padding:1px 6px;border-radius:3px}
.st-ok{background:#d7f5d7}.st-bad{background:#ffd6d6}.st-ne{background:#e8e8e8}
table.ng{border-collapse:collapse;font-size:12px}
table.ng th,table.ng td{border:1px solid #ccc;padding:2px 5px;text-align:left;vertical-align:top}
table.ng td.bad{background:#fdd}table.ng td.outlier{background:#ffe08a;font-weight:bold}
table.ng tr.mode td{background:#eef}
#ng-matrix{table-layout:fixed;border-collapse:collapse;font-size:11px}
#ng-matrix th{padding:2px 4px;text-align:left}
#ng-matrix th.nm{width:180px}#ng-matrix th.st{width:82px}#ng-matrix th.ac{width:130px}
#ng-matrix th.c{width:16px;padding:2px 0;vertical-align:bottom}
#ng-matrix th.c div{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;margin:0 auto;
font-weight:normal}
#ng-matrix td{border:0;padding:0;height:15px;background:#4caf50;box-shadow:inset -1px -1px 0 #fff}
#ng-matrix td.nm,#ng-matrix td.st,#ng-matrix td.ac{padding:0 4px;white-space:nowrap;overflow:hidden;
box-shadow:inset 0 -1px 0 #eee;background:#fff}
#ng-matrix td.st-ok{background:#d7f5d7}#ng-matrix td.st-bad{background:#ffd6d6}#ng-matrix td.st-ne{background:#e8e8e8}
#ng-matrix td.s{background:#bdbdbd}#ng-matrix td.f{background:#e53935}
#ng-matrix td.e{background:#fb8c00}#ng-matrix td.n{background:#f5f5f5}
#ng-matrix tbody{content-visibility:auto;contain-intrinsic-size:auto 1920px}
div.mx{max-height:62vh;overflow:auto;border:1px solid #ddd;display:inline-block;max-width:100%}
#ng-matrix thead th{position:sticky;top:0;background:#fff;z-index:1}
.legend span{display:inline-block;width:12px;height:12px;margin:0 3px 0 10px;vertical-align:middle}
.rem{color:#333}.small{color:#555;font-size:12px}
</style>"""


def _c(value, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}>{esc('?' if value is None else value, 500, keep_newlines=False)}</td>"


class MatrixRow:
    """One node's row: status, worst severity, action, page link, and per check column its
    worst outcome ("" when the check did not run on the node) and item count."""

    __slots__ = ("node", "status", "severity", "action", "href", "cells", "why")

    def __init__(self, node: str, status: str, severity: str, action: str, href: str, cells: dict, why: str = ""):
        self.node, self.status, self.severity, self.action, self.href, self.cells = (
            node, status, severity, action, href, cells)
        self.why = why   # a node not evaluated: why (the status cell's title)


COLOURS = {"p": "#4caf50", "s": "#bdbdbd", "f": "#e53935", "e": "#fb8c00", "n": "#f5f5f5"}
CELL_PX = 16


def pattern(r: MatrixRow, checks: list[tuple[str, str]]) -> str:
    """One letter per check column (``CELL``): the row's cells as the ``data-cells`` attribute."""
    return "".join(CELL.get(r.cells.get(cid, ("", 0))[0], "n") for cid, _ in checks)


def same_pattern_css(pat: str) -> str:
    """The background that draws a whole row of ``pat`` in one cell: each check column a
    ``CELL_PX`` stripe of its colour with the 1 px white gap the single cells have."""
    stops = []
    for i, ch in enumerate(pat):
        x = i * CELL_PX
        stops.append(f"{COLOURS[ch]} {x}px {x + CELL_PX - 1}px,#fff {x + CELL_PX - 1}px {x + CELL_PX}px")
    return ("<style>#ng-matrix td.same{background:linear-gradient(to right," + ",".join(stops)
            + ");box-shadow:inset 0 -1px 0 #fff}</style>")


def matrix_html(rows: list[MatrixRow], checks: list[tuple[str, str]]) -> str:
    """``checks``: (check id, title) columns in suite order; ``rows`` already sorted.

    Each row has ``data-cells``: one letter per check (p pass, s skip, f fail, e error, n not run).
    The cells are most of the page at 4,096 nodes, so: a passed cell is a bare ``<td>`` (the
    table's colour), the optional end tags are left out (HTML allows it; a row's ``</tr>`` stays,
    so the line break after it is no cell's text), and a row equal to the fleet's most common
    pattern (when that has no FAIL or ERROR: the accepted nodes) is one cell spanning the checks,
    drawn by a gradient in the same colours: 4 elements instead of 33 per healthy node."""
    pats = [pattern(r, checks) for r in rows]
    common = Counter(pats).most_common(1)
    same = common[0][0] if common and common[0][1] > 1 and not set(common[0][0]) & {"f", "e"} else None
    head = "".join(f'<th class="c" title="{esc(t)}"><div>{esc(cid)}</div></th>' for cid, t in checks)
    out = [same_pattern_css(same) if same else "",
           '<table id="ng-matrix"><thead><tr><th class="nm">Node</th><th class="st">Status</th>'
           '<th class="ac">Action</th>', head, "</tr></thead>"]
    for i, (r, pat) in enumerate(zip(rows, pats)):
        if i % ROWS_PER_BLOCK == 0:
            out.append("</tbody><tbody>" if i else "<tbody>")
        if pat == same:
            cells = f"<td class=same colspan={len(checks)}>"
        else:
            parts = []
            for cid, _ in checks:
                o, n = r.cells.get(cid, ("", 0))
                if o == "pass":
                    parts.append("<td>")
                elif o in ("fail", "error", "skip"):
                    parts.append(f'<td class={CELL[o]} title="{esc(cid)}: {o} ({n})">')
                else:
                    parts.append("<td class=n>")
            cells = "".join(parts)
        out.append(f'<tr id="n-{esc(r.node, 300)}" data-status="{r.status}" data-cells="{pat}">'
                   f'<td class="nm"><a href="{esc(r.href, 1000)}">{esc(r.node, 300, keep_newlines=False)}</a></td>'
                   f'<td class="st {STATUS_CLASS.get(r.status, "")}"'
                   + (f' title="{esc(r.why, 500, keep_newlines=False)}"' if r.why else "")
                   + f'>{esc(r.status)}</td>'
                   f'<td class="ac">{esc(r.action)}</td>{cells}</tr>\n')
    if rows:
        out.append("</tbody>")
    out.append("</table>")
    return "".join(out)


def findings_html(findings: list[FleetFinding], hrefs: dict[str, str]) -> str:
    if not findings:
        return '<p id="ng-findings-none">No findings: nothing failed or errored.</p>'
    out = ['<table class="ng" id="ng-findings"><thead><tr><th>Finding</th><th>Severity</th><th>Action</th>'
           "<th>Nodes</th><th>Items</th><th>What to do (once per finding)</th></tr></thead><tbody>"]
    for g in findings:
        if g.outcome == "fail":
            what = f"<b>{esc(g.key)}</b> {esc(g.title)}: FAIL"
        else:
            checks = ", ".join(f"{c}" for c in sorted(g.checks))
            what = (f"<b>could not be evaluated</b>: {esc(g.message, 400, keep_newlines=False)}"
                    f'<div class="small">checks: {esc(checks, 600)}</div>')
        shown = g.nodes[:FINDING_NODES_SHOWN]
        links = ", ".join(f'<a href="{esc(hrefs.get(n, ""), 1000)}">{esc(n, 200, keep_newlines=False)}</a>'
                          for n in shown)
        more = f" and {g.n_nodes - len(shown)} more" if g.n_nodes > len(shown) else ""
        out.append(f'<tr class="{g.outcome}"><td>{what}</td><td>{esc(g.severity)}</td><td>{esc(g.action)}</td>'
                   f"<td>{g.n_nodes}: {links}{more}</td><td>{g.n_items}</td>"
                   f'<td class="rem">{esc(g.remediation, 2000)}</td></tr>')
    out.append("</tbody></table>")
    return "".join(out)


def drift_table(infos: list[NodeInfo], max_rows: int = DRIFT_ROWS) -> str:
    """Driver, flavor, VBIOS, kernel, GPU model per node; the fleet's most common value on top;
    values that differ from it highlighted (and marked "≠"). Outlier nodes first; above
    ``max_rows`` nodes only the outliers are listed and the others counted."""
    modes, drift = fleet_modes(infos), drifting(infos)
    head = "".join(f"<th>{t}</th>" for _, t in DRIFT_COLUMNS)
    rows = [f'<table class="ng" id="ng-drift"><thead><tr><th>Node</th>{head}</tr></thead><tbody>',
            '<tr class="mode"><td>fleet most common</td>'
            + "".join(_c("no majority" if modes[a] is None and a in drift else modes[a]) for a, _ in DRIFT_COLUMNS)
            + "</tr>"]
    marked = [(i, outliers(i, modes, drift)) for i in infos]
    marked.sort(key=lambda t: (not t[1], t[0].node))
    listed = marked if len(marked) <= max_rows else [m for m in marked if m[1]][:max_rows]
    for i, odd in listed:
        cells = [f'<td class="outlier">{esc(getattr(i, a), 500, keep_newlines=False)} ≠</td>' if a in odd
                 else _c(getattr(i, a)) for a, _ in DRIFT_COLUMNS]
        rows.append(f"<tr>{_c(i.node)}{''.join(cells)}</tr>")
    rows.append("</tbody></table>")
    if len(listed) < len(marked):
        rows.append(f'<p class="small">{len(marked) - len(listed)} more node(s) not listed: '
                    "their values equal the fleet's most common ones.</p>")
    return "".join(rows)


def checks_table(per_check: dict[str, list]) -> str:
    """Per check: id, title, severity and pass / fail / skip / error counts over the fleet."""
    head = ("Check id", "Title", "Severity", "Pass", "Fail", "Skip", "Error")
    rows = [f'<table class="ng" id="ng-checks"><thead><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr></thead><tbody>']
    for cid, (title, sev, c) in sorted(per_check.items(),
                                       key=lambda t: (not (t[1][2]["fail"] or t[1][2]["error"]), t[0])):
        rows.append("<tr>" + "".join([
            _c(cid), _c(title), _c(sev), _c(c["pass"]), _c(c["fail"], "bad" if c["fail"] else ""),
            _c(c["skip"]), _c(c["error"], "bad" if c["error"] else "")]) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def environment_table(env: dict) -> str:
    rows = ['<table class="ng" id="ng-environment"><tbody>']
    for k, v in env.items():
        if isinstance(v, dict):
            v = ", ".join(f"{kk}: {vv}" for kk, vv in v.items())
        rows.append(f"<tr>{_c(k)}{_c(v)}</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def page(*, title: str, statuses: Counter, totals: Counter, findings: list[FleetFinding],
         rows: list[MatrixRow], checks: list[tuple[str, str]], infos: list[NodeInfo], per_check: dict,
         hrefs: dict[str, str], env: dict, files: list[tuple[str, str]], other: str = "",
         sections: list[tuple[str, str]] = (), perf: str = "") -> str:
    """The whole report.html. ``perf``: the per-SKU performance distributions
    (nodegate.reports.perf_fleet, already escaped), "" for a run without --perf."""
    n_nodes = sum(statuses.values())
    verdict = verdict_line(statuses)
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{esc(title, 500, keep_newlines=False)}</title>", STYLE, "</head><body>",
             f"<h1>{esc(title, 500, keep_newlines=False)}</h1>",
             f'<p class="verdict" id="ng-verdict">{n_nodes} node(s): '
             f'<b class="st-ok">{statuses[ACCEPTED]} accepted</b>, '
             f'<b class="st-bad">{statuses[NEED_ACTION]} need action</b>, '
             f'<b class="st-ne">{statuses[NOT_EVALUATED]} not evaluated</b></p>',
             f'<p class="small" id="ng-totals">{verdict}. Items: {totals["pass"]} passed, {totals["fail"]} failed, '
             f'{totals["skip"]} skipped (by the spec), {totals["error"]} could not be evaluated.</p>',
             "<h2>Nodes and checks</h2>",
             '<p class="legend small">Worst outcome per check:<span style="background:#4caf50"></span>pass'
             '<span style="background:#bdbdbd"></span>skip (spec)<span style="background:#e53935"></span>fail'
             '<span style="background:#fb8c00"></span>error<span style="background:#f5f5f5;border:1px solid #ccc">'
             "</span>not run. Nodes that need action first (worst severity, then action). Click a node for its "
             "page: every check, per GPU, with evidence.</p>",
             '<div class="mx">', matrix_html(rows, checks), "</div>",
             "<h2>Findings</h2>", findings_html(findings, hrefs)]
    if perf:
        parts += ['<h2 id="ng-perf">Performance</h2>', perf]
    for title_, fragment in sections:   # other plugins' (pytest_nodegate_report_sections): markup already escaped
        parts += [f"<h2>{esc(title_, 300, keep_newlines=False)}</h2>", fragment]
    if other:
        parts += ["<h2>Other tests</h2>", other]
    parts += ["<h2>Drift</h2>", drift_table(infos),
              '<details id="ng-checks-section"><summary><b>Checks</b>: outcomes over all nodes</summary>',
              checks_table(per_check), "</details>"]
    if env:
        parts += ['<details id="ng-environment-section"><summary><b>Environment</b></summary>',
                  environment_table(env), "</details>"]
    if files:
        parts.append('<h2>Files</h2><ul id="ng-files">' + "".join(
            f"<li>{esc(what)}: <a href=\"{esc(href, 1000)}\">{esc(href, 1000)}</a></li>" for what, href in files)
            + "</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


def escape_environment(env: dict) -> dict:
    """Environment values (and nested keys) cleaned; the page escapes them when it renders."""
    from .text import clean
    out = {}
    for k, v in env.items():
        if isinstance(v, dict):
            out[clean(k, 200)] = {clean(kk, 200): clean(vv, 1000) for kk, vv in v.items()}
        else:
            out[clean(k, 200)] = clean(v, 1000)
    return out
