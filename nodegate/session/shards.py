"""Large runs in shards of nodes: collect and run ``--shard-nodes`` nodes' items at a time.

pytest keeps every collected item until the session ends (~2.5 KB each: 120 items per 8-GPU
node, 490,000 at 4,096 nodes, measured in docs/performance.md "4,096 nodes"): a run over a whole
cluster would need ~1.2 GB for the items alone. With more nodes than ``--shard-nodes`` (default
16), the run is collected in shards of that many nodes (inventory order): pytest's own
collection collects the first shard (``FleetRun.nodes`` is the shard's nodes while its items are
parametrized), and nodegate's ``pytest_runtestloop`` runs its items, then collects the next shard
with ``Session.perform_collect()`` (public API) and runs it, dropping the previous shard's items.
``-k``, ``-m``, ``--deselect``, ``-x``/``--maxfail`` and ``--collect-only`` (which lists every
shard's items) work per shard as they do on the whole run; each shard's collection calls
``pytest_collection_modifyitems`` and ``pytest_collection_finish`` again, and the terminal's
progress percentage is an estimate until the last shard is in.

Not sharded: pytest-xdist (every worker collects the whole run), ``--lf``/``--ff``/``--nf``/
``--sw`` (they order or select over the whole collection) and ``--burn-in``
(not a streaming run: nodegate.cmdline.streaming). The selection (``selection``, ``preselect``), the
GC schedule (``memory``) and the session start (``start``) ask "is this run sharded?" here (``active``);
this module imports none of them.
"""

from __future__ import annotations

import gc

import pytest

from ..cmdline import why_nothing
from ..run import RUN_KEY
from .exitcodes import exit_nothing
from .state import ACTIVE_KEY, ANY_SELECTED_KEY, ITEM_NODE_KEY, uses_xdist

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


def _estimate_total(session, shards: list[list[str]], k: int, done: int) -> None:
    """``session.testscollected`` (the terminal's progress percentage): the items collected so
    far plus, for the shards still to come, this shard's items per node."""
    n = len(session.items)
    per_node = n / max(1, len(shards[k]))
    rest = sum(len(s) for s in shards[k + 1:])
    session.testscollected = done + n + int(per_node * rest)


def _drop_items(session, config) -> None:
    """The shard's items go: nothing of nodegate's refers to them any more, and their reference
    cycles (item <-> keywords, item <-> request) are collected with the objects made since the
    last freeze (what was frozen before, the earlier shards' reports, is not traversed again)."""
    session.items = []
    config.stash[ITEM_NODE_KEY] = {}
    gc.collect()
    gc.freeze()


def runtestloop(session) -> bool | None:
    """pytest_runtestloop for a sharded run (None: not sharded, pytest's own loop runs)."""
    config = session.config
    shards = config.stash.get(SHARDS_KEY, None)
    if not shards:
        return None
    if session.testsfailed and not config.option.continue_on_collection_errors:
        raise session.Interrupted(
            f"{session.testsfailed} error{'s' if session.testsfailed != 1 else ''} during collection")
    run = config.stash.get(RUN_KEY, None)
    from ..reports.live import count_progress_only
    count_progress_only(config)   # items are reported one after the other: their number, not ids
    done = 0
    # a later shard's nodes are "not collected" until their shard is: a run stopped before it
    # (-x, --maxfail, an interrupt) never says they were deselected (FleetRun.not_evaluated)
    run.not_collected = {n for s in shards[1:] for n in s}
    try:
        for k, shard in enumerate(shards):
            if k:
                _drop_items(session, config)
                run.shard = shard
                run.not_collected.difference_update(shard)
                failed = session.testsfailed
                config.stash[FAILED_BEFORE_KEY] = failed   # selection.after_collection: this shard's errors
                session.perform_collect()
                if session.testsfailed > failed and not config.option.continue_on_collection_errors:
                    raise session.Interrupted(f"{session.testsfailed - failed} error(s) during collection "
                                              f"of nodes {shard[0]} .. {shard[-1]}")
            _estimate_total(session, shards, k, done)
            done += len(session.items)
            if not config.option.collectonly:
                _run(session)
        session.testscollected = done
    finally:
        run.shard = None
    if not config.stash.get(ANY_SELECTED_KEY, False):
        # no shard selected a nodegate check (a live run learned it before gathering: preselect)
        exit_nothing(config, why_nothing(config.option, None))
    return True


def _run(session) -> None:
    """pytest's own loop over the shard's items (main.pytest_runtestloop)."""
    items = session.items
    for i, item in enumerate(items):
        nextitem = items[i + 1] if i + 1 < len(items) else None
        item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        if session.shouldfail:
            raise session.Failed(session.shouldfail)
        if session.shouldstop:
            raise session.Interrupted(session.shouldstop)
