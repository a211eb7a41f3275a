"""Parser for the JSON of nodegate's built-in measurement and of a site ``perf.command``.

Usage (evidence keys ``perf.builtin``, ``perf.command``)::

    <python> -c <nodegate/perf/builtin_bench.py>          # prints the JSON below
    <site command>                                         # must print the same shape

Schema (the last JSON object in the output is read; everything before it is ignored)::

    {"nodegate_perf": 1,
     "measurements": [{"metric": "gemm_bf16", "value": 712.4, "unit": "TFLOPS", "gpu": 0,
                       "peer": null, "hca": null, "engine": "sm", "direction": "uni"}],
     "errors": [{"gpu": 3, "what": "result mismatch after copy"}],      # data corruption
     "invalid": ["torch.cuda.is_available() is False"]}                 # could not measure

    parse_perf_json(text, tool) -> ToolReport(tool, measurements, errors, invalid)

A measurement with ``peer`` is a link (gpu -> peer), with ``hca`` an HCA, with neither ``gpu``
nor ``peer`` the node. A value that is no figure (NaN, infinite, 1e308, negative, a string: the
bounded reader ``_figures.checked``) or 0 is that subject "not measured" (``value`` None, ``why``),
never a number (issue 37 item 1). ParseError on any other shape, or JSON nested deeper than any
tool writes (``_perftext.load_json``).

Example::

    {"nodegate_perf": 1, "measurements": [{"metric": "h2d", "value": 55.1, "unit": "GB/s", "gpu": 0,
     "engine": "ce"}]}
    -> ToolReport("builtin", measurements=[Measurement("builtin", "h2d", 55.1, "GB/s", "gpu", 0, engine="ce")])
"""

from __future__ import annotations

import json
import re

from ..errors import ParseError
from ..perfmodel.model import Integrity, Measurement, ToolReport
from ._figures import InvalidFigure, checked
from ._perftext import load_json, prepare

MAX_CHARS = 8 * 1024 * 1024
MAX_ITEMS = 100_000
_NAME = re.compile(r"^[A-Za-z0-9_.:+-]{1,64}$")


def _last_object(text: str) -> dict:
    """The last JSON object that starts a line and holds ``measurements`` (else the last object at
    all). A document a terminal wrapped (a line break inside a string or a number) is rejoined
    first: its wrapped lines may start with "{" of an inner object (``_perftext.load_json``)."""
    s = text.strip()
    if s.startswith("{") and s.endswith("}"):
        try:
            obj, _ = load_json(s, "perf JSON")
            if isinstance(obj, dict):
                return obj
        except ParseError:
            pass
    first = None
    end = text.rfind("}")
    tries = 0
    while end >= 0 and tries < 64:
        tries += 1
        start = text.rfind("\n{", 0, end)
        start = 0 if start < 0 and text.startswith("{") else (start + 1 if start >= 0 else -1)
        if start < 0:
            break
        try:
            obj, _ = load_json(text[start:end + 1], "perf JSON")
            if isinstance(obj, dict):
                if "measurements" in obj:
                    return obj
                first = first if first is not None else obj
        except ParseError:
            pass
        end = text.rfind("}", 0, start)
    if first is not None:
        return first
    raise ParseError("perf JSON: no JSON object at the start of a line")


def _int(v, what):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 4096:
        raise ParseError(f"perf JSON: {what} must be a GPU index, got {str(v)[:20]!r}")
    return v


def parse_perf_json(text: str | bytes, tool: str = "command") -> ToolReport:
    """Empty -> ToolReport with ``invalid`` saying so."""
    text = prepare(text, cap=MAX_CHARS, what="perf JSON").text
    rep = ToolReport(tool)
    if not text.strip():
        rep.invalid.append(f"{tool} printed nothing")
        return rep
    obj = _last_object(text)
    ms, errs, inv = obj.get("measurements", []), obj.get("errors", []), obj.get("invalid", [])
    if not all(isinstance(x, list) for x in (ms, errs, inv)) or len(ms) + len(errs) > MAX_ITEMS:
        raise ParseError("perf JSON: measurements/errors/invalid must be lists")
    for m in ms:
        if not isinstance(m, dict):
            raise ParseError("perf JSON: a measurement is not an object")
        metric, unit, val = m.get("metric"), m.get("unit"), m.get("value")
        if not (isinstance(metric, str) and _NAME.match(metric) and isinstance(unit, str) and 0 < len(unit) <= 16):
            raise ParseError(f"perf JSON: bad metric/unit in {json.dumps(m)[:120]}")
        why = ""
        try:
            val = checked(val, what=f"{metric} value")
            if val == 0:
                why = f"not measured: {metric} is 0 {unit} (no transfer or computation happened)"
        except InvalidFigure as e:
            val, why = None, f"invalid figure {e.token!r} ({e.why})"
        gpu, peer, hca = _int(m.get("gpu"), "gpu"), _int(m.get("peer"), "peer"), m.get("hca")
        if hca is not None and not (isinstance(hca, str) and _NAME.match(hca)):
            raise ParseError("perf JSON: bad hca name")
        scope = "hca" if hca else "link" if peer is not None else "gpu" if gpu is not None else "node"
        eng = m.get("engine") or ""
        dirn = m.get("direction") or "uni"
        if eng not in ("", "ce", "sm") or dirn not in ("uni", "bidir"):
            raise ParseError("perf JSON: engine must be ce|sm, direction uni|bidir")
        rep.measurements.append(Measurement(tool, metric, None if why else float(val), unit, scope, gpu, peer, hca,
                                            eng, dirn, not bool(m.get("lower_is_better")),
                                            str(m.get("source") or "")[:120], why=why))
    for e in errs:
        if not isinstance(e, dict):
            raise ParseError("perf JSON: an error is not an object")
        rep.integrity.append(Integrity(tool, False, str(e.get("what", "data error"))[:300], _int(e.get("gpu"), "gpu")))
    if tool == "builtin" and "errors" in obj:
        # the built-in measurement checks the data of every copy it times (builtin_bench.py): each
        # GPU it measured without an error passed that check (judged apart from the bandwidth)
        bad = {i.gpu for i in rep.integrity}
        for g in sorted({m.gpu for m in rep.measurements if m.gpu is not None and m.value is not None} - bad):
            rep.integrity.append(Integrity(tool, True, "every timed copy read back unchanged", g))
    rep.invalid.extend(str(x)[:300] for x in inv[:20])
    return rep
