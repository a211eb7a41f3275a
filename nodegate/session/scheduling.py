"""pytest-xdist ``--dist loadgroup`` by inventory node (each node's items on one worker)."""

from __future__ import annotations

import os
import re

import pytest

from ..ansible_core import plain   # a spec as execnet can send it: ansible-core's tagged values as built-ins
from ..run import RUN_KEY
from .state import ACTIVE_KEY

#: set by ``cap_workers``: what the terminal says at session start
CAPPED_KEY = pytest.StashKey[str]()

_TEST_ID = re.compile(r"\[(?P<id>[^\[\]]*)\](?:@[^\[\]]*)?$")


def node_of_test_id(nodeid: str, nodes: list[str]) -> str | None:
    """The inventory node a test id belongs to (``...[<node>]``, ``...[<node>-gpu<i>]`` or a site
    test's ``...[<node>-<params>]``, possibly with xdist's ``@group`` suffix), or None. ``nodes``
    longest first, so ``a-1`` wins over ``a``."""
    m = _TEST_ID.search(nodeid)
    if not m:
        return None
    pid = m.group("id")
    for n in nodes:
        if pid == n or (pid.startswith(n + "-gpu") and pid[len(n) + 4:].isdigit()):
            return n
    for n in nodes:   # a site test's own parameters after the node: [<node>-<params>] (nodegate.site.items)
        if pid.startswith(n + "-"):
            return n
    return None


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

    nodes = sorted(run.all_nodes, key=len, reverse=True)

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


def cap_workers(config) -> None:
    """pytest_configure of the controller (before pytest-xdist's): ``-n N`` runs serially (xdist
    off), the terminal saying why (``CAPPED_KEY``). xdist's controller receives every item's
    three reports from the workers and records and prints each: measured (2026-12-06, a 64-node
    replay), the controller alone spent 6.1 s of CPU with ``-n 4`` (7.5 s with ``-n 2``) where the
    whole serial run's pytest process spent 4.0 s (5.5 s before the prefetching child): more
    workers cannot make the run faster than its controller, whatever the cores
    (docs/performance.md "xdist"). A serial run's parallelism is the prefetching child
    (nodegate.fleetrun.prefetch). ``NODEGATE_XDIST_UNCAPPED=1`` keeps N (benchmarks:
    bench/run.py --xdist; the project's own tests of xdist)."""
    o = config.option
    n = getattr(o, "numprocesses", None)
    if not isinstance(n, int) or n < 1 or os.environ.get("NODEGATE_XDIST_UNCAPPED") == "1":
        return
    o.numprocesses, o.dist, o.tx = 0, "no", []
    config.stash[CAPPED_KEY] = (f"nodegate: -n {n} would be slower than serial (xdist's controller alone spends "
                                "more CPU on the items' reports than a serial run takes): running serially "
                                "(docs/performance.md \"xdist\")")
