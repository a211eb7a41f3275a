"""Parser for nvbandwidth (NVIDIA/nvbandwidth) output, text (v0.4-v0.10) and ``-j`` JSON (v0.5+).

Usage (evidence key ``perf.nvbandwidth``)::

    nvbandwidth -t host_to_device_memcpy_ce device_to_host_memcpy_ce device_to_device_memcpy_read_ce [-j]

Text layout: a version/driver header (v0.4: NOTE banner first, ``Device N: name``; v0.6+: row
labels with a leading space and the PCI BDF after the name), then per test ``Running <name>.``,
a description line (``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``), a column header, one
row per source, an optional ``SUM <name> <value>`` line; ``Waived:`` lines for tests that do not
apply; the diagonal printed as ``N/A`` (v0.4+) or ``0.00`` (earliest); pattern-check failures as
ASSERT/"pattern" lines where the matrix should be. JSON: ``{"nvbandwidth": {"testcases": [{name,
status, bandwidth_description, bandwidth_matrix: [[str]]}]}}`` with cells as strings.
Sources: ../shared/perf/ 321-324.

Schema::

    parse_nvbandwidth(text) -> NvbRun(version, devices={index: name}, tests=[NvbTest(name, status
                                      ("passed"|"waived"|"error"), description, unit ("GB/s"|"ns"),
                                      matrix=[[float | None]], sum, errors=[str])])

A cell is None for ``N/A``; a diagonal ``0.00`` of a device-to-device matrix is also None (not
measured: ``min()`` over it would read a false 0). A cell that is no figure (``nan``, ``inf``, 26
digits, a negative: the bounded reader ``_figures.figure``) is None too and ``NvbTest.bad`` says
why, by (row, column): that subject is "invalid figure", never a number (issue 37 item 1).
ParseError for text that is neither layout. Ticket ``> `` quote markers are removed
(``_perftext.prepare``; also on a lone quoted ``> Running ...`` line).

Example::

    Running device_to_device_memcpy_read_ce.
    memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)
              0         1
    0       N/A    370.90
    1    370.90       N/A
    -> NvbTest("device_to_device_memcpy_read_ce", "passed", ..., matrix=[[None, 370.9], [370.9, None]])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from ._figures import InvalidFigure, figure
from ._perftext import load_json, prepare

MAX_CHARS = 16 * 1024 * 1024
MAX_DIM = 256
_RUNNING = re.compile(r"^(?:>\s*)?Running (\S{1,120}?)\.?\s*$")
_DEVICE = re.compile(r"^Device (\d{1,4}): (.+)$")       # the name and its BDF apart: ``_device``
_BDF = re.compile(r"[0-9A-Fa-f:.]+")
_SUM = re.compile(r"^SUM (\S+) (\S+)\s*$")
_ROW = re.compile(r"^\s*(\d{1,4})((?:\s+\S{1,64}){1,256})\s*$")
_HDR = re.compile(r"^\s*\d{1,4}(?:\s+\d{1,4}){0,255}\s*$")
_BAD = re.compile(r"ASSERT|pattern|mismatch|verification failed|data validation", re.I)


@dataclass
class NvbTest:
    name: str
    status: str = "passed"
    description: str = ""
    unit: str = "GB/s"
    matrix: list[list[float | None]] = field(default_factory=list)
    sum: float | None = None
    errors: list[str] = field(default_factory=list)
    bad: dict = field(default_factory=dict)       # (row, column) -> why the cell is no figure


@dataclass
class NvbRun:
    version: str | None = None
    devices: dict[int, str] = field(default_factory=dict)
    tests: list[NvbTest] = field(default_factory=list)
    fmt: str = "text"
    notes: list[str] = field(default_factory=list)


def _device(st: str) -> tuple[int, str] | None:
    """``Device 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)`` -> (0, name without its BDF). Split by
    hand: the one pattern ``(.+?)\\s*(?:\\(BDF\\))?\\s*$`` took cubic time on a run of spaces
    inside the name (2,000 spaces: 13 s; tests/hostile/test_perf_parse_time.py)."""
    m = _DEVICE.match(st)
    if m is None:
        return None
    name = m.group(2).rstrip()
    if name.endswith(")") and (i := name.rfind("(")) > 0 and _BDF.fullmatch(name, i + 1, len(name) - 1):
        name = name[:i].rstrip() or name
    return int(m.group(1)), name


def _unit(desc: str) -> str:
    m = re.search(r"\(([^()]*)\)\s*$", desc.strip())
    return m.group(1) if m else "GB/s"


def _is_d2d(name: str) -> bool:
    return name.startswith("device_to_device") or "latency" in name and "device_to_device" in name


def _fix_diagonal(t: NvbTest) -> None:
    if _is_d2d(t.name):
        for i, row in enumerate(t.matrix):
            if i < len(row) and row[i] == 0.0:
                row[i] = None


def _cells(t: NvbTest, toks) -> list[float | None]:
    """One matrix row; a cell that is no figure is None with ``t.bad[(row, col)]`` saying why."""
    r = len(t.matrix)
    out: list[float | None] = []
    for c, tok in enumerate(toks):
        s = str(tok).strip()
        if s.upper() == "N/A":
            out.append(None)
            continue
        try:
            out.append(float(figure(s, what=f"{t.name} cell {r},{c}")))
        except InvalidFigure as e:
            t.bad[(r, c)] = f"invalid figure {e.token!r} ({e.why})"
            out.append(None)
    return out


def parse_nvbandwidth(text: str | bytes) -> NvbRun:
    """Every test of one run, in output order. Empty -> NvbRun() with no tests."""
    p = prepare(text, cap=MAX_CHARS, what="nvbandwidth")
    s = p.text.lstrip()
    if s.startswith("{"):
        run = _parse_json(s)
        run.notes[:0] = p.notes
        return run
    run = NvbRun(notes=list(p.notes))
    cur: NvbTest | None = None
    ncols = 0
    for line in p.text.replace("\r", "\n").split("\n"):
        st = line.strip()
        if not st:
            continue
        if m := re.match(r"^nvbandwidth Version: (\S+)", st):
            run.version = m.group(1)
        elif cur is None and (d := _device(st)) is not None:
            run.devices[d[0]] = d[1]
        elif m := _RUNNING.match(st):
            cur, ncols = NvbTest(m.group(1)), 0
            run.tests.append(cur)
            if len(run.tests) > 1024:
                raise ParseError("nvbandwidth: too many tests")
        elif st.startswith("Waived"):
            name = st.partition(":")[2].strip()
            run.tests.append(NvbTest(name or "(unnamed)", status="waived"))
            cur = None
        elif m := _SUM.match(st):
            if cur is not None and cur.name == "":
                cur.name = m.group(1)[:120]          # its 'Running' line was trimmed: the SUM names it
                run.notes.append(f"test named from its SUM line ({cur.name}): its 'Running' line is missing")
            if cur is not None and cur.name == m.group(1):
                try:
                    cur.sum = float(figure(m.group(2), what="SUM"))
                except InvalidFigure:
                    pass
        elif cur is None and st.startswith(("memcpy", "memory latency")):
            # a matrix whose 'Running' line was trimmed ('...'): kept, named by its SUM line if any
            cur, ncols = NvbTest("", description=st, unit=_unit(st)), 0
            run.tests.append(cur)
        elif cur is None:
            continue
        elif "bandwidth" in st and "(" in st or st.startswith(("memcpy", "memory latency")):
            cur.description = st
            cur.unit = _unit(st)
        elif _BAD.search(st):
            cur.status = "error"
            cur.errors.append(st[:300])
        elif _HDR.match(st) and not cur.matrix and not ncols:
            ncols = len(st.split())
        elif (m := _ROW.match(line)) and int(m.group(1)) == len(cur.matrix) and \
                (not ncols or len(m.group(2).split()) == ncols):
            if len(cur.matrix) >= MAX_DIM:
                raise ParseError("nvbandwidth: matrix too large")
            cur.matrix.append(_cells(cur, m.group(2).split()))
    for t in run.tests:
        _fix_diagonal(t)
    return run


def _parse_json(s: str) -> NvbRun:
    obj, rejoined = load_json(s[:s.rfind("}") + 1] if "}" in s else s, "nvbandwidth -j")
    body = obj.get("nvbandwidth") if isinstance(obj, dict) else None
    if not isinstance(body, dict):
        raise ParseError("nvbandwidth -j: no 'nvbandwidth' object")
    run = NvbRun(version=str(body.get("version") or body.get("git_version") or "")[:40] or None, fmt="json")
    if rejoined:
        run.notes.append("JSON rejoined from terminal-wrapped lines")
    tcs = body.get("testcases") or []
    if not isinstance(tcs, list) or len(tcs) > 1024:
        raise ParseError("nvbandwidth -j: testcases must be a list of at most 1024")
    for tc in tcs:
        if not isinstance(tc, dict):
            continue
        status = str(tc.get("status", "")).strip().lower()
        t = NvbTest(str(tc.get("name", ""))[:120], status={"passed": "passed", "waived": "waived"}.get(status, "error"))
        t.description = str(tc.get("bandwidth_description") or "").strip()
        t.unit = _unit(t.description)
        mat = tc.get("bandwidth_matrix") or []
        if not isinstance(mat, list) or len(mat) > MAX_DIM:
            raise ParseError("nvbandwidth -j: bad bandwidth_matrix")
        for row in mat:
            if not isinstance(row, list) or len(row) > MAX_DIM:
                raise ParseError("nvbandwidth -j: bad bandwidth_matrix row")
            t.matrix.append(_cells(t, row))
        if isinstance(tc.get("sum"), (int, float)) and not isinstance(tc.get("sum"), bool):
            try:
                t.sum = float(figure(repr(float(tc["sum"])), what="sum"))
            except InvalidFigure:
                t.sum = None
        if t.status == "error":
            t.errors.append(f"status {tc.get('status')!r}")
        _fix_diagonal(t)
        run.tests.append(t)
    return run
