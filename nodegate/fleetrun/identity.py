"""FleetRun's machine identity: which nodes of a run are one machine, and GPUs two nodes report.

A node is identified by its boot id (/proc/sys/kernel/random/boot_id: one running kernel) and
machine id (/etc/machine-id, machine-id(5): one installation); two inventory names answering for
one machine, or a cloned bundle, make every item of both nodes ERROR (NG-INV-003,
nodegate.engine.evaluate.clash_message). ``IdentityIndex`` is FleetRun's part that keeps the
index of those ids over every node known here, bounded at 4,096 nodes (docs/performance.md);
the module's functions read ids from a bundle and addresses from target URLs. Imports the
bundle and the checks' GPU identity rule; nothing of the registry or the gathering.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..bundle import Bundle
from ..collect import NodeFacts

if TYPE_CHECKING:   # annotations only: the gathering imports nothing of this module either
    from ..gather import NodeJob


class IdentityIndex:
    """FleetRun's identity methods (state: ``peer_ids``, ``_id_index``, ``_n_nodes``,
    ``_gpu_ids``, ``address_twins``; FleetRun declares the fields)."""

    def _keep_ids(self, node: str, ids: tuple) -> None:
        """Record a released node's (boot id, machine id) in ``peer_ids`` and in the identity
        index in place (a live streaming run learns one node at a time: no rebuild a node)."""
        before = self._index() if self._id_index else None
        self.peer_ids[node] = ids
        if before is not None:
            extra = tuple(n for n in self.bundles if n not in self.peer_ids and n != node)
            for what, v in (("boot id", ids[0]), ("machine id", ids[1])):
                if v and node not in before.get((what, v), ()):
                    before.setdefault((what, v), {})[node] = None
            self._id_index = (("streaming", len(self.peer_ids), extra), before)

    def ids_of_every_node(self, tick: Callable[[], None] | None = None) -> None:
        """Wait for every node to be gathered and make ``peer_ids`` hold the (boot id, machine id)
        of each node not in memory, read from its bundle alone (``ID_KEYS``): what the node
        identity check (NG-INV-003) compares, without merging every node (bounded memory)."""
        for n in self.order:
            ev = self._events.get(n)
            while ev is not None and not ev.wait(0.25):
                if tick is not None:
                    tick()
            if n in self.facts or n in self.peer_ids:
                continue
            path = self._paths.get(n)
            entry = self._arrived.get(n)
            if path is None and isinstance(entry, tuple) and isinstance(entry[0], Path):
                path = entry[0]
            if path is None:
                continue   # an error bundle in memory: nothing of the node to compare
            b = self._load(n, path, only=ID_KEYS)
            if not b.gather_error:
                self._keep_ids(n, bundle_ids(b))

    def node_ids(self, node: str) -> tuple[str | None, str | None]:
        """(boot id, machine id) of a merged node, None for each one that cannot be read."""
        if node not in self.facts:
            ids = self.peer_ids.get(node) or (None, None)
            return ids[0], ids[1]
        f = self.facts[node]
        out = []
        for name in ("boot_id", "machine_id"):
            try:
                out.append(getattr(f, name) or None)
            except Exception:  # noqa: BLE001 - unreadable: this id identifies nothing
                out.append(None)
        return out[0], out[1]

    def _index(self) -> dict:
        """{("boot id" | "machine id", value): {node: None}} (insertion-ordered, O(1) membership)
        over every node known here, rebuilt when
        a node was merged since (once per node arrival, not once per item). On a streaming run
        the nodes in memory change with every node judged: there the ids of every node seen so
        far are kept in ``peer_ids`` (replay: all of them from the start) and the index is
        rebuilt only when a node whose ids are not there yet is in memory (O(1) a node)."""
        if self.streaming:
            extra = tuple(n for n in self.bundles if n not in self.peer_ids)
            key = ("streaming", len(self.peer_ids), extra)
        else:
            key = (len(self.bundles), len(self.peer_ids))
        if self._id_index and self._id_index[0] == key:
            return self._id_index[1]
        idx: dict = {}
        for n in list(self.bundles) + [n for n in self.peer_ids if n not in self.bundles]:
            if n in self.bundles and self.bundles[n].gather_error:
                continue
            boot, mid = self.node_ids(n)
            for what, v in (("boot id", boot), ("machine id", mid)):
                if v:
                    idx.setdefault((what, v), {})[n] = None
        self._id_index = (key, idx)
        return idx

    def identity_clashes(self, node: str, among=None) -> list[tuple[str, str, str]]:
        """``[(other node, "boot id" | "machine id", value)]``: the nodes known here that report
        the same boot id (/proc/sys/kernel/random/boot_id: one running kernel) or machine id
        (/etc/machine-id, machine-id(5): one installation, or a cloned image) as ``node``. Only
        nodes in ``among`` when given."""
        boot, mid = self.node_ids(node)
        idx = self._index()
        out = []
        for what, v in (("boot id", boot), ("machine id", mid)):
            for other in idx.get((what, v), ()) if v else ():
                if other != node and (among is None or other in among):
                    out.append((other, what, v))
        return out

    def identity_groups(self, node: str, among=None, shown: int = 5) -> list["ClashGroup"]:
        """The clash groups of ``node``: for its boot id and its machine id, how many other
        nodes known here report the same value and the first ``shown`` of their names (in the
        run's order), ``ClashGroup``; only nodes in ``among`` when given. Bounded whatever the
        group's size: N copies of one bundle give each node one group of N-1 counted and at
        most ``shown`` named (issue 31: every message naming all N-1 others made the reports
        quadratic in the nodes)."""
        boot, mid = self.node_ids(node)
        idx = self._index()
        out = []
        for what, v in (("boot id", boot), ("machine id", mid)):
            peers = idx.get((what, v)) if v else None
            if not peers:
                continue
            if among is not None:
                peers = {o: None for o in among if o in peers}
            count = len(peers) - (1 if node in peers else 0)
            if count <= 0:
                continue
            names = []
            for o in peers:
                if o != node:
                    names.append(o)
                    if len(names) >= shown:
                        break
            out.append(ClashGroup(what, v, count, tuple(names)))
        return out

    def keep_gpu_id(self, node: str, index: int, serial: str | None, uuid: str | None) -> None:
        """Keep one GPU's (index, serial, UUID) of a node not in memory, as ``release`` keeps a
        released node's (``shared_gpus`` reads them): xdist's controller learns them from the
        records its workers send, never reading the node's bundle. The first seen per index stays."""
        got = self._gpu_ids.setdefault(node, [])
        if not any(g[0] == index for g in got):
            got.append((index, serial, uuid))

    def shared_gpus(self) -> list[tuple[str, str, list[tuple[str, int | None]]]]:
        """GPUs of different nodes that report one serial or UUID: ``[("serial" | "UUID", value,
        [(node, GPU index), ...])]``, for the summaries (a board cannot be in two nodes: a cloned
        or swapped bundle, or one machine gathered under two names). Unreadable GPUs are left out
        (their checks say why); N/A and all-zero serials identify nothing."""
        from ..checks.slots import _ident_value
        seen: dict[tuple[str, str], list[tuple[str, int | None]]] = {}
        ids = {n: g for n, g in self._gpu_ids.items() if n not in self.facts}   # released (streaming)
        for node, f in self.facts.items():
            try:
                ids[node] = [(g.index, g.serial, g.uuid) for g in f.gpus]
            except Exception:  # noqa: BLE001
                continue
        for node, gpus in ids.items():
            for index, serial, uuid in gpus:
                for field, label, value in (("serial", "serial", serial), ("uuid", "UUID", uuid)):
                    v = _ident_value(field, value)
                    if v is not None:
                        seen.setdefault((label, v), []).append((node, index))
        return [(label, v, where) for (label, v), where in seen.items() if len({n for n, _ in where}) > 1]

    def identity_view(self, node: str) -> "IdentityView":
        """What the node_identity check (NG-INV-003) judges: how many other nodes the run has and
        which of them report this node's boot id or machine id."""
        key = (len(self.order), len(self.bundles), len(self.peer_ids))
        if self._n_nodes[0] != key:   # once per node merged, not once per node judged (4096 nodes)
            # |nodes | bundles | peer_ids| without a set of every node each time: a streaming
            # run's bundles change at every node (released ones are in peer_ids)
            others = {n for n in (*self.nodes, *self.bundles) if n not in self.peer_ids}
            self._n_nodes = (key, len(self.peer_ids) + len(others))
        return IdentityView(max(0, self._n_nodes[1] - 1), self.identity_groups(node))


@dataclass(frozen=True)
class ClashGroup:
    """Nodes that report one node's ``what`` ("boot id" | "machine id") ``value``: ``count``
    other nodes, the first of them ``names`` (at most FleetRun.identity_groups' ``shown``)."""

    what: str
    value: str
    count: int
    names: tuple[str, ...]

    def phrase(self, name_chars: int = 64) -> str:
        """``99 other nodes report the same boot id V: a, b, c, d, e, ...`` (one other: ``node b
        reports the same boot id V``): bounded by ``names`` and ``name_chars`` per name,
        whatever ``count`` is."""
        from ..textsafe import shown as _shown
        names = [_shown(n)[:name_chars] for n in self.names]
        if self.count == 1 and names:
            return f"node {names[0]} reports the same {self.what} {self.value}"
        more = ", ..." if self.count > len(names) else ""
        return f"{self.count} other nodes report the same {self.what} {self.value}: {', '.join(names)}{more}"


@dataclass
class IdentityView:
    """The run as one node's node_identity check sees it: ``others`` nodes besides it, and
    ``clashes``: a ClashGroup for its boot id and one for its machine id where other nodes
    report it."""

    others: int
    clashes: list[ClashGroup]


def address_of(url: str) -> str | None:
    """``host:port`` of a testinfra URL (``paramiko://u@10.0.0.7:2222`` -> ``10.0.0.7:2222``; no
    port: 22), lower-cased; None for local:// (not an address)."""
    import urllib.parse
    if url.startswith("local"):
        return None
    try:
        p = urllib.parse.urlsplit(url)
        host, port = p.hostname, p.port or 22
    except ValueError:
        return None
    return f"{host.lower()}:{port}" if host else None


def address_twins(jobs: list[NodeJob]) -> dict[str, list[str]]:
    """node -> the other jobs that target the same host and port (two inventory names for one
    address gather one machine twice)."""
    by: dict[str, list[str]] = {}
    for j in jobs:
        a = address_of(j.url)
        if a is not None:
            by.setdefault(a, []).append(j.name)
    return {n: [o for o in ns if o != n] for ns in by.values() if len(ns) > 1 for n in ns}


#: the evidence a bounded-memory run reads of every node up front: what the node identity check
#: compares across the run (boot id, machine id: FleetRun.identity_clashes)
ID_KEYS = frozenset({"meta.boot_id", "meta.machine_id"})


def bundle_ids(b: Bundle) -> tuple:
    """(boot id, machine id) of a bundle (None where unreadable; ``ID_KEYS`` suffice)."""
    f, out = NodeFacts(b), []
    for name in ("boot_id", "machine_id"):
        try:
            out.append(getattr(f, name) or None)
        except Exception:  # noqa: BLE001 - unreadable: this id identifies nothing
            out.append(None)
    return tuple(out)
