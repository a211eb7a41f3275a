"""What to send to the vendor and what the site fixes itself (docs/reports.md "RMA and actions").

- ``rma.csv`` / ``rma.json``: only what needs the vendor, as its desk takes it: one row per part
  to replace (nodegate.reports.parts: a GPU, the baseboard/NVSwitch tray, a riser, an HCA) with
  its location and serial where the evidence has one, the failed checks whose action is RMA
  (``actions.VENDOR_ACTIONS``), their observed figures and the Xids.
- ``actions.csv``: the site's own work, same columns: reseats (done before any RMA: the row's
  ``if_it_persists`` names the RMA to open when the fault survives it), resets, reboots,
  firmware updates, software and configuration fixes (one row per GPU, node-level ones in one
  row, never merged with a part's row), and, per GPU (or node), the items that could not be
  evaluated (action ``obtain evidence``, with how to obtain it).

Each row: the system's vendor, model and serial from DMI (``dmi.id``; the serial needs root, so
without --sudo the cell says it is unreadable, never a guess), node, part, part location, part
serial, GPU index, PCI bus id, and the GPU's serial, UUID, board part number and VBIOS (blank on
a row about another part), driver, failed checks, the Xids the kernel log shows for that GPU
(all of the node's for a node row), severity, action, observed and expected per check,
remediation, if it persists, the evidence archive's file name (relative to the reports
directory) and the run's start time. A GPU missing from nvidia-smi is named by the bus id, UUID
and index its other evidence gives (/proc/driver/nvidia/gpus, the kernel log:
nodegate.session.identity).

JSON: ``{"format": "nodegate-rma/3", "generated_at", "inventory", "rows": [...],
"not_evaluated": [{"node", "reason"}, ...]}``; a row has the CSV fields (``gpu_index`` an
integer or null, ``failed_checks`` and ``xids`` lists) plus ``checks``: per check id, title,
severity, expected, observed, message, remediation, action (the message never holds the
remediation). ``not_evaluated`` lists the nodes that were not judged (deselected, not run,
interrupted: nodegate.reports.status): no row, and never counted as healthy.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from ..safeio import open_new

from .actions import OBTAIN_EVIDENCE, RESEAT, UPDATE_FIRMWARE, VENDOR_ACTIONS, highest_severity
from .findings import strongest_action
from .parts import GPU, part_of, part_serial
from .records import NodeInfo, Record, gpu_slot
from .text import one_line

CSV_COLUMNS = ("system_vendor", "system_model", "system_serial", "node", "part", "part_location", "part_serial",
               "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number", "vbios_version",
               "driver_version", "failed_checks", "xids", "severity", "action", "observed", "expected", "remediation",
               "if_it_persists", "evidence_archive", "run_started_at")
FORMAT = "nodegate-rma/3"
_GPU_FIELDS = ("pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number", "vbios_version")
#: what names the GPU itself: blank on a row about another part (a riser's row names no GPU serial)
_GPU_IDENTITY = ("gpu_serial", "gpu_uuid", "board_part_number", "vbios_version")


def _gpu_sort(idx: str) -> tuple[int, int | str]:
    return (0, int(idx)) if idx.isdigit() else (1, idx)


def _first(recs: list[Record], attr: str) -> str:
    return next((getattr(r, attr) for r in recs if getattr(r, attr)), "")


def _uniq(values) -> list[str]:
    seen: list[str] = []
    for v in values:
        if v and v not in seen:
            seen.append(v)
    return seen


def _action(r: Record, outcome: str) -> str:
    return r.action or (OBTAIN_EVIDENCE if outcome == "error" else "")


def node_rows(info: NodeInfo, recs: list[Record], *, archive: str = "", started: str = "") -> list[dict]:
    """The rows of one node. FAIL records are grouped by the part they are about
    (nodegate.reports.parts: a GPU, a riser's upstream port, the NVSwitch tray, an HCA): one row a
    part, the vendor's when any of its checks' action is RMA (its other checks, the kernel log's
    Xids of that GPU say, go with it as evidence), else the site's. Software and configuration
    checks are the site's, per GPU (bus id, else index; node-level checks in one row), never
    merged with a part's row. ERROR records are grouped per GPU. Node rows first, GPUs in index order, a GPU's vendor
    row before its site rows."""
    out = []
    for outcome in ("fail", "error"):
        groups: dict[tuple, list[Record]] = {}
        for r in recs:
            if r.outcome != outcome:
                continue
            slot = gpu_slot(r)   # a GPU item's label (a missing GPU has no gpu_index, records.gpu_slot)
            gpu_key = r.pci_bus_id or (f"#{slot}" if slot != "" else "")
            part, where = part_of(r) if outcome == "fail" else ("", "")
            vendor = outcome == "fail" and strongest_action([_action(r, outcome)]) in VENDOR_ACTIONS
            if not part and slot != "" and (vendor or strongest_action([_action(r, outcome)]) == RESEAT):
                # a GPU check no part is mapped for, whose action is hardware work: that GPU
                part, where = GPU, r.pci_bus_id or f"GPU {r.gpu_index or 'gpu' + slot}"
            # a part's checks stay together (the RMA row carries the kernel log's Xid check of the GPU
            # it sends back); software and configuration checks apart from the vendor's
            groups.setdefault((part, where, False) if part else ("", gpu_key, vendor), []).append(r)

        def order(k):
            g = groups[k]
            gpu_idx = next((gpu_slot(x) for x in g if gpu_slot(x) != ""), "")
            vendor = strongest_action(_action(x, outcome) for x in g) in VENDOR_ACTIONS
            return (gpu_idx != "", _gpu_sort(gpu_idx), not vendor, k[0], k[1])
        for k in sorted(groups, key=order):
            out.append(_row(info, k[0], k[1], sorted(groups[k], key=lambda r: r.check_id), outcome, archive,
                            started))
    return out


def _row(info: NodeInfo, part: str, where: str, recs: list[Record], outcome: str, archive: str,
         started: str) -> dict:
    checks = [{"check_id": r.check_id, "check_name": r.check_name, "title": r.title, "severity": r.severity,
               "expected": r.expected, "observed": r.observed, "message": r.message,
               "remediation": r.remediation, "action": _action(r, outcome)}
              for r in recs]
    gpu = next((r.gpu_index for r in recs if r.gpu_index != ""), "")
    row = {"system_vendor": info.system_vendor or "", "system_model": info.system_model or "",
           "system_serial": info.system_serial or "", "node": info.node,
           "part": part, "part_location": where if part else "", "part_serial": part_serial(part, recs),
           "gpu_index": int(gpu) if gpu.isdigit() else None}
    gpu_recs = [r for r in recs if gpu_slot(r) != ""]   # a missing GPU's too: its UUID, VBIOS
    for f in _GPU_FIELDS:
        row[f] = _first(gpu_recs, f)
        if part and part != GPU and f in _GPU_IDENTITY:
            row[f] = ""
    row["driver_version"] = _first(recs, "driver_version") or info.driver_version or ""
    row["failed_checks"] = [c["check_id"] or c["check_name"] for c in checks]
    xids = sorted({int(x) for r in recs for x in r.xids.split(",") if x.strip().isdigit()})
    row["xids"] = xids
    row["severity"] = highest_severity(c["severity"] for c in checks)
    row["action"] = strongest_action(c["action"] for c in checks)
    if outcome == "error":
        row["observed"] = "; ".join(f"could not evaluate: {m}" for m in _uniq(one_line(c["message"], 500)
                                                                               for c in checks))
        row["expected"] = ""
    else:
        row["observed"] = "; ".join(f"{c['check_id']}: {one_line(c['observed'], 500)}" for c in checks)
        row["expected"] = "; ".join(f"{c['check_id']}: {one_line(c['expected'], 500)}" for c in checks)
    row["remediation"] = " | ".join(_uniq(one_line(c["remediation"], 1000) for c in checks))
    if row["action"] in VENDOR_ACTIONS:
        # the vendor's desk reads what to replace and why, not the site's drain/reset steps (each
        # check's own remediation stays in rma.json's ``checks``)
        serial = f", serial {row['part_serial']}" if row["part_serial"] else ""
        why = _uniq(one_line(c["message"], 500) for c in checks if c["action"] in VENDOR_ACTIONS)
        row["remediation"] = f"Replace the {part or 'part'} ({where}{serial}): " + "; ".join(why)
    row["if_it_persists"] = _escalation(row, part, where)
    row["evidence_archive"] = archive
    row["run_started_at"] = started
    row["checks"] = checks
    return row


def _escalation(row: dict, part: str, where: str) -> str:
    """A site row about a part (reseat, reset, reboot, cabling): the RMA to open when the fault is
    still there after that work and a re-run (the vendor's desk asks for the reseat first)."""
    if not part or row["action"] in VENDOR_ACTIONS or row["action"] in (OBTAIN_EVIDENCE, UPDATE_FIRMWARE):
        return ""
    serial = f", serial {row['part_serial']}" if row["part_serial"] else ""
    return f"re-run nodegate on the node; still failing: RMA the {part} ({where}{serial})"


def is_vendor(row: dict) -> bool:
    return row["action"] in VENDOR_ACTIONS


def _csv_cell(v) -> str:
    """Cell text; a leading = + - @ is quoted with ' so spreadsheets never run it as a
    formula (OWASP "CSV injection"): node strings are untrusted."""
    if isinstance(v, list):
        v = ";".join(str(x) for x in v)
    s = one_line("" if v is None else v, 4000)
    return "'" + s if s[:1] in ("=", "+", "-", "@") else s


def csv_line(row: dict) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([_csv_cell(row[c]) for c in CSV_COLUMNS])
    return buf.getvalue()


def csv_header() -> str:
    return ",".join(CSV_COLUMNS) + "\n"


class RmaWriter:
    """Streams rows into ``rma.csv``, ``rma.json`` (vendor) and ``actions.csv`` (site) under
    ``reports_dir`` as nodes are rendered; ``finish()`` closes them (atomically renamed)."""

    def __init__(self, reports_dir: Path, *, inventory: str = "", generated_at: str = ""):
        self.dir = Path(reports_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.paths = {n: self.dir / n for n in ("rma.csv", "rma.json", "actions.csv")}
        # unbuffered binary files: one write a node and file, so a full disk fails that write and the
        # file is cut back to its last whole node exactly (no buffer left to flush later)
        self._fh = {n: open_new(self.dir / f".{n}.tmp", "wb", buffering=0)  # a planted link is not followed
                    for n in self.paths}
        head = {"format": FORMAT, "generated_at": generated_at, "inventory": one_line(inventory, 1000)}
        # the JSON document streamed: the head's keys, then the rows one by one
        try:
            self._put({"rma.csv": csv_header(), "actions.csv": csv_header(),
                       "rma.json": json.dumps(head, ensure_ascii=True)[:-1] + ', "rows": ['})
        except OSError:
            self.abort()
            raise
        self.rma_rows = 0
        self.action_rows = 0

    def _put(self, texts: dict[str, str]) -> None:
        """Append each file's text; on an OSError every file is cut back to where it was."""
        pos = {n: fh.tell() for n, fh in self._fh.items()}
        try:
            for n, t in texts.items():
                if t:
                    data = t.encode("utf-8")
                    if self._fh[n].write(data) != len(data):
                        raise OSError(28, "No space left on device")
        except OSError:
            for n, fh in self._fh.items():
                try:
                    fh.truncate(pos[n])
                    fh.seek(pos[n])
                except (OSError, ValueError):
                    pass
            raise

    def add(self, rows: list[dict]) -> None:
        """Append one node's rows (a full disk raises here and every file is cut back to its last
        whole node, so the caller may free room and call again)."""
        texts = {"rma.csv": "", "rma.json": "", "actions.csv": ""}
        n_rma, n_act = self.rma_rows, self.action_rows
        for row in rows:
            if is_vendor(row):
                texts["rma.csv"] += csv_line(row)
                texts["rma.json"] += ("," if n_rma else "") + "\n " + json.dumps(row, ensure_ascii=True)
                n_rma += 1
            else:
                texts["actions.csv"] += csv_line(row)
                n_act += 1
        self._put(texts)
        self.rma_rows, self.action_rows = n_rma, n_act

    def finish(self, not_evaluated: dict[str, str] | None = None) -> dict[str, Path]:
        """Close and rename the files; ``not_evaluated`` (node -> reason) ends rma.json. A full
        disk raises with the temporaries kept (whole rows): the caller may free room and call
        again, or ``abort``."""
        if not self._fh["rma.json"].closed:
            ne = json.dumps([{"node": one_line(n, 300), "reason": one_line(r, 500)}
                             for n, r in (not_evaluated or {}).items()], ensure_ascii=True)
            self._put({"rma.json": ("\n]" if self.rma_rows else "]") + f', "not_evaluated": {ne}}}\n'})
            for f in self._fh.values():
                f.close()
        for n in self._fh:
            os.replace(self.dir / f".{n}.tmp", self.paths[n])
        return self.paths

    def abort(self) -> None:
        """Remove the temporaries (a full disk): no half-written file is left."""
        for n, fh in self._fh.items():
            try:
                fh.close()
            except OSError:
                pass
            (self.dir / f".{n}.tmp").unlink(missing_ok=True)


def write(reports_dir: Path, infos_and_records, inventory: str = "", generated_at: str = "",
          archives: dict[str, str] | None = None, not_evaluated: dict[str, str] | None = None) -> dict[str, Path]:
    """All three files at once from ``[(NodeInfo, [Record, ...]), ...]`` (tests and tools)."""
    w = RmaWriter(reports_dir, inventory=inventory, generated_at=generated_at)
    for info, recs in infos_and_records:
        w.add(node_rows(info, recs, archive=(archives or {}).get(info.node, ""), started=generated_at))
    return w.finish(not_evaluated)
