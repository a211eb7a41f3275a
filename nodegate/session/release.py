"""Bounded memory: a node's evidence and facts are dropped once its items are done.

Items run node by node (``items.order_items``): when the next item belongs to another node (or
there is none), the node's Bundle and NodeFacts are released after the item's last report
(``pytest_runtest_logfinish``): ``FleetRun.release`` (only on a streaming run), and the per-node
entries of the identity cache. A node asked for again later is read again from its bundle.
"""

from __future__ import annotations

import pytest

from ..run import RUN_KEY
from .state import CONFIG, IDENT_KEY, ITEM_NODE_KEY

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
    """pytest_runtest_logfinish: release the node remembered by ``node_done_after``."""
    config = CONFIG[0]
    if config is None:
        return
    node = config.stash.get(_PENDING_KEY, None)
    if node is None:
        return
    del config.stash[_PENDING_KEY]
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
