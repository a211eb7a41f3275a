"""Bounded memory while the items run: a node's evidence released after its last item, and the
run's cyclic-GC schedule (docs/performance.md "What still pays": both measured again on a
1,024-node replay, issue 40.4; tests/core/test_gc_schedule.py).

Release: items run node by node (``items.order_items``); when the next item belongs to another
node (or there is none), the node's Bundle and NodeFacts are dropped after the item's last report
(``FleetRun.release``, a streaming run only) with the node's entries of the per-run cache. A node
asked for again later is read again from its bundle.

GC schedule: what exists once the run is collected (bundles, facts, items) lives to its end and is
frozen (``gc.freeze()``), and from collection on the automatic collector is off: every
``YOUNG_BUDGET`` new tracked objects the young generations are collected. Each automatic full
collection traversed every report, HTML row and JUnit node kept so far (7 % of a 1,024-node
replay's CPU). A sharded run freezes no shard's items: their cycles must stay collectable when the
shard is done (nodegate.session.shards).
"""

from __future__ import annotations

import gc

import pytest

from ..run import RUN_KEY
from .shards import active as sharded
from .state import ACTIVE_KEY, CONFIG, IDENT_KEY, ITEM_NODE_KEY

#: tracked objects allocated (``gc.get_count()[0]``) between two young collections
YOUNG_BUDGET = 200_000
_PAUSED_KEY = pytest.StashKey[bool]()
_PENDING_KEY = pytest.StashKey[str]()


def node_done_after(item, nextitem) -> None:
    """pytest_runtest_teardown: remember the item's node when ``nextitem`` is another node's."""
    config = item.config
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.streaming:
        return
    of = config.stash.get(ITEM_NODE_KEY, {})
    node = of.get(item.nodeid)
    if node is not None and (nextitem is None or of.get(nextitem.nodeid) != node):
        config.stash[_PENDING_KEY] = node


def after_item() -> None:
    """pytest_runtest_logfinish: release the node ``node_done_after`` remembered, then a young
    collection once the budget of new objects is spent."""
    config = CONFIG[0]
    if config is None:
        return
    node = config.stash.get(_PENDING_KEY, None)
    if node is not None:
        del config.stash[_PENDING_KEY]
        _release(config, node)
    if gc.get_count()[0] > YOUNG_BUDGET and config.stash.get(_PAUSED_KEY, False):
        gc.collect(1)
        if not sharded(config):   # a shard's survivors stay collectable until the shard is done
            gc.freeze()


def _release(config, node: str) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        run.release(node)
    cache = config.stash.get(IDENT_KEY, None)
    if cache:
        # the per-GPU identities go; the node's driver version and Xids stay (a string and a small
        # dict: its node_identity item, run after every node's own items, needs nothing else)
        engine_cache = cache.get(("engine", node))
        if engine_cache:
            engine_cache.pop("gpus", None)
        cache.pop(("slots", node), None)


def freeze_long_lived(config, *, items: bool = False) -> None:
    """``gc.freeze()`` what exists now: every later GC pass and the interpreter's final collection
    skip it (reference counting still frees what is dropped). ``items``: called once collection
    is done; a sharded run does not freeze a shard's items."""
    if config.stash.get(ACTIVE_KEY, False) and not (items and sharded(config)):
        gc.freeze()


def young_gc_only(config) -> None:
    """From collection to the end of the run, automatic cyclic GC off (``after_item`` collects
    the young generations); back on at pytest_unconfigure or the config's cleanup."""
    if config.stash.get(ACTIVE_KEY, False) and gc.isenabled() and not config.stash.get(_PAUSED_KEY, False):
        gc.disable()
        config.stash[_PAUSED_KEY] = True
        # pytest runs cleanups even when an unconfigure hook raises (pytest.main() callers keep GC)
        config.add_cleanup(lambda: resume(config))


def resume(config) -> None:
    """Automatic cyclic GC back on (pytest_unconfigure, and a config cleanup)."""
    if config.stash.get(_PAUSED_KEY, False):
        config.stash[_PAUSED_KEY] = False
        gc.enable()
