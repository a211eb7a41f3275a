"""nccl-tests output -> ``ToolReport``: the collective, the rank count, in-place and out-of-place,
the stable plateau figure, and the data check, all read from the output itself (issue 36 items
1, 3, 4; issue 37 items 1, 3).

- **Collective.** ``# Collective test starting: <binary>`` (nccl-tests 2.17.4+) or the ``-J``
  JSON's argv names it. Older outputs are told apart by their numbers (nccl-tests src/*.cu
  ``*GetBw``): the bus/algorithm bandwidth ratio is 2(n-1)/n for all_reduce, (n-1)/n for
  all_gather, reduce_scatter, alltoall, gather, scatter and 1 for broadcast, reduce, sendrecv;
  a ``redop`` other than ``none`` marks a reduction; ``root`` >= 0 a rooted collective; the
  printed element count is the whole buffer for all_reduce and one rank's share for the others.
  The binary the spec runs (``perf.tools.nccl``) is used only where the output agrees with it;
  an output that contradicts it is ERROR (an all-to-all is never judged as an all-reduce).
- **Ranks.** The ``# Rank N`` lines, NCCL INFO ``nranks N``, or the ratio above (all_reduce:
  n = 2 / (2 - ratio)). A collective of one rank moves nothing: its bus bandwidth is 0 whatever
  it prints -> "not measured". More ranks than the node's GPUs: the run spans several nodes and no
  single-node floor applies (nodegate.perf.rules).
- **Several runs.** Two column headers, two output streams (``0:`` / ``1:`` prefixes) with rows, or
  sizes out of the order one run prints them (one ascending sweep, repeated by ``-N``): several
  runs in one output (``srun --ntasks=2``, ``mpirun -np 2`` of a non-MPI build) -> every figure
  ERROR naming each run's value, never the best of them.
- **Plateau.** The rows of the largest size (of the float/sum experiment when ``-d all``/``-o all``
  printed several): several rows (``-N``) are a distribution (nodegate.perf.stable).
- **Data check.** ``#wrong`` judged per row (a count above 0 in any row is corruption; a negative
  or non-numeric one is an invalid figure, never summed with signs); before 2.13 the ``error``
  column is the largest deviation, judged against nccl-tests' own tolerance DeltaMaxValue(type) x
  (nranks - 1) (common.cu before 51af557: 1e-2 half/bf16, 1e-5 float, 1e-12 double, 0 integers);
  ``Out of bounds values: N FAILED`` is corruption too. ``N/A`` everywhere: validation off, a note.
"""

from __future__ import annotations

import statistics

from ..parsers.perf_nccl import NcclRow, NcclRun, NcclTable
from ..perfmodel.model import Integrity, Measurement, ToolReport
from .stable import stable

_ELSIZE = {"int8": 1, "uint8": 1, "char": 1, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
           "half": 2, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4, "int": 4, "float": 4, "float32": 4,
           "int64": 8, "uint64": 8, "double": 8, "float64": 8}
_TOL = {1: 0.0, 2: 1e-2, 4: 1e-5, 8: 1e-12}
_TOL_INT = {"int8", "uint8", "int32", "uint32", "int", "int64", "uint64", "char"}
_NAMES = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
          "alltoall": "alltoall", "alltoallv": "alltoallv", "broadcast": "broadcast", "reduce": "reduce",
          "sendrecv": "sendrecv", "gather": "gather", "scatter": "scatter", "hypercube": "hypercube"}


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:.2f}".rstrip("0").rstrip(".") or "0")


def collective_name(program: str | None) -> str | None:
    """``/opt/nccl-tests/build/all_reduce_perf`` -> ``all_reduce``; None when not a test binary."""
    if not program:
        return None
    base = program.rsplit("/", 1)[-1]
    base = base[:-5] if base.endswith("_perf") else base
    base = base.removesuffix("_mpi")
    return base if base in _NAMES else None


def _plateau_rows(rows: list[NcclRow]) -> tuple[int, list[NcclRow]]:
    big = [r for r in rows if r.size_b > 0]
    if not big:
        return 0, []
    top = max(r.size_b for r in big)
    return top, [r for r in big if r.size_b == top]


