"""FleetRun's node registry: which nodes the run has, lazy loading of their bundles, release.

Bounded memory (``streaming``, docs/performance.md "4,096 nodes"): a node's Bundle and NodeFacts
are loaded when its items need them and dropped by ``release(node)`` once they are done; a
released node is read again from disk if asked for. Imports the bundle and the facts; the
identity index (``ID_KEYS``, ``bundle_ids``) below it; nothing of the gathering.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..bundle import Bundle
from ..collect import NodeFacts
from .identity import ID_KEYS


class NodeRegistry:
    """FleetRun's registry methods (state: ``bundles``, ``facts``, ``order``, ``shard``,
    ``_paths``, ``_roots``, ``_released``, ``_light``, ``on_release``; FleetRun declares the fields)."""

    @property
    def all_nodes(self) -> list[str]:
        """Every node of the run in inventory order (gathered or not yet, loaded or not)."""
        if self.order:
            return list(self.order)
        return list(self.bundles) + [n for n in self._paths if n not in self.bundles]

    @property
    def nodes(self) -> list[str]:
        """The nodes whose items are collected now: every node of the run (inventory order), or
        while collecting a shard of a large run only that shard's (nodegate.session.shards)."""
        return list(self.shard) if self.shard is not None else self.all_nodes

    def add_lazy(self, node: str, path: Path, root: Path | None = None, ids: tuple | None = None) -> None:
        """A node whose bundle is read from ``path`` (below the --replay ``root``) when first
        needed (``--replay``, streaming); ``ids``: its (boot id, machine id), read now, so the node
        identity check sees every node of the run (``peer_ids``) before all are loaded."""
        self._paths[node] = Path(path)
        if root is not None:
            self._roots[node] = Path(root)
        if ids is not None:
            self.peer_ids[node] = ids
        if node not in self.order:
            self.order.append(node)

    def has(self, node: str) -> bool:
        """The node is in the run and its bundle is in memory or can be read (no waiting)."""
        return node in self.bundles or (node in self._paths and self.ready(node))

    def release(self, node: str) -> None:
        """Drop the node's Bundle and NodeFacts (its items are done); ``on_release`` sees them
        first. Only when ``streaming``; a released node is read again from disk when asked for."""
        if not self.streaming or node not in self.bundles:
            return
        b, f = self.bundles[node], self.facts.get(node)
        # a light reload (ID_KEYS only: its node_identity item) tells the listeners nothing they
        # did not see at the node's first release, and less: they keep that summary
        for cb in () if node in self._light else self.on_release:
            try:
                cb(node, b, f)
            except Exception:  # noqa: BLE001 - a report's summary must not stop the run
                pass
        if b.path is not None:
            # what the run-wide identity checks compare stays known (a few strings a node)
            if node in self._light:
                self._light.discard(node)
            elif not b.gather_error:
                self._keep_ids(node, self.node_ids(node))
                try:
                    self._gpu_ids[node] = [(g.index, g.serial, g.uuid) for g in f.gpus] if f is not None else []
                except Exception:  # noqa: BLE001 - unreadable GPUs identify nothing
                    self._gpu_ids[node] = []
            self._paths.setdefault(node, b.path)
            del self.bundles[node]
            self.facts.pop(node, None)
            self._released.add(node)

    def released(self, node: str) -> bool:
        """Whether ``node``'s items ran and its evidence was dropped (``release``): it is read
        again from its bundle only when an item asks for it (``bundle_for``)."""
        return node in self._released

    def bundle_for(self, node: str, light: bool = False, tick: Callable[[], None] | None = None) -> Bundle | None:
        """The node's Bundle, loaded if need be (``wait``). ``light``: a released or not yet loaded
        node of a streaming run is read with ``ID_KEYS`` only (its node_identity item needs no
        more); a light bundle is replaced by the whole one when a full one is asked for."""
        b = self.bundles.get(node)
        if b is not None and (light or node not in self._light):
            return b
        if b is not None:   # light, and the whole bundle is needed
            self._light.discard(node)
            del self.bundles[node]
            self.facts.pop(node, None)
        if light and self.streaming and node in self._paths and self.ready(node):
            self.add(self._load(node, self._paths[node], only=ID_KEYS))
            self._light.add(node)
            return self.bundles[node]
        return self.wait(node, tick)

    def meta_of(self, node: str) -> dict:
        """The node's meta.json: from its Bundle in memory, else read now from its bundle directory
        (``Bundle.load(only=())``: meta.json alone) and not kept (a streaming run loads a node's
        evidence only when its items run); a node still being gathered is waited for (``wait``)."""
        b = self.bundles.get(node)
        if b is None and node in self._paths and self.ready(node):
            b = self._load(node, self._paths[node], only=())
        elif b is None:
            b = self.wait(node)
        return (getattr(b, "meta", None) or {}) if b is not None else {}

    def peek(self, node: str):
        """(Bundle, NodeFacts) of ``node`` without keeping them when they are not in memory
        (reports of nodes whose items never ran); None when the node has no bundle."""
        if node in self.bundles:
            return self.bundles[node], self.facts.get(node) or NodeFacts(self.bundles[node])
        path = self._paths.get(node)
        entry = self._arrived.get(node)
        if path is None and isinstance(entry, tuple) and isinstance(entry[0], Path):
            path = entry[0]
        if path is None:
            if isinstance(entry, Bundle):
                return entry, NodeFacts(entry)
            if isinstance(entry, tuple) and isinstance(entry[0], Bundle):
                return entry
            return None
        b = self._load(node, path)
        return b, NodeFacts(b)

    def _load(self, node: str, path: Path, only=None) -> Bundle:
        try:
            b = Bundle.load(path, root=self._roots.get(node), only=only)
        except Exception as e:  # noqa: BLE001 - unreadable bundle: the node ERRORs
            return Bundle(node, {}, {"node": node, "status": "error",
                                     "error": f"bundle {path} unreadable: {type(e).__name__}: {e}"})
        if b.node != node:   # e.g. two names for one directory on a case-insensitive disk
            return Bundle(node, {}, {"node": node, "status": "error",
                                     "error": f"bundle {path} holds node {b.node!r}, not {node!r}"})
        return b

    @property
    def contacted(self) -> list[str]:
        """Nodes whose gathering was started (live runs; [] for --replay and --collect-only)."""
        return list(self._events)

    def not_evaluated(self) -> dict[str, str]:
        """Node -> why it is NOT EVALUATED (never healthy): no selected item (deselected by
        -k/-m/--lf/--deselect), or selected items that did not run (-x, --maxfail, an interrupt,
        --collect-only). Empty until collection has selected the items; inventory order."""
        if self.selected is None:
            return {}
        from ..engine.verdict import selection_reasons   # the one module deciding verdicts
        return selection_reasons(self.targets or self.all_nodes, self.items_selected, self.items_ran,
                                 self.not_collected)

    def add(self, b: Bundle, facts: NodeFacts | None = None) -> None:
        """Add a node; ``facts`` may be a NodeFacts of ``b`` already built (and parsed) by
        ``gather_fleet``'s ``prepare`` while other nodes were still being gathered."""
        self.bundles[b.node] = b
        f = self.facts[b.node] = facts if facts is not None and facts.bundle is b else NodeFacts(b)
        f.run_identity = lambda node=b.node: self.identity_view(node)
