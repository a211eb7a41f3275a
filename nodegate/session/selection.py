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

import sys
from collections import Counter

import pytest

from ..cmdline import why_nothing
from ..run import RUN_KEY
from .exitcodes import exit_nothing
from .items import item_node, node_of_test_id
from .shards import active as sharded
from .shards import collection_errors
from .state import (ACTIVE_KEY, ANY_SELECTED_KEY, IDENTITY_ITEMS_KEY, ITEM_NODE_KEY, NO_RUN_KEY, PENDING_JOBS_KEY,
                    PRESELECT_KEY)

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
    if sys.exc_info()[0] is not None:
        # pytest calls pytest_collection_finish in a `finally`: collection itself raised. Exiting
        # "nothing collected" here would replace that error with a wrong one (issue 37.7: a
        # burn-in replay blamed "the paths given"); let pytest report the real one.
        return
    items = session.items
    if collection_errors(session) and not config.option.continue_on_collection_errors:
        return   # collection errors: pytest stops the run here and reports them
    counts = selected_counts(config, items)
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
        exit_nothing(config, why_nothing(config.option, len(config.stash.get(ITEM_NODE_KEY, {})) or _deselected(config)))


def pending_jobs(session) -> list | None:
    """The NodeJobs a live run gathers now that the selection is known (``start.gather_pending``):
    None when nothing waits for it (gathering started before collection, a replay, a later
    shard, --collect-only); else the jobs of the nodes with a selected item (sharded without
    -k/-m: every node, the later shards' too: start._prepare_live)."""
    config = session.config
    pending = config.stash.get(PENDING_JOBS_KEY, None)
    if pending is None or config.option.collectonly or config.stash.get(NO_RUN_KEY, None):
        return None
    run = config.stash.get(RUN_KEY, None)
    if run is None or (collection_errors(session) and not config.option.continue_on_collection_errors):
        return None
    del config.stash[PENDING_JOBS_KEY]
    if sharded(config):
        return list(pending)
    return [j for j in pending if run.items_selected.get(j.name)]


def _deselected(config) -> int:
    tr = config.pluginmanager.get_plugin("terminalreporter")
    return len(getattr(tr, "stats", {}).get("deselected", ())) if tr is not None else 0


def record(report) -> None:
    """pytest_runtest_logreport: an item whose setup was reported ran (its node is evaluated
    for it). On xdist's controller (it collected nothing: the node from the test id) the GPUs a
    record names are kept too (``FleetRun.shared_gpus`` at the end, without reading any bundle)."""
    if report.when != "setup":
        return
    from .state import CONFIG
    config = CONFIG[0]
    run = config.stash.get(RUN_KEY, None) if config is not None else None
    if run is None or report.nodeid in config.stash.get(IDENTITY_ITEMS_KEY, ()):
        return
    node = config.stash.get(ITEM_NODE_KEY, {}).get(report.nodeid)
    if node is None and not hasattr(config, "workerinput"):
        node = node_of_test_id(report.nodeid, _known_nodes(run, config))   # xdist's controller collected nothing
        if node is not None:
            _keep_gpu_ids(run, node, getattr(report, "nodegate", None))
        if run.selected is None:
            return
    if node is not None:
        run.items_ran[node] = run.items_ran.get(node, 0) + 1


def _keep_gpu_ids(run, node: str, info) -> None:
    """xdist's controller: the (index, serial, UUID) of each GPU a record names, kept as a
    released node's are (``FleetRun.keep_gpu_id``; the node's bundle is never read here)."""
    if not isinstance(info, dict):
        return
    for r in info.get("parts") or (info,):
        i = str(r.get("gpu_index", ""))
        if i.isdecimal() and (r.get("gpu_serial") or r.get("gpu_uuid")):
            run.keep_gpu_id(node, int(i), r.get("gpu_serial") or None, r.get("gpu_uuid") or None)


#: the run's node names as a set, made again only when the list they come from changes
#: (``run.targets or run.all_nodes``): one set a run, not one per report
_KNOWN_KEY = pytest.StashKey[tuple]()


def _known_nodes(run, config) -> frozenset:
    """``run.targets or run.all_nodes`` as a set, kept on the session's config (a module-level
    cache keyed by ``id(run)`` could hand a later run in the same process a dead run's set)."""
    src = run.targets or run.all_nodes
    got = config.stash.get(_KNOWN_KEY, None)
    if got is not None and got[0] is src and got[1] == len(src):
        return got[2]
    known = frozenset(src)
    config.stash[_KNOWN_KEY] = (src, len(src), known)
    return known