def _ratio(rows: list[NcclRow]) -> float | None:
    rs = [r.oop_busbw / r.oop_algbw for r in rows if r.oop_busbw is not None and r.oop_algbw]
    rs += [r.ip_busbw / r.ip_algbw for r in rows if r.ip_busbw is not None and r.ip_algbw]
    return statistics.median(rs) if rs else None


def infer(t: NcclTable, rows: list[NcclRow]) -> tuple[list[str], int | None, str]:
    """(candidate collectives, ranks implied by the numbers or None, why) for one experiment's rows."""
    r0 = rows[0]
    ratio = _ratio(rows)
    el = _ELSIZE.get(r0.dtype.lower())
    per_rank = None
    if el and r0.count and r0.size_b % (r0.count * el) == 0:
        per_rank = r0.size_b // (r0.count * el)          # 1: whole buffer; n: one rank's share of n
    reduction = bool(r0.redop) and r0.redop.lower() not in ("none", "n/a")
    rooted = r0.root is not None and r0.root >= 0
    bits = [f"busbw/algbw {ratio:.3f}" if ratio is not None else "no bandwidth to compare",
            f"redop {r0.redop or '(none)'}", f"root {r0.root}" if r0.root is not None else "no root column"]
    why = ", ".join(bits)
    if ratio is None:
        return [], None, why
    if rooted:
        return (["reduce"] if reduction else ["broadcast", "gather", "scatter"]), None, why
    if per_rank and per_rank > 1:
        # one rank's share printed: n = size / (count x element size), whatever the rounded ratio says
        return (["reduce_scatter"] if reduction else ["all_gather", "alltoall"]), per_rank, why
    if ratio < 0.01:
        # bus bandwidth 0 with data moved: one rank (every factor (n-1)/n, 2(n-1)/n is 0 at n = 1)
        return (["all_reduce"] if reduction or per_rank == 1 else ["all_gather", "alltoall"]), 1, why
    if ratio > 1.02:
        return ["all_reduce"], (round(2 / (2 - ratio)) if ratio < 1.999 else None), why
    if ratio < 0.98:
        return (["reduce_scatter"] if reduction else ["all_gather", "alltoall"]), round(1 / (1 - ratio)), why
    # ratio 1: broadcast/reduce/sendrecv, or all_reduce on exactly 2 ranks
    if reduction and per_rank == 1:
        return ["all_reduce"], 2, why
    return (["reduce"] if reduction else ["sendrecv", "broadcast"]), None, why


def _sweeps_ok(rows: list[NcclRow]) -> bool:
    """True when the sizes are one non-decreasing sweep (small sizes round down to 0 B, repeated),
    repeated whole by -N: one run's order. A trimmed output may cut the last cycle short."""
    cycles: list[list[int]] = []
    for r in rows:
        if not cycles or r.size_b < cycles[-1][-1]:
            cycles.append([])
        cycles[-1].append(r.size_b)
    first = cycles[0] if cycles else []
    return all(c == first for c in cycles[:-1]) and cycles[-1] == first[:len(cycles[-1])] if cycles else True


