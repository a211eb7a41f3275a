"""Tool output -> ``ToolReport`` (model.py): which figure each test of each tool is, per GPU,
link or HCA, and which subjects the tool names but did not measure. Pure; raises nothing for bad
output (the report's ``invalid`` says why).

``extract(tool, text, hca=None, hint=None)`` dispatches on the tool name (the bundle key's second
part); ``hint`` is what the spec ran (the nccl-tests binary, the dcgmproftester test id), used
only where the output agrees with it. nccl-tests: nodegate.perf.nccl.

A subject without a valid figure (issue 36 item 1, issue 37 item 1) is a Measurement with
``value`` None and ``why``: gpu_burn's 0 Gflop/s, ``(DIED!)``, a GPU absent from every progress
record; nvbandwidth's ``nan``/``N/A``/``0.00`` off the diagonal; perftest's 0.00 average;
dcgmproftester's lines without a figure; a single-rank collective.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..parsers.perf_dcgmi import parse_dcgmi
from ..parsers.perf_dcgmproftester import ProfRun, parse_dcgmproftester
from ..parsers.perf_gpu_burn import GpuBurnRun, parse_gpu_burn
from ..parsers.perf_json import parse_perf_json
from ..parsers.perf_nccl import parse_nccl
from ..parsers.perf_nvbandwidth import NvbRun, parse_nvbandwidth
from ..parsers.perf_perftest import PerftestRun, parse_perftest
from ..perfmodel.model import PERFTEST, Integrity, Measurement, StatusResult, ToolReport
from .nccl import from_nccl
from .stable import stable

# nvbandwidth test names (NVIDIA/nvbandwidth testcases.h): direction, optional bidirectional,
# read/write for device-to-device, engine. Aggregates (all_to_host, one_to_all...) and latency
# are not per-GPU figures of the kinds judged here.
_NVB = re.compile(r"^(host_to_device|device_to_host|device_to_device)(_bidirectional)?_memcpy_(?:(read|write)_)?(ce|sm)$")
_METRIC = {"host_to_device": "h2d", "device_to_host": "d2h"}
#: perftest: the largest size's peak may exceed its average this much before the run is unstable
#: (a link that stalls: the average is what the link carried, the peak one fast iteration)
PEAK_RATIO = 1.5
#: dcgmi warnings that say DCGM itself could not run the test (DCGM issue 253: "There was an
#: internal error during the test", "Output of child process (152) couldn't be parsed" after
#: numa_sched_setaffinity failed under Slurm; go-dcgm issue 52: "CUDA-capable device(s) is/are
#: busy or unavailable"): the test did not run -> ERROR, not FAIL (issue 36 item 5)
DCGM_DID_NOT_RUN = re.compile(r"internal error|could ?n[o']t be parsed|child process|affinity|\bNUMA\b|"
                              r"busy or unavailable|Unable to create CUDA context|cuCtxCreate|API call \w+ failed", re.I)
_PROF_METRIC = {1004: "tensor", 1006: "fp64", 1007: "fp32", 1008: "fp16"}


def extract(tool: str, text, hca: str | None = None, op: str | None = None, hint: str | None = None) -> ToolReport:
    """``op``: the first API's collective override (``all_gather``); ``hint``: the binary / test id run."""
    try:
        if tool == "nvbandwidth":
            return from_nvbandwidth(parse_nvbandwidth(text))
        if tool == "nccl":
            return from_nccl(parse_nccl(text), hint or (f"{op}_perf" if op else None))
        if tool == "dcgmi":
            return from_dcgmi(parse_dcgmi(text))
        if tool == "gpu_burn":
            return from_gpu_burn(parse_gpu_burn(text))
        if tool in PERFTEST:
            return from_perftest(parse_perftest(text), tool, hca)
        if tool == "dcgmproftester":
            return from_dcgmproftester(parse_dcgmproftester(text), hint or hca)
        if tool in ("builtin", "command"):
            return parse_perf_json(text, tool)
    except ParseError as e:
        return ToolReport(tool, invalid=[f"{tool} output unparsable: {e}"])
    return ToolReport(tool, invalid=[f"unknown tool {tool!r}"])


