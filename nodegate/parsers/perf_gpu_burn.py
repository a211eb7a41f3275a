"""Parser for gpu_burn (wilicc/gpu-burn) output.

Usage (evidence key ``perf.gpu_burn``)::

    gpu_burn [-d] [-tc] SECONDS

Layout: ``GPU N: <name> (UUID: ...)`` lines, then progress records ``50.0%  proc'd: 2261 (7150
Gflop/s) - 0 (0 Gflop/s) ...   errors: 0 - 0 ...   temps: 38 C - 36 C ...`` joined by ``\\r`` (one
physical line of many kB), tab-indented ``Summary at:`` lines, child output after ``Killing
processes..``, then ``Tested N GPUs:`` and ``GPU i: OK|FAULTY``. Error counts may be negative or
carry ``(WARNING!)`` / ``(DIED!)``. Its exit status is 0 even when every GPU is FAULTY
(gpu_burn-drv.cpp), and it prints OK for a GPU that never computed (init error, 0 Gflop/s):
the figures decide, not the words. Source: ../shared/perf/351.

Schema::

    parse_gpu_burn(text) -> GpuBurnRun(names={gpu: name}, gflops={gpu: float} (last complete
                                       progress record), errors={gpu: int}, flags={gpu: "WARNING"|"DIED"},
                                       verdicts={gpu: "OK"|"FAULTY"}, tested: int | None, records: int)

Example::

    100.0%  proc'd: 6783 (16942 Gflop/s) - 6783 (17093 Gflop/s)   errors: 0 - 0   temps: 62 C - 59 C
    Tested 2 GPUs:
    	GPU 0: OK
    	GPU 1: OK
    -> GpuBurnRun(gflops={0: 16942.0, 1: 17093.0}, errors={0: 0, 1: 0}, verdicts={0: "OK", 1: "OK"}, ...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 32 * 1024 * 1024
# Numbers bounded (a 5,000-digit count is no count: int() refuses it) and no pattern with two lazy
# ".*?" runs: a line of many "proc'd:" or "(UUID: " made those quadratic (issue 31: parsing time
# linear; tests/hostile/test_parse_bounds.py). Records are cut at their literal words instead.
_GPU_HEAD = re.compile(r"GPU (\d{1,6}): ")
_UUID_TAIL = re.compile(r" \(UUID: [^)]*\)\s*$")
_PCT = re.compile(r"(\d{1,20}(?:\.\d{1,20})?)%\s+$")
_GF = re.compile(r"\((-?\d{1,20}(?:\.\d{1,20})?) Gflop/s\)")
_ERR = re.compile(r"(-?\d{1,18})\s*(\((?:WARNING|DIED)!\))?")
_VERDICT = re.compile(r"^GPU (\d{1,6}): (OK|FAULTY)\b")


def _gpu_line(st: str) -> tuple[int, str] | None:
    """``GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)`` -> (0, name): the name runs to the first
    " (UUID: " after which no ")" comes before the one that ends the line."""
    m = _GPU_HEAD.match(st)
    if m is None:
        return None
    rest = st[m.end():].rstrip()
    if not rest.endswith(")"):
        return None
    k = rest.rfind(")", 0, len(rest) - 1)          # the last ")" before the closing one
    i = rest.find(" (UUID: ", max(1, k - 7))
    if i < 1 or i + 8 <= k:
        return None
    return int(m.group(1)), rest[:i]


def _after_space(st: str, word: str, start: int) -> int:
    """Index of the first ``word`` at or after ``start`` that follows whitespace, else -1."""
    j = st.find(word, start)
    while j >= 0 and not st[j - 1:j].isspace():
        j = st.find(word, j + 1)
    return j


def _skip_space(st: str, i: int) -> int:
    while i < len(st) and st[i].isspace():
        i += 1
    return i


def _progress(st: str) -> tuple[float, str, str] | None:
    """(percent, GPU Gflop/s part, error part) of ``50.0%  proc'd: ... errors: ... temps: ...``:
    what ``(\\d+(?:\\.\\d+)?)%\\s+proc'd:\\s*(.*?)\\s+errors:\\s*(.*?)\\s+temps:`` finds, in linear time."""
    i = st.find("proc'd:")
    while i >= 0:
        pm = _PCT.search(st, max(0, i - 64), i)
        if pm is not None:
            p = _skip_space(st, i + 7)
            j = _after_space(st, "errors:", p + 1)
            q = _skip_space(st, j + 7) if j >= 0 else -1
            k = _after_space(st, "temps:", q + 1) if j >= 0 else -1
            if k < 0:
                return None
            return float(pm.group(1)), st[p:j].rstrip(), st[q:k].rstrip()
        i = st.find("proc'd:", i + 1)
    return None


@dataclass
class GpuBurnRun:
    names: dict[int, str] = field(default_factory=dict)
    gflops: dict[int, float] = field(default_factory=dict)
    errors: dict[int, int] = field(default_factory=dict)
    flags: dict[int, str] = field(default_factory=dict)
    verdicts: dict[int, str] = field(default_factory=dict)
    tested: int | None = None
    records: int = 0
    percent: float | None = None


def parse_gpu_burn(text: str | bytes) -> GpuBurnRun:
    """Empty -> GpuBurnRun() (no records). ParseError when a progress record's GPU lists disagree."""
    text = V.check_text(text, cap=MAX_CHARS, what="gpu_burn")
    run = GpuBurnRun()
    for line in re.split(r"[\r\n]", text):
        st = line.strip()
        if not st:
            continue
        if (g := _gpu_line(st)) is not None:
            run.names[g[0]] = g[1]
            continue
        if m := _VERDICT.match(st):
            run.verdicts[int(m.group(1))] = m.group(2)
            continue
        if m := re.match(r"^Tested (\d{1,6}) GPUs?:", st):
            run.tested = int(m.group(1))
            continue
        if (p := _progress(st)) is not None:
            gfs = [float(x) for x in _GF.findall(p[1])]
            errs = [(int(e.group(1)), e.group(2)) for e in _ERR.finditer(p[2])]
            if not gfs or len(errs) != len(gfs):
                raise ParseError(f"gpu_burn: progress record lists {len(gfs)} GPUs' Gflop/s and "
                                 f"{len(errs)} error counts: {st[:120]!r}")
            run.records += 1
            run.percent = p[0]
            run.gflops = dict(enumerate(gfs))
            run.errors = {i: e for i, (e, _) in enumerate(errs)}
            # a flag ever shown for a GPU stays: DIED then a later 0 must not read as healthy
            for i, (_, flag) in enumerate(errs):
                if flag:
                    run.flags[i] = flag.strip("()!")
    return run
