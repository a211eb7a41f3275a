"""The items of a nodegate run: one per check and node, ordered node by node.

Test ids: ``test_<check name>[<node>]`` for node checks and, by default, for GPU checks too (the
item evaluates every GPU of the node and carries one record per GPU: nodegate.engine.fold);
``test_<check name>[<node>-gpu<i>]``, one item per GPU, where the run's selection names GPUs
(``-k``, ``--deselect``, a test path, ``--lf``: nodegate.session.granularity) or with
``--per-gpu-items`` (docs/contributing.md). A suite test takes ``verdict``, a direct parameter
(``VerdictParam``) evaluated in setup (nodegate.session.verdicts).
"""

from __future__ import annotations

import re

import pytest

from .. import checks as ng_checks
from ..engine.evaluate import IDENTITY_CHECK
from ..outcomes import Result
from ..run import RUN_KEY, FleetRun
from . import granularity
from .state import ACTIVE_KEY, COLLECTED_KEY, IDENTITY_ITEMS_KEY, ITEM_NODE_KEY, spec_get, uses_xdist


class VerdictParam:
    """The ``verdict`` argument of a suite test: one check on one node (and GPU slot, or all of
    the node's GPU slots).

    Collected from the run's specs alone (no gathered fact: issue 40.4): ``check_id``, ``node``;
    ``slot``: a per-GPU item's GPU (``provisional``: its index came from gpu.count and is matched
    to the GPU the node reports at that index when the item runs: verdicts.resolve_slot);
    ``folded``: a GPU check's one item on the node, its GPU slots resolved when it runs (setup:
    ``slots``, what the node reports), ``expect`` records predicted at collection (gpu.count, else
    1; corrected in setup: COLLECTED_KEY). The check is evaluated in setup
    (``pytest_runtest_setup``: ERROR fails the setup, SKIP skips); the test then reads the
    Result through this object (``verdict.ok``, ``verdict.message``, any Result attribute). A
    direct parameter instead of an indirect fixture: pytest's fixture machinery was ~14 % of the
    controller's CPU per item; and the item gets it in ``funcargs`` at collection, so pytest sets
    up no fixture for it at all (``prefill_verdict_item``; docs/performance.md)."""

    __slots__ = ("check_id", "node", "slot", "provisional", "result", "slots", "folded", "expect")

    def __init__(self, check_id: str, node: str, slot=None, provisional: bool = False, folded: bool = False,
                 expect: int = 1):
        self.check_id, self.node, self.slot, self.provisional = check_id, node, slot, provisional
        self.folded, self.expect = folded, expect
        self.slots: tuple | None = None
        self.result: Result | None = None

    def records(self) -> int:
        """The records this item writes: one per GPU slot of a folded item (predicted until it
        ran: ``expect``), else one."""
        if not self.folded:
            return 1
        return self.expect if self.slots is None else len(self.slots)

    def __getattr__(self, name):   # only for names that are not slots: the Result's
        r = self.result
        if r is None:
            raise AttributeError(f"{name}: the check {self.check_id} on {self.node} was not evaluated (setup)")
        return getattr(r, name)

    def __repr__(self) -> str:
        where = self.node if self.slot is None else f"{self.node}-gpu{self.slot.index}"
        if self.folded:
            where += ", its GPUs" if self.slots is None else f", {len(self.slots)} GPU(s)"
        return f"VerdictParam({self.check_id} on {where})"


def verdict_param(item) -> VerdictParam | None:
    cs = getattr(item, "callspec", None)
    p = cs.params.get("verdict") if cs is not None else None
    return p if isinstance(p, VerdictParam) else None


def node_slots(run: FleetRun, node: str):
    """The node's GPU items. gpu_slots never raises for node problems (unreadable GPUs give the
    spec's count of slots); should it fail internally, one slot keeps the node's GPU checks in
    the report as ERROR instead of letting them vanish."""
    try:
        return ng_checks.gpu_slots(run.facts[node], run.spec[node])
    except Exception:  # noqa: BLE001
        return [ng_checks.GpuSlot(0, None)]