# --------------------------------------------------------------------------- nvbandwidth
def _cell_measure(t, eng, dirn, metric, scope, r, c, v, gpu, peer) -> Measurement:
    why = ""
    if (r, c) in t.bad:
        why = t.bad[(r, c)]
    elif v is None:
        why = ("not measured: N/A (the tool did not copy between these GPUs: no peer access)" if scope == "link"
               else "not measured: N/A")
    elif v == 0:
        why = f"not measured: 0.00 {t.unit} (no copy completed)"
    return Measurement("nvbandwidth", metric, None if why else v, t.unit, scope, gpu, peer, engine=eng,
                       direction=dirn, source=t.name, why=why)


def from_nvbandwidth(run: NvbRun) -> ToolReport:
    rep = ToolReport("nvbandwidth", info={"version": run.version, "devices": dict(run.devices), "format": run.fmt})
    rep.notes.extend(run.notes)
    n = len(run.devices) or None
    for t in run.tests:
        if t.status == "waived":
            rep.waived.append(t.name)
            continue
        if any("ASSERT" in e or "pattern" in e.lower() or "mismatch" in e.lower() for e in t.errors):
            rep.integrity.append(Integrity("nvbandwidth", False, f"{t.name}: {'; '.join(t.errors)[:300]}"))
            continue
        if t.status == "error" and not t.matrix:
            rep.problems.append(f"nvbandwidth {t.name} did not run: {'; '.join(t.errors)[:300] or 'status error'}")
            continue
        if not t.name:
            rep.invalid.append("a result matrix whose test is not named (its 'Running' line was trimmed and no SUM "
                               "line names it): which copy it measured is unknown")
            continue
        m = _NVB.match(t.name)
        if not m or t.unit not in ("GB/s",):
            continue
        where, bidir, rw, eng = m.groups()
        dirn = "bidir" if bidir else "uni"
        if where == "device_to_device":
            if n is not None and (len(t.matrix) != n or any(len(r) != n for r in t.matrix)):
                rep.invalid.append(f"{t.name}: {len(t.matrix)}x{len(t.matrix[0]) if t.matrix else 0} matrix "
                                   f"for {n} device(s): inconsistent output")
                continue
            if any(len(r) != len(t.matrix) for r in t.matrix):
                rep.invalid.append(f"{t.name}: matrix is not square: inconsistent output")
                continue
            for i, row in enumerate(t.matrix):
                for j, v in enumerate(row):
                    if i != j:
                        rep.measurements.append(_cell_measure(t, eng, dirn, f"p2p_{rw}", "link", i, j, v, i, j))
        else:
            cols = len(t.matrix[0]) if t.matrix else 0
            if len(t.matrix) != 1 or (n is not None and cols != n):
                rep.invalid.append(f"{t.name}: {len(t.matrix)}x{cols} matrix where 1 CPU row x "
                                   f"{n if n is not None else 'N'} GPU columns belong: inconsistent output")
                continue
            for g, v in enumerate(t.matrix[0]):
                rep.measurements.append(_cell_measure(t, eng, dirn, _METRIC[where], "gpu", 0, g, v, g, None))
        vals = [v for row in t.matrix for v in row if v is not None]
        if t.sum is not None and vals and abs(sum(vals) - t.sum) > max(0.5, 0.01 * t.sum) and not t.bad:
            rep.invalid.append(f"{t.name}: SUM {t.sum:g} disagrees with its cells' sum {sum(vals):.2f}: "
                               "contradictory output")
    if not run.tests:
        rep.invalid.append("nvbandwidth ran no test")
    return rep


