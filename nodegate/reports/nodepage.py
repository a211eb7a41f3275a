"""``nodes/<node>.html``: one page per node, linked from the matrix of report.html.

What an operator reads before acting on one node: its status, system identity (DMI), driver and
gather facts, its findings (one block per root cause, remediation once: nodegate.reports.findings),
then every check with its outcome. A GPU check whose GPUs all passed is one row ("8 of 8 GPUs",
with the observed value when they agree); a GPU that did not pass gets a row of its own with
expected and observed. Failures show their decisive evidence lines; the evidence archive is
linked. Every node string is escaped.
"""

from __future__ import annotations

from .findings import Finding
from .records import NodeInfo, Record, gpu_slot
from .status import STATUS_CLASS_NAMES
from .text import esc

STYLE = """<style>
body{font:13px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:12px 16px;color:#111}
h1{font-size:18px;margin:0 0 6px 0}h2{font-size:15px;margin:16px 0 6px 0}
.st-ok{background:#d7f5d7}.st-bad{background:#ffd6d6}.st-ne{background:#e8e8e8}
b.st{padding:1px 6px;border-radius:3px}
table.ng{border-collapse:collapse;font-size:12px}
table.ng th,table.ng td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
tr.fail td{background:#fde7e7}tr.error td{background:#fff0dc}tr.skip td{color:#555}
.finding{border:1px solid #ccc;border-left:5px solid #e53935;padding:4px 8px;margin:6px 0}
.finding.error{border-left-color:#fb8c00}
pre{white-space:pre-wrap;max-height:30em;overflow:auto;background:#f6f6f6;padding:4px;border:1px solid #ddd}
.small{color:#555;font-size:12px}
</style>"""


def _gpu(r: Record) -> str:
    slot = gpu_slot(r)   # a missing GPU: its test id's label, its bus id (its gpu_index is empty)
    return f"gpu{slot} {r.pci_bus_id}".strip() if slot != "" else ""


def finding_html(f: Finding) -> str:
    cls = "finding error" if f.outcome == "error" else "finding"
    if f.outcome == "fail":
        head = (f"<b>{esc(f.key)}</b> {esc(f.items[0].title)} — FAIL, {esc(f.severity)}, "
                f"action: {esc(f.action)}")
        lines = []
        for r in f.items:
            where = _gpu(r) or "node"
            ident = f" serial {r.gpu_serial}" if r.gpu_serial else ""
            lines.append(f"<li>{esc(where + ident)}: observed <b>{esc(r.observed, 600)}</b>, expected "
                         f"{esc(r.expected, 600)}" + (f" (Xid {esc(r.xids)})" if r.xids else "") + "</li>")
        body = f"<ul>{''.join(lines)}</ul>"
    else:
        head = (f"<b>Could not be evaluated</b> ({len(f.items)} item(s): {esc(', '.join(f.checks), 800)}; "
                f"{esc(', '.join(f.gpus), 400)})")
        body = f"<p>{esc(f.message, 1500)}</p>"
    return (f'<div class="{cls}">{head}{body}<p><b>What to do:</b> {esc(f.remediation, 2000)}</p></div>')


def _check_rows(recs: list[Record]) -> str:
    """One row per node check; per GPU check one row for its passed GPUs and one per other GPU."""
    out = []
    groups: dict[str, list[Record]] = {}
    order: list[object] = []
    for r in recs:
        if r.scope == "gpu" and r.check_id:
            if r.check_id not in groups:
                groups[r.check_id] = []
                order.append(r.check_id)
            groups[r.check_id].append(r)
        else:
            order.append(r)
    for x in order:
        if isinstance(x, Record):
            out.append(_row(x, _gpu(x)))
            continue
        g = groups[x]
        passed = [r for r in g if r.outcome == "pass"]
        if passed:
            observed = {r.observed for r in passed}
            obs = passed[0].observed if len(observed) == 1 else "; ".join(
                f"gpu{gpu_slot(r)}: {r.observed}" for r in passed)
            rep = Record(nodeid=passed[0].nodeid, outcome="pass", check_id=x, title=passed[0].title,
                         severity=passed[0].severity, expected=passed[0].expected, observed=obs)
            out.append(_row(rep, f"{len(passed)} of {len(g)} GPUs"))
        for r in g:
            if r.outcome != "pass":
                out.append(_row(r, _gpu(r)))
    return "".join(out)


