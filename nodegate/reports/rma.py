"""rma.csv and rma.json: one row per failing GPU, plus one row per node with node-level
failures (GPU columns empty). Only FAIL outcomes make rows; ERRORs (could not evaluate) go to
the JSON's ``errors`` list, never to an RMA row.

CSV columns (``CSV_COLUMNS``): node, gpu_index, pci_bus_id, gpu_serial, gpu_uuid,
board_part_number, vbios_version, driver_version, failed_checks (";"-joined check ids),
severity (highest), action (strongest, see actions.py), observed, expected
("<check id>: <value>" per check, "; "-joined).

JSON: ``{"format": "nodegate-rma/1", "generated_at", "inventory", "rows": [...],
"errors": [...], "not_evaluated": [{"node", "reason"}...]}``; each row has the CSV fields (gpu_index an int or null, failed_checks a
list) plus ``checks``: per failed check id, title, severity, expected, observed, message,
remediation, action. A healthy run writes the CSV header only and ``"rows": []``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from .actions import action_for, highest_severity, strongest
from .records import Record
from .text import one_line

CSV_COLUMNS = ("node", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number",
               "vbios_version", "driver_version", "failed_checks", "severity", "action",
               "observed", "expected")
FORMAT = "nodegate-rma/1"
_GPU_FIELDS = ("pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number", "vbios_version")


def _gpu_sort(idx: str) -> tuple[int, int | str]:
    return (0, int(idx)) if idx.isdigit() else (1, idx)


def build_rows(records) -> list[dict]:
    """Group FAIL records by (node, gpu_index); node-level ones (gpu_index "") first."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for r in records:
        if r.outcome == "fail":
            groups.setdefault((r.node, r.gpu_index), []).append(r)
    rows = []
    for node, gpu in sorted(groups, key=lambda k: (k[0], k[1] != "", _gpu_sort(k[1]))):
        rows.append(_row(node, gpu, sorted(groups[(node, gpu)], key=lambda r: r.check_id)))
    return rows


def _first(recs: list[Record], attr: str) -> str:
    return next((getattr(r, attr) for r in recs if getattr(r, attr)), "")


def _row(node: str, gpu: str, recs: list[Record]) -> dict:
    checks = [{"check_id": r.check_id, "check_name": r.check_name, "title": r.title,
               "severity": r.severity, "expected": r.expected, "observed": r.observed,
               "message": r.message, "remediation": r.remediation,
               "action": action_for(r.remediation, r.action, r.observed, r.message)} for r in recs]
    row = {"node": node, "gpu_index": int(gpu) if gpu.isdigit() else (gpu or None)}
    for f in _GPU_FIELDS:
        row[f] = _first(recs, f) if gpu else ""
    row["driver_version"] = _first(recs, "driver_version")
    row["failed_checks"] = [c["check_id"] or c["check_name"] for c in checks]
    row["severity"] = highest_severity(c["severity"] for c in checks)
    row["action"] = strongest(c["action"] for c in checks)
    row["observed"] = "; ".join(f"{c['check_id']}: {one_line(c['observed'], 500)}" for c in checks)
    row["expected"] = "; ".join(f"{c['check_id']}: {one_line(c['expected'], 500)}" for c in checks)
    row["checks"] = checks
    return row


def build_errors(records) -> list[dict]:
    """ERROR records (could not be evaluated): node, gpu_index, check_id, title, message."""
    return [{"node": r.node, "gpu_index": int(r.gpu_index) if r.gpu_index.isdigit() else None,
             "check_id": r.check_id, "title": r.title, "message": one_line(r.message, 500)}
            for r in records if r.outcome == "error"]


def _csv_cell(v) -> str:
    """Cell text; a leading = + - @ is quoted with ' so spreadsheets never run it as a
    formula (OWASP "CSV injection"): node strings are untrusted."""
    s = one_line("" if v is None else v, 4000)
    return "'" + s if s[:1] in ("=", "+", "-", "@") else s


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for row in rows:
        vals = dict(row, failed_checks=";".join(row["failed_checks"]))
        w.writerow([_csv_cell(vals[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:   # disk full: no half-written temporary left behind
        tmp.unlink(missing_ok=True)
        raise


def write(reports_dir: Path, records, inventory: str = "", generated_at: str = "",
          not_evaluated: dict[str, str] | None = None) -> tuple[Path, Path]:
    """Write ``rma.csv`` and ``rma.json`` under ``reports_dir``; returns both paths.
    ``not_evaluated`` (node -> reason, FleetRun.not_evaluated()): the JSON's ``not_evaluated``
    list (no RMA row: nothing was judged)."""
    records = list(records)
    rows = build_rows(records)
    doc = {"format": FORMAT, "generated_at": generated_at, "inventory": one_line(inventory, 1000),
           "rows": rows, "errors": build_errors(records),
           "not_evaluated": [{"node": one_line(n, 300), "reason": one_line(r, 500)}
                             for n, r in (not_evaluated or {}).items()]}
    csv_p, json_p = Path(reports_dir) / "rma.csv", Path(reports_dir) / "rma.json"
    _atomic_write(csv_p, csv_text(rows))
    # ensure_ascii: the file stays 7-bit; json escapes every control character.
    _atomic_write(json_p, json.dumps(doc, indent=1, ensure_ascii=True) + "\n")
    return csv_p, json_p