# --------------------------------------------------------------------------- dcgmi
def from_dcgmi(run) -> ToolReport:
    rep = ToolReport("dcgmi", info={"layout": run.layout, "version": run.version, "gpu_count": run.gpu_count})
    rep.notes.extend(run.notes)
    did_not_run = {}
    for t in run.tests:
        failed = t.status == "fail" or any(s == "fail" for s in t.gpus.values())
        if failed and t.messages and all(DCGM_DID_NOT_RUN.search(m) for m in t.messages):
            did_not_run[t.name] = t.messages[0]
    for r in run.results:
        status, msgs = r.status, tuple(r.messages)
        if r.test in did_not_run:
            status = "error"
            msgs = (f"the test did not run: DCGM could not run it ({did_not_run[r.test][:300]}); the GPU line "
                    f"says {r.status or 'nothing'}",)
        rep.statuses.append(StatusResult("dcgmi", r.gpu, r.test, status, msgs))
    if not run.results:
        rep.invalid.append("dcgmi diag reported no result")
    elif not any(r.status in ("pass", "fail", "warn") and r.category.lower() not in ("deployment", "metadata")
                 and r.test.lower() not in ("software",) for r in run.results):
        rep.problems.append("dcgmi diag ran no hardware, integration or stress test: every one was skipped or not "
                            "run (nothing about the GPUs was proven)")
    return rep


# --------------------------------------------------------------------------- gpu_burn
def _burn_value(hist: list) -> tuple[float | None, str, tuple, str, str]:
    """(value, why not measured, samples, unstable, note) of one GPU's Gflop/s history."""
    vals = [v for v in hist if v is not None]
    if not vals or max(vals) <= 0:
        return None, "0 Gflop/s in every progress record: the GPU never computed", (), "", ""
    if vals[-1] <= 0:
        return None, f"stopped computing: 0 Gflop/s in the last record after {max(vals):g}", (), "", ""
    # gpu_burn repeats each GPU's last rate in every record: its distinct reports, the first (start-up) left out
    reports = [v for i, v in enumerate(vals) if v > 0 and (i == 0 or v != vals[i - 1])]
    reports = reports[1:] or reports
    s = stable(reports, "reported rates")
    return s.value, "", s.samples, s.unstable, s.note


def _pct(p) -> str:
    return "an unreadable percentage" if p is None else f"{p:g} %"


def from_gpu_burn(run: GpuBurnRun) -> ToolReport:
    rep = ToolReport("gpu_burn", info={"records": run.records, "tested": run.tested, "percent": run.percent})
    rep.notes.extend(run.notes)
    gpus = sorted(set(run.names) | set(run.history) | set(run.verdicts))
    init = "; ".join(dict.fromkeys(run.init_errors))[:300]
    if not run.records:
        why = ("gpu_burn printed no progress record" + (f" (Couldn't init a GPU test: {init})" if init else "")
               + (" and aborted: no worker alive" if run.aborted else ""))
        if not gpus:
            rep.invalid.append(why)
        for g in gpus:
            rep.measurements.append(Measurement("gpu_burn", "gflops", None, "Gflop/s", "gpu", g, engine="sm",
                                                why=f"not measured: {why}"))
            rep.integrity.append(Integrity("gpu_burn", None, f"not checked: {why}", g))
        return rep
    if run.tested is not None and run.tested != len(run.history):
        rep.invalid.append(f"gpu_burn tested {run.tested} GPUs but its progress lists {len(run.history)}")
    for g in gpus:
        hist = run.history.get(g)
        died = run.flags.get(g) == "DIED" or run.procd.get(g) == -1
        why, value, samples, unstable, note = "", None, (), "", ""
        if hist is None:
            why = "not measured: the GPU is listed but absent from every progress record"
        elif died:
            why = "not measured: its gpu_burn worker died (DIED!)" + (f" ({init})" if init else "")
        elif g in run.bad:
            why = f"invalid figure: {run.bad[g]}"
        else:
            value, w, samples, unstable, note = _burn_value(hist)
            if w:
                why = f"not measured: {w}" + (f" (Couldn't init a GPU test: {init})" if init else "")
        rep.measurements.append(Measurement("gpu_burn", "gflops", None if why else value, "Gflop/s", "gpu", g,
                                            engine="sm", source="gpu_burn progress records", why=why,
                                            samples=samples, unstable=unstable, note=note))
        verdict = run.verdicts.get(g)
        errs = run.errors.get(g)
        if run.verdicts and verdict == "FAULTY":
            extra = f"; {run.bad_errors[g]}" if g in run.bad_errors else ""
            rep.integrity.append(Integrity("gpu_burn", False, f"gpu_burn says FAULTY (errors {errs}){extra}", g))
        elif died or why:
            # no valid figure: its error count proves nothing either (0 errors of a GPU that never ran)
            rep.integrity.append(Integrity("gpu_burn", None, f"not checked: {why.removeprefix('not measured: ')}", g))
        elif g in run.contradictions:
            rep.integrity.append(Integrity("gpu_burn", None, f"contradictory: {run.contradictions[g]}", g))
        elif g in run.bad_errors:
            rep.integrity.append(Integrity("gpu_burn", None, f"invalid figure: {run.bad_errors[g]}", g))
        elif (errs or 0) > 0 or run.flags.get(g) == "WARNING":
            rep.integrity.append(Integrity("gpu_burn", False, f"errors {errs}"
                                           + (" (WARNING!)" if run.flags.get(g) == "WARNING" else ""), g))
        else:
            rep.integrity.append(Integrity("gpu_burn", True, "0 errors in every progress record"
                                           + (f"; gpu_burn says {verdict}" if verdict else ""), g))
    if run.tested is None and not run.aborted and (run.percent is None or run.percent < 100) and (
            any(m.value is not None for m in rep.measurements) or any(i.ok is True for i in rep.integrity)):
        # gpu_burn prints "Tested N GPUs:" after its last record; a run that stops short of 100 %
        # without it died part-way (segfault, OOM kill: its exit status is not read, see judge.py):
        # a figure or "0 errors" of part of the burn is no result (a GPU with none already says why)
        rep.invalid.append(f"gpu_burn stopped at {_pct(run.percent)} without its 'Tested N GPUs' summary: "
                           "the run died part-way (its figures and error counts cover part of the burn)")
    return rep


