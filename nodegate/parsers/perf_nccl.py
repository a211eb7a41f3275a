"""Parser for nccl-tests output (``all_reduce_perf`` and the other ``*_perf`` binaries), text and
``-J`` JSON.

Usage (evidence key ``perf.nccl``)::

    all_reduce_perf -b 8 -e 16G -f 2 -g 8

Survives every layout in ../shared/perf/ 301-307 and tests/perf/fixtures: pre-2.13 columns (``time
algbw busbw error``, with or without ``redop``/``root``; a blank ``redop`` cell), 2.13+ (``redop
root ... #wrong``), 2.17.4+ (``# nccl-tests version``, ``# Collective test starting: <binary>``),
2.19 per-iteration columns (``-I``: ``i_min i_max i_p99 i_cv%``) and timestamps (``-S``);
``0: `` (srun --label) and ``[1,0]<stdout>:`` (mpirun --tag-output) line prefixes; NCCL INFO/WARN
lines and MPI banners inside the table; ``...`` elisions; trailing spaces; ``> `` quote markers;
result rows pasted without their column header (their layout is taken from the row's shape and
said so). Columns are found from the header line, never by fixed index. Linear time.

A run is a **table**: the rows after one column header (or, header-less, the rows of one output
stream). Every figure goes through the bounded reader (``_figures.figure``): ``nan``/``inf``/26
digits in a bandwidth cell make that half of the row invalid (``NcclRow.invalid``), never a number.

Schema::

    parse_nccl(text) -> NcclRun(tables=[NcclTable(stream, cols, layout, wrong_column ("#wrong" |
        "error" | None), collective, rows=[NcclRow(size_b, count, dtype, redop, root, oop_algbw,
        oop_busbw, oop_wrong, ip_algbw, ip_busbw, ip_wrong, invalid)], avg_busbw, oob_values,
        oob_ok)], version, nranks (rank lines), rank_hosts, device_names, nranks_info (NCCL INFO
        "nranks N"), validation, ngpus, failures (NCCL WARN / "Test ... failure" lines), notes, fmt)

``*_wrong``: float (a count from 2.13 on; pre-2.13 the ``error`` column is nccl-tests' max
deviation, compared with its tolerance by nodegate.perf.extract), None for ``N/A`` (validation
off: unverified, not 0). ``NcclRun.rows`` / ``plateau()`` / ``wrong_total()`` / ``avg_busbw`` /
``oob_*`` / ``hosts`` / ``wrong_column`` read the first table (the first parser's API).

Example::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
     17179869184    4294967296     float     sum      -1    62239  276.03  483.05      0    62200 ...
    -> NcclRun(tables=[NcclTable(rows=[NcclRow(17179869184, 4294967296, "float", "sum", -1, 276.03,
                                               483.05, 0, ...)], ...)])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from ._figures import InvalidFigure, figure
from ._perftext import load_json, prepare

MAX_CHARS = 16 * 1024 * 1024
MAX_ROWS = 4096
MAX_TABLES = 64
_PREFIX = re.compile(r"^(?:(\d{1,6}):\s?|\[(\d{1,6},\d{1,6})\]<std(?:out|err)>:)")
_NUM = re.compile(r"^-?[0-9]{1,20}(?:\.[0-9]{0,20})?(?:e[+-]?[0-9]{1,3})?$", re.I)
_INT = re.compile(r"^[0-9]{1,20}$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")
# "#  Rank  0 Group  0 Pid  1234 on host device  0 [0x1b] NVIDIA H100": the gap between the rank and
# "on" is bounded (an unbounded ".*?" rescanned the rest of the line from every "Rank": 140 kB of
# "Rank 1 " took 40 s, tests/hostile/test_perf_parse_time.py), and only lines a rank line can be
# (host <= 255, device name <= 200 characters) are searched (``_rank``)
_RANK = re.compile(r"Rank\s+(\d{1,6})\b.{0,80}?\bon\s+(\S{1,255})\s+device\s+(\d{1,6})\s+\[([^\]]{0,40})\]\s+(.{1,200})$")
_RANK_LINE_MAX = 1024
_NGPUS = re.compile(r"\bnGpus (\d{1,6})\b")
_VALIDATION = re.compile(r"\bvalidation: (\d{1,6})")
_FAIL = re.compile(r"NCCL WARN|Test (?:NCCL|CUDA)? ?failure|\bfailure common\.cu|Segmentation fault|"
                   r"Invalid number of GPUs|Aborted|terminate called|exited on signal|non-zero (?:exit|status)", re.I)
_NRANKS = re.compile(r"\bnranks (\d{1,6})\b")
#: 2.19 per-iteration (-I) columns and the timestamp (-S) column: read past, not judged
_EXTRA = ("i_min", "i_max", "i_p99", "i_cv%", "timestamp")


@dataclass
class NcclRow:
    size_b: int
    count: int
    dtype: str
    redop: str
    root: int | None
    oop_algbw: float | None
    oop_busbw: float | None
    oop_wrong: float | None
    ip_algbw: float | None
    ip_busbw: float | None
    ip_wrong: float | None
    invalid: list[str] = field(default_factory=list)

    @property
    def best_busbw(self) -> float:
        return max(v for v in (self.oop_busbw, self.ip_busbw, 0.0) if v is not None)


@dataclass
class NcclTable:
    stream: str = ""
    cols: list[str] | None = None
    layout: str = ""             # "header" | "shape" (header-less rows) | "json"
    wrong_column: str | None = None
    collective: str | None = None
    rows: list[NcclRow] = field(default_factory=list)
    avg_busbw: float | None = None
    oob_values: int | None = None
    oob_ok: bool | None = None


@dataclass
class NcclRun:
    tables: list[NcclTable] = field(default_factory=list)
    version: str | None = None
    nranks: int | None = None
    rank_hosts: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)
    # per rank line, the GPU it ran on: "host device 0 [0000:02:00]" (two ranks on one GPU measure no link)
    rank_gpus: list[str] = field(default_factory=list)
    nranks_info: list[int] = field(default_factory=list)
    validation: int | None = None
    ngpus: int | None = None
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fmt: str = "text"
    program: str | None = None

    # -------- the first parser's API: the first table
    @property
    def _t(self) -> NcclTable:
        return self.tables[0] if self.tables else NcclTable()

    @property
    def rows(self) -> list[NcclRow]:
        return self._t.rows

    @property
    def wrong_column(self) -> str | None:
        return self._t.wrong_column

    @property
    def avg_busbw(self) -> float | None:
        return self._t.avg_busbw

    @property
    def oob_values(self) -> int | None:
        return self._t.oob_values

    @property
    def oob_ok(self) -> bool | None:
        return self._t.oob_ok

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(self.rank_hosts))

    def plateau(self) -> tuple[int, float] | None:
        big = [r for r in self.rows if r.size_b > 0]
        if not big:
            return None
        top = max(r.size_b for r in big)
        return top, max(r.best_busbw for r in big if r.size_b == top)

    def wrong_total(self) -> int | None:
        """Rows carrying a #wrong count above 0 (never a signed sum); None when no row has one."""
        vals = [w for r in self.rows for w in (r.oop_wrong, r.ip_wrong) if w is not None]
        return sum(1 for w in vals if w > 0) if vals else None


