"""pytest-xdist ``--dist loadgroup`` by inventory node (each node's items on one worker)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from ..ansible_core import plain   # a spec as execnet can send it: ansible-core's tagged values as built-ins
from ..run import RUN_KEY
from .items import node_of_test_id  # noqa: F401  (re-exported: the plugin module, bench)
from .state import ACTIVE_KEY

#: set by ``cap_workers``: what the terminal says at session start
CAPPED_KEY = pytest.StashKey[str]()

def make_scheduler(config, log):
    """``--dist loadgroup``: one work unit per inventory node, taken from the test id, so all of a
    node's items run on one worker. xdist's own loadgroup relies on an ``@group`` suffix its workers
    write into ``item._nodeid``; pytest 9 keeps node ids in ``Node._id``, the suffix never reaches the
    controller and loadgroup silently spreads every node over all workers (tests/bench)."""
    if config.getvalue("dist") != "loadgroup" or not config.stash.get(ACTIVE_KEY, False):
        return None
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.all_nodes:
        return None
    from xdist.scheduler import LoadGroupScheduling

    nodes = frozenset(run.all_nodes)

    class NodeGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            node = node_of_test_id(nodeid, nodes)
            return f"nodegate-node:{node}" if node is not None else super()._split_scope(nodeid)

    return NodeGroupScheduling(config, log)


def configure_worker(node) -> None:
    """xdist controller -> worker: where the gathered bundles are and which nodes to load."""
    run = node.config.stash.get(RUN_KEY, None)
    if run is not None and run.bundles_dir is not None:
        nodes = [str(n) for n in run.all_nodes]   # an inventory's names are ansible-core's tagged str
        if run.mode != "replay":   # the gathered nodes only (a bundle left by an earlier run is not this run's)
            contacted = set(run.contacted)
            nodes = [n for n in nodes if n in contacted or n in run.bundles]
            run.ids_of_every_node()   # a live run's gathered nodes, not merged (streaming): their ids
        node.workerinput["nodegate_bundles"] = str(run.bundles_dir)
        node.workerinput["nodegate_nodes"] = nodes
        # the spec each node is judged by (inventory, --spec or its bundle's) and its origin:
        # a worker reloads the bundles, not the controller's inventory
        node.workerinput["nodegate_specs"] = {n: plain(run.spec_raw.get(n, {})) for n in nodes}
        node.workerinput["nodegate_spec_source"] = {n: run.spec_source.get(n, "") for n in nodes}
        node.workerinput["nodegate_peer_ids"] = {n: list(run.node_ids(n)) for n in nodes}


#: a worker pays only with this many nodes of its own (its start-up: imports, collection, the
#: controller's per-report work; docs/performance.md "xdist")
MIN_NODES_PER_WORKER = 16


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def suites_only(config) -> bool:
    """The run's items are nodegate's own suites only (no test path outside them: no site checks)."""
    from .jobs import under_suites
    return all(under_suites(config, a) for a in (config.args or []))


def cap_workers(config, n_nodes: Callable[[], int | None] = lambda: None) -> None:
    """pytest_configure of the controller (before pytest-xdist's): what ``-n N`` becomes, the
    terminal saying why (``CAPPED_KEY``). ``NODEGATE_XDIST_UNCAPPED=1`` keeps N (benchmarks:
    bench/run.py --xdist; the project's own tests of xdist).

    nodegate's suites alone: serially (xdist off). xdist's controller receives every item's three
    reports from the workers and records and prints each: measured (2026-12-06, a 64-node
    replay), the controller alone spent 6.1 s of CPU with ``-n 4`` (7.5 s with ``-n 2``) where the
    whole serial run's pytest process spent 4.0 s (5.5 s before the prefetching child): more
    workers cannot make such a run faster than its controller, whatever the cores
    (docs/performance.md "xdist"). Its parallelism is the prefetching child
    (nodegate.fleetrun.prefetch).

    With test paths of the site's own (site checks: remote commands, 13-21 ms each, that workers
    can overlap): ``min(N, usable cores - 1, nodes // MIN_NODES_PER_WORKER)`` workers
    (``n_nodes()``: ``fleet_size``, asked only here: it walks the --replay paths), serially
    below 2."""
    o = config.option
    n = getattr(o, "numprocesses", None)
    if not isinstance(n, int) or n < 1 or os.environ.get("NODEGATE_XDIST_UNCAPPED") == "1":
        return
    if suites_only(config):
        o.numprocesses, o.dist, o.tx = 0, "no", []
        config.stash[CAPPED_KEY] = (f"nodegate: -n {n} would be slower than serial (xdist's controller alone "
                                    "spends more CPU on the items' reports than a serial run takes): running "
                                    "serially (docs/performance.md \"xdist\")")
        return
    n_nodes = n_nodes()
    cores = usable_cores()
    fit = min(n, cores - 1, (n_nodes // MIN_NODES_PER_WORKER) if n_nodes is not None else n)
    if fit >= n:
        return
    why = " and ".join(w for c, w in ((cores - 1 < n, f"{cores} usable core(s), one for the controller"),
                                       (n_nodes is not None and n_nodes // MIN_NODES_PER_WORKER < n,
                                        f"{n_nodes} node(s), {MIN_NODES_PER_WORKER} a worker at least")) if c)
    if fit < 2:
        o.numprocesses, o.dist, o.tx = 0, "no", []
        config.stash[CAPPED_KEY] = (f"nodegate: -n {n} would be slower than serial here ({why}): running "
                                    "serially (docs/performance.md \"xdist\")")
    else:
        o.numprocesses = fit
        o.tx = ["popen"] * fit
        config.stash[CAPPED_KEY] = f"nodegate: -n {n} capped to {fit} worker(s) ({why})"


def fleet_size(config, jobs) -> int | None:
    """The nodes a run may judge, known at configure time: the inventory's (after --limit), or
    the bundle directories and logs under the --replay paths."""
    o = config.option
    if not o.replay:
        return len(jobs)
    from ..bundle import discover
    n = 0
    for r in (getattr(o, "replay_all", None) or [o.replay]):
        root = Path(r)
        n += len(discover(root)) + len(list(root.glob("*.log*"))) if root.is_dir() else 1
    return n
