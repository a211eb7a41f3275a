"""A pytest plugin for tests/hostile/test_baseline_memory.py: how many current nodes a run holds.

``NG_HELD_OUT=<file>``: after every item (``pytest_runtest_logfinish``) the number of nodes whose
Bundle is in memory (``FleetRun.bundles``) and, for ``--baseline``, of baseline bundles
(``BaselineRun.held``); at the end of the session their maxima and the number of items that ran
are written to the file as JSON. A count, not a timing: the bound of a streaming run is
``--shard-nodes`` current nodes, one baseline bundle."""

from __future__ import annotations

import json
import os

_SEEN = {"current": 0, "baseline": 0, "items": 0}


def _counts(config) -> tuple[int, int]:
    from nodegate.run import RUN_KEY
    run = config.stash.get(RUN_KEY, None)
    current = len(run.bundles) if run is not None else 0
    try:
        from nodegate.plugins.nodegate_baseline import BASELINE_KEY
        br = config.stash.get(BASELINE_KEY, None)
    except ImportError:
        br = None
    return current, (br.peak_held if br is not None else 0)


def pytest_configure(config):
    config.pluginmanager.register(_Held(config), "nodegate-held-counter")


class _Held:
    def __init__(self, config):
        self.config = config

    def pytest_runtest_logfinish(self, nodeid, location):  # noqa: ARG002
        current, baseline = _counts(self.config)
        _SEEN["current"] = max(_SEEN["current"], current)
        _SEEN["baseline"] = max(_SEEN["baseline"], baseline)
        _SEEN["items"] += 1

    def pytest_sessionfinish(self, session, exitstatus):  # noqa: ARG002
        out = os.environ.get("NG_HELD_OUT")
        if out and not hasattr(self.config, "workerinput"):
            with open(out, "w") as fh:
                json.dump(_SEEN, fh)
