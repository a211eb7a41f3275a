"""Learning a run's selection before gathering: a collection of its own in a forked child.

A run whose items come from what the nodes report (``--gather-first``, xdist, ``--baseline``,
``--burn-in``, a node without ``gpu.count``, a sharded run narrowed by -k/-m) must gather before
it collects; ``preselect`` runs the same pytest collection (the same arguments and hooks, its
output discarded, nothing contacted) in a forked child and tells the parent which nodes have a
selected item. Used by ``start`` (nodegate.session.start._prepare_live) and ``jobs``
(``--list-hosts`` lists exactly those nodes); imports ``selection`` and ``shards`` only.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

from ..run import RUN_KEY
from .selection import is_nodegate_item, selected_counts
from .shards import SHARDS_KEY
from .state import ITEM_NODE_KEY, PRESELECT_KEY


def preselect(session) -> dict[str, int] | None:
    """Node -> number of its selected items (nodes with none left out, run order), learned from
    a collection in a forked child (pytest's own deselection; nothing is contacted there). None
    when the child could not tell (no fork, or its collection failed): the caller then gathers
    every node, as before."""
    if not hasattr(os, "fork"):
        return None
    config = session.config
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except Exception:  # noqa: BLE001
            pass
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: collect, report the selection, never return into pytest
        code = 0
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            config.stash[PRESELECT_KEY] = True
            if not hasattr(session, "_fixturemanager"):
                # nodegate's sessionstart runs first (tryfirst: the burn-in and baseline plugins
                # need its gathering): here, in the child only, pytest's own fixtures plugin
                # sets up what collection needs (tests/inventory/test_cli_selection.py)
                config.pluginmanager.get_plugin("fixtures").pytest_sessionstart(session)
            # the child's output is discarded; pytest's terminal reporter has not seen
            # sessionstart either and would fail on the deselection report
            tr = config.pluginmanager.get_plugin("terminalreporter")
            if tr is not None:
                config.pluginmanager.unregister(tr)
            run = config.stash.get(RUN_KEY, None)
            counts, n_items, n_nodegate = _collect_selection(session, run)
            order = (run.targets or run.all_nodes) if run is not None else list(counts)
            payload = {"nodes": {n: counts[n] for n in order if counts.get(n)}, "items": n_items,
                       "collection_errors": int(session.testsfailed), "nodegate_items": n_nodegate}
            os.write(w, json.dumps(payload).encode())
        except BaseException:  # noqa: BLE001 - the parent falls back to every node
            code = 1

        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0 or not chunks:
        return None
    try:
        doc = json.loads(b"".join(chunks))
        if doc.get("collection_errors") and not config.option.continue_on_collection_errors:
            return COLLECTION_ERRORS   # pytest's collection will stop the run and say why
        return {str(k): int(v) for k, v in doc["nodes"].items()}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _collect_selection(session, run) -> tuple[Counter, int, int]:
    """In preselect's child: (node -> selected items, items, nodegate items) of the whole run.
    A sharded run (nodegate.session.shards) is collected one shard at a time, as the run itself
    will, so the child's memory stays that of one shard."""
    config = session.config
    plan = config.stash.get(SHARDS_KEY, None) if run is not None else None
    counts: Counter = Counter()
    n_items = n_nodegate = 0
    for k, shard in enumerate(plan or [None]):
        if plan:
            run.shard = shard
            if k:
                session.items = []
                config.stash[ITEM_NODE_KEY] = {}
        items = session.perform_collect()
        counts.update(selected_counts(config, items))
        n_items += len(items)
        n_nodegate += sum(1 for i in items if is_nodegate_item(i))
        if session.testsfailed:
            break
    return counts, n_items, n_nodegate


#: preselect's answer when the collection has errors: pytest stops the run at collection (exit
#: 2, its own report of the errors), so nothing is gathered
COLLECTION_ERRORS: dict[str, int] = {"": 0}
