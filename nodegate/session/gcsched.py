"""The cyclic-GC schedule of a nodegate run (docs/performance.md, tests/core/test_gc_schedule.py).

Still pays with ~45 items a node (issue 40.4, measured 2026-12-05 on a 1,024-node replay, one run
each, this 2-core machine): 69.8 s CPU with it, 84.4 s without (every function here a no-op:
pytest's default GC), peak RSS 123 MB against 114 MB."""

from __future__ import annotations

import gc

import pytest

from .shardplan import active
from .state import ACTIVE_KEY, CONFIG

#: tracked objects allocated (``gc.get_count()[0]``) between two young collections while the
#: items run; see ``young_gc_only``
YOUNG_BUDGET = 200_000
_PAUSED_KEY = pytest.StashKey[bool]()


def _sharded(config) -> bool:
    return active(config)


def freeze_long_lived(config, *, items: bool = False) -> None:
    """``gc.freeze()``: what exists now (bundles, parsed facts, collected items) lives until the
    end of the run; frozen, every later cyclic-GC pass and the interpreter's final collection at
    exit skip it (at 64 nodes the GC traversed it for ~18 % of the run's CPU, 1.5 s of it after
    pytest_unconfigure; docs/performance.md). Reference counting still frees what is dropped.
    ``items``: called once collection is done; a sharded run does not freeze a shard's items
    (their reference cycles must be collectable when the shard is done: nodegate.session.shards)."""
    if config.stash.get(ACTIVE_KEY, False) and not (items and _sharded(config)):
        gc.freeze()


def young_gc_only(config) -> None:
    """From collection to the end of the run the automatic cyclic GC is off; every
    ``YOUNG_BUDGET`` new tracked objects the items' hooks collect the young generations
    (``gc.collect(1)``: what this run's items made since) and freeze the survivors.

    Each automatic full collection traverses every report, HTML row and JUnit node kept so far,
    and there are more of them after each: at 64 nodes (7 680 items) 16 full collections cost
    0.7-0.9 s, ~10 % of the pytest process's CPU, against ~0.2 s in the pytest floor (bare items
    keep less). Young collections still free the items' reference cycles, so memory stays what
    it was (docs/performance.md); automatic collection is back on at pytest_unconfigure."""
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


def after_item() -> None:
    """pytest_runtest_logfinish: a young collection once the budget of new objects is spent."""
    config = CONFIG[0]
    if config is not None and gc.get_count()[0] > YOUNG_BUDGET and config.stash.get(_PAUSED_KEY, False):
        gc.collect(1)
        if not _sharded(config):   # a shard's survivors stay collectable until the shard is done
            gc.freeze()
