"""Shared by tests/bench: run the suite in a child pytest, read JUnit without timings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def run_suite(*args: str, reports: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m pytest suites ARGS --reports-dir REPORTS`` from the repository root."""
    argv = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", *args,
            "--reports-dir", str(reports)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))


def junit_cases(path: Path) -> dict[str, dict]:
    """{classname::name: {"outcome", "message", "properties"}} per item of nodegate's JUnit file
    (tests/junit_view.py); a name seen twice (teardown error after a call) keeps the worst outcome."""
    from tests.junit_view import cases
    rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
    out: dict[str, dict] = {}
    for cls, name, o, msg, props in cases(path):
        key = f"{cls}::{name}"
        case = {"outcome": o, "message": msg, "properties": props}
        if key not in out or rank[o] > rank[out[key]["outcome"]]:
            out[key] = case
    return out


def outcomes(cases: dict[str, dict]) -> dict[str, str]:
    return {k: v["outcome"] for k, v in cases.items()}
