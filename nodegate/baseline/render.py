"""Outputs of the comparison: ``changes.json`` and the HTML change tables.

Node names, versions and every other value come from untrusted bundles: the HTML goes
through ``nodegate.reports.text.esc`` (control characters made visible, HTML-escaped,
capped); JSON is written with ``json.dumps`` (escapes by construction).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..reports.text import esc
from .model import NodeComparison

SCHEMA = 1
CHANGES_FILE = "changes.json"
_STATUS_CLASS = {"regression": "ng-reg", "change": "ng-chg", "planned": "ng-plan", "unknown": "ng-unk", "same": ""}

STYLE = """<style>
.ng-bl{border-collapse:collapse;margin:0.3em 0 0.8em 0;font-size:12px}
.ng-bl th,.ng-bl td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
.ng-bl td.ng-reg{background:#fdd;font-weight:bold}.ng-bl td.ng-chg{background:#ffe08a}
.ng-bl td.ng-plan{background:#dfd}.ng-bl td.ng-unk{background:#eee}
details.ng-bl-node summary{cursor:pointer}
</style>"""


def changes_document(comparisons: dict[str, NodeComparison], *, baseline_dir: str, current: str,
                     generated_at: str) -> dict:
    """The changes.json document: ``{schema, baseline_dir, current, generated_at, summary,
    nodes: {node: {presence, changes: [...], regressions: [...], errors: [...], gpus: [...]}}}``."""
    nodes = {n: c.to_json() for n, c in sorted(comparisons.items())}
    summary = {"nodes": len(nodes),
               "nodes_with_regressions": sum(1 for c in comparisons.values() if c.regressions),
               "regressions": sum(len(c.regressions) for c in comparisons.values()),
               "changes": sum(len(c.changes) for c in comparisons.values()),
               "new_nodes": sorted(n for n, c in comparisons.items() if c.presence == "new"),
               "missing_nodes": sorted(n for n, c in comparisons.items() if c.presence in ("missing", "gone"))}
    return {"schema": SCHEMA, "baseline_dir": baseline_dir, "current": current, "generated_at": generated_at,
            "summary": summary, "nodes": nodes}


def write_changes_json(reports_dir: Path, doc: dict) -> Path:
    """Write ``<reports_dir>/changes.json`` atomically; returns the path."""
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    p = reports_dir / CHANGES_FILE
    tmp = reports_dir / f".{CHANGES_FILE}.tmp"
    from ..safeio import replace, write_text
    # a link planted at the temporary name is replaced, never written through (nodegate.safeio)
    write_text(tmp, json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=True, default=str) + "\n")
    replace(tmp, p)
    return p


def _node_table(c: NodeComparison) -> str:
    head = "<tr><th>Field</th><th>GPU</th><th>Before (baseline)</th><th>After (now)</th><th>Status</th></tr>"
    body = []
    for r in c.rows:
        cls = _STATUS_CLASS.get(r.status, "")
        attr = f' class="{cls}"' if cls else ""
        body.append(f"<tr><td>{esc(r.field, 200)}</td><td>{esc(r.gpu, 50)}</td><td>{esc(r.before, 500)}</td>"
                    f"<td>{esc(r.after, 500)}</td><td{attr}>{esc(r.status, 20)}</td></tr>")
    errs = "".join(f"<li>{esc(k)}{(' ' + esc(g)) if g else ''}: could not compare: {esc(v, 500)}</li>"
                   for (k, g), v in c.errors.items())
    regs = "".join(f"<li>{esc(r.message, 800)}</li>" for r in c.regressions)
    out = f'<table class="ng-bl">{head}{"".join(body)}</table>'
    if regs:
        out = f"<p>Regressions:</p><ul>{regs}</ul>" + out
    if errs:
        out += f"<ul>{errs}</ul>"
    return out


def html_section(comparisons: dict[str, NodeComparison], baseline_dir: str) -> str:
    """One HTML fragment: a heading, a one-line summary and per node a collapsible change table
    (open when the node has a regression or could not be compared)."""
    n_reg = sum(1 for c in comparisons.values() if c.regressions)
    parts = [STYLE, f"<h2>Changes since baseline</h2><p>Baseline: {esc(baseline_dir, 500)}; "
             f"{len(comparisons)} node(s), {n_reg} with regressions. Before -&gt; after per node; "
             "status regression / change / planned / same / unknown.</p>"]
    for node, c in sorted(comparisons.items()):
        n_chg = sum(1 for r in c.rows if r.status in ("change", "planned"))
        label = (f"{esc(node, 300)}: {esc(c.presence, 20)}, {len(c.regressions)} regression(s), "
                 f"{len(c.changes)} change(s)")
        is_open = " open" if c.regressions or c.errors else ""
        parts.append(f'<details class="ng-bl-node"{is_open}><summary>{label}</summary>'
                     f"{_node_table(c)}</details>" if (c.rows or c.errors or n_chg) else
                     f"<p>{label}</p>")
    return "\n".join(parts)
