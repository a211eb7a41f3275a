"""Stash keys and per-session state shared by the nodegate.session modules and the plugins."""

from __future__ import annotations

import pytest

from ..dotted import spec_get  # noqa: F401  (state.spec_get: its callers)

#: NodeJobs built at configure time (nodegate.session.jobs.run_jobs); the burn-in plugin reads them
JOBS_KEY = pytest.StashKey[list]()
#: whether this pytest run is a nodegate run (suites/ targeted, or --inventory/--target/--replay)
ACTIVE_KEY = pytest.StashKey[bool]()
#: the --limit parts ansible-core matched to nothing: lines said on the terminal, lines to say
#: once it exists (nodegate.session.terminal.limit_warnings)
LIMIT_SAID_KEY = pytest.StashKey[dict]()
#: the report info dict of an evaluated item (nodegate.session.verdicts.evaluate)
RESULT_KEY = pytest.StashKey[dict]()
#: an item's presenter, ``present(item, report, call) -> report``: what a phase's item (burn-in,
#: perf, cross-node, site) adds to each of its phase reports (``report.nodegate``, pytest-html
#: extras). nodegate's one ``pytest_runtest_makereport`` wrapper calls it: one wrapper for every
#: item instead of one per phase plugin (~4 % of a 256-node replay's CPU, docs/performance.md)
PRESENT_KEY = pytest.StashKey[object]()
#: why the background gather itself stopped (not a node problem), shown at session finish
GATHER_FAILED_KEY = pytest.StashKey[str]()
#: nodeid -> inventory node of every nodegate item (collection)
ITEM_NODE_KEY = pytest.StashKey[dict]()
#: nodeids of the node_identity items (run last; one progress line for all of them)
IDENTITY_ITEMS_KEY = pytest.StashKey[set]()
#: per-run cache of GPU identities and driver versions (verdicts.node_cache)
IDENT_KEY = pytest.StashKey[dict]()
#: the nodegate.inventory.Inventory of --inventory (jobs.build_jobs), for the other plugins
INVENTORY_KEY = pytest.StashKey[object]()
#: NodeJobs of a live run whose gathering waits for the selection (selection.after_collection)
PENDING_JOBS_KEY = pytest.StashKey[list]()
#: set in selection.preselect's child: its collection contacts and waits for nothing
PRESELECT_KEY = pytest.StashKey[bool]()
#: node -> items collected for it before any deselection (the reports' node status)
COLLECTED_KEY = pytest.StashKey[dict]()
#: where nodegate writes its own JUnit and HTML (it takes over --junitxml and --html):
#: {"junit": path or None, "html": path or None}
REPORT_PATHS_KEY = pytest.StashKey[dict]()

#: a collection (a shard's) selected a nodegate item (a sharded run says "nothing selected" at the end)
ANY_SELECTED_KEY = pytest.StashKey[bool]()

#: the run stopped with exit 2 before any check ran (nothing selected): no report is written, so
#: the previous run's reports stay as they were
NO_RUN_KEY = pytest.StashKey[str]()

#: Exit codes documented for CI (README "Exit codes").
EXIT_SPEC_ERROR = 2

#: the session's config for hooks that are not given one (pytest_runtest_logstart/logfinish)
CONFIG: list = [None]


def is_active(config) -> bool:
    return bool(config.stash.get(ACTIVE_KEY, False))


def uses_xdist(config) -> bool:
    """pytest-xdist distributes this run (controller or worker)."""
    o = config.option
    return bool(hasattr(config, "workerinput") or getattr(o, "numprocesses", None)
                or getattr(o, "dist", "no") not in ("no", None))
