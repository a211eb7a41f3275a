"""Parser for nccl-tests output (``all_reduce_perf`` and the other ``*_perf`` binaries).

Usage (evidence key ``perf.nccl``)::

    all_reduce_perf -b 8 -e 16G -f 2 -g 8

Survives every layout in ../shared/perf/ 301-307: pre-2.13 columns (``time algbw busbw error``,
with or without ``redop``), 2.13+ (``redop root ... #wrong``), 2.17.4+ (``# nccl-tests version``
header and ``OK``/``FAILED`` after the out-of-bounds count); ``0: `` (srun --label) and
``[1,0]<stdout>:`` (mpirun --tag-output) line prefixes; NCCL INFO lines and MPI banners inside
the table; ``...`` elisions; trailing spaces. Columns are found from the header line, never by
fixed index. Rows are parsed per line (linear time).

Schema::

    parse_nccl(text) -> NcclRun(rows=[NcclRow(size_b, count, dtype, redop, oop_busbw, oop_algbw,
                                              oop_wrong, ip_busbw, ip_algbw, ip_wrong)],
                                wrong_column: "#wrong" | "error" | None, avg_busbw, oob_values,
                                oob_ok, version, nranks, hosts, device_names, validation)

    NcclRun.plateau() -> (size_b, busbw GB/s): the best bus bandwidth (out-of-place or in-place)
    at the largest size run. The "Avg bus bandwidth" line is the mean over every size of the sweep
    (nccl-tests src/common.cu), never the plateau.

``*_wrong`` is an int, or None when the column says ``N/A`` (validation off: unverified, not 0).

Example::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
     17179869184    4294967296     float     sum      -1    62239  276.03  483.05      0    62200 ...
    -> NcclRun(rows=[NcclRow(17179869184, 4294967296, "float", "sum", 483.05, 276.03, 0, ...)], ...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 16 * 1024 * 1024
MAX_ROWS = 4096
_PREFIX = re.compile(r"^(?:\d+:\s?|\[\d+,\d+\]<std(?:out|err)>:)")
_NUM = re.compile(r"^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$", re.I)


@dataclass
class NcclRow:
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
class NcclRun:
    rows: list[NcclRow] = field(default_factory=list)
    wrong_column: str | None = None
    avg_busbw: float | None = None
    oob_values: int | None = None
    oob_ok: bool | None = None
    version: str | None = None
    nranks: int | None = None
    hosts: list[str] = field(default_factory=list)
    device_names: list[str] = field(default_factory=list)
    validation: int | None = None
    ngpus: int | None = None

    def plateau(self) -> tuple[int, float] | None:
        big = [r for r in self.rows if r.size_b > 0]
        if not big:
            return None
        top = max(r.size_b for r in big)
        return top, max(r.best_busbw for r in big if r.size_b == top)

    def wrong_total(self) -> int | None:
        """Sum of #wrong over every row; None when no row carries a count (N/A or no column)."""
        vals = [w for r in self.rows for w in (r.oop_wrong, r.ip_wrong) if w is not None]
        return sum(vals) if vals else None


def _strip(line: str) -> str:
    return _PREFIX.sub("", line, count=1).rstrip()


def _wrong(tok: str) -> int | None:
    if tok.upper() == "N/A":
        return None
    try:
        return int(float(tok))
    except ValueError:
        raise ParseError(f"nccl-tests: bad #wrong/error value {tok[:40]!r}") from None


def parse_nccl(text: str | bytes) -> NcclRun:
    """The table and summary of one nccl-tests run. Empty -> NcclRun() with no rows. ParseError
    when a row does not have the header's column count or a number is malformed."""
    text = V.check_text(text, cap=MAX_CHARS, what="nccl-tests")
    run = NcclRun()
    cols: list[str] | None = None
    hosts: list[str] = []
    for raw in text.replace("\r", "\n").split("\n"):
        line = _strip(raw)
        s = line.strip()
        if not s:
            continue
        if s.startswith("#"):
            body = s.lstrip("#").strip()
            toks = body.split()
            if toks[:1] == ["size"] and "busbw" in toks:
                cols = toks
                run.wrong_column = "#wrong" if "#wrong" in toks else ("error" if "error" in toks else None)
            elif m := re.match(r"nccl-tests version (\S+)", body):
                run.version = m.group(1)
            elif m := re.search(r"\bnGpus (\d+)\b.*\bvalidation: (\d+)", body):
                run.ngpus, run.validation = int(m.group(1)), int(m.group(2))
            elif m := re.match(r"Rank\s+(\d+)\b.*?\bon\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.+)$", body):
                run.nranks = max(run.nranks or 0, int(m.group(1)) + 1)
                if m.group(2) not in hosts:
                    hosts.append(m.group(2))
                if len(run.device_names) < 1024:
                    run.device_names.append(m.group(3).strip())
            elif m := re.match(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?", body):
                run.oob_values = int(m.group(1))
                run.oob_ok = None if m.group(2) is None else m.group(2) == "OK"
            elif m := re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body):
                try:
                    run.avg_busbw = float(m.group(1))
                except ValueError:
                    pass
            continue
        toks = s.split()
        if cols is None or not _NUM.match(toks[0]) or len(toks) < 4 or not _NUM.match(toks[1]):
            continue  # NCCL INFO / MPI banner / '...' elision / anything not a row
        if len(toks) != len(cols):
            raise ParseError(f"nccl-tests: row has {len(toks)} columns, header has {len(cols)}: {s[:120]!r}")
        run.rows.append(_row(cols, toks))
        if len(run.rows) > MAX_ROWS:
            raise ParseError("nccl-tests: too many rows")
    run.hosts = hosts
    return run


def _row(cols: list[str], toks: list[str]) -> NcclRow:
    # the header names 'time algbw busbw <wrong>' twice: out-of-place, then in-place
    idx = [i for i, c in enumerate(cols) if c == "busbw"]
    wcol = "#wrong" if "#wrong" in cols else ("error" if "error" in cols else None)
    try:
        def f(i):
            return float(toks[i])

        oop, ip = idx[0], idx[-1]
        oop_w = _wrong(toks[oop + 1]) if wcol else None
        ip_w = _wrong(toks[ip + 1]) if wcol and len(idx) > 1 else None
        return NcclRow(int(toks[0]), int(toks[1]), toks[2] if len(cols) > 2 else "",
                       toks[cols.index("redop")] if "redop" in cols else "",
                       f(oop), f(oop - 1), oop_w, f(ip), f(ip - 1), ip_w)
    except (ValueError, IndexError):
        raise ParseError(f"nccl-tests: malformed row {' '.join(toks)[:120]!r}") from None