# --------------------------------------------------------------------------- perftest
def from_perftest(run: PerftestRun, tool: str, hca: str | None) -> ToolReport:
    name = hca or run.device or "hca"
    rep = ToolReport(tool, info={"device": run.device, "unit": run.unit, "link_type": run.link_type,
                                 "bidirectional": run.bidirectional, "title": run.title})
    rep.notes.extend(run.notes)
    want = "bw" if tool.endswith("_bw") else "lat"
    verb = tool[3:].split("_")[0]
    if run.kind and run.kind != want:
        rep.invalid.append(f"the output is a {'latency' if run.kind == 'lat' else 'bandwidth'} test "
                           f"({run.title or 'its column header'}) where {tool} was run")
        return rep
    if run.verb and run.verb != verb and run.verb != "atomic":
        rep.invalid.append(f"the output is an RDMA {run.verb} test ({run.title}) where {tool} was run")
    if not run.bw and not run.lat:
        if run.bare:
            why = (f"{tool} on {name} printed only a bare figure ({run.bare[-1]:g}): perftest --output=bandwidth|latency "
                   "names neither the test, the message size nor the unit")
        elif run.bad:
            why = f"invalid figure: {run.bad[0]}"
        else:
            why = (f"not measured: {tool} on {name} printed no result row"
                   + ("" if run.unit or run.lat_cols else " (no column header either: the test never started)"))
        # the HCA is named (its own item, ERROR): the figure it should have had is missing
        for mode in (("",) if want == "bw" else ("typical", "p99")):
            rep.measurements.append(Measurement(tool, tool, None, "Gb/s" if want == "bw" else "usec", "hca", hca=name,
                                                direction="bidir" if run.bidirectional else "uni",
                                                higher_is_better=want == "bw", mode=mode, why=why))
        return rep
    if want == "bw":
        size = max(run.bw)
        avgs = [a for _, a in run.bw[size]]
        peaks = [p for p, _ in run.bw[size] if p > 0]
        dirn = "bidir" if run.bidirectional else "uni"
        src = f"BW average at {size} B ({run.unit}{', 2^20 bytes' if run.unit != 'Gb/sec' else ''})"
        if max(avgs) <= 0:
            rep.measurements.append(Measurement(tool, tool, None, "Gb/s", "hca", hca=name, direction=dirn, source=src,
                                                why=f"not measured: average 0.00 {run.unit} at {size} B"))
            return rep
        s = stable([run.to_gbits(a) for a in avgs], f"rows at {size} B")
        unstable = s.unstable
        if not unstable and peaks and s.value and run.to_gbits(max(peaks)) > PEAK_RATIO * s.value:
            unstable = (f"peak {run.to_gbits(max(peaks)):.2f} Gb/s is {run.to_gbits(max(peaks)) / s.value:.1f}x the "
                        f"average {s.value:.2f} Gb/s at {size} B: the transfer stalled")
        rep.measurements.append(Measurement(tool, tool, round(s.value, 2), "Gb/s", "hca", hca=name, direction=dirn,
                                            source=src, samples=s.samples, unstable=unstable, note=s.note))
        if run.bad:
            rep.notes.append(f"rows dropped: {run.bad[0]}")
        return rep
    size = min(run.lat)
    rows = run.lat[size]
    if run.lat_unit != "usec":
        rep.invalid.append(f"latency in {run.lat_unit}, not usec: cannot compare with a figure in time")
        return rep
    cols = [("typical", "t_typical"), ("p99", "p99")] if "t_typical" in run.lat_cols else [("avg", "t_avg")]
    if "p99" not in run.lat_cols and "t_typical" in run.lat_cols:
        rep.notes.append("no 99th percentile column (perftest before 4.x): judged on the typical latency only")
    for mode, col in cols:
        if col not in run.lat_cols:
            continue
        vals = [r[col] for r in rows if col in r]
        src = f"{col} at {size} B (usec)"
        if not vals or max(vals) <= 0:
            rep.measurements.append(Measurement(tool, tool, None, "usec", "hca", hca=name, higher_is_better=False,
                                                mode=mode, source=src, why=f"not measured: {col} 0.00 usec"))
            continue
        s = stable(vals, f"rows at {size} B")
        rep.measurements.append(Measurement(tool, tool, round(s.value, 3), "usec", "hca", hca=name,
                                            higher_is_better=False, mode=mode, source=src, samples=s.samples,
                                            unstable=s.unstable, note=s.note))
    return rep