def parametrize(metafunc) -> None:
    """pytest_generate_tests for suite tests taking ``verdict``: one item per node (node checks;
    GPU checks, their GPU slots folded into the item and resolved when it runs) or per node and
    GPU (GPU checks where the selection tells GPUs apart: ``granularity``). From the specs
    alone: no node is gathered or parsed here, except a node without gpu.count whose per-GPU
    items are needed (its GPUs are read: replay, or a live run that gathered first)."""
    if "verdict" not in metafunc.fixturenames:
        return
    run = metafunc.config.stash.get(RUN_KEY, None)
    name = metafunc.function.__name__.removeprefix("test_")
    cdef = ng_checks.by_name(name)
    params, ids = [], []
    gran = granularity.of(metafunc.config)
    base = metafunc.definition.nodeid
    for node in (run.nodes if run is not None else ()):
        if cdef.scope == "node":
            params.append(VerdictParam(cdef.id, node))
            ids.append(node)
            continue
        count = spec_get(run.spec[node], "gpu.count")
        if count == 0:
            continue   # the spec says the node has no GPUs: no GPU item (engine.not_applicable_to)
        if gran.may_split(base, node):
            slots, provisional = per_gpu_slots(run, node, count)
            if slots and gran.per_gpu(base, node, [s.label for s in slots]):
                if provisional:
                    gran.from_count.add(node)
                for slot in slots:
                    params.append(VerdictParam(cdef.id, node, slot, provisional))
                    ids.append(f"{node}-{slot.label}")
                continue
        params.append(VerdictParam(cdef.id, node, folded=True, expect=int(count or 1)))
        ids.append(node)
    metafunc.parametrize("verdict", params, ids=ids)


def per_gpu_slots(run: FleetRun, node: str, count) -> tuple[list, bool]:
    """A per-GPU item's slots on ``node`` and whether they are provisional: what the node
    reports on a replay (its bundle read now: the same GPUs as its folded items) and on a live
    run that gathered it first (start._prepare_live: no gpu.count); else, on a live run, from
    gpu.count (resolved by index when the item runs: verdicts.resolve_slot). Not gathered and no
    gpu.count (a live --collect-only): no per-GPU item, the folded one stands."""
    if count and run.mode != "replay" and not run.has(node):
        return [ng_checks.GpuSlot(i, None) for i in range(int(count))], True
    if run.mode != "replay" and not run.has(node):
        return [], False
    run.wait(node)
    return list(node_slots(run, node)), False


#: fixtures whose parameter is ``(kind, node, ...)``: nodegate's items, one per node (and GPU);
#: ``nodegate_site_node``: the site's own tests (nodegate.site.items); ``crossnode_node``: a node's
#: cross-node items (plugins/nodegate_crossnode.py; its job and fabric items belong to no node)
NODE_FIXTURES = ("verdict", "regression", "burnin_verdict", "nodegate_site_node", "perf_verdict",
                 "crossnode_node")


def item_node(item) -> str | None:
    """The inventory node of a nodegate item (suite, regression or burn-in), else None."""
    cs = getattr(item, "callspec", None)
    if cs is None:
        return None
    for fx in NODE_FIXTURES:
        p = cs.params.get(fx)
        if isinstance(p, VerdictParam):
            return p.node
        if isinstance(p, tuple) and len(p) > 1 and isinstance(p[1], str):
            return p[1]
    return None


_TEST_ID = re.compile(r"\[(?P<id>[^\[\]]*)\](?:@[^\[\]]*)?$")


def node_of_test_id(nodeid: str, nodes) -> str | None:
    """The inventory node a test id belongs to (``...[<node>]``, ``...[<node>-gpu<i>]`` or a site
    test's ``...[<node>-<params>]``, possibly with xdist's ``@group`` suffix), or None: the
    longest prefix of the id's parameter, cut at a ``-``, that is one of ``nodes`` (a set: one
    lookup per ``-``, not one scan of the fleet per id), so ``a-1`` wins over ``a``. For the
    processes that did not collect the item (xdist's controller and scheduler)."""
    m = _TEST_ID.search(nodeid)
    if not m:
        return None
    pid = m.group("id")
    if pid in nodes:
        return pid
    k = len(pid)
    while (k := pid.rfind("-", 0, k)) > 0:
        if pid[:k] in nodes:
            return pid[:k]
    return None


