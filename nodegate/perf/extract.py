"""Tool output -> ``ToolReport`` (model.py): which figure each test of each tool is, per GPU,
link or HCA. Pure; raises nothing for bad output (the report's ``invalid`` says why).

``extract(tool, text, hca=None)`` dispatches on the tool name (the bundle key's second part).
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..parsers.perf_dcgmi import parse_dcgmi
from ..parsers.perf_gpu_burn import parse_gpu_burn
from ..parsers.perf_ib_write_bw import parse_ib_write_bw
from ..parsers.perf_json import parse_perf_json
from ..parsers.perf_nccl import parse_nccl
from ..parsers.perf_nvbandwidth import NvbRun, parse_nvbandwidth
from .model import DataError, Measurement, StatusResult, ToolReport

# nvbandwidth test names (NVIDIA/nvbandwidth testcases.h): direction, optional bidirectional,
# read/write for device-to-device, engine. Aggregates (all_to_host, one_to_all...) and latency
# are not per-GPU figures of the kinds judged here.
_NVB = re.compile(r"^(host_to_device|device_to_host|device_to_device)(_bidirectional)?_memcpy_(?:(read|write)_)?(ce|sm)$")
_METRIC = {"host_to_device": "h2d", "device_to_host": "d2h"}


def extract(tool: str, text: str, hca: str | None = None, op: str = "all_reduce") -> ToolReport:
    try:
        if tool == "nvbandwidth":
            return from_nvbandwidth(parse_nvbandwidth(text))
        if tool == "nccl":
            return from_nccl(text, op)
        if tool == "dcgmi":
            return from_dcgmi(text)
        if tool == "gpu_burn":
            return from_gpu_burn(text)
        if tool == "ib_write_bw":
            return from_ib_write_bw(text, hca)
        if tool in ("builtin", "command"):
            return parse_perf_json(text, tool)
    except ParseError as e:
        return ToolReport(tool, invalid=[f"{tool} output unparsable: {e}"])
    return ToolReport(tool, invalid=[f"unknown tool {tool!r}"])


def from_nvbandwidth(run: NvbRun) -> ToolReport:
    rep = ToolReport("nvbandwidth", info={"version": run.version, "devices": dict(run.devices), "format": run.fmt})
    n = len(run.devices) or None
    for t in run.tests:
        if t.status == "waived":
            rep.waived.append(t.name)
            continue
        if t.errors and not t.matrix or any("ASSERT" in e or "pattern" in e.lower() for e in t.errors):
            rep.errors.append(DataError("nvbandwidth", f"{t.name}: {'; '.join(t.errors)[:300]}"))
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
                    if i != j and v is not None:
                        rep.measurements.append(Measurement("nvbandwidth", f"p2p_{rw}", v, t.unit, "link", i, j,
                                                            engine=eng, direction=dirn, source=t.name))
            continue
        cols = len(t.matrix[0]) if t.matrix else 0
        if len(t.matrix) != 1 or (n is not None and cols != n):
            rep.invalid.append(f"{t.name}: {len(t.matrix)}x{cols} matrix where 1 CPU row x "
                               f"{n if n is not None else 'N'} GPU columns belong: inconsistent output")
            continue
        for g, v in enumerate(t.matrix[0]):
            if v is not None:
                rep.measurements.append(Measurement("nvbandwidth", _METRIC[where], v, t.unit, "gpu", g,
                                                    engine=eng, direction=dirn, source=t.name))
    if not run.tests:
        rep.invalid.append("nvbandwidth ran no test")
    return rep


def from_nccl(text: str, op: str = "all_reduce") -> ToolReport:
    run = parse_nccl(text)
    rep = ToolReport("nccl", info={"version": run.version, "nranks": run.nranks, "hosts": list(run.hosts),
                                   "avg_busbw": run.avg_busbw, "wrong_column": run.wrong_column})
    pl = run.plateau()
    if pl is None:
        rep.invalid.append("nccl-tests printed no result row")
        return rep
    size, busbw = pl
    rep.info["plateau_size_b"] = size
    rep.measurements.append(Measurement("nccl", f"{op.replace('_', '')}_busbw", busbw, "GB/s", "node",
                                        source=f"best bus bandwidth at {size} B (largest size run)"))
    wrong = run.wrong_total()
    if wrong:
        bad = [r.size_b for r in run.rows if (r.oop_wrong or 0) > 0 or (r.ip_wrong or 0) > 0]
        rep.errors.append(DataError("nccl", f"#wrong {wrong} (data corruption) at sizes {bad[:5]}"))
    elif wrong is None:
        rep.notes.append("correctness unverified: no #wrong count (validation off or pre-2.13 'error' N/A)")
    if run.oob_ok is False or (run.oob_values or 0) > 0:
        rep.errors.append(DataError("nccl", f"out of bounds values: {run.oob_values} FAILED"))
    if run.avg_busbw is None:
        rep.notes.append("no summary footer: output may be incomplete")
    return rep


def from_dcgmi(text: str) -> ToolReport:
    run = parse_dcgmi(text)
    rep = ToolReport("dcgmi", info={"layout": run.layout, "version": run.version, "gpu_count": run.gpu_count})
    for r in run.results:
        rep.statuses.append(StatusResult("dcgmi", r.gpu, r.test, r.status, tuple(r.messages)))
    if not run.results:
        rep.invalid.append("dcgmi diag reported no result")
    return rep


def from_gpu_burn(text: str) -> ToolReport:
    run = parse_gpu_burn(text)
    rep = ToolReport("gpu_burn", info={"records": run.records, "tested": run.tested, "percent": run.percent})
    if not run.records:
        rep.invalid.append("gpu_burn printed no progress record")
        return rep
    if run.tested is not None and run.tested != len(run.gflops):
        rep.invalid.append(f"gpu_burn tested {run.tested} GPUs but its progress lists {len(run.gflops)}")
    for g, gf in run.gflops.items():
        rep.measurements.append(Measurement("gpu_burn", "gflops", gf, "Gflop/s", "gpu", g, engine="sm",
                                            source="last complete progress record"))
        if run.errors.get(g, 0) != 0 or g in run.flags:
            rep.errors.append(DataError("gpu_burn", f"errors {run.errors.get(g)}"
                                        f"{' (' + run.flags[g] + '!)' if g in run.flags else ''}", g))
        v = run.verdicts.get(g)
        if v == "FAULTY":
            rep.errors.append(DataError("gpu_burn", "gpu_burn says FAULTY", g))
        elif gf <= 0:
            rep.statuses.append(StatusResult("gpu_burn", g, "gpu_burn", "fail",
                                             (f"gpu_burn says {v or 'nothing'} but measured 0 Gflop/s: the GPU "
                                              "never computed (init error)",)))
    return rep


def from_ib_write_bw(text: str, hca: str | None) -> ToolReport:
    run = parse_ib_write_bw(text)
    name = hca or run.device or "hca"
    rep = ToolReport("ib_write_bw", info={"device": run.device, "unit": run.unit, "link_type": run.link_type})
    big = run.largest()
    if big is None:
        rep.invalid.append(f"ib_write_bw on {name} printed no result row")
        return rep
    rep.measurements.append(Measurement("ib_write_bw", "ib_write_bw", big[1], "Gb/s", "hca", hca=name,
                                        direction="uni", source=f"BW average at {big[0]} B ({run.unit})"))
    return rep