def from_nccl(run: NcclRun, hint: str | None = None) -> ToolReport:
    """The report of one nccl-tests output; ``hint``: the binary the spec ran (``all_reduce_perf``)."""
    rep = ToolReport("nccl", info={"version": run.version, "hosts": run.hosts, "validation": run.validation,
                                   "format": run.fmt})
    rep.notes.extend(run.notes)
    tables = [t for t in run.tables if t.rows]
    if not tables:
        why = "; ".join(dict.fromkeys(run.failures[:3]))
        rep.invalid.append("nccl-tests printed no result row" + (f": the run failed: {why}" if why else
                                                                  " (no table: the run ended before its first size)"))
        return rep
    t = tables[0]
    runs_why = ""
    if len(tables) > 1:
        streams = {x.stream for x in tables}
        how = (f"{len(streams)} output streams ({', '.join(sorted(s or '(unprefixed)' for s in streams))})"
               if len(streams) > 1 else f"{len(tables)} result tables")
        vals = [_fmt(max((r.best_busbw for r in _plateau_rows(x.rows)[1]), default=None)) for x in tables[:6]]
        runs_why = f"{len(tables)} runs in one output ({how}): plateau bus bandwidth {' and '.join(vals)} GB/s"
    elif not _sweeps_ok(t.rows):
        sizes = [r.size_b for r in t.rows[:6]]
        runs_why = f"rows of several runs interleaved (sizes out of one run's order: {sizes}...)"
    # the experiment: float/sum when -d all / -o all printed several
    exps: dict[tuple, list[NcclRow]] = {}
    for r in t.rows:
        exps.setdefault((r.dtype, r.redop, r.root), []).append(r)
    key = next((k for k in exps if k[0] == "float" and k[1] in ("sum", "")), next(iter(exps)))
    rows = exps[key]
    if len(exps) > 1:
        rep.notes.append(f"{len(exps)} type/op combinations printed: judged {key[0]} {key[1] or ''}".rstrip())
    size, prow = _plateau_rows(rows)
    cands, n_ratio, why_inf = infer(t, prow or rows)
    named = collective_name(t.collective or run.program)
    configured = collective_name(hint)
    collective, coll_note = None, ""
    if named:
        collective = named
        if cands and named not in cands and not (named == "all_reduce" and n_ratio == 1):
            rep.invalid.append(f"the output names {named} but its numbers read as {' or '.join(cands)} ({why_inf})")
    elif configured and (not cands or configured in cands):
        collective, coll_note = configured, f"collective {configured}: the binary run ({hint}), consistent with {why_inf}"
    elif configured and cands:
        rep.invalid.append(f"the output is not a {configured} (the binary run, {hint}): its numbers read as "
                           f"{' or '.join(cands)} ({why_inf})")
        collective = cands[0] if len(cands) == 1 else None
    elif len(cands) == 1:
        collective, coll_note = cands[0], f"collective {cands[0]} read from the numbers ({why_inf})"
    else:
        coll_note = ("collective not named in the output (no '# Collective test starting' line) and not told "
                     f"apart by its numbers: {' or '.join(cands) or 'no bandwidth'} ({why_inf})")
    if coll_note:
        rep.notes.append(coll_note)
    metric = f"{_NAMES[collective]}_busbw" if collective in _NAMES else "busbw"
    # ranks: the Rank lines, NCCL INFO nranks, the numbers
    nranks = run.nranks or (max(run.nranks_info) if run.nranks_info else None) or n_ratio
    if run.nranks and n_ratio and collective == "all_reduce" and n_ratio != run.nranks and n_ratio > 1:
        rep.invalid.append(f"{run.nranks} rank lines but the bandwidth ratio implies {n_ratio} ranks")
    rep.info.update({"collective": collective, "nranks": nranks, "plateau_size_b": size or None,
                     "avg_busbw": t.avg_busbw, "wrong_column": t.wrong_column, "runs": len(tables)})
    if runs_why:
        rep.invalid.append(runs_why)
    shared = _shared_gpus(run)
    if shared:
        rep.invalid.append(shared)
    if t.avg_busbw is None and t.layout != "json":
        rep.notes.append("no summary footer: output may be incomplete")
    for mode, attr in (("oop", "oop"), ("ip", "ip")):
        m = _plateau_measurement(metric, mode, attr, size, prow, nranks, collective)
        if m is not None:
            rep.measurements.append(m)
    _integrity(rep, t, rows, nranks)
    if rep.integrity and rep.integrity[-1].ok is True and not any(m.value is not None for m in rep.measurements):
        # a clean data check of a run that measured nothing (one rank: nothing crossed between GPUs)
        # proves nothing either
        why = "a collective of a single rank exchanges no data" if nranks == 1 else "the run gave no valid figure"
        rep.integrity[-1] = Integrity("nccl", None, f"not checked: {why} ({rep.integrity[-1].what})")
    return rep


def _shared_gpus(run: NcclRun) -> str | None:
    """Why the ranks do not measure a GPU-to-GPU path: two rank lines on one GPU (same host, device and bus id;
    e.g. 'mpirun -np 2' with NCCL_TESTS_DEVICE=0 and a fake NCCL_HOSTID per rank, a public 2.18.0 log on one
    RTX 5090): their collective crosses no link of the node, whatever bandwidth it prints."""
    first: dict[str, int] = {}
    for rank, gpu in enumerate(getattr(run, "rank_gpus", []) or []):
        if gpu in first:
            return (f"ranks {first[gpu]} and {rank} ran on one GPU ({gpu}): the collective measured no link "
                    "between GPUs")
        first[gpu] = rank
    return None


