"""What every bench runner shares: the child environment, the timing plugin's phases, the machine.

bench/run.py, bench/scale.py and bench/paired.py import this module; run.py imports the other
two, so nothing here imports run.py (issue 40: bench/run <-> scale <-> paired was a cycle).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _env(timing: Path | None = None) -> dict:
    """Child environment: bench/ on the path for timing_plugin; bytecode caching ON even where the
    caller's environment disables it (PYTHONDONTWRITEBYTECODE makes pytest re-rewrite the asserts
    of every suite and plugin module on every run, ~1 s that an operator's machine does not pay)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if timing is not None:
        env["NODEGATE_BENCH_TIMING"] = str(timing)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "bench"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _phases(timing: Path, started: float) -> dict:
    """Phase durations from bench/timing_plugin.py: wall ``<phase>_s`` and the controller's CPU
    ``<phase>_cpu_s`` (startup: interpreter, imports, configure; gather: pytest_sessionstart;
    collect; tests: every item's setup/call/teardown and per-item report hooks; report:
    pytest_sessionfinish, where pytest-html, JUnit and RMA files are written; exit: unconfigure).
    The gathering runs in a child process alongside collection and the tests: its CPU is not in
    these (it is in the run's ``cpu_s``); ``all_gathered_s``: when its last node arrived."""
    try:
        t = json.loads(timing.read_text())
    except (OSError, ValueError):
        return {}
    spans = {"gather": ("sessionstart", "gathered"), "collect": ("collect_start", "collected"),
             "tests": ("collected", "tests_done"), "report": ("tests_done", "reports_written"),
             "exit": ("reports_written", "unconfigure")}
    out = {"startup_s": round(t["t_sessionstart"] - started, 2), "startup_cpu_s": round(t["c_sessionstart"], 2)}
    for name, (a, b) in spans.items():
        out[f"{name}_s"] = round(t[f"t_{b}"] - t[f"t_{a}"], 2)
        out[f"{name}_cpu_s"] = round(t[f"c_{b}"] - t[f"c_{a}"], 2)
    if t.get("gather_s") is not None:
        # from the start of gathering to the last node in (tests run meanwhile unless --gather-first)
        out["all_gathered_s"] = t["gather_s"]
    return out


def machine() -> dict:
    cpu = ""
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), "")
    except OSError:
        pass
    mem = []
    try:   # MemTotal from /proc/meminfo: `free` (procps) is not on every machine
        kb = next(int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines()
                  if ln.startswith("MemTotal:"))
        mem = ["", f"MemTotal {kb / 1048576:.1f} GiB"]
    except (OSError, StopIteration, ValueError, IndexError):
        pass
    return {"nproc": os.cpu_count(), "cpu_model": cpu, "mem": mem[1] if len(mem) > 1 else "",
            "python": platform.python_version(), "kernel": platform.release(),
            "loadavg_at_start": os.getloadavg()}
