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
_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: [^)]*\)\s*$")
_PROC = re.compile(r"(\d+(?:\.\d+)?)%\s+proc'd:\s*(.*?)\s+errors:\s*(.*?)\s+temps:")
_GF = re.compile(r"\((-?\d+(?:\.\d+)?) Gflop/s\)")
_ERR = re.compile(r"(-?\d+)\s*(\((?:WARNING|DIED)!\))?")
_VERDICT = re.compile(r"^GPU (\d+): (OK|FAULTY)\b")


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
        if m := _GPU.match(st):
            run.names[int(m.group(1))] = m.group(2)
            continue
        if m := _VERDICT.match(st):
            run.verdicts[int(m.group(1))] = m.group(2)
            continue
        if m := re.match(r"^Tested (\d+) GPUs?:", st):
            run.tested = int(m.group(1))
            continue
        if m := _PROC.search(st):
            gfs = [float(x) for x in _GF.findall(m.group(2))]
            errs = [(int(e.group(1)), e.group(2)) for e in _ERR.finditer(m.group(3))]
            if not gfs or len(errs) != len(gfs):
                raise ParseError(f"gpu_burn: progress record lists {len(gfs)} GPUs' Gflop/s and "
                                 f"{len(errs)} error counts: {st[:120]!r}")
            run.records += 1
            run.percent = float(m.group(1))
            run.gflops = dict(enumerate(gfs))
            run.errors = {i: e for i, (e, _) in enumerate(errs)}
            # a flag ever shown for a GPU stays: DIED then a later 0 must not read as healthy
            for i, (_, flag) in enumerate(errs):
                if flag:
                    run.flags[i] = flag.strip("()!")
    return run
