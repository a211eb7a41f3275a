"""Shared by tests/bench: run the suite in a child pytest, read JUnit without timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import defusedxml.ElementTree as DET

ROOT = Path(__file__).resolve().parents[2]


def run_suite(*args: str, reports: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m pytest suites ARGS --reports-dir REPORTS`` from the repository root."""
    argv = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", *args,
            "--reports-dir", str(reports)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def junit_cases(path: Path) -> dict[str, dict]:
    """{classname::name: {"outcome", "message", "properties"}} of a JUnit file; times, hostnames and
    timestamps left out. A name seen twice (teardown error after a call) keeps both, worst outcome."""
    rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
    out: dict[str, dict] = {}
    for tc in DET.parse(path).getroot().iter("testcase"):
        tags = {c.tag: c for c in tc}
        o = ("error" if "error" in tags else "fail" if "failure" in tags else
             "skip" if "skipped" in tags else "pass")
        el = next((tags[t] for t in ("error", "failure", "skipped") if t in tags), None)
        props = [(p.get("name"), p.get("value")) for p in tc.iter("property")]
        key = f"{tc.get('classname')}::{tc.get('name')}"
        case = {"outcome": o, "message": el.get("message") if el is not None else None, "properties": props}
        if key not in out or rank[o] > rank[out[key]["outcome"]]:
            out[key] = case
    return out


def outcomes(cases: dict[str, dict]) -> dict[str, str]:
    return {k: v["outcome"] for k, v in cases.items()}
