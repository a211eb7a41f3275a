"""pytest plugin used by bench/run.py: phase timestamps of one run, written as JSON.

Loaded with ``-p timing_plugin`` (bench/ on PYTHONPATH) and ``NODEGATE_BENCH_TIMING=<file>``.
Hook wrappers surround every implementation of a hook, whatever the registration order, so:
``t_sessionstart``/``t_gathered`` bracket pytest_sessionstart (nodegate gathers there),
``t_collect_start``/``t_collected`` bracket collection, ``t_tests_done``/``t_reports_written``
bracket pytest_sessionfinish (pytest-html, junitxml and nodegate's RMA files are written
there). Wall-clock ``time.time()`` so the parent can relate them to the process start.
``c_<phase>``: this process's CPU seconds (all threads) at the same points. Also the FleetRun's
``gather_s``, the number of items of the first collection (``items``; a sharded run collects one
shard at a time) and the items as pytest ran them (``run_items``: one per setup report, every
item has exactly one; ``run_passed``/``run_failed``/``run_skipped``/``run_errors``: each item
counted as pytest's summary line counts them). Counted, not listed:
O(1) memory at 4,096 nodes. Under xdist the controller receives every worker's reports.
"""

from __future__ import annotations

import json
import os
import time

import pytest

_T: dict = {}


def _mark(name: str) -> None:
    """Wall-clock timestamp ``t_<name>`` and this process's CPU seconds so far ``c_<name>``."""
    _T[f"t_{name}"] = time.time()
    _T[f"c_{name}"] = time.process_time()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _mark("configure")


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionstart(session):
    _mark("sessionstart")
    yield
    _mark("gathered")


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    _mark("collect_start")
    yield
    _mark("collected")
    _T["items"] = len(session.items)


_RUN = {"run_items": 0, "run_passed": 0, "run_failed": 0, "run_skipped": 0, "run_errors": 0}


def pytest_runtest_logreport(report):
    """One item: its setup report opens it (skipped at setup: a skip; failed: an error), its
    call report decides passed/failed/skipped; a failed teardown adds an error (the item then
    counts twice, as in pytest's summary line; ``run_items`` counts it once)."""
    if report.when == "setup":
        _RUN["run_items"] += 1
        if report.skipped:
            _RUN["run_skipped"] += 1
        elif report.failed:
            _RUN["run_errors"] += 1
    elif report.when == "call":
        key = {"passed": "run_passed", "failed": "run_failed", "skipped": "run_skipped"}[report.outcome]
        _RUN[key] += 1
    elif report.failed:   # teardown
        _RUN["run_errors"] += 1


@pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session, exitstatus):
    _mark("tests_done")
    try:
        from nodegate.run import RUN_KEY
        run = session.config.stash.get(RUN_KEY, None)
        if run is not None:
            _T["gather_s"] = run.gather_s
    except Exception:  # noqa: BLE001 - timing is best effort (the pytest floor has no nodegate)
        pass
    yield
    _mark("reports_written")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _mark("unconfigure")
    path = os.environ.get("NODEGATE_BENCH_TIMING")
    if path and not hasattr(config, "workerinput"):
        with open(path, "w") as fh:
            json.dump({**_T, **_RUN}, fh)
