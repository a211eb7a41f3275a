"""Parser for gpu_burn (wilicc/gpu-burn) output.

Usage (evidence key ``perf.gpu_burn``)::

    gpu_burn [-d] [-tc] SECONDS

Layout: ``GPU N: <name> (UUID: ...)`` lines, ``Initialized device N ...`` or ``Couldn't init a GPU
test: <why>`` per worker, then progress records ``50.0%  proc'd: 2261 (7150 Gflop/s) - 0 (0
Gflop/s) ...   errors: 0 - 0 ...   temps: 38 C - 36 C ...`` joined by ``\\r`` (one physical line of
many kB), tab-indented ``Summary at:`` lines, child output after ``Killing processes..``, then
``Tested N GPUs:`` and ``GPU i: OK|FAULTY``. A worker that died prints ``-1`` as its count and
``(DIED!)`` after its error count, which is then garbage (``-533715488``); ``No clients are alive!
Aborting`` ends a run whose workers all died (wilicc/gpu-burn issues 53, 69). A count with
``(WARNING!)`` is a worker that found errors. Its exit status is 0 even when every GPU is FAULTY
(issue 12), and it prints OK for a GPU that never computed (init error, 0 Gflop/s: issues 14, 123):
the figures decide, not the words. Sources: ../shared/perf/351, tests/perf/fixtures 352-357.

Every figure goes through the bounded reader (``_figures.figure``): a Gflop/s that is not a figure
leaves that GPU's record invalid (``bad``), a negative error count is not a count
(``bad_errors``), and a cumulative error count that goes down is a contradiction
(``contradictions``; issue 37 items 1 and 3).

Schema::

    parse_gpu_burn(text) -> GpuBurnRun(names={gpu: name}, gflops={gpu: float} (last complete
        record), errors={gpu: int}, flags={gpu: "WARNING"|"DIED"} (ever shown), verdicts={gpu:
        "OK"|"FAULTY"}, tested, records, percent, history={gpu: [Gflop/s per record]},
        procd={gpu: last count}, init_errors=[str], aborted: bool, bad={gpu: why},
        bad_errors={gpu: why}, contradictions={gpu: why}, notes=[str])

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
from ._figures import InvalidFigure, figure
from ._limits import MAX_GPUS
from ._perftext import prepare

MAX_CHARS = 32 * 1024 * 1024
MAX_RECORDS = 200_000
# Numbers are read as digit runs and bounded by figure() (a 5,000-digit count is no count; int()
# of it raised ValueError); no pattern with two lazy ".*?" runs: a line of many "proc'd:" or
# "(UUID: " made those quadratic (issue 31; tests/hostile/test_parse_bounds.py). Records are cut
# at their literal words instead.
_GPU_HEAD = re.compile(r"GPU ([0-9]{1,6}): ")
_PCT = re.compile(r"([0-9]{1,20}(?:\.[0-9]{1,20})?)%\s+$")
# a count is a run of at most 40 digits that starts the run (a digit run of any length with no
# " (" after it made "[0-9]+" rescan it from every digit: quadratic)
_GF = re.compile(r"(?<![0-9])(-?[0-9]{1,40}) \(([^ ()]{1,60}) Gflop/s\)")
_ERR = re.compile(r"(-?[0-9]+)\s*(\((?:WARNING|DIED)!\))?")
_VERDICT = re.compile(r"^GPU ([0-9]{1,6}): (OK|FAULTY)\b")
_INIT = re.compile(r"Couldn't init a GPU test: ?(.{0,200})")


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


def _progress(st: str) -> tuple[str, str, str] | None:
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
            return pm.group(1), st[p:j].rstrip(), st[q:k].rstrip()
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
    history: dict[int, list] = field(default_factory=dict)
    procd: dict[int, int] = field(default_factory=dict)
    init_errors: list[str] = field(default_factory=list)
    aborted: bool = False
    bad: dict[int, str] = field(default_factory=dict)
    bad_errors: dict[int, str] = field(default_factory=dict)
    contradictions: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _fig(tok: str, what: str, **kw):
    try:
        return figure(tok, what=what, **kw), None
    except InvalidFigure as e:
        return None, f"{what} {e.token!r}: {e.why}"


def parse_gpu_burn(text: str | bytes) -> GpuBurnRun:
    """Empty -> GpuBurnRun() (no records). ParseError when a progress record's GPU lists disagree."""
    p = prepare(text, cap=MAX_CHARS, what="gpu_burn")
    run = GpuBurnRun(notes=list(p.notes))
    last: dict[int, int] = {}           # each GPU's last valid (cumulative) error count
    for line in re.split(r"[\r\n]", p.text):
        st = line.strip()
        if not st:
            continue
        if (g := _gpu_line(st)) is not None:
            if len(run.names) < MAX_GPUS or g[0] in run.names:
                run.names[g[0]] = g[1]
            continue
        if m := _VERDICT.match(st):
            if len(run.verdicts) < MAX_GPUS or int(m.group(1)) in run.verdicts:
                run.verdicts[int(m.group(1))] = m.group(2)
            continue
        if m := re.match(r"^Tested ([0-9]{1,6}) GPUs?:", st):
            run.tested = int(m.group(1))
            continue
        if m := _INIT.search(st):
            if len(run.init_errors) < 64:
                run.init_errors.append(m.group(1).strip() or "(no reason printed)")
        if "No clients are alive" in st:
            run.aborted = True
        if (pr := _progress(st)) is None:
            continue
        gfs = _GF.findall(pr[1])
        errs = [(e.group(1), e.group(2)) for e in _ERR.finditer(pr[2])]
        if not gfs or len(errs) != len(gfs):
            raise ParseError(f"gpu_burn: progress record lists {len(gfs)} GPUs' Gflop/s and "
                             f"{len(errs)} error counts: {st[:120]!r}")
        if len(gfs) > MAX_GPUS:
            raise ParseError(f"gpu_burn: a progress record lists {len(gfs)} GPUs, more than any node has")
        run.records += 1
        if run.records > MAX_RECORDS:
            raise ParseError("gpu_burn: too many progress records")
        pct, why = _fig(pr[0], "percent")
        run.percent = pct
        run.gflops, run.errors = {}, {}
        for i, ((procd_tok, gf_tok), (err_tok, flag)) in enumerate(zip(gfs, errs)):
            procd, _ = _fig(procd_tok, "proc'd count", signed=True, integer=True)
            gf, why = _fig(gf_tok, "Gflop/s")
            if why:
                run.bad[i] = why
            else:
                run.gflops[i] = float(gf)
            run.history.setdefault(i, []).append(None if gf is None else float(gf))
            if procd is not None:
                run.procd[i] = int(procd)
            if flag:
                run.flags[i] = flag.strip("()!")     # a flag ever shown stays: DIED then a later 0 is not healthy
            err, why = _fig(err_tok, "error count", signed=True, integer=True)
            if why:
                run.bad_errors[i] = why
                continue
            if err < 0 and run.flags.get(i) != "DIED":
                run.bad_errors[i] = f"error count {err} is negative: not a count"
                continue
            prev = last.get(i)
            if prev is not None and 0 <= err < prev and run.flags.get(i) != "DIED" and i not in run.contradictions:
                run.contradictions[i] = f"cumulative error count went down from {prev} to {err}"
            run.errors[i] = last[i] = int(err)
    return run
