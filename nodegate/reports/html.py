"""pytest-html 4.x pieces: results-table header and cells, failure extras, the per-node
summary and drift tables, and the escaped environment table.

pytest-html inserts cells, extras and summary fragments as raw HTML (``innerHTML``), and its
default Test cell and environment values are not escaped: every string here goes through
``text.esc``. Cells are one line (pytest-html reads sortable values with a one-line regex)
and short (6000 rows at 256 nodes x 8 GPUs); evidence goes only into failure extras.
"""

from __future__ import annotations

from collections import Counter

from .drift import COLUMNS as DRIFT_COLUMNS
from .drift import drifting, fleet_modes, outliers
from .records import NodeInfo, Record
from .text import esc

#: Results table: (column type, title, sortable). "result" and "testId" keep pytest-html's
#: names: its filters, sorting and row ids read those two.
COLUMNS = (("result", "Result", True), ("node", "Node", True), ("gpu", "GPU", True),
           ("serial", "Serial", False), ("checkId", "Check id", True),
           ("severity", "Severity", True), ("expected", "Expected", False),
           ("observed", "Observed", False), ("testId", "Test", True), ("links", "Links", False))

CELL_CAP = 300

STYLE = """<style>
.ng-table{border-collapse:collapse;margin:0.5em 0 1em 0;font-size:12px}
.ng-table th,.ng-table td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.ng-table td.ng-bad{background:#fdd}
.ng-table td.ng-outlier{background:#ffe08a;font-weight:bold}
.ng-table tr.ng-mode td{background:#eef}
.ng-evidence pre{white-space:pre-wrap;max-height:30em;overflow:auto;background:#f6f6f6;
padding:4px;border:1px solid #ddd}
</style>"""


def header_cells() -> list[str]:
    out = []
    for ctype, title, sortable in COLUMNS:
        cls = ' class="sortable"' if sortable else ""
        out.append(f'<th{cls} data-column-type="{ctype}">{title}</th>')
    return out


def _td(ctype: str, inner: str) -> str:
    """A results cell. Only sortable columns carry ``col-<type>`` (pytest-html reads their
    values from it); the others stay bare to keep 6000-row reports small."""
    sortable = any(c == ctype and s for c, _, s in COLUMNS)
    return f'<td class="col-{ctype}">{inner}</td>' if sortable else f"<td>{inner}</td>"


def short_test_id(nodeid: str) -> str:
    """``suites/test_pcie.py::test_pcie_link[n1-gpu0]`` -> ``test_pcie.py::test_pcie_link[n1-gpu0]``
    (the directory adds bytes to every row and nothing to read)."""
    head, sep, tail = nodeid.partition("::")
    return head.rsplit("/", 1)[-1] + sep + tail


def gpu_label(rec: Record) -> str:
    """``gpu3 0000:19:00.0``; empty for node-level checks."""
    if rec.gpu_index == "":
        return ""
    return f"gpu{rec.gpu_index} {rec.pci_bus_id}".strip()


def archive_link(href: str | None, text: str = "evidence archive") -> str:
    return f'<a href="{esc(href, 1000)}">{esc(text)}</a>' if href else ""


def row_cells(result_cell: str, rec: Record | None, nodeid: str, href: str | None) -> list[str]:
    """Cells in ``COLUMNS`` order. ``result_cell`` is pytest-html's own (outcome text, safe);
    ``rec`` None (no nodegate data, e.g. a collection error) leaves the node columns empty."""
    one = dict(limit=CELL_CAP, keep_newlines=False)
    r = rec or Record(nodeid=nodeid)
    cells = [result_cell,
             _td("node", esc(r.node, **one)),
             _td("gpu", esc(gpu_label(r), **one)),
             _td("serial", esc(r.gpu_serial, **one)),
             _td("checkId", esc(r.check_id, **one)),
             _td("severity", esc(r.severity, **one)),
             _td("expected", esc(r.expected, **one)),
             _td("observed", esc(r.observed, **one)),
             _td("testId", esc(short_test_id(nodeid), limit=500, keep_newlines=False)),
             _td("links", archive_link(href, "evidence"))]
    return cells


def failure_extra(rec: Record, href: str | None) -> str:
    """Extra HTML shown under a failing (or erroring) row: check title, message,
    remediation, the decisive evidence lines (failures only) and the archive link."""
    parts = [f'<div class="ng-evidence"><p><b>{esc(rec.check_id)}</b> {esc(rec.title)}</p>']
    if rec.message:
        parts.append(f"<p>{esc(rec.message)}</p>")
    if rec.remediation and rec.outcome == "fail":
        parts.append(f"<p><b>Remediation:</b> {esc(rec.remediation)}</p>")
    if rec.evidence:
        parts.append(f"<p><b>Evidence</b> (decisive lines):</p><pre>{esc(rec.evidence, limit=0)}</pre>")
    if href:
        parts.append(f"<p>{archive_link(href, 'Evidence archive of ' + rec.node)}</p>")
    parts.append("</div>")
    return "".join(parts)


