"""pytest plugin used by bench/run.py: phase timestamps of one run, written as JSON.

Loaded with ``-p timing_plugin`` (bench/ on PYTHONPATH) and ``NODEGATE_BENCH_TIMING=<file>``.
Hook wrappers surround every implementation of a hook, whatever the registration order, so:
``t_sessionstart``/``t_gathered`` bracket pytest_sessionstart (nodegate gathers there),
``t_collect_start``/``t_collected`` bracket collection, ``t_tests_done``/``t_reports_written``
bracket pytest_sessionfinish (pytest-html, junitxml and nodegate's RMA files are written
there). Wall-clock ``time.time()`` so the parent can relate them to the process start.
``c_<phase>``: this process's CPU seconds (all threads) at the same points. Also the FleetRun's ``gather_s`` and the number of collected items.
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
            json.dump(_T, fh)