def _strip(line: str) -> tuple[str, str]:
    m = _PREFIX.match(line)
    if m is None:
        return "", line.rstrip()
    return (m.group(1) or m.group(2)), line[m.end():].rstrip()


def _cell(tok: str, what: str, row: NcclRow | None, signed: bool = False) -> float | None:
    if tok.upper() == "N/A":
        return None
    try:
        return float(figure(tok, what=what, signed=signed))
    except InvalidFigure as e:
        if row is not None:
            row.invalid.append(f"{what} {e.token!r}: {e.why}")
        return None


def _rank_gpu(m) -> str:
    """'host device 0 [0000:02:00]': the GPU of one rank line (``_RANK`` match)."""
    return f"{m.group(2)} device {m.group(3)} [{m.group(4).strip()}]"


def _rank(line: str):
    """``_RANK`` searched in a line that can be a rank line (see ``_RANK``), else None."""
    return (_RANK.search(line) if len(line) <= _RANK_LINE_MAX and "Rank" in line and "device" in line
            else None)


def _ngpus_validation(body: str) -> tuple[int, int] | None:
    """(nGpus, validation) of the ``# nThread 1 nGpus 8 ... validation: 1`` line: the first
    ``nGpus N`` and the first ``validation: N`` after it, found by two linear searches (the one
    pattern ``nGpus (N).*?validation: (N)`` rescanned the line from every "nGpus": quadratic)."""
    m = _NGPUS.search(body)
    if m is None:
        return None
    v = _VALIDATION.search(body, m.end())
    return None if v is None else (int(m.group(1)), int(v.group(1)))