def _cell(value, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f"<td{c}>{esc('?' if value is None else value, 500, keep_newlines=False)}</td>"


def nodes_table(infos: list[NodeInfo], hrefs: dict[str, str]) -> str:
    """Per-node summary: counts, gather status, driver, flavor, GPU model and count, archive.
    Nodes with problems (gather error, fail, error) come first."""
    head = ("Node", "Gather", "Pass", "Fail", "Skip", "Error", "Driver", "Flavor",
            "GPU model", "GPUs", "Evidence")
    rows = [f"<table class=\"ng-table\" id=\"ng-nodes\"><thead><tr>"
            f"{''.join(f'<th>{h}</th>' for h in head)}</tr></thead><tbody>"]
    for i in sorted(infos, key=lambda i: (not i.has_problem, i.node)):
        c = i.counts
        rows.append("<tr>" + "".join([
            _cell(i.node),
            _cell(i.status_text, "" if i.status_text == "ok" else "ng-bad"),
            _cell(c["pass"]), _cell(c["fail"], "ng-bad" if c["fail"] else ""),
            _cell(c["skip"]), _cell(c["error"], "ng-bad" if c["error"] else ""),
            _cell(i.driver_version), _cell(i.flavor), _cell(i.gpu_model), _cell(i.gpu_count),
            f"<td>{archive_link(hrefs.get(i.node), 'archive')}</td>"]) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def drift_table(infos: list[NodeInfo]) -> str:
    """Driver, flavor, VBIOS, kernel, GPU model per node; the fleet's most common value on
    top; values that differ from it highlighted (and marked "≠" for readers without colour).
    Outlier nodes first."""
    modes, drift = fleet_modes(infos), drifting(infos)
    head = "".join(f"<th>{t}</th>" for _, t in DRIFT_COLUMNS)
    rows = [f'<table class="ng-table" id="ng-drift"><thead><tr><th>Node</th>{head}</tr></thead><tbody>',
            '<tr class="ng-mode"><td>fleet most common</td>'
            + "".join(_cell(_mode_text(modes[a], a in drift)) for a, _ in DRIFT_COLUMNS) + "</tr>"]
    marked = [(i, outliers(i, modes, drift)) for i in infos]
    for i, odd in sorted(marked, key=lambda t: (not t[1], t[0].node)):
        cells = []
        for a, _ in DRIFT_COLUMNS:
            v = getattr(i, a)
            if a in odd:
                cells.append(f'<td class="ng-outlier">{esc(v, 500, keep_newlines=False)} ≠</td>')
            else:
                cells.append(_cell(v))
        rows.append(f"<tr>{_cell(i.node)}{''.join(cells)}</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def _mode_text(mode, drifts: bool):
    return "no majority" if mode is None and drifts else mode


def checks_table(records: list[Record]) -> str:
    """Per check: id, title, severity and pass / fail / skip / error counts over the fleet.
    Checks with failures or errors come first."""
    by_check: dict[str, list] = {}
    for r in records:
        if not r.check_id:
            continue
        row = by_check.setdefault(r.check_id, [r.title, r.severity, Counter()])
        row[2][r.outcome] += 1
    head = ("Check id", "Title", "Severity", "Pass", "Fail", "Skip", "Error")
    rows = [f'<table class="ng-table" id="ng-checks"><thead><tr>'
            f"{''.join(f'<th>{h}</th>' for h in head)}</tr></thead><tbody>"]
    for cid, (title, sev, c) in sorted(by_check.items(), key=lambda t: (not (t[1][2]["fail"] or t[1][2]["error"]), t[0])):
        rows.append("<tr>" + "".join([
            _cell(cid), _cell(title), _cell(sev), _cell(c["pass"]),
            _cell(c["fail"], "ng-bad" if c["fail"] else ""), _cell(c["skip"]),
            _cell(c["error"], "ng-bad" if c["error"] else "")]) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


def folded_note(folded: int, limit: int) -> str:
    """The visible note above the results when passed rows were folded into the counts."""
    return (f'<p id="ng-passed-folded"><b>{folded} passed tests are not listed one row each</b> (more than '
            f"--html-passed-rows {limit}): the Nodes and Checks tables above count them per node and per "
            "check, and junit.xml lists every test. Failures, errors and skips are all listed below.</p>")


def summary_html(infos: list[NodeInfo], hrefs: dict[str, str], records: list[Record] | None = None,
                 folded_passed: int = 0, passed_rows_limit: int = 0) -> str:
    """The block pytest-html places above the results (``pytest_html_results_summary``).
    ``records`` (all tests) add the per-check table; ``folded_passed`` > 0 adds the note that
    that many passed rows are counted in the tables instead of listed."""
    n_bad = sum(1 for i in infos if i.has_problem)
    modes, drift = fleet_modes(infos), drifting(infos)
    n_drift = sum(1 for i in infos if outliers(i, modes, drift))
    parts = [
        STYLE,
        f'<details open id="ng-nodes-section"><summary><b>Nodes</b>: {len(infos)}, '
        f"{n_bad} with failures, errors or gather problems</summary>",
        nodes_table(infos, hrefs), "</details>"]
    if records:
        n_checks = len({r.check_id for r in records if r.check_id})
        parts += [f'<details {"open " if folded_passed else ""}id="ng-checks-section"><summary><b>Checks</b>: '
                  f"{n_checks}, outcomes over all nodes</summary>", checks_table(records), "</details>"]
    parts += [
        f'<details {"open " if n_drift else ""}id="ng-drift-section"><summary><b>Drift</b>: '
        f"{n_drift} node(s) differ from the fleet's most common value</summary>",
        drift_table(infos), "</details>"]
    if folded_passed:
        parts.append(folded_note(folded_passed, passed_rows_limit))
    return "".join(parts)


def escape_environment(env: dict) -> dict:
    """pytest-html shows environment values (and nested keys) as raw HTML: escape them.
    Top-level keys are set as text by pytest-html, so they are only cleaned."""
    from .text import clean
    out = {}
    for k, v in env.items():
        if isinstance(v, dict):
            out[clean(k, 200)] = {esc(kk, 200): esc(vv, 1000) for kk, vv in v.items()}
        else:
            out[clean(k, 200)] = esc(v, 1000)
    return out
