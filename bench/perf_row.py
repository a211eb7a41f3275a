"""The ``--perf`` row of ``make bench`` (issue 29 "Performance": "64 simulated nodes, wall time
against the same run without ``--perf`` (the judging and reports must add under 10 % beyond the
tools' own run time)"): the same nodegate run on the same simulated fleet with and without
``--perf``, and what ``--perf`` costs beyond the tools' own run time.

The fleet: ``PERF_AT`` (64) copies of tools/fleet's ``perf-healthy`` profile (8x H200 with the
nvbandwidth, all_reduce_perf, gpu_burn and ib_write_bw shims: tools/fleet/perf.py) as
``perf_profile`` sets it: the spec's default durations (gpu_burn 60 s) and shims that take the real
tools' time (``TOOL_SECONDS`` there: gpu_burn the seconds on its command line, all_reduce_perf 10 s,
nvbandwidth 5 s, ib_write_bw 2 s per HCA; sleeping, not burning CPU), unless bench/run.py's
``--perf-gpu-burn-seconds`` / ``--perf-tool-seconds`` say otherwise. Both runs are ``pytest
suites`` with the same options (``--bundles-dir`` too); the second adds ``--perf``.

Columns (``PERF_COLUMNS``; ``LABELS`` says each in the printed table):

- ``perf_gpu_burn_seconds``, ``perf_tool_seconds``: the durations the shims were given;
- ``perf_base_wall_s``: the run without ``--perf``; ``perf_wall_s``: the run with it;
- ``perf_tools_node_s``: the tools' own run time summed over the nodes, from every bundle's
  ``perf.run`` record (``tools_seconds``); ``perf_tools_max_node_s``: the longest node's;
- ``perf_tools_wall_s``: that time as the fleet spends it, ``forks`` nodes at once:
  ``max(perf_tools_max_node_s, perf_tools_node_s / min(forks, nodes))``;
- ``perf_overhead_s`` = ``perf_wall_s - perf_base_wall_s - perf_tools_wall_s``: everything else
  ``--perf`` adds (the phase's second SSH exec per node and its state sampling, the gather no longer
  overlapping the tests, the judging: parsers, rules, fleet statistics; the extra items; the
  reports: tables, charts);
- ``perf_overhead_tools_pct``: that over ``perf_tools_wall_s`` (the criterion: under
  ``TARGET_PCT``, 10 %; ``perf_meets_target``); ``perf_overhead_base_pct``: the same seconds over
  ``perf_base_wall_s``;
- ``perf_phase_wall_s``: the perf phase as the fleet spent it (``phase_span_s``: first node's script
  start to the last one's end), and ``perf_beyond_phase_s`` / ``_tools_pct`` / ``_pct``: what
  ``--perf`` adds beyond that whole phase (judging, the extra items, the reports, and the gather
  no longer overlapping the tests: with ``--perf`` every node is gathered and measured before the
  items run, since the fleet rule needs every node), in seconds, % of the tools' run time and % of
  the run without ``--perf``.

The benchmark reports; it does not gate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

PERF_PROFILE = "perf-healthy"
PERF_AT = 64
TARGET_PCT = 10.0

PERF_COLUMNS = ("perf_nodes", "perf_gpu_burn_seconds", "perf_tool_seconds", "perf_base_wall_s", "perf_wall_s",
                "perf_tools_node_s", "perf_tools_max_node_s", "perf_tools_wall_s", "perf_overhead_s",
                "perf_overhead_tools_pct", "perf_overhead_base_pct", "perf_target_pct", "perf_meets_target",
                "perf_items", "perf_base_items")


def tools_seconds(bundles_dir: Path) -> dict[str, float]:
    """Node -> the tools' own run time in seconds, read from every bundle under ``bundles_dir``
    (nodegate.bundle.Bundle; a node without ``perf.run`` is left out): per tool key (``perf.<tool>``,
    ``perf.ib_write_bw.<hca>``; not the state sampling), ``timing[<key>].duration_s`` (the node's
    uptime from the tool's start to its exit, nodegate.perf.runner), or, when larger, the epoch
    seconds between its ``tool-start`` and ``tool-exit`` events: the simulated nodes' /proc/uptime
    is a fixed file (tools/fleet), so there the events' epochs (1 s resolution) carry the time."""
    from nodegate.bundle import Bundle
    out: dict[str, float] = {}
    for d in sorted(p for p in Path(bundles_dir).iterdir() if p.is_dir() and not p.is_symlink()):
        b = Bundle.load(d, root=Path(bundles_dir), only=("perf.run",))
        if not b.has("perf.run"):
            continue
        try:
            run = json.loads(b.text("perf.run"))
            timing = run.get("timing") or {}
            events = run.get("events") or []
        except (ValueError, AttributeError):
            continue
        starts, spans = {}, {}
        for e in events if isinstance(events, list) else []:
            if isinstance(e, dict) and isinstance(e.get("epoch"), (int, float)):
                if e.get("name") == "tool-start":
                    starts[e.get("key")] = e["epoch"]
                elif e.get("name") == "tool-exit" and e.get("key") in starts:
                    spans[e.get("key")] = e["epoch"] - starts[e.get("key")]
        total = 0.0
        for key in set(timing) | set(spans):
            if not isinstance(key, str) or key in ("perf.run", "perf.tools") or key.endswith(".state"):
                continue
            t = timing.get(key)
            v = t.get("duration_s") if isinstance(t, dict) else None
            total += max(float(v) if isinstance(v, (int, float)) else 0.0, float(spans.get(key, 0.0)))
        out[b.node] = round(total, 3)
    return out


def phase_span_s(bundles_dir: Path) -> float | None:
    """Seconds from the first node's perf script ``start`` event to the last node's ``end`` (the
    nodes' epoch clocks, 1 s resolution): the perf phase as the fleet spent it (the one exec per
    node: SSH, the tools, the state sampling). None without a bundle that says."""
    from nodegate.bundle import Bundle
    first, last = None, None
    for d in sorted(p for p in Path(bundles_dir).iterdir() if p.is_dir() and not p.is_symlink()):
        b = Bundle.load(d, root=Path(bundles_dir), only=("perf.run",))
        if not b.has("perf.run"):
            continue
        try:
            events = json.loads(b.text("perf.run")).get("events") or []
        except (ValueError, AttributeError):
            continue
        for e in events if isinstance(events, list) else []:
            if isinstance(e, dict) and isinstance(e.get("epoch"), (int, float)):
                if e.get("name") == "start":
                    first = e["epoch"] if first is None else min(first, e["epoch"])
                elif e.get("name") == "end":
                    last = e["epoch"] if last is None else max(last, e["epoch"])
    return float(last - first) if first is not None and last is not None else None


def overhead(base_wall_s: float, perf_wall_s: float, per_node_tools_s: dict[str, float], forks: int) -> dict:
    """The row's derived columns (see the module docstring): the tools' run time as the fleet spends
    it, the overhead beyond it in seconds, and that overhead as % of the tools' run time (the
    criterion, target under ``TARGET_PCT``) and as % of the run without ``--perf``."""
    n = max(1, len(per_node_tools_s))
    total = sum(per_node_tools_s.values())
    longest = max(per_node_tools_s.values(), default=0.0)
    tools_wall = max(longest, total / min(max(1, forks), n))
    over = perf_wall_s - base_wall_s - tools_wall
    pct_tools = round(100.0 * over / tools_wall, 1) if tools_wall > 0 else None
    return {"perf_tools_node_s": round(total, 2), "perf_tools_max_node_s": round(longest, 2),
            "perf_tools_wall_s": round(tools_wall, 2), "perf_overhead_s": round(over, 2),
            "perf_overhead_tools_pct": pct_tools,
            "perf_overhead_base_pct": round(100.0 * over / base_wall_s, 1) if base_wall_s > 0 else None,
            "perf_target_pct": TARGET_PCT,
            "perf_meets_target": pct_tools is not None and pct_tools < TARGET_PCT}


#: spec keys of the test profiles that shorten the perf phase (tools/fleet/profiles/perf/_perf-h200.yaml);
#: the row drops them, so its nodes run with the spec's defaults (nodegate/perf/spec.py: gpu_burn 60 s,
#: 900 s deadline per test, samples every 2 s, 5 s stop grace)
SHORTENED = ("gpu_burn_seconds", "timeout_s", "interval_s", "stop_grace_s")


def perf_profile(gpu_burn_seconds: int | None = None, tool_seconds: float | None = None):
    """``PERF_PROFILE`` as the row runs it: the spec's default durations (``SHORTENED`` dropped) and
    the shims' real run times (tools/fleet/perf.py ``TOOL_SECONDS``), unless ``gpu_burn_seconds``
    (the spec's ``perf.gpu_burn_seconds``: the gpu_burn shim runs that long) or ``tool_seconds``
    (every other shim's run time) say otherwise (the smoke test's short run)."""
    import copy
    from tools.fleet.perf_profiles import load_perf_profiles
    from tools.fleet.profile import Profile
    p = load_perf_profiles()[PERF_PROFILE]
    data = copy.deepcopy(p.data)
    perf_spec = {k: v for k, v in ((data.get("spec") or {}).get("perf") or {}).items() if k not in SHORTENED}
    if gpu_burn_seconds is not None:
        perf_spec["gpu_burn_seconds"] = int(gpu_burn_seconds)
    data.setdefault("spec", {})["perf"] = perf_spec
    perf = dict(data.get("perf") or {})
    perf.pop("tool_seconds", None)
    if tool_seconds is not None:
        perf["tool_seconds"] = {t: float(tool_seconds) for t in ("nvbandwidth", "all_reduce_perf", "ib_write_bw")}
    data["perf"] = perf
    return Profile(p.name, data, p.chain)


def perf_fleet(n: int, run_id: str, gpu_burn_seconds: int | None = None, tool_seconds: float | None = None):
    """A tools.fleet.Fleet of ``n`` copies of ``perf_profile(...)`` (not started)."""
    from tools.fleet import Fleet
    f = Fleet(run_id=run_id)
    f.add_copies(perf_profile(gpu_burn_seconds, tool_seconds), n, prefix=f"p{n}")
    return f


def run_perf_row(fleet, n: int, work: Path, forks: int, run_nodegate: Callable,
                 gpu_burn_seconds: int | None = None, tool_seconds: float | None = None) -> dict:
    """Both runs on ``fleet`` of ``n`` nodes (``run_nodegate(fleet, work, forks, extra)`` of
    bench/run.py) and the row; ``gpu_burn_seconds`` / ``tool_seconds``: what ``perf_fleet`` was
    given (recorded in the row; None: the spec's default / the shims' real run times)."""
    base = run_nodegate(fleet, work / "no-perf", forks, ["--bundles-dir", str(work / "no-perf" / "bundles")])
    bundles = work / "perf" / "bundles"
    perf = run_nodegate(fleet, work / "perf", forks, ["--perf", "--bundles-dir", str(bundles)])
    for what, r in (("without --perf", base), ("with --perf", perf)):
        if r["rc"] not in (0, 1) or not r["pytest_items"]:
            raise RuntimeError(f"nodegate {what}: rc {r['rc']}\n{r['output'][-4000:]}")
    per_node = tools_seconds(bundles) if bundles.is_dir() else {}
    from nodegate.perf.spec import PerfSpec
    row = {"perf_nodes": n, "perf_base_wall_s": base["wall_s"],
           "perf_gpu_burn_seconds": gpu_burn_seconds if gpu_burn_seconds is not None
           else PerfSpec().gpu_burn_seconds,
           "perf_tool_seconds": tool_seconds if tool_seconds is not None else "real (tools/fleet/perf.py TOOL_SECONDS)",
           "perf_wall_s": perf["wall_s"], "perf_items": perf["pytest_items"], "perf_base_items": base["pytest_items"],
           "perf_outcomes": perf["outcomes"], "perf_base_outcomes": base["outcomes"],
           "perf_nodes_with_timing": len(per_node), "perf_cpu_s": perf["cpu_s"], "perf_base_cpu_s": base["cpu_s"],
           "perf_exec_channels_per_node": perf["exec_channels_per_node"],
           "perf_phases": perf["phases"], "perf_base_phases": base["phases"]}
    row.update(overhead(base["wall_s"], perf["wall_s"], per_node, forks))
    span = phase_span_s(bundles) if bundles.is_dir() else None
    row["perf_phase_wall_s"] = span
    if span is not None:
        # what is left when the whole phase (SSH, script, sampling) is taken off: judging, items, reports
        rest = perf["wall_s"] - base["wall_s"] - span
        row["perf_beyond_phase_s"] = round(rest, 2)
        row["perf_beyond_phase_pct"] = round(100.0 * rest / base["wall_s"], 1) if base["wall_s"] > 0 else None
        row["perf_beyond_phase_tools_pct"] = (round(100.0 * rest / row["perf_tools_wall_s"], 1)
                                              if row["perf_tools_wall_s"] > 0 else None)
    return row


#: every column perf_table prints, with what it is
LABELS = {"perf_gpu_burn_seconds": "gpu_burn duration asked (s)",
          "perf_tool_seconds": "other shims' run time (s)",
          "perf_base_wall_s": "wall without --perf (s)", "perf_wall_s": "wall with --perf (s)",
          "perf_tools_node_s": "tools' own run time, all nodes (s)",
          "perf_tools_max_node_s": "tools' own run time, longest node (s)",
          "perf_tools_wall_s": "tools' run time as the fleet spends it (s)",
          "perf_overhead_s": "overhead beyond the tools (s)",
          "perf_overhead_tools_pct": "overhead (% of the tools' run time) [criterion]",
          "perf_overhead_base_pct": "overhead (% of the run without --perf)",
          "perf_meets_target": "under the target",
          "perf_phase_wall_s": "perf phase, first start to last end (s)",
          "perf_beyond_phase_s": "beyond the whole phase (s)",
          "perf_beyond_phase_tools_pct": "beyond the whole phase (% of the tools' run time)",
          "perf_beyond_phase_pct": "beyond the whole phase (% of the run without --perf)",
          "perf_items": "items with --perf", "perf_base_items": "items without --perf"}


def perf_table(r: dict) -> str:
    """The row, one labelled line per column."""
    out = [f"--perf at {r['perf_nodes']} nodes (target: overhead under {r['perf_target_pct']:g} % of the tools' "
           "own run time, beyond that run time):"]
    for k, label in LABELS.items():
        out.append(f"  {label:<52} {r.get(k, '')}")
    return "\n".join(out)
