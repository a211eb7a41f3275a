"""Presenting a suite item's result: the item selects a (check, GPU) pair, or a GPU check's every
GPU of a node (a folded item), and the engine decides it.

``evaluate(item, p)``: makes sure the item's node is in (``node_ready``: while the node is being
gathered, its first item waits for it; once per node, outside the verdict), states what the run
knows about the node before any evidence (``node_context``: spec error, bundle refused, node not
gathered, another node answering for the same machine), asks ``nodegate.engine.evaluate_item``
for the result and presents it: the record for the reports (``state.RESULT_KEY``: the
``report.nodegate`` contract of docs/contributing.md), the JUnit properties, then fails the setup
(ERROR) or skips (SKIP); PASS and FAIL go to the test body. Nothing here decides an outcome.
"""

from __future__ import annotations

import pytest

from ..bundle import REFUSED
from ..engine.fold import fold
from ..engine.evaluate import (IDENTITY_CHECK, PROP_KEYS, NodeContext, clash_message,  # noqa: F401  (PROP_KEYS,
                               evaluate_item, printable)  # printable: re-exported)
from ..outcomes import Outcome, asserted
from ..run import RUN_KEY, FleetRun
from . import granularity
from .items import VerdictParam, node_slots
from .state import COLLECTED_KEY, IDENT_KEY, INVENTORY_KEY, RESULT_KEY, spec_get
from .terminal import wait_ticker


def node_cache(config) -> dict:
    """Per-run cache of what every item of a node (or GPU) shares: ``("engine", node)``: the
    engine's per-node cache (GPU identity per slot key, driver version, Xids), ``("slots", node)``:
    the node's slots by index, ``("identity", node)``: its clash message, ``("spec_origin", node,
    key)``: the file that set a spec key. Facts are immutable once parsed, so one lookup
    serves the ~200 items of a node instead of one per item.
    Keyed by node so that releasing a node (nodegate.session.memory) drops its entries in
    O(1), not by scanning every node's (which made a 4,096-node run quadratic)."""
    c = config.stash.get(IDENT_KEY, None)
    if c is None:
        c = config.stash[IDENT_KEY] = {}
    return c


def resolve_slot(run: FleetRun, node: str, slot, cache: dict):
    """A per-GPU item collected from gpu.count (items.per_gpu_slots) -> (the slot
    ``gpu_slots`` gives for that index now that the node is in, None), or (slot, why) when the
    node reports no GPU at that index (indices that skip one: the item ERRORs, naming them)."""
    by_index = {s.index: s for s in _slots_of(run, node, cache)}
    got = by_index.get(slot.index)
    if got is not None:
        return got, None
    return slot, (f"gpu{slot.index}: the node reports no GPU at index {slot.index} "
                  f"(indices {sorted(by_index)}; gpu.count {spec_get(run.spec.get(node), 'gpu.count')})")


def _slots_of(run: FleetRun, node: str, cache: dict) -> list:
    """The node's GPU slots (what it reports: checks.gpu_slots), once per node."""
    key = ("slots", node)
    got = cache.get(key)
    if got is None:
        got = cache[key] = list(node_slots(run, node))
    return got


def identity_clash(config, run: FleetRun, node: str, cache: dict, check_id: str) -> str | None:
    """Why every item of ``node`` is ERROR because another node of the run is the same machine
    (same boot id or machine id), or None. Decided once per node, from what is known before its
    items run: every node when the run gathered them all first (replay, --gather-first, xdist);
    while the tests run alongside the gathering, the nodes at the node's own address (waited for
    here: the common mistake, two inventory names for one host), so the verdicts never depend
    on which node arrived first. The node_identity item (NG-INV-003, run last, after every node)
    reports every clash in all modes."""
    if check_id == IDENTITY_CHECK and run.overlapped:
        if run.streaming:   # every node in, their ids known, none merged (bounded memory)
            run.ids_of_every_node(wait_ticker(config, run))
            return None
        for n in run.order:   # compares the whole run: every node in
            run.wait(n, wait_ticker(config, run))
        return None
    key = ("identity", node)
    if key in cache:
        return cache[key]
    among = None
    if run.overlapped:
        among = run.address_twins.get(node, [])
        for t in among:
            run.wait(t, wait_ticker(config, run))
    groups = run.identity_groups(node, among=among) if among is None or among else []
    msg = clash_message(groups)
    cache[key] = msg
    return msg


