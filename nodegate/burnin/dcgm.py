"""Parser for ``dcgmi diag -r <level> -j`` (the dcgmi load's output).

Usage::

    dcgmi diag -r 3 -j

Shapes (both seen in the field; DCGM's nvvs/include/NvvsJsonStrings.h names the keys)::

    DCGM >= 4:  {"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [
                 {"name": "targeted_stress", "results": [{"entity_group": "GPU", "entity_id": 0,
                  "status": "Pass", "warnings": [{"warning": "...", "error_id": 3}], "info": [...]}]}]}]}}
    DCGM 2/3:   {"DCGM GPU Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
                 {"name": "Diagnostic", "results": [{"gpu_ids": "0", "status": "Fail",
                  "warnings": [{"warning": "..."}]}]}]}]}}

Schema::

    parse_dcgm(text) -> [DcgmResult(gpu, category, test, status, messages)]

``status`` is DCGM's word lower-cased: pass, fail, warn, skip, "not run". Results for entities
other than GPUs are dropped. Raises ParseError when there is no diagnostic JSON object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import ParseError

MAX_CHARS = 16 * 1024 * 1024


@dataclass
class DcgmResult:
    gpu: int
    category: str
    test: str
    status: str
    messages: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "_", self.test.lower()).strip("_") or "test"


def _json_object(text: str) -> dict:
    i, j = text.find("{"), text.rfind("}")
    if i < 0 or j <= i:
        raise ParseError("dcgmi output holds no JSON object")
    try:
        obj = json.loads(text[i:j + 1])
    except ValueError as e:
        raise ParseError(f"dcgmi JSON unparsable: {e}") from None
    except RecursionError:
        # json's decoder recurses per bracket: 100,000 nested ones escaped as RecursionError and
        # turned every burn-in item of the node ERROR, not only the dcgmi rule's
        raise ParseError("dcgmi JSON nested too deep: no dcgmi output is") from None
    if not isinstance(obj, dict):
        raise ParseError("dcgmi JSON is not an object")
    return obj


def _messages(res: dict) -> list[str]:
    out = []
    for key in ("warnings", "errors"):
        for w in res.get(key) or []:
            if isinstance(w, dict):
                msg = w.get("warning") or w.get("msg") or w.get("message") or json.dumps(w)[:300]
            else:
                msg = str(w)
            out.append(str(msg)[:500])
    return out


def _gpus(res: dict) -> list[int]:
    if "entity_id" in res:
        grp = str(res.get("entity_group", "GPU")).upper()
        if grp != "GPU":
            return []
        try:
            return [int(res["entity_id"])]
        except (TypeError, ValueError):
            return []
    ids = res.get("gpu_ids", res.get("gpu_id"))
    if ids is None:
        return []
    out = []
    for p in str(ids).split(","):
        p = p.strip()
        if p.isdigit():
            out.append(int(p))
    return out


# burnin.sh repeats a load that ends before the window is spent and prints this line after each
# run (issue 37.6); the output then holds one JSON document per run.
RUN_LINE = re.compile(r"^NODEGATE-BURNIN-RUN (\d{1,9}) rc=(-?\d{1,4}) seconds=(\d{1,12})[ \t]*$", re.M)
# a run's worst word wins when runs disagree: a test that failed in one run failed
_RANK = {"fail": 5, "warn": 4, "pass": 3, "skip": 2, "not run": 1}


def split_runs(text: str) -> list[str]:
    """The load output cut after each ``NODEGATE-BURNIN-RUN`` line: one chunk per run, the last
    (a run stopped at the deadline, or output without run lines) included when not blank."""
    out, pos = [], 0
    for m in RUN_LINE.finditer(text):
        out.append(text[pos:m.start()])
        pos = m.end()
    if text[pos:].strip():
        out.append(text[pos:])
    return out


def parse_dcgm(text: str | bytes) -> list[DcgmResult]:
    """Every run's results, merged per (GPU, category, test): the worst status wins (fail, warn,
    pass, skip, not run), and its messages say which run. A run whose JSON is incomplete (cut by
    the output cap, or stopped at the window's end) is left out when another run parsed; when none
    did, ParseError with the first run's reason."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_CHARS:
        raise ParseError("dcgmi output exceeds the cap")
    chunks = split_runs(text)
    if len(chunks) <= 1:
        return _parse_one(text)
    runs, first_error = [], None
    for n, chunk in enumerate(chunks, 1):
        try:
            runs.append((n, _parse_one(chunk)))
        except ParseError as e:
            first_error = first_error or ParseError(f"run {n} of {len(chunks)}: {e}")
    if not runs:
        raise first_error
    best: dict[tuple, DcgmResult] = {}
    for n, results in runs:
        for r in results:
            key = (r.gpu, r.category, r.test)
            old = best.get(key)
            if old is None or _RANK.get(r.status, 0) > _RANK.get(old.status, 0):
                msgs = [f"run {n} of {len(chunks)}: {m}" for m in r.messages] if len(runs) > 1 else r.messages
                best[key] = DcgmResult(r.gpu, r.category, r.test, r.status, msgs)
    return list(best.values())


def _parse_one(text: str) -> list[DcgmResult]:
    obj = _json_object(text)
    body = obj.get("DCGM Diagnostic") or obj.get("DCGM GPU Diagnostic")
    if not isinstance(body, dict):
        raise ParseError("dcgmi JSON has neither 'DCGM Diagnostic' nor 'DCGM GPU Diagnostic'")
    out: list[DcgmResult] = []
    for cat in body.get("test_categories") or []:
        if not isinstance(cat, dict):
            continue
        cname = str(cat.get("category", ""))[:80]
        for test in cat.get("tests") or []:
            if not isinstance(test, dict):
                continue
            tname = str(test.get("name", "test"))[:80]
            for res in test.get("results") or []:
                if not isinstance(res, dict):
                    continue
                status = str(res.get("status", "")).strip().lower()
                for g in _gpus(res):
                    out.append(DcgmResult(g, cname, tname, status, _messages(res)))
    return out