def _header_cols(body: str) -> list[str] | None:
    toks = body.split()
    if toks[:1] == ["size"] and "busbw" in toks:
        return toks
    return None


#: header-less rows: column layout by row shape (nccl-tests src/common.cu writeBenchmarkLine*)
_SHAPES = {
    13: ["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"],
    12: ["size", "count", "type", "redop", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"],
    11: ["size", "count", "type", "time", "algbw", "busbw", "error", "time", "algbw", "busbw", "error"],
}


def _row(cols: list[str], toks: list[str], wcol: str | None) -> NcclRow:
    """One result row read by the header's columns. A blank ``redop`` cell (pre-2.13 all-to-all:
    the column is printed empty) leaves one token fewer than the header: the text columns are then
    matched by kind, not position. ParseError for a row no layout explains."""
    if "timestamp" in cols and len(toks) == len(cols) + 1:
        toks = toks[:-2] + [toks[-2] + " " + toks[-1]]          # "%Y-%m-%d %H:%M:%S" is two tokens
    if len(toks) == len(cols) - 1 and "redop" in cols and not _WORD.match(toks[cols.index("redop")] or ""):
        i = cols.index("redop")
        toks = toks[:i] + [""] + toks[i:]
    if len(toks) != len(cols):
        raise ParseError(f"nccl-tests: row has {len(toks)} columns, header has {len(cols)}: {' '.join(toks)[:120]!r}")
    idx = [i for i, c in enumerate(cols) if c == "busbw"]
    if not idx:
        raise ParseError("nccl-tests: no busbw column")
    try:
        size = int(figure(toks[0], what="size", integer=True))
        count = int(figure(toks[1], what="count", integer=True))
    except InvalidFigure as e:
        raise ParseError(f"nccl-tests: malformed row ({e}): {' '.join(toks)[:120]!r}") from None
    root = None
    if "root" in cols:
        try:
            root = int(figure(toks[cols.index("root")], what="root", signed=True, integer=True))
        except InvalidFigure as e:
            raise ParseError(f"nccl-tests: malformed row ({e}): {' '.join(toks)[:120]!r}") from None
    row = NcclRow(size, count, toks[2] if "type" in cols else "", toks[cols.index("redop")] if "redop" in cols else "",
                  root, None, None, None, None, None, None)
    oop, ip = idx[0], idx[-1]
    row.oop_busbw = _cell(toks[oop], "out-of-place busbw", row)
    row.oop_algbw = _cell(toks[oop - 1], "out-of-place algbw", row)
    if len(idx) > 1:
        row.ip_busbw = _cell(toks[ip], "in-place busbw", row)
        row.ip_algbw = _cell(toks[ip - 1], "in-place algbw", row)
    if wcol:
        row.oop_wrong = _wrong(toks[oop + 1], "out-of-place " + wcol, row)
        if len(idx) > 1:
            row.ip_wrong = _wrong(toks[ip + 1], "in-place " + wcol, row)
    return row


def _wrong(tok: str, what: str, row: NcclRow) -> float | None:
    if tok.upper() == "N/A":
        return None
    # a count (2.13+: "%6g" of the count, so 1e+06 is a million) or a deviation (pre-2.13): never negative
    return _cell(tok, what, row)


def _is_row(toks: list[str]) -> bool:
    return len(toks) >= 4 and bool(_INT.match(toks[0])) and bool(_INT.match(toks[1]))


def parse_nccl(text: str | bytes) -> NcclRun:
    """Every table and summary of one output. Empty -> NcclRun() with no table. ParseError when a
    row fits no layout, the JSON is malformed, or the output exceeds its caps."""
    p = prepare(text, cap=MAX_CHARS, what="nccl-tests")
    s = p.text.lstrip()
    if s.startswith("{"):
        run = _parse_json(s)
        run.notes[:0] = p.notes
        return run
    run = NcclRun(notes=list(p.notes))
    current: dict[str, NcclTable] = {}      # stream -> its open table
    pending_collective: dict[str, str] = {}
    nrows = 0
    for raw in p.text.replace("\r", "\n").split("\n"):
        stream, line = _strip(raw)
        st = line.strip()
        if not st:
            continue
        if st.startswith("#"):
            body = st.lstrip("#").strip()
            if cols := _header_cols(body):
                t = NcclTable(stream, cols, "header", "#wrong" if "#wrong" in cols else ("error" if "error" in cols else None))
                if stream in pending_collective:
                    t.collective = pending_collective.pop(stream)
                _add_table(run, t)
                current[stream] = t
            elif m := re.match(r"nccl-tests version (\S{1,40})", body):
                run.version = m.group(1)
            elif m := re.match(r"Collective test starting:\s*(\S{1,80})", body):
                pending_collective[stream] = m.group(1)
                if run.program is None:
                    run.program = m.group(1)
            elif (nv := _ngpus_validation(body)) is not None:
                run.ngpus, run.validation = nv
            elif m := _rank(body):
                run.nranks = max(run.nranks or 0, int(m.group(1)) + 1)
                if len(run.rank_hosts) < 4096:
                    run.rank_hosts.append(m.group(2))
                    run.device_names.append(m.group(5).strip())
                    run.rank_gpus.append(_rank_gpu(m))
            elif m := re.match(r"Out of bounds values\s*:\s*(\S{1,40})\s*(OK|FAILED)?", body):
                t = current.get(stream)
                if t is not None:
                    try:
                        t.oob_values = int(figure(m.group(1), what="out of bounds values", integer=True))
                    except InvalidFigure as e:
                        run.failures.append(f"out of bounds values {e.token!r}: {e.why}")
                    t.oob_ok = None if m.group(2) is None else m.group(2) == "OK"
            elif m := re.match(r"Avg bus bandwidth\s*:\s*(\S{1,40})", body):
                t = current.get(stream)
                if t is not None:
                    t.avg_busbw = _cell(m.group(1), "avg bus bandwidth", None)
            elif "error:" in body[:8] and body[8:].strip():
                run.failures.append(body[:300])
            continue
        if _FAIL.search(st) and len(run.failures) < 50:
            run.failures.append(st[:300])
        if m := _NRANKS.search(st):
            if "NCCL INFO" in st and len(run.nranks_info) < 4096:
                run.nranks_info.append(int(m.group(1)))
        if m := _rank(st):     # "Using devices" lines without the '#' (some MPI builds)
            if st.lstrip().startswith("Rank"):
                run.nranks = max(run.nranks or 0, int(m.group(1)) + 1)
                if len(run.rank_hosts) < 4096:
                    run.rank_hosts.append(m.group(2))
                    run.device_names.append(m.group(5).strip())
                    run.rank_gpus.append(_rank_gpu(m))
                continue
        toks = st.split()
        if not _is_row(toks):
            continue  # NCCL INFO / MPI banner / '...' elision / anything not a row
        t = current.get(stream)
        if t is None or t.layout == "shape" and len(toks) not in (len(t.cols or []), len(t.cols or []) - 1):
            cols = _SHAPES.get(len(toks))
            if cols is None:
                continue   # not a result row of any layout (a bare number pair from a banner)
            t = NcclTable(stream, list(cols), "shape", "#wrong" if "#wrong" in cols else "error")
            if stream in pending_collective:
                t.collective = pending_collective.pop(stream)
            _add_table(run, t)
            current[stream] = t
        t.rows.append(_row(t.cols or [], toks, t.wrong_column))
        nrows += 1
        if nrows > MAX_ROWS:
            raise ParseError("nccl-tests: too many rows")
    if any(t.layout == "shape" for t in run.tables):
        run.notes.append("rows without their column header (output trimmed): columns read from the row shape")
    if run.nranks is None and run.rank_hosts:
        run.nranks = len(run.rank_hosts)
    return run


def _add_table(run: NcclRun, t: NcclTable) -> None:
    run.tables.append(t)
    if len(run.tables) > MAX_TABLES:
        raise ParseError("nccl-tests: too many result tables")


def _parse_json(s: str) -> NcclRun:
    """nccl-tests ``-J`` output (src/util.cu: version, args, config{..., devices[]}, results[],
    out_of_bounds, average_bus_bandwidth)."""
    obj, rejoined = load_json(s, "nccl-tests -J")
    if not isinstance(obj, dict) or not isinstance(obj.get("results"), list):
        raise ParseError("nccl-tests -J: no 'results' list")
    run = NcclRun(fmt="json")
    if rejoined:
        run.notes.append("JSON rejoined from terminal-wrapped lines")
    args = obj.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str):
        run.program = args[0].rsplit("/", 1)[-1][:80]
    cfg = obj.get("config") if isinstance(obj.get("config"), dict) else {}
    if isinstance(cfg.get("validation"), int):
        run.validation = cfg["validation"]
    if isinstance(cfg.get("ngpus"), int):
        run.ngpus = cfg["ngpus"]
    devs = cfg.get("devices") if isinstance(cfg.get("devices"), list) else []
    for d in devs[:4096]:
        if isinstance(d, dict):
            run.rank_hosts.append(str(d.get("hostname", ""))[:255])
            run.device_names.append(str(d.get("device_info", ""))[:200])
            if "device" in d:
                bus = str(d.get("device_hex", d.get("busid", "")))[:40]
                run.rank_gpus.append(f"{str(d.get('hostname', ''))[:255]} device {str(d['device'])[:12]} [{bus}]")
    run.nranks = len(run.rank_hosts) or None
    t = NcclTable("", None, "json", "#wrong", run.program)
    for rec in obj["results"][:MAX_ROWS]:
        if not isinstance(rec, dict):
            raise ParseError("nccl-tests -J: a result is not an object")
        row = NcclRow(_jint(rec.get("size"), "size"), _jint(rec.get("count"), "count"), str(rec.get("type", ""))[:16],
                      str(rec.get("redop", ""))[:16], None, None, None, None, None, None, None)
        try:
            row.root = int(str(rec.get("root", "")).strip() or "-1")
        except ValueError:
            row.root = None
        for half, pre in (("out_of_place", "oop"), ("in_place", "ip")):
            h = rec.get(half)
            if not isinstance(h, dict):
                continue
            for key, attr in (("alg_bw", "algbw"), ("bus_bw", "busbw"), ("nwrong", "wrong")):
                v = h.get(key)
                name = f"{'out-of-place' if pre == 'oop' else 'in-place'} {attr}"
                if v is None:
                    val = None
                elif isinstance(v, str):      # nccl-tests writes NaN as the string "nan"
                    val = _cell(v, name, row)
                elif isinstance(v, bool) or not isinstance(v, (int, float)):
                    row.invalid.append(f"{name} {str(v)[:20]!r}: not a number")
                    val = None
                else:
                    val = _cell(repr(float(v)) if isinstance(v, float) else str(v), name, row)
                setattr(row, f"{pre}_{attr}", val)
        t.rows.append(row)
    oob = obj.get("out_of_bounds")
    if isinstance(oob, dict) and isinstance(oob.get("count"), int) and not isinstance(oob.get("count"), bool):
        t.oob_values, t.oob_ok = oob["count"], oob.get("okay") is True
    avg = obj.get("average_bus_bandwidth")
    if isinstance(avg, dict) and isinstance(avg.get("bandwidth"), (int, float)):
        t.avg_busbw = _cell(str(avg["bandwidth"]), "avg bus bandwidth", None)
    errs = obj.get("errors")
    if isinstance(errs, list):
        run.failures.extend(str(e)[:300] for e in errs[:20] if e)
    run.tables.append(t)
    return run


def _jint(v, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ParseError(f"nccl-tests -J: {what} must be an integer, got {str(v)[:20]!r}")
    try:
        return int(figure(str(v), what=what, integer=True))
    except InvalidFigure as e:
        raise ParseError(f"nccl-tests -J: {e}") from None
