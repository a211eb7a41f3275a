"""Parser for ``dcgmi diag`` results: ``-j`` JSON (DCGM 3.x and 4.x layouts) and the text table.

Usage (evidence key ``perf.dcgmi``)::

    dcgmi diag -r 3 -j          # or -r 4; without -j the table below

JSON (DCGM's nvvs/include/NvvsJsonStrings.h names the keys)::

    DCGM >= 4:  {"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name":
                 "targeted_stress", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass",
                 "warnings": [{"warning": "...", "error_id": 3}]}]}]}], "metadata": {...}}}
    DCGM 2/3:   {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name":
                 "Diagnostic", "results": [{"gpu_ids": "0", "status": "Fail", "warnings": [...]}]}]}]}}

Table (DCGM 3.x, ../shared/perf/341): ``| <test> | Pass - All |``, ``| <test> | Fail - GPU: 3 |``
(also ``GPUs: 0, 1``), then ``| Warning | ...`` lines whose text wraps onto following rows
(mid-word); ``All`` fans out to every GPU listed in ``GPU Device IDs Detected``. Deployment rows
(``Denylist``, ``Persistence Mode``) are node-wide checks, reported as gpu -1.

Schema::

    parse_dcgmi(text) -> DcgmiRun(results=[DcgmiResult(gpu, category, test, status, messages)],
                                  gpu_count, version, layout: "json4"|"json3"|"table")

``status`` is DCGM's word lower-cased: pass, fail, warn, skip, "not run". Non-GPU entities are
dropped. ParseError when the text is neither JSON with a diagnostic object nor a table.

Example::

    | GPU Memory                | Pass - All                                     |
    -> DcgmiRun(results=[DcgmiResult(0, "Hardware", "GPU Memory", "pass", []), ...])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 16 * 1024 * 1024
_STATUS = re.compile(r"^(Pass|Fail|Warn|Skip|Not Run)\b\s*(?:-\s*(All|GPUs?:\s*([\d,\s]+)))?", re.I)
_SECTION = re.compile(r"^\|?-+\s+(\w[\w ]*?)\s+-+")


@dataclass
class DcgmiResult:
    gpu: int
    category: str
    test: str
    status: str
    messages: list[str] = field(default_factory=list)


@dataclass
class DcgmiRun:
    results: list[DcgmiResult] = field(default_factory=list)
    gpu_count: int | None = None
    version: str | None = None
    layout: str = ""


def _msgs(res: dict) -> list[str]:
    out = []
    for key in ("warnings", "errors"):
        for w in res.get(key) or []:
            msg = (w.get("warning") or w.get("msg") or w.get("message") or json.dumps(w)) if isinstance(w, dict) else w
            out.append(str(msg)[:500])
    return out[:50]


def _json_gpus(res: dict) -> list[int]:
    if "entity_id" in res:
        if str(res.get("entity_group", "GPU")).upper() != "GPU":
            return []
        ids = [res.get("entity_id")]
    else:
        ids = str(res.get("gpu_ids", res.get("gpu_id", ""))).split(",")
    return [int(str(i).strip()) for i in ids if str(i).strip().isdigit()]


def _parse_json(s: str) -> DcgmiRun:
    try:
        obj = json.loads(s[s.find("{"):s.rfind("}") + 1])
    except ValueError as e:
        raise ParseError(f"dcgmi -j: JSON unparsable: {e}") from None
    if not isinstance(obj, dict):
        raise ParseError("dcgmi -j: not an object")
    layout = "json4" if "DCGM Diagnostic" in obj else "json3"
    body = obj.get("DCGM Diagnostic") or obj.get("DCGM GPU Diagnostic")
    if not isinstance(body, dict):
        raise ParseError("dcgmi -j: neither 'DCGM Diagnostic' (4.x) nor 'DCGM GPU Diagnostic' (3.x)")
    run = DcgmiRun(layout=layout)
    md = body.get("metadata") or {}
    if isinstance(md, dict):
        run.version = str(md.get("DCGM Version") or md.get("version") or "") or None
    for cat in body.get("test_categories") or []:
        if not isinstance(cat, dict):
            continue
        for test in cat.get("tests") or []:
            if not isinstance(test, dict):
                continue
            for res in test.get("results") or []:
                if isinstance(res, dict):
                    for g in _json_gpus(res):
                        run.results.append(DcgmiResult(g, str(cat.get("category", ""))[:80],
                                                       str(test.get("name", "test"))[:80],
                                                       str(res.get("status", "")).strip().lower(), _msgs(res)))
    return run


def _parse_table(text: str) -> DcgmiRun:
    run = DcgmiRun(layout="table")
    pending: list[tuple[str, str, str, list[int] | None]] = []   # (category, test, status, gpus)
    msgs: list[str] = []
    category = ""
    last_warn = False
    saw_table = False
    for line in text.split("\n"):
        st = line.strip()
        if m := _SECTION.match(st.lstrip("+")):
            category, last_warn = m.group(1).strip(), False
            continue
        if not st.startswith("|"):
            continue
        saw_table = True
        cells = [c.strip() for c in st.strip("|").split("|")]
        if len(cells) < 2:
            continue
        key, val = cells[0], cells[1]
        if key == "GPU Device IDs Detected":
            run.gpu_count = len([x for x in val.split(",") if x.strip()])
        elif key == "DCGM Version":
            run.version = val
        elif re.match(r"^(warning|error|info)s?\b", key.lower()):
            if pending:
                msgs.append(val)
            last_warn = True
        elif not key and last_warn and msgs:
            msgs[-1] = msgs[-1] + val          # wrapped mid-word: join without a space
        elif key and (m := _STATUS.match(val)):
            last_warn = False
            gpus = None if m.group(2) is None or m.group(2).lower() == "all" else \
                [int(x) for x in re.findall(r"\d+", m.group(3) or "")]
            if m.group(2) is None:
                gpus = [-1]
            pending.append((category, key, m.group(1).lower(), gpus))
            msgs = []
            _flush(run, pending[-1], msgs)
    if not saw_table:
        raise ParseError("dcgmi: neither JSON nor a result table")
    n = run.gpu_count or 0
    out = []
    for r in run.results:
        if r.gpu == -2:   # "All": fan out
            out.extend(DcgmiResult(g, r.category, r.test, r.status, r.messages) for g in range(n))
        else:
            out.append(r)
    run.results = out
    return run


def _flush(run: DcgmiRun, p, msgs: list[str]) -> None:
    cat, test, status, gpus = p
    for g in (gpus if gpus is not None else [-2]):
        run.results.append(DcgmiResult(g, cat, test, status, msgs))   # msgs list filled as warnings follow


def parse_dcgmi(text: str | bytes) -> DcgmiRun:
    """Results of one ``dcgmi diag`` run. Empty -> DcgmiRun() with no results."""
    text = V.check_text(text, cap=MAX_CHARS, what="dcgmi")
    if not text.strip():
        return DcgmiRun()
    if "{" in text and ("DCGM Diagnostic" in text or "DCGM GPU Diagnostic" in text):
        return _parse_json(text)
    return _parse_table(text)
