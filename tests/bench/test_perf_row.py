"""The --perf row of make bench (bench/perf_row.py): the tools' run time read from the bundles'
perf.run records, the overhead arithmetic, and a smoke run on a 2-node simulated perf fleet that
produces the row with its labelled columns."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from bench import perf_row
from nodegate.bundle import Bundle, Evidence
from tools.fleet import sshd_available

from .helpers import ROOT


def _bundle(root, node: str, timing: dict | None, events: list | None = None) -> None:
    items = {"probe.x": Evidence("probe.x", b"x\n", b"", 0)}
    if timing is not None:
        run = {"node": node, "status": "ok", "timing": timing, "events": events or []}
        items["perf.run"] = Evidence("perf.run", json.dumps(run).encode(), b"", 0)
    Bundle(node=node, items=items, meta={"node": node}).write(root)


def test_tools_seconds_sums_the_tool_keys_of_each_bundle(tmp_path):
    _bundle(tmp_path, "a", {"perf.nvbandwidth": {"duration_s": 1.5}, "perf.ib_write_bw.mlx5_0": {"duration_s": 0.5},
                            "perf.nvbandwidth.state": {"duration_s": 9.0}, "perf.tools": {"duration_s": 9.0},
                            "perf.nccl": {"duration_s": None}})
    # a frozen /proc/uptime (the simulated nodes'): the events' epochs carry the time when larger
    _bundle(tmp_path, "b", {"perf.nccl": {"duration_s": 2.25}, "perf.ib_write_bw.mlx5_0": {"duration_s": 0.0}},
            [{"name": "tool-start", "key": "perf.ib_write_bw.mlx5_0", "epoch": 100},
             {"name": "tool-exit", "key": "perf.ib_write_bw.mlx5_0", "epoch": 102},
             {"name": "tool-start", "key": "perf.nccl", "epoch": 102}, {"name": "tool-exit", "key": "perf.nccl",
                                                                      "epoch": 103}])
    _bundle(tmp_path, "c", None)   # no perf phase: left out
    (tmp_path / "not-a-bundle.txt").write_text("x")
    assert perf_row.tools_seconds(tmp_path) == {"a": 2.0, "b": 4.25}
    # the phase over the fleet: first script start to last end
    _bundle(tmp_path, "d", {}, [{"name": "start", "epoch": 99}, {"name": "end", "epoch": 110}])
    _bundle(tmp_path, "e", {}, [{"name": "start", "epoch": 101}, {"name": "end", "epoch": 104}])
    assert perf_row.phase_span_s(tmp_path) == 11.0


def test_overhead_is_beyond_the_tools_run_time_as_the_fleet_spends_it():
    per_node = {f"n{i}": 80.0 for i in range(64)}
    o = perf_row.overhead(40.0, 212.0, per_node, forks=32)
    # 64 nodes x 80 s, 32 at once: 160 s of wall time are the tools'; 212 - 40 - 160 = 12 s beyond
    assert o["perf_tools_node_s"] == 5120.0 and o["perf_tools_max_node_s"] == 80.0
    assert o["perf_tools_wall_s"] == 160.0 and o["perf_overhead_s"] == 12.0
    # the criterion: % of the tools' run time (12 / 160); also % of the run without --perf (12 / 40)
    assert o["perf_overhead_tools_pct"] == 7.5 and o["perf_overhead_base_pct"] == 30.0
    assert o["perf_target_pct"] == 10.0 and o["perf_meets_target"] is True
    # 64 forks: every node at once, the tools' wall is the longest node's
    o = perf_row.overhead(40.0, 212.0, per_node, forks=64)
    assert o["perf_tools_wall_s"] == 80.0 and o["perf_overhead_s"] == 92.0
    assert o["perf_overhead_tools_pct"] == 115.0 and o["perf_meets_target"] is False
    # one slow node: the fleet waits for it
    o = perf_row.overhead(100.0, 120.0, {"a": 30.0, "b": 1.0}, forks=32)
    assert o["perf_tools_wall_s"] == 30.0 and o["perf_overhead_s"] == -10.0
    assert o["perf_overhead_tools_pct"] == -33.3 and o["perf_overhead_base_pct"] == -10.0
    # no tool time measured: no percentage of it, and no claim of meeting the target
    o = perf_row.overhead(10.0, 11.0, {}, forks=32)
    assert o["perf_overhead_tools_pct"] is None and o["perf_meets_target"] is False


def test_perf_profile_uses_the_spec_defaults_and_real_tool_times_unless_told():
    from nodegate.perf.spec import load_perf_spec
    from tools.fleet.perf import TOOL_SECONDS
    p = perf_row.perf_profile()
    spec = load_perf_spec(p.data["spec"]["perf"])
    assert spec.gpu_burn_seconds == 60 and spec.timeout_s == 900      # the spec's defaults
    assert "tool_seconds" not in p.data["perf"] and TOOL_SECONDS["gpu_burn"] == "arg"
    p = perf_row.perf_profile(gpu_burn_seconds=5, tool_seconds=0.5)
    assert p.data["spec"]["perf"]["gpu_burn_seconds"] == 5
    assert p.data["perf"]["tool_seconds"] == {"nvbandwidth": 0.5, "all_reduce_perf": 0.5, "ib_write_bw": 0.5}


def test_perf_table_labels_every_column():
    row = {c: 1 for c in perf_row.PERF_COLUMNS}
    t = perf_row.perf_table(row)
    assert t.startswith("--perf at 1 nodes")
    for label in ("wall without --perf (s)", "wall with --perf (s)", "tools' own run time, all nodes (s)",
                  "tools' run time as the fleet spends it (s)", "overhead beyond the tools (s)",
                  "overhead (% of the tools' run time) [criterion]", "overhead (% of the run without --perf)",
                  "gpu_burn duration asked (s)"):
        assert label in t
    assert set(perf_row.PERF_COLUMNS) - {"perf_nodes", "perf_target_pct"} <= set(perf_row.LABELS)


NEEDS = sshd_available() or (None if importlib.util.find_spec("tools.fleet.perf_profiles")
                             else "tools/fleet/perf_profiles.py (the perf shims) not in this checkout")


@pytest.mark.skipif(NEEDS is not None, reason=f"simulated perf fleet unavailable: {NEEDS}")
def test_perf_row_smoke_on_two_nodes(tmp_path):
    out = tmp_path / "bench.json"
    # short tools (gpu_burn the spec's minimum, 5 s; the others 0.5 s): the row's plumbing, not its figures
    r = subprocess.run([sys.executable, "bench/run.py", "--sizes", "2", "--perf-only", "--out", str(out),
                        "--perf-gpu-burn-seconds", "5", "--perf-tool-seconds", "0.5"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert len(rows) == 1
    row = rows[0]
    for c in perf_row.PERF_COLUMNS:
        assert c in row, c
    assert row["perf_nodes"] == 2 and row["perf_nodes_with_timing"] == 2
    assert row["perf_items"] > row["perf_base_items"] > 0
    # each node ran gpu_burn 5 s, nvbandwidth and all_reduce_perf 0.5 s, ib_write_bw 0.5 s on each of 2
    # HCAs (the nodes' epoch clocks: 1 s resolution)
    assert row["perf_gpu_burn_seconds"] == 5 and row["perf_tool_seconds"] == 0.5
    # gpu_burn's 5 s and ib_write_bw's 2 s spans (the loopback pair's set-up) at least
    assert row["perf_tools_max_node_s"] >= 9 and row["perf_phase_wall_s"] >= row["perf_tools_max_node_s"]
    assert "perf_beyond_phase_pct" in row and "perf_overhead_tools_pct" in row
    assert row["perf_exec_channels_per_node"] == 2          # the probe's exec and the perf phase's
    assert "overhead (% of the tools' run time) [criterion]" in r.stdout and "wall with --perf (s)" in r.stdout
