"""Which shards a large run is collected and run in (the plan only; the loop that runs them is
nodegate.session.shards).

Imports only ``state``: the selection (``selection``, ``preselect``), the GC schedule
(``gcsched``) and the session start (``start``) ask "is this run sharded?" here, and nothing
here asks them anything back (one direction of imports: docs/contributing.md).
"""

from __future__ import annotations

import pytest

from .state import ACTIVE_KEY, uses_xdist

#: 4,096 nodes: 461 s at 16 against 485 s at 64 (each shard's items and the objects of its
#: collection are fewer: the cyclic GC at its end and the heap stay smaller); 1,024 nodes: 683 MB
#: peak RSS at 64, 868 MB at 256 (docs/performance.md "4,096 nodes")
DEFAULT_SHARD_NODES = 16
SHARDS_KEY = pytest.StashKey[list]()
#: ``session.testsfailed`` when the collection now in progress began: a shard's collection errors
#: are the failures counted since, never the FAILs of the shards that ran before it (issue 30)
FAILED_BEFORE_KEY = pytest.StashKey[int]()

#: options that select or order over the whole collection (cacheprovider, stepwise)
_WHOLE_RUN_OPTIONS = ("lf", "failedfirst", "newfirst", "stepwise", "stepwise_skip")


def plan(config, run) -> list[list[str]] | None:
    """The shards of this run (lists of node names), or None when it runs unsharded."""
    if not config.stash.get(ACTIVE_KEY, False) or run is None or not run.streaming:
        return None
    if uses_xdist(config):
        return None   # xdist: every worker collects the whole run (each streams its own nodes)
    size = int(getattr(config.option, "shard_nodes", DEFAULT_SHARD_NODES) or 0)
    nodes = run.all_nodes
    if size <= 0 or len(nodes) <= size:
        return None
    if any(getattr(config.option, o, False) for o in _WHOLE_RUN_OPTIONS):
        return None
    return [nodes[i:i + size] for i in range(0, len(nodes), size)]


def start(config, run) -> None:
    """pytest_sessionstart (after the FleetRun exists): plan the shards; pytest's collection then
    collects the first one."""
    shards = plan(config, run)
    if shards:
        config.stash[SHARDS_KEY] = shards
        run.shard = shards[0]


def active(config) -> bool:
    return bool(config.stash.get(SHARDS_KEY, None))


def collection_errors(session) -> int:
    """Errors of the collection now in progress (or just finished): ``session.testsfailed`` counts
    every FAIL of the run so far, and in a sharded run the earlier shards' FAILs with them."""
    return max(0, int(session.testsfailed) - int(session.config.stash.get(FAILED_BEFORE_KEY, 0)))