def _row(r: Record, where: str) -> str:
    ev = (f"<details><summary>evidence</summary><pre>{esc(r.evidence, limit=0)}</pre></details>"
          if r.evidence else "")
    msg = esc(r.message, 1500) if r.outcome != "pass" else ""
    return (f'<tr class="{r.outcome}"><td>{esc(r.check_id)}</td><td>{esc(r.title)}</td><td>{esc(where)}</td>'
            f"<td>{esc(r.outcome.upper())}</td><td>{esc(r.expected, 600)}</td><td>{esc(r.observed, 600)}</td>"
            f"<td>{msg}{ev}</td></tr>")


def node_page(info: NodeInfo, recs: list[Record], findings: list[Finding], *, back: str,
              archive_href: str | None, title: str, extras: list[str] = ()) -> str:
    """The page of one node. ``back``: link to report.html's row of the node; ``extras``: HTML
    fragments attached to its items (burn-in plots), trusted as nodegate's own markup."""
    status_cls = STATUS_CLASS_NAMES.get(info.status, "")
    ident = [("System vendor", info.system_vendor), ("System model", info.system_model),
             ("System serial", info.system_serial), ("Driver", info.driver_version), ("Flavor", info.flavor),
             ("Kernel", info.kernel), ("GPU model", info.gpu_model), ("GPUs", info.gpu_count),
             ("Gather", info.gather_status), ("Spec from", info.spec_source or None)]
    if info.not_evaluated and info.not_evaluated != info.gather_status:
        ident.append(("Not evaluated", info.not_evaluated))
    if info.spec_off:   # issue 37.5: what the spec turned off, and the file that set it
        ident.append(("Turned off by the spec", info.spec_off))
    ident_rows = "".join(f"<tr><th>{k}</th><td>{esc('?' if v is None else v, 600)}</td></tr>" for k, v in ident)
    c = info.counts
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{esc(info.node, 300, keep_newlines=False)} — nodegate</title>", STYLE, "</head><body>",
             f'<p class="small"><a href="{esc(back, 1000)}">← {esc(title, 300, keep_newlines=False)}</a></p>',
             f"<h1>{esc(info.node, 300, keep_newlines=False)} "
             f'<b class="st {status_cls}" id="ng-status">{esc(info.status)}</b></h1>',
             f'<p id="ng-counts">{c["pass"]} passed, {c["fail"]} failed, {c["skip"]} skipped, {c["error"]} '
             f"could not be evaluated"
             + (f" (of {info.expected_items} items)" if info.expected_items else "") + "</p>",
             f'<table class="ng" id="ng-identity">{ident_rows}</table>']
    if archive_href:
        parts.append(f'<p>Evidence archive: <a href="{esc(archive_href, 1000)}">{esc(archive_href, 1000)}</a></p>')
    parts.append("<h2>Findings</h2>")
    parts.append("".join(finding_html(f) for f in findings) if findings else
                 '<p id="ng-no-findings">No findings.</p>')
    parts.append('<h2>Checks</h2><table class="ng" id="ng-node-checks"><thead><tr><th>Check id</th><th>Title</th>'
                 "<th>GPU</th><th>Outcome</th><th>Expected</th><th>Observed</th><th>Message</th></tr></thead><tbody>")
    parts.append(_check_rows(recs))
    parts.append("</tbody></table>")
    if extras:
        parts.append("<h2>Attachments</h2>" + "".join(f"<div>{x}</div>" for x in extras))
    parts.append("</body></html>\n")
    return "".join(parts)