def _plateau_measurement(metric, mode, attr, size, prow, nranks, collective) -> Measurement | None:
    half = "out-of-place" if mode == "oop" else "in-place"
    src = f"{half} bus bandwidth at {size} B (largest size run)"
    vals = [getattr(r, f"{attr}_busbw") for r in prow]
    algs = [getattr(r, f"{attr}_algbw") for r in prow]
    bad = [w for r in prow for w in r.invalid if w.startswith(half)]
    if not prow:
        return Measurement("nccl", metric, None, "GB/s", "node", mode=mode, source=src,
                           why="not measured: no row with a message size above 0")
    if all(v is None for v in vals) and not bad and mode == "ip":
        return None                         # the layout has no in-place half (trace replay)
    if bad:
        return Measurement("nccl", metric, None, "GB/s", "node", mode=mode, source=src,
                           why=f"invalid figure: {bad[0]}")
    valid = [v for v in vals if v is not None]
    if not valid or max(valid) == 0:
        alg = max((a for a in algs if a is not None), default=0.0)
        if nranks == 1 or alg > 0:
            why = (f"not measured: bus bandwidth 0.00 at {size} B with algorithm bandwidth {_fmt(alg)} GB/s: a "
                   f"collective of a single rank (nranks {nranks or 1}) moves nothing between GPUs")
        else:
            why = f"not measured: bandwidth 0.00 at {size} B"
        return Measurement("nccl", metric, None, "GB/s", "node", mode=mode, source=src, why=why)
    s = stable(valid, f"rows at {size} B")
    return Measurement("nccl", metric, s.value, "GB/s", "node", mode=mode, source=src, samples=s.samples,
                       unstable=s.unstable, note=s.note)


def _integrity(rep: ToolReport, t: NcclTable, rows: list[NcclRow], nranks: int | None) -> None:
    wc = t.wrong_column
    counts = [(r, w) for r in t.rows for w in (r.oop_wrong, r.ip_wrong) if w is not None]
    invalid = [w for r in t.rows for w in r.invalid if "#wrong" in w or " error " in w]
    corrupt: list[str] = []
    if wc == "#wrong":
        for r, w in counts:
            if w > 0 or w != int(w):
                corrupt.append(f"#wrong {_fmt(w)} at {r.size_b} B")
    elif wc == "error" and counts:
        n = max(nranks or 2, 2)
        for r, w in counts:
            el = _ELSIZE.get(r.dtype.lower(), 4)
            tol = 0.0 if r.dtype.lower() in _TOL_INT else _TOL.get(el, 1e-5) * (n - 1)
            if w > tol:
                corrupt.append(f"error {w:g} at {r.size_b} B above nccl-tests' tolerance {tol:g} "
                               f"({r.dtype} x (nranks - 1))")
    oob_bad = t.oob_ok is False or (t.oob_values or 0) > 0
    if corrupt and t.oob_ok is True and t.oob_values == 0:
        # the rows say corruption, the footer counts none: contradictory evidence (issue 37 item 3)
        rep.integrity.append(Integrity("nccl", None, f"contradictory: {corrupt[0]} but the footer says 'Out of bounds "
                                       f"values : 0 OK' (nccl-tests counts every row past its tolerance there)"))
    elif corrupt or oob_bad:
        what = "; ".join(dict.fromkeys(corrupt[:5])) + (f" (and {len(corrupt) - 5} more rows)" if len(corrupt) > 5 else "")
        if oob_bad:
            what = (what + "; " if what else "") + f"out of bounds values: {t.oob_values} FAILED"
        rep.integrity.append(Integrity("nccl", False, what))
    elif invalid:
        rep.integrity.append(Integrity("nccl", None, f"invalid figure: {invalid[0]}"))
    elif counts:
        col = "#wrong 0" if wc == "#wrong" else "error within nccl-tests' tolerance"
        rep.integrity.append(Integrity("nccl", True, f"{col} in every row ({len(t.rows)} rows"
                                       + (f", out of bounds values {t.oob_values} OK)" if t.oob_ok else ")")))
    else:
        rep.notes.append("correctness unverified: no #wrong count (validation off or pre-2.13 'error' N/A)")
