"""BaselineRun: the baseline bundles of one session, the comparison per node, the items.

Built by plugins/nodegate_baseline.py after the suite plugin has the FleetRun
(``nodegate.run.RUN_KEY``); usable without pytest (tests build it directly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..bundle import Bundle, discover
from ..collect import NodeFacts
from ..outcomes import Result
from .compare import show
from .engine import compare_node, missing_node, new_node
from .model import GPU_KINDS, KIND_INFO, KINDS, NODE_KINDS, NodeComparison
from .spec import baseline_spec


class BaselineError(Exception):
    """--baseline is unusable (not a directory, no bundle): a usage error (exit 2)."""


@dataclass
class BaselineRun:
    """``bundles``: {baseline node in scope: its bundle directory}. ``inventory``: the
    inventory's host names after --limit (None without --inventory): a baseline node named there
    but absent from this run is ``missing`` (FAIL); one absent from both is ``gone`` (change).

    Bounded memory like ``--replay`` (issue 31, item 8: every baseline bundle was held whole,
    40 bundles of sparse files made 3.8 GB): only the node names are read up front (meta.json
    alone); a node's baseline evidence is read when its comparison is made, and dropped once it
    is made (what the items and reports need later is in the NodeComparison and a few strings a
    GPU). At most one baseline bundle is in memory at a time, under the bundle reader's own
    budget (``bundle.BUNDLE_BUDGET``); ``held``/``peak_held`` count them (tests/hostile).

    The current side streams as a plain ``--replay`` does (``FleetRun.streaming``): the items
    are those of the nodes collected now (``fleet.nodes``: a shard of them,
    nodegate.session.shards), a current node is loaded for its comparison if it is not in memory
    (``FleetRun.bundle_for``) and released with its other items (nodegate.session.memory); a
    comparison made after the items ran (changes.json, the HTML tables: a node whose regression
    items were deselected) loads the node and releases it at once (``all_comparisons``)."""

    dir: Path
    bundles: dict[str, Path] = field(default_factory=dict)
    inventory: set[str] | None = None
    _cmp: dict[str, NodeComparison] = field(default_factory=dict)
    #: {node: {GPU UUID: (board part number, VBIOS)}} of the baseline GPUs (the items' identity)
    _gpu_extra: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    held: int = 0
    peak_held: int = 0
    #: (id of the fleet, its number of nodes) -> the set of its node names (``_in_run``)
    _run_nodes: tuple = field(default=(None, frozenset()), repr=False)

    @classmethod
    def load(cls, directory: str | Path, *, keep=None, inventory: set[str] | None = None) -> "BaselineRun":
        """Find every bundle under ``directory`` (a bundles dir or one bundle) and its node name
        (meta.json only: the evidence is read when compared); ``keep(node)`` filters (the
        --limit / inventory scope). Raises BaselineError."""
        d = Path(directory)
        if not d.is_dir():
            raise BaselineError(f"--baseline {d}: not a directory")
        run = cls(dir=d, inventory=inventory)
        for p in discover(d):
            # untrusted like any replayed bundle (docs/security.md): read as Bundle.load reads
            b = Bundle.load(p, root=d, only=())
            if keep is not None and not keep(b.node):
                continue
            run.bundles[b.node] = p
        if not run.bundles:
            raise BaselineError(f"--baseline {d}: no bundle found (expected <dir>/<node>/meta.json)")
        return run

    def bundle(self, node: str, only=None) -> Bundle:
        """``node``'s baseline Bundle, read now from its directory (``only``: these item keys;
        ``()``: meta.json alone); the caller drops it when done."""
        p = self.bundles[node]
        b = Bundle.load(p, root=self.dir, only=only)
        if b.node != node:   # the directory changed since: nothing of another node is compared
            return Bundle(node, {}, {"node": node, "status": "error",
                                     "error": f"baseline bundle {p} now holds node {b.node!r}"})
        return b

    def site_results(self, node: str) -> dict | None:
        """The site outcomes recorded in ``node``'s baseline bundle (meta.json alone is read)."""
        from ..site.recording import results_of
        return results_of(self.bundle(node, only=()))

    def gpu_extra(self, node: str, uuid: str | None) -> tuple[str, str]:
        """(board part number, VBIOS) of the baseline GPU ``uuid`` of ``node`` ("" unknown)."""
        return self._gpu_extra.get(node, {}).get(uuid or "", ("", ""))

    # ------------------------------------------------------------------ the current side
    @staticmethod
    def _run_order(fleet) -> list[str]:
        """Every node of the current run in run order (``FleetRun.all_nodes``: loaded or not)."""
        nodes = getattr(fleet, "all_nodes", None)
        return list(nodes) if nodes is not None else list(fleet.bundles)

    def _in_run(self, node: str, fleet) -> bool:
        """``node`` is a node of the current run (in memory or not: a streaming run holds only
        the nodes being judged). The set is built once per run, not once per item."""
        order = getattr(fleet, "order", None)
        if not order:   # nodes in memory only (a FleetRun built directly, the tests' fleets)
            return node in fleet.bundles or node in self._run_order(fleet)
        key = (id(fleet), len(order))
        if self._run_nodes[0] != key:
            self._run_nodes = (key, frozenset(order))
        return node in self._run_nodes[1]

    @staticmethod
    def _current_facts(node: str, fleet):
        """(the current NodeFacts of ``node``, whether it was loaded for this call): read from its
        bundle when a streaming run does not hold it (or holds it light, ID_KEYS only)."""
        light = node in getattr(fleet, "_light", ())
        if node in fleet.facts and not light:
            return fleet.facts[node], False
        if hasattr(fleet, "bundle_for"):
            fleet.bundle_for(node)
        return fleet.facts[node], True

    def _compare(self, node: str, fleet, drop: bool = False) -> NodeComparison:
        self.held += 1
        self.peak_held = max(self.peak_held, self.held)
        loaded = False
        try:
            after, loaded = self._current_facts(node, fleet)
            before = NodeFacts(self.bundle(node))
            c = compare_node(node, before, after, fleet.spec.get(node))
            try:
                self._gpu_extra[node] = {g.uuid: (str(g.board_part_number or ""), str(g.vbios_version or ""))
                                         for g in before.gpus if g.uuid}
            except Exception:  # noqa: BLE001 - identity is best effort; the verdict reports the error
                self._gpu_extra[node] = {}
            return c
        finally:
            self.held -= 1   # the bundle and its facts go with this frame
            if drop and loaded and getattr(fleet, "streaming", False):
                fleet.release(node)   # its items ran (or never will): nothing else reads it

    # ------------------------------------------------------------------ comparisons
    def comparison(self, node: str, fleet, *, drop: bool = False) -> NodeComparison | None:
        """The cached comparison of ``node`` (None for a baseline-only node out of scope).
        ``drop``: a current node read from its bundle for this comparison is released after it
        (the run's items are done: ``all_comparisons``)."""
        if node in self._cmp:
            return self._cmp[node]
        cur = self._in_run(node, fleet)
        base = node in self.bundles
        if cur and base:
            c = self._compare(node, fleet, drop)
        elif cur:
            c = new_node(node)
        elif base:
            c = missing_node(node, self.inventory is not None and node in self.inventory)
        else:
            return None
        self._cmp[node] = c
        return c

    def all_comparisons(self, fleet) -> dict[str, NodeComparison]:
        """Every node's comparison (current nodes in run order, then baseline-only ones): after
        the items ran, so a current node read for it is released at once (bounded memory)."""
        order = self._run_order(fleet)
        nodes = order + [n for n in self.bundles if not self._in_run(n, fleet)]
        return {n: self.comparison(n, fleet, drop=True) for n in nodes}

    # ------------------------------------------------------------------ items
    def items(self, kind: str, fleet, slots=None) -> list[tuple[str, str | None]]:
        """(node, GPU label or None) of every item of ``kind``, in a stable order: current
        nodes in run order, then missing baseline nodes (node_presence only). On a sharded run
        (``fleet.shard``) the current nodes are the shard's, and the missing baseline nodes come
        with the first shard (their items sort first on an unsharded run too: they are no node
        of the run, nodegate.session.items.order_items). ``slots(node) -> int``: the run's
        selection is being learned before anything is gathered (nodegate.session.preselect):
        nothing is compared, a current node in the baseline gets that many stand-in GPU items
        (``gpu<i>``), as the suite's own GPU items do then."""
        if kind not in KINDS:
            raise KeyError(kind)
        out: list[tuple[str, str | None]] = []
        shard = getattr(fleet, "shard", None)
        nodes = list(fleet.nodes) if hasattr(fleet, "nodes") else list(fleet.bundles)
        first = shard is None or not shard or shard[0] == next(iter(self._run_order(fleet)), None)
        for node in nodes:
            if node not in self.bundles:
                if kind == "node_presence":
                    out.append((node, None))
                continue
            if kind in NODE_KINDS:
                out.append((node, None))
            elif slots is not None:
                out += [(node, f"gpu{i}") for i in range(slots(node))]
            else:
                out += [(node, ref.label) for ref in self.comparison(node, fleet).gpus]
        if kind == "node_presence" and first:
            out += [(n, None) for n in self.bundles if not self._in_run(n, fleet)
                    and self.comparison(n, fleet).presence == "missing"]
        return out

    def verdict(self, kind: str, node: str, label: str | None, fleet) -> Result:
        """The item's Result: FAIL when the comparison found a regression of this kind (and
        GPU), ERROR when it could not compare, SKIP when ``baseline.ignore`` lists the kind."""
        c = self.comparison(node, fleet)
        what = f"no {kind.replace('_', ' ')} regression vs baseline {self.dir}"
        if c is None:
            return Result.errored(f"{node}: in neither the baseline nor this run", what)
        spec = fleet.spec.get(node)
        if node in getattr(fleet, "spec_errors", {}):
            return Result.errored(f"spec error: {fleet.spec_errors[node]}", what)
        if kind in baseline_spec(spec).ignore:
            return Result.skipped(f"baseline.ignore lists {kind}: not compared on this node",
                                  expected=f"baseline.ignore={kind}")
        regs = c.regressions_for(kind, label)
        rows = [r for r in c.rows if r.kind == kind and (kind in NODE_KINDS or r.gpu == label)]
        ev = "\n".join(f"{r.field}{' ' + r.gpu if r.gpu else ''}: {r.before} -> {r.after} [{r.status}]" for r in rows)
        key = (kind, label if kind in GPU_KINDS else None)
        notes = c.notes.get(key, [])
        if regs:
            obs = "; ".join(f"{r.field}: {show(r.before)} -> {show(r.after)}" for r in regs)
            return Result.failed(what, obs, "; ".join(r.message for r in regs), evidence=ev,
                                 details={"regressions": [r.to_json(node) for r in regs]})
        if key in c.errors:
            return Result.errored(f"{node}{'-' + label if label else ''}: could not compare: {c.errors[key]}",
                                  what, evidence=ev)
        if kind == "node_presence":
            obs = {"both": "in the baseline and in this run",
                   "new": "new node: not in the baseline (reported as a change)"}.get(c.presence, c.presence)
        else:
            obs = "; ".join(f"{r.field}: {r.before} -> {r.after}" for r in rows if r.status != "unknown") or "compared"
        msg = ("not compared: " + "; ".join(notes)) if notes else ""
        return Result.passed(what, obs[:2000], msg, evidence=ev)


def kind_info(kind: str) -> tuple[str, str, str]:
    return KIND_INFO[kind]