def drop_empty_parameter_sets(config, items) -> None:
    """Deselect the placeholder item pytest makes for a suite test with no parameter at all (its
    id ``[NOTSET]``, skipped "got empty parameter set"): a per-GPU check when no node of the run
    has a GPU item (every node's spec says ``gpu.count: 0``). It judges no node; kept, it showed
    as a node called NOTSET in every report."""
    gone = []
    for item in items:
        if not item.name.endswith("[NOTSET]"):   # pytest's id of the placeholder: the cheap test first
            continue
        cs = getattr(item, "callspec", None)
        if cs is None or not any(fx in cs.params for fx in NODE_FIXTURES):
            continue
        m = item.get_closest_marker("skip")
        why = str((m.kwargs.get("reason") if m is not None else "") or (m.args[0] if m is not None and m.args else ""))
        if why.startswith("got empty parameter set"):
            gone.append(item)
    if gone:
        ids = {id(i) for i in gone}
        items[:] = [i for i in items if id(i) not in ids]
        config.hook.pytest_deselected(items=gone)


def order_items(config, items) -> None:
    """pytest_collection_modifyitems (before any deselection): node by node (inventory order),
    each node's items in suite order; one xdist group per node (with xdist); each suite item
    prefilled (``prefill_verdict_item``); every node's item count kept (``COLLECTED_KEY``: the
    reports' "every item of the node's full suite ran")."""
    if not config.stash.get(ACTIVE_KEY, False):
        return
    drop_empty_parameter_sets(config, items)
    run = config.stash.get(RUN_KEY, None)
    rank = {n: i for i, n in enumerate(run.nodes)} if run is not None else {}
    node_of: dict[str, str] = {}
    keyed = []
    where: dict[object, tuple] = {}
    collected = config.stash.setdefault(COLLECTED_KEY, {})
    # the marker only where pytest-xdist can read it: a Mark per item is ~0.3 KB at 490,000 items
    xdist = uses_xdist(config)
    identity: set[str] = set()
    for pos, item in enumerate(items):
        node = item_node(item)
        r = rank.get(node, -1)
        if node is not None:
            # one xdist group per node: with --dist loadgroup a node's items stay on one worker
            if xdist:
                item.add_marker(pytest.mark.xdist_group(node))
            node_of[item.nodeid] = node
            p = verdict_param(item)
            # the records the node's reports count (a folded GPU item writes one per GPU)
            collected[node] = collected.get(node, 0) + (p.records() if p is not None else 1)
            prefill_verdict_item(item, where)
            if p is not None and p.check_id == IDENTITY_CHECK:
                identity.add(item.nodeid)
                r += len(rank) + 1   # after every node's own items
        keyed.append((r, pos, item))
    # a node's items can run as soon as that node is gathered, and the report lists each node's
    # results together
    keyed.sort(key=lambda k: (k[0], k[1]))
    items[:] = [k[2] for k in keyed]
    config.stash[ITEM_NODE_KEY] = node_of
    config.stash[IDENTITY_ITEMS_KEY] = identity


def prefill_verdict_item(item, where: dict[object, tuple]) -> None:
    """Give a suite test's item what pytest would otherwise recompute for each item, once per test
    function instead (docs/performance.md, round 5):

    - ``item.funcargs["verdict"]``: the VerdictParam itself; pytest fills only the arguments not
      in ``funcargs`` (``TopRequest._fillfixtures``, pytest 8 and 9), so no pseudo-fixture, no
      ``request`` FixtureDef and no finalizer per item (0.67 of 7.3 CPU-s at 64 nodes); the fast
      lane sets up nothing else;
    - ``item.location``: pytest's ``getfslineno`` builds, resolves and stats a ``Path`` per item;
      items of one test function share it (0.38 CPU-s at 64 nodes), kept where
      ``functools.cached_property`` keeps it (the instance's ``__dict__``).

    tests/core/test_item_setup.py checks that no ``verdict`` fixture is set up and that every
    location equals pytest's own. Visible difference: ``--setup-show``/``--setup-plan`` list no
    ``SETUP F verdict[...]`` line. A re-run of an item gets pytest's ordinary pseudo-fixture."""
    p = verdict_param(item)
    if p is None:
        return
    funcargs = getattr(item, "funcargs", None)
    if isinstance(funcargs, dict):
        funcargs["verdict"] = p
    fn = getattr(item, "obj", None)
    if fn is None or "location" in item.__dict__ or type(item).reportinfo is not pytest.Function.reportinfo:
        return   # an item class with its own reportinfo() keeps pytest's computation
    w = where.get(fn)
    if w is None:
        where[fn] = item.location[:2]   # pytest's own computation, once per test function
    else:
        item.__dict__["location"] = (*w, item.getmodpath())