def node_ready(item, run: FleetRun, node: str, check_id: str):
    """The node's bundle, waiting for it when it is still being gathered (tests run while
    gathering: the node's first item waits; a released node, bounded memory, is read again;
    for its node_identity item only the ids: FleetRun.bundle_for)."""
    light = check_id == IDENTITY_CHECK
    b = run.bundles.get(node)
    if b is None or (not light and node in run._light):
        b = run.bundle_for(node, light=light, tick=wait_ticker(item.config, run))
    return b


def node_context(config, run: FleetRun, node: str, b, clash: str | None) -> NodeContext:
    """What the run knows about ``node`` before any of its evidence is judged (engine.NodeContext)."""
    inv = config.stash.get(INVENTORY_KEY, None)
    cache = node_cache(config)

    def spec_origin(key: str) -> str:
        ck = ("spec_origin", node, key)
        if ck not in cache:
            files = inv.spec_origins(node, key) if inv is not None else []
            cache[ck] = files[-1] if files else ""
        return cache[ck]

    return NodeContext(node=node, spec_error=run.spec_errors.get(node) or None,
                       refused=(b.meta.get("error", "") if b.meta.get("status") == REFUSED else None),
                       gather_error=b.gather_error or None, clash=clash, bundle_dir=str(b.path or ""),
                       spec_source=run.spec_source.get(node, ""), gpus_collected_from_spec=node in granularity.of(config).from_count,
                       spec_raw=run.spec_raw.get(node) or {}, spec_origin=spec_origin)


def _facts(run: FleetRun, node: str):
    try:
        return run.facts[node]
    except Exception:  # noqa: BLE001 - a node whose facts cannot be made: its items ERROR (engine)
        return None


def evaluate(item, p: VerdictParam) -> None:
    """Select the item's (check, GPU) pair, or a folded GPU check's every GPU of the node, have
    the engine evaluate it, and present the result: record what the reports need (a folded item:
    one record per GPU, ``record["parts"]``), and fail (ERROR) or skip (SKIP) the setup;
    PASS/FAIL go to the test."""
    check_id, node = p.check_id, p.node
    run: FleetRun = item.config.stash[RUN_KEY]
    b = node_ready(item, run, node, check_id)
    cache = node_cache(item.config)
    clash = identity_clash(item.config, run, node, cache, check_id)
    ctx = node_context(item.config, run, node, b, clash)
    facts, spec, engine_cache = _facts(run, node), run.spec[node], cache.setdefault(("engine", node), {})

    def one(slot):
        unresolved = None
        if p.provisional:
            slot, unresolved = resolve_slot(run, node, slot, cache)
        return evaluate_item(ctx, facts, spec, check_id, slot, unresolved=unresolved, cache=engine_cache)

    if not p.folded:
        out = one(p.slot)
    else:
        # the node's GPU slots, resolved now (collected from the spec alone: items.parametrize)
        p.slots = tuple(_slots_of(run, node, cache))
        collected = item.config.stash.get(COLLECTED_KEY, None)
        if collected is not None and node in collected and len(p.slots) != p.expect:
            collected[node] += len(p.slots) - p.expect   # the reports' "every item of the node ran"
            p.expect = len(p.slots)
        if not p.slots:
            pytest.skip(f"[{check_id}] the node reports no GPU (its spec sets no gpu.count): no GPU to judge")
        parts = [one(slot) for slot in p.slots]
        # each GPU's record under the id its own item has (test_x[node-gpu<i>]): results.jsonl,
        # JUnit and HTML as with one item per GPU
        stem = item.nodeid[:-1]
        for slot, part in zip(p.slots, parts):
            part.record["nodeid"] = f"{stem}-{slot.label}]"
        out = fold(parts, node)
    if out.surplus is not None:
        run.surplus[node] = out.surplus
    res = out.result
    item.stash[RESULT_KEY] = out.record
    item.user_properties.extend(out.properties)
    p.result = asserted(res, out.remediation)
    if res.outcome is Outcome.ERROR:
        pytest.fail(f"[{out.check.id}] could not evaluate: {res.message}", pytrace=False)   # printable()
    if res.outcome is Outcome.SKIP:
        pytest.skip(f"[{out.check.id}] {res.message}")
