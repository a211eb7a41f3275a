"""pytest-xdist ``--dist loadgroup`` by inventory node (each node's items on one worker)."""

from __future__ import annotations

import re

from ..run import RUN_KEY
from .state import ACTIVE_KEY

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
        nodes = run.all_nodes
        if run.mode != "replay":   # the gathered nodes only (a bundle left by an earlier run is not this run's)
            nodes = [n for n in nodes if n in run._events or n in run.bundles]
            run.ids_of_every_node()   # a live run's gathered nodes, not merged (streaming): their ids
        node.workerinput["nodegate_bundles"] = str(run.bundles_dir)
        node.workerinput["nodegate_nodes"] = nodes
        # the spec each node is judged by (inventory, --spec or its bundle's) and its origin:
        # a worker reloads the bundles, not the controller's inventory
        node.workerinput["nodegate_specs"] = {n: run.spec_raw.get(n, {}) for n in nodes}
        node.workerinput["nodegate_spec_source"] = {n: run.spec_source.get(n, "") for n in nodes}
        node.workerinput["nodegate_peer_ids"] = {n: list(run.node_ids(n)) for n in nodes}
