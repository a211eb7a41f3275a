"""Parser for ``dcgmi diag`` results: ``-j`` JSON (DCGM 3.x and 4.x layouts) and the text table
(DCGM 3.x and 4.x).

Usage (evidence key ``perf.dcgmi``)::

    dcgmi diag -r 3 -j          # or -r 4; without -j the table below

JSON (DCGM's nvvs/include/NvvsJsonStrings.h names the keys)::

    DCGM >= 4:  {"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [{"name":
                 "targeted_stress", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass",
                 "warnings": [{"warning": "...", "error_id": 3}]}], "test_summary": {"status": "Pass"}}]}],
                 "metadata": {...}}}
    DCGM 2/3:   {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [{"name":
                 "Diagnostic", "results": [{"gpu_ids": "0", "status": "Fail", "warnings": [...]}]}]}]}}

Table, DCGM 3.x (../shared/perf/341): ``| <test> | Pass - All |``, ``| <test> | Fail - GPU: 3 |``
(also ``GPUs: 0, 1``; a second status line ``|   | Fail - GPU: 0 |`` for the same test), then
``| Warning | ...`` lines whose text wraps onto following rows mid-word. DCGM 4.x (DCGM issue 253,
tests/perf/fixtures 342-345): ``| <test> | Fail |`` then the warnings, then one ``|   | GPU0: Pass |``
line per GPU: a wrapped warning's continuation never swallows those (issue 36 item 5). ``All``
fans out to every GPU listed in ``GPU Device IDs Detected``; a test-level status with no GPU named
(``Denylist``, ``Persistence Mode``) is node-wide, reported as gpu -1. ``> `` quote markers are
removed (``_perftext.prepare``); a terminal-wrapped JSON is rejoined.

Schema::

    parse_dcgmi(text) -> DcgmiRun(results=[DcgmiResult(gpu, category, test, status, messages)],
                                  tests=[DcgmiTest(category, name, status, messages, gpus={gpu: status})],
                                  gpu_count, version, layout: "json4"|"json3"|"table", notes)

``status`` is DCGM's word lower-cased: pass, fail, warn, skip, "not run". ``DcgmiTest.status`` is
the test-level word (None when only per-GPU results exist). Non-GPU entities are dropped. Whether a
Fail is DCGM's own failure to run the test (internal error) is decided by nodegate.perf.extract.
ParseError when the text is neither JSON with a diagnostic object nor a table.

Example::

    | GPU Memory                | Pass - All                                     |
    -> DcgmiRun(results=[DcgmiResult(0, "Hardware", "GPU Memory", "pass", []), ...])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import ParseError
from ._limits import MAX_GPUS
from ._perftext import load_json, prepare

MAX_CHARS = 16 * 1024 * 1024
MAX_TESTS = 256
_STATUS = re.compile(r"^(Pass|Fail|Warn|Skip|Not Run)\b\s*(?:-\s*(All|GPUs?:\s*([\d,\s]{1,400})))?", re.I)
_GPU_STATUS = re.compile(r"^GPU\s?(\d{1,4})\s*:\s*(Pass|Fail|Warn|Skip|Not Run)\b", re.I)
_SECTION = re.compile(r"^\|?-+\s+(\w[\w ]{0,60}?)\s+-+")


@dataclass
class DcgmiResult:
    gpu: int
    category: str
    test: str
    status: str
    messages: list[str] = field(default_factory=list)


@dataclass
class DcgmiTest:
    category: str
    name: str
    status: str | None
    messages: list[str] = field(default_factory=list)
    gpus: dict[int, str] = field(default_factory=dict)
    all_gpus: bool = False


@dataclass
class DcgmiRun:
    results: list[DcgmiResult] = field(default_factory=list)
    gpu_count: int | None = None
    version: str | None = None
    layout: str = ""
    tests: list[DcgmiTest] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _msgs(res: dict) -> list[str]:
    out = []
    for key in ("warnings", "errors"):
        items = res.get(key) or []
        for w in items[:50] if isinstance(items, list) else []:
            msg = (w.get("warning") or w.get("msg") or w.get("message") or json.dumps(w)[:500]) if isinstance(w, dict) else w
            out.append(str(msg)[:500])
    return out[:50]


def _json_gpus(res: dict) -> list[int]:
    if "entity_id" in res:
        if str(res.get("entity_group", "GPU")).upper() != "GPU":
            return []
        ids = [res.get("entity_id")]
    else:
        ids = str(res.get("gpu_ids", res.get("gpu_id", "")))[:400].split(",")
    return [int(str(i).strip()) for i in ids if re.fullmatch(r"[0-9]{1,4}", str(i).strip())]


def _parse_json(s: str) -> DcgmiRun:
    obj, rejoined = load_json(s[s.find("{"):s.rfind("}") + 1], "dcgmi -j")
    if not isinstance(obj, dict):
        raise ParseError("dcgmi -j: not an object")
    layout = "json4" if "DCGM Diagnostic" in obj else "json3"
    body = obj.get("DCGM Diagnostic") or obj.get("DCGM GPU Diagnostic")
    if not isinstance(body, dict):
        raise ParseError("dcgmi -j: neither 'DCGM Diagnostic' (4.x) nor 'DCGM GPU Diagnostic' (3.x)")
    run = DcgmiRun(layout=layout)
    if rejoined:
        run.notes.append("JSON rejoined from terminal-wrapped lines")
    md = body.get("metadata") or {}
    if isinstance(md, dict):
        run.version = str(md.get("DCGM Version") or md.get("version") or "")[:40] or None
    cats = body.get("test_categories") or []
    for cat in cats if isinstance(cats, list) else []:
        if not isinstance(cat, dict):
            continue
        tests = cat.get("tests") or []
        for test in tests if isinstance(tests, list) else []:
            if not isinstance(test, dict) or len(run.tests) >= MAX_TESTS:
                continue
            summary = test.get("test_summary") if isinstance(test.get("test_summary"), dict) else {}
            t = DcgmiTest(str(cat.get("category", ""))[:80], str(test.get("name", "test"))[:80],
                          str(summary.get("status", "")).strip().lower() or None, _msgs(summary))
            run.tests.append(t)
            results = test.get("results") or []
            for res in results if isinstance(results, list) else []:
                if not isinstance(res, dict):
                    continue
                for g in _json_gpus(res):
                    st = str(res.get("status", "")).strip().lower()[:20]
                    msgs = _msgs(res)
                    t.gpus[g] = st
                    t.messages.extend(m for m in msgs if m not in t.messages)
                    run.results.append(DcgmiResult(g, t.category, t.name, st, msgs))
                    if len(run.results) > MAX_TESTS * MAX_GPUS:
                        raise ParseError("dcgmi -j: too many results")
    return run


def _parse_table(text: str) -> DcgmiRun:
    run = DcgmiRun(layout="table")
    category = ""
    cur: DcgmiTest | None = None
    in_msg = False          # the last row was a Warning/Info line: an unlabelled row may continue it
    saw_table = False
    for line in text.split("\n"):
        st = line.strip()
        if m := _SECTION.match(st.lstrip("+")):
            category, in_msg = m.group(1).strip(), False
            continue
        if not st.startswith("|"):
            continue
        saw_table = True
        raw = st.strip("|").split("|")
        if len(raw) < 2:
            continue
        key, val = raw[0].strip(), raw[1].strip()
        if key == "GPU Device IDs Detected":
            run.gpu_count = len([x for x in val.split(",") if x.strip()][:MAX_GPUS + 1])
        elif key == "DCGM Version":
            run.version = val[:40]
        elif re.match(r"^(warning|error|info)s?\b", key.lower()):
            if cur is not None:
                cur.messages.append(val[:500])
                if len(cur.messages) > 50:
                    cur.messages.pop(0)
            in_msg = True
        elif not key and (m := _GPU_STATUS.match(val)):
            # 4.x per-GPU line: never part of a wrapped warning (issue 36 item 5)
            in_msg = False
            if cur is not None and len(cur.gpus) < MAX_GPUS:
                cur.gpus[int(m.group(1))] = m.group(2).lower()
        elif not key and cur is not None and (m := _STATUS.match(val)) and m.group(2):
            # 3.x second status line of the same test: "|   | Fail - GPU: 0 |"
            in_msg = False
            _set_gpus(cur, m)
        elif not key and in_msg and cur is not None and cur.messages:
            # wrapped mid-word: the cell's own leading space (after "| ") is kept, padding dropped
            cur.messages[-1] = (cur.messages[-1] + raw[1][1:].rstrip())[:2000]
        elif key and (m := _STATUS.match(val)):
            in_msg = False
            if len(run.tests) >= MAX_TESTS:
                raise ParseError("dcgmi: too many tests")
            cur = DcgmiTest(category, key[:80], m.group(1).lower())
            run.tests.append(cur)
            if m.group(2):
                _set_gpus(cur, m)
    if not saw_table:
        raise ParseError("dcgmi: neither JSON nor a result table")
    n = min(run.gpu_count or 0, MAX_GPUS)
    for t in run.tests:
        if t.gpus:
            for g, stt in sorted(t.gpus.items()):
                run.results.append(DcgmiResult(g, t.category, t.name, stt, list(t.messages)))
        elif t.all_gpus:
            run.results.extend(DcgmiResult(g, t.category, t.name, t.status or "", list(t.messages)) for g in range(n))
        else:
            run.results.append(DcgmiResult(-1, t.category, t.name, t.status or "", list(t.messages)))
    return run


def _set_gpus(t: DcgmiTest, m: re.Match) -> None:
    word = m.group(1).lower()
    if m.group(2).lower() == "all":
        t.all_gpus = True
        return
    for x in re.findall(r"\d{1,4}", m.group(3) or "")[:MAX_GPUS]:
        t.gpus[int(x)] = word


def parse_dcgmi(text: str | bytes) -> DcgmiRun:
    """Results of one ``dcgmi diag`` run. Empty -> DcgmiRun() with no results."""
    p = prepare(text, cap=MAX_CHARS, what="dcgmi")
    if not p.text.strip():
        return DcgmiRun(notes=p.notes)
    if "{" in p.text and ("DCGM Diagnostic" in p.text or "DCGM GPU Diagnostic" in p.text):
        run = _parse_json(p.text)
    else:
        run = _parse_table(p.text)
    run.notes[:0] = p.notes
    return run
