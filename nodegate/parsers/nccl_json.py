"""Parser for the JSON file nccl-tests writes with ``-J <file>.json`` (nccl-tests 2.17.6+).

Usage (evidence: the file, printed after the run by the job's wrapper; the text table is parsed
by ``perf_nccl`` either way)::

    all_reduce_perf -b 1G -e 8G -f 2 -g 1 -J /tmp/<job>.json

Shape (NVIDIA/nccl-tests@a0b82b22 src/util.cu, ``JSON_FILE_VERSION 3``; the JSON writer was
added 2025-10-17, commit ad956f1)::

    {"version": 3, "start_time": "...", "args": [...], "env": [...], "nccl_version": 22703,
     "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": ..., "maximum_bytes": ..., "validation": 1, ...},
     "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "h", "device": 0, "device_hex": "0x0f",
                  "device_info": "NVIDIA H100 80GB HBM3"}, ...],
     "results": [{"size": 1073741824, "count": 268435456, "type": "float", "redop": "sum", "root": "-1",
                  "out_of_place": {"time": 6426.3, "alg_bw": 167.09, "bus_bw": 313.29, "nwrong": 0},
                  "in_place": {...}, "actual_iterations": 20, "experiment_name": "..."}, ...],
     "out_of_bounds": {"count": 0, "okay": true},
     "average_bus_bandwidth": {"bandwidth": 52.97, "okay": "unchecked"},
     "end_time": "..."}

``nwrong`` is null when validation is off (unverified, not 0); a double may be the string
``"nan"``. The result has the attribute names of the text parser's ``NcclRun``
(nodegate/parsers/perf_nccl.py: rows with ``size_b``, ``best_busbw``, ``oop_wrong``/``ip_wrong``;
``nranks``, ``oob_*``, ``validation``, ``wrong_total()``), so both forms are judged by one code
path (nodegate/crossnode/payloads.py) without depending on the text parser's own types.

Schema::

    parse_nccl_json(text) -> NcclJsonRun(rows=[NcclJsonRow(size_b, count, dtype, redop, oop_busbw, oop_algbw,
                                         oop_wrong, ip_busbw, ip_algbw, ip_wrong)], avg_busbw, oob_values,
                                         oob_ok, version ("json-3"), nranks, hosts, device_names, validation,
                                         ngpus)

ParseError when the text is not one JSON object of this shape.
"""

from __future__ import annotations

import json
import math

from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 16 * 1024 * 1024
MAX_ROWS = 4096
MAX_DEVICES = 65536


@dataclass
class NcclJsonRow:
    size_b: int
    count: int
    dtype: str
    redop: str
    oop_busbw: float
    oop_algbw: float
    oop_wrong: int | None
    ip_busbw: float
    ip_algbw: float
    ip_wrong: int | None

    @property
    def best_busbw(self) -> float:
        return max(self.oop_busbw, self.ip_busbw)


@dataclass
class NcclJsonRun:
    rows: list[NcclJsonRow] = field(default_factory=list)
    wrong_column: str = "#wrong"
    avg_busbw: float | None = None
    oob_values: int | None = None
    oob_ok: bool | None = None
    version: str | None = None
    nranks: int | None = None
    hosts: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)
    validation: int | None = None
    ngpus: int | None = None

    def wrong_total(self) -> int | None:
        """Sum of nwrong over every row; None when no row carries a count (validation off)."""
        vals = [w for r in self.rows for w in (r.oop_wrong, r.ip_wrong) if w is not None]
        return sum(vals) if vals else None


def _num(v, what: str, *, allow_none: bool = False):
    if v is None and allow_none:
        return None
    if v == "nan":
        return math.nan
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ParseError(f"nccl-tests JSON: {what} is not a number: {str(v)[:40]!r}")
    return v


def _int(v, what: str) -> int:
    v = _num(v, what)
    if not math.isfinite(v) or abs(v) > 2 ** 63:
        raise ParseError(f"nccl-tests JSON: {what} is not a count: {v!r}")
    return int(v)


def parse_nccl_json(text: str | bytes) -> NcclJsonRun:
    text = V.check_text(text, cap=MAX_CHARS, what="nccl-tests JSON")
    start = text.find("{")
    if start < 0:
        raise ParseError("nccl-tests JSON: no JSON object")
    try:
        doc = json.loads(text[start:text.rfind("}") + 1])
    except (ValueError, RecursionError) as e:
        raise ParseError(f"nccl-tests JSON: not JSON ({type(e).__name__})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results", []), list):
        raise ParseError("nccl-tests JSON: not an nccl-tests result object")
    run = NcclJsonRun(version=f"json-{doc.get('version', '?')}")
    cfg = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    if "validation" in cfg:
        run.validation = _int(cfg["validation"], "config.validation")
    if "ngpus" in cfg:
        run.ngpus = _int(cfg["ngpus"], "config.ngpus")
    devs = doc.get("devices") if isinstance(doc.get("devices"), list) else []
    if len(devs) > MAX_DEVICES:
        raise ParseError("nccl-tests JSON: too many devices")
    hosts: list[str] = []
    for d in devs:
        if not isinstance(d, dict):
            raise ParseError("nccl-tests JSON: a device entry is not an object")
        run.nranks = max(run.nranks or 0, _int(d.get("rank"), "devices[].rank") + 1)
        h = str(d.get("hostname", ""))
        if h and h not in hosts:
            hosts.append(h)
        if len(run.device_names) < 1024:
            run.device_names.append(str(d.get("device_info", "")))
    run.hosts = hosts
    results = doc.get("results", [])   # absent: no result row (a JSON object of no test; was a KeyError)
    if len(results) > MAX_ROWS:
        raise ParseError("nccl-tests JSON: too many results")
    for r in results:
        if not isinstance(r, dict):
            raise ParseError("nccl-tests JSON: a result is not an object")
        oop = r.get("out_of_place") if isinstance(r.get("out_of_place"), dict) else None
        ip = r.get("in_place") if isinstance(r.get("in_place"), dict) else None
        if oop is None and ip is None:
            raise ParseError("nccl-tests JSON: a result has neither out_of_place nor in_place")
        o, i = oop or ip, ip or oop

        def wrong(x):
            v = _num(x.get("nwrong"), "nwrong", allow_none=True)
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else _int(v, "nwrong")

        run.rows.append(NcclJsonRow(_int(r.get("size"), "size"), _int(r.get("count"), "count"),
                                str(r.get("type", "")), str(r.get("redop", "")),
                                float(_num(o.get("bus_bw"), "bus_bw")), float(_num(o.get("alg_bw"), "alg_bw")),
                                wrong(o), float(_num(i.get("bus_bw"), "bus_bw")),
                                float(_num(i.get("alg_bw"), "alg_bw")), wrong(i)))
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and "count" in oob:
        run.oob_values = _int(oob["count"], "out_of_bounds.count")
        run.oob_ok = oob.get("okay") if isinstance(oob.get("okay"), bool) else None
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict) and "bandwidth" in avg:
        run.avg_busbw = float(_num(avg["bandwidth"], "average_bus_bandwidth"))
    return run
