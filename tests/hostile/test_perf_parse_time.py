"""Perf and burn-in output parsers on one crafted line each: parsing time stays linear (nodegate's
rule: node output is parsed in linear time on every path). Each case took the old pattern from
tens of seconds to hours at these sizes (measured: nvbandwidth's Device line 13 s at 2,000 spaces,
cubic; nccl-tests' rank line 40 s at 140 kB; its nGpus line and gpu_burn's digit run quadratic);
the bound is far above what the linear code takes (milliseconds) on a loaded 2-core machine."""

from __future__ import annotations

import time

import pytest

from nodegate.parsers.perf_gpu_burn import parse_gpu_burn
from nodegate.parsers.perf_nccl import parse_nccl
from nodegate.parsers.perf_nvbandwidth import parse_nvbandwidth

BOUND_S = 2.0


@pytest.mark.parametrize("name,parse,text", [
    ("nvbandwidth device line with a run of spaces", parse_nvbandwidth, "Device 0: a" + " " * 20_000 + "b"),
    ("nccl-tests rank words", parse_nccl, "Rank 1 " * 40_000),
    ("nccl-tests rank words in a comment", parse_nccl, "# " + "Rank 1 device " * 40_000),
    ("nccl-tests nGpus words", parse_nccl, "# " + "nGpus 1 " * 40_000),
    ("gpu_burn digit run", parse_gpu_burn, "1.0%  proc'd: " + "1" * 200_000 + " errors: 0 temps: 1 C"),
])
def test_a_crafted_line_parses_in_linear_time(name, parse, text):
    t = time.process_time()
    try:
        parse(text)
    except Exception:  # noqa: BLE001 - a ParseError is an answer too; only the time is asserted
        pass
    assert time.process_time() - t < BOUND_S, name


def test_the_rewritten_readers_read_what_they_read_before():
    run = parse_nvbandwidth("Device 0: NVIDIA H100 80GB HBM3 (00000000:1b:00)\nDevice 1: x (1a) (0000:1b:00.0)\n"
                            "Device 2: plain name   \n")
    assert run.devices == {0: "NVIDIA H100 80GB HBM3", 1: "x (1a)", 2: "plain name"}
    nc = parse_nccl("# nThread 1 nGpus 8 minBytes 8 maxBytes 17179869184 step: 2(factor) warmup iters: 5 iters: 20 "
                    "agg iters: 1 validation: 1 graph: 0\n"
                    "#  Rank  0 Group  0 Pid 739794 on ip-10-1-2-3 device  0 [0x53] NVIDIA H100 80GB HBM3\n"
                    "#   Rank  1 Pid  6740 on host-b device  1 [0x64] NVIDIA H100 80GB HBM3\n")
    assert (nc.ngpus, nc.validation, nc.nranks, nc.rank_hosts) == (8, 1, 2, ["ip-10-1-2-3", "host-b"])
    gb = parse_gpu_burn("100.0%  proc'd: 6783 (16942 Gflop/s) - 6783 (17093 Gflop/s)   errors: 0 - 0   temps: 62 C - 59 C\n")
    assert gb.gflops == {0: 16942.0, 1: 17093.0} and gb.procd == {0: 6783, 1: 6783}