# --------------------------------------------------------------------------- dcgmproftester
def from_dcgmproftester(run: ProfRun, hint: str | None = None) -> ToolReport:
    rep = ToolReport("dcgmproftester", info={"fields": list(run.fields)})
    rep.notes.extend(run.notes)
    want = None
    if hint and (m := re.fullmatch(r"t?([0-9]{4})", str(hint))):
        want = int(m.group(1))
    keys = sorted(set(run.gflops) | set(run.lines_without_figure))
    if want is not None:
        keys = [k for k in keys if k[1] == want]
        if run.fields and want not in run.fields:
            rep.invalid.append(f"dcgmproftester ran test {'/'.join(map(str, run.fields))} where test {want} was asked")
    if not keys:
        why = "; ".join(run.errors[:2])
        rep.invalid.append("dcgmproftester printed no test line" + (f": {why}" if why else ""))
        return rep
    for gpu, fid in keys:
        metric = _PROF_METRIC.get(fid)
        if metric is None:
            rep.notes.append(f"dcgmproftester test {fid} is not a FLOPS test (1004, 1006, 1007, 1008): not judged")
            continue
        vals = run.gflops.get((gpu, fid), [])
        while vals and vals[0] == 0:          # the first sample after start-up (DCGM issue 239: 0.0 then 12238)
            vals = vals[1:]
        why = ""
        if not run.gflops.get((gpu, fid)):
            why = (f"not measured: dcgmproftester printed no figure for test {fid} "
                   f"({run.lines_without_figure.get((gpu, fid), 0)} lines without one; DCGM 4.x prints gflops only "
                   "with --cublas: NVIDIA/DCGM issue 239)")
        elif not vals:
            why = f"not measured: 0 gflops in every line of test {fid}"
        s = stable([v / 1000.0 for v in vals], "lines") if vals else None
        rep.measurements.append(Measurement("dcgmproftester", metric, None if why else round(s.value, 3), "TFLOPS",
                                            "gpu", gpu, engine="sm", source=f"dcgmproftester -t {fid}", why=why,
                                            samples=s.samples if s else (), unstable=s.unstable if s else "",
                                            note=s.note if s else ""))
        if run.verdicts.get((gpu, fid)) == "FAILED":
            rep.notes.append(f"dcgmproftester says test {fid} FAILED on GPU {gpu} (its profiling-counter check)")
    if run.bad:
        rep.notes.append(f"lines dropped: {run.bad[0]}")
    return rep
