"""Which nodes a run contacts: only those with at least one selected item.

pytest selects items after collecting them (``-k`` by check id, check name or node, ``-m`` by
severity/area marker, ``--lf``, ``--deselect``: ``pytest_collection_modifyitems``). nodegate's
items need only each node's spec (``gpu.count``) to be collected, so a live run gathers after
that, in ``pytest_collection_finish``, and the tests still run while the nodes are gathered
(``after_collection``). A run whose items come from what the nodes report (``--gather-first``,
xdist, ``--baseline``, ``--burn-in``, a node without ``gpu.count``) must gather before it
collects: it learns the selection first from a collection of its own in a forked child
(``preselect``: the same pytest, the same arguments and hooks, its output discarded), then
gathers the selected nodes only.

What reports need (``FleetRun``): ``targets`` (every node of the run), ``selected``,
``items_selected``/``items_ran`` per node, ``contacted`` and ``not_evaluated()``: a node without
a selected item, or with selected items that did not run (-x, --maxfail, an interrupt,
--collect-only), is NOT EVALUATED, never healthy.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter

import pytest

from ..run import RUN_KEY
from .items import item_node
from .state import (ACTIVE_KEY, EXIT_SPEC_ERROR, IDENTITY_ITEMS_KEY, ITEM_NODE_KEY, NO_RUN_KEY, PENDING_JOBS_KEY,
                    PRESELECT_KEY)

#: a shard's collection selected a nodegate item (a sharded run says "nothing selected" at the end)
ANY_SELECTED_KEY = pytest.StashKey[bool]()

#: markers that make an item a nodegate check even without a node parameter
NODEGATE_MARKERS = ("nodegate", "nodegate_check", "nodegate_regression")


def preselecting(config) -> bool:
    """True inside ``preselect``'s child (its collection must contact nothing and wait for
    nothing)."""
    return bool(config.stash.get(PRESELECT_KEY, False))


def is_nodegate_item(item) -> bool:
    return item_node(item) is not None or any(item.get_closest_marker(m) for m in NODEGATE_MARKERS)


def selected_counts(config, items) -> Counter:
    """Node -> number of its items among ``items`` (the selected ones). The node_identity items
    (NG-INV-003, run after every node's own items: they compare the whole run) do not count: a
    node whose own items all ran is evaluated even when the run stopped before those."""
    node_of = config.stash.get(ITEM_NODE_KEY, {})
    fleetwide = config.stash.get(IDENTITY_ITEMS_KEY, ())
    c: Counter = Counter()
    for it in items:
        if it.nodeid in fleetwide:
            continue
        n = node_of.get(it.nodeid) or item_node(it)
        if n is not None:
            c[n] += 1
    return c


def why_nothing(config, n_deselected: int | None) -> str:
    """The exit-2 message; ``n_deselected`` None: not counted (learned in preselect's child)."""
    o = config.option
    sel = " ".join(f"{k} {v!r}" for k, v in (("-k", o.keyword), ("-m", o.markexpr)) if v)
    if n_deselected is None or n_deselected:
        what = "every collected item was" if n_deselected is None else f"{n_deselected} collected item(s) were all"
        return (f"nodegate: no nodegate check selected: {what} deselected"
                f"{' by ' + sel if sel else ' (-k/-m/--lf/--deselect)'}; no node was contacted")
    return ("nodegate: no nodegate check collected: the paths given hold no nodegate suite "
            "(run `nodegate` with no path for the installed suites); no node was contacted")


def exit_nothing(config, why: str) -> None:
    """Exit 2 before any check ran: nothing selected. No report is written (NO_RUN_KEY): the
    previous run's reports in the same folder stay as they were."""
    config.stash[NO_RUN_KEY] = why
    pytest.exit(why, returncode=EXIT_SPEC_ERROR)


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
    from .shards import SHARDS_KEY
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


def after_collection(session) -> None:
    """pytest_collection_finish (after every deselection): record the selection on the
    FleetRun, exit 2 when no nodegate check is selected (nothing contacted), and start gathering
    the selected nodes of a live run (not with --collect-only)."""
    config = session.config
    if preselecting(config) or not config.stash.get(ACTIVE_KEY, False) or hasattr(config, "workerinput"):
        return
    run = config.stash.get(RUN_KEY, None)
    if run is None:
        return
    items = session.items
    if session.testsfailed and not config.option.continue_on_collection_errors:
        return   # collection errors: pytest stops the run here and reports them
    counts = selected_counts(config, items)
    from .shards import active as sharded
    if sharded(config):
        # one shard's items: the selection of the whole run is the sum of its shards'. Whether
        # anything is selected at all was learned before (preselect) or every node has items.
        for n in run.nodes:
            run.items_selected[n] = counts.get(n, 0)
    else:
        run.items_selected = dict(counts)
    run.selected = [n for n in (run.targets or run.all_nodes) if run.items_selected.get(n)]
    if any(is_nodegate_item(i) for i in items):
        config.stash[ANY_SELECTED_KEY] = True   # shards.runtestloop: exit 2 when no shard had one
    elif not sharded(config):
        run.abort()
        exit_nothing(config, why_nothing(config, len(config.stash.get(ITEM_NODE_KEY, {})) or _deselected(config)))
    pending = config.stash.get(PENDING_JOBS_KEY, None)
    if pending is None or config.option.collectonly:
        return
    del config.stash[PENDING_JOBS_KEY]
    from .start import start_gathering
    # sharded without -k/-m (start._prepare_live): every node is selected, the later shards' too
    start_gathering(config, run, list(pending) if sharded(config) else [j for j in pending if counts.get(j.name)])


def _deselected(config) -> int:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    return len(getattr(tr, "stats", {}).get("deselected", ())) if tr is not None else 0


def record(report) -> None:
    """pytest_runtest_logreport: an item whose setup was reported ran (its node is evaluated
    for it)."""
    if report.when != "setup":
        return
    from .state import CONFIG
    config = CONFIG[0]
    run = config.stash.get(RUN_KEY, None) if config is not None else None
    if run is None or report.nodeid in config.stash.get(IDENTITY_ITEMS_KEY, ()):
        return
    node = config.stash.get(ITEM_NODE_KEY, {}).get(report.nodeid)
    if node is None and not hasattr(config, "workerinput") and run.selected is not None:
        node = _node_from_id(report.nodeid, run)   # xdist's controller collected nothing itself
    if node is not None:
        run.items_ran[node] = run.items_ran.get(node, 0) + 1


_PARAM = re.compile(r"\[(?P<id>[^\[\]]*)\](?:@[^\[\]]*)?$")
_GPU_ID = re.compile(r"^(?P<node>.+?)-gpu\d+(?:-.*)?$")


def _node_from_id(nodeid: str, run) -> str | None:
    """The node of a test id (``[<node>]``, ``[<node>-gpu<i>]``, ``[<node>-gpu<i>-<test>]``) by
    lookup among the run's nodes."""
    m = _PARAM.search(nodeid)
    if not m:
        return None
    pid = m.group("id")
    known = set(run.targets or run.all_nodes)
    if pid in known:
        return pid
    g = _GPU_ID.match(pid)
    return g.group("node") if g and g.group("node") in known else None
