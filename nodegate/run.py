"""A fleet run: gather every node once (in parallel) or load bundles, then serve facts.

``gather_fleet`` runs the probe on all nodes concurrently in a bounded pool (``forks``); a slow
or hung node never delays the others beyond its own deadline, and one bad node never stops the
others: its bundle records the transport error (meta.status/meta.error) and its checks ERROR.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import probe
from .bundle import Bundle, now_iso
from .collect import NodeFacts
from .site.evidence import probe_items as site_probe_items
from .transport import STDERR_CAP, STREAM_CAP, HostKeyPolicy, Target, TransportError, stop_reason

try:  # pytest's stash key; the run is usable without pytest too
    import pytest

    RUN_KEY = pytest.StashKey["FleetRun"]()
except Exception:  # pragma: no cover
    RUN_KEY = None


@dataclass
class GatherOptions:
    """Deadlines in seconds. ``command_timeout``: per probe item (node-side ``timeout`` and our
    stream watcher); ``probe_timeout``: the whole exec, enforced on the controller."""

    connect_timeout: float = 10.0
    command_timeout: float = 30.0
    probe_timeout: float = 180.0
    forks: int = 32
    sudo: bool = False
    hostkeys: HostKeyPolicy = field(default_factory=HostKeyPolicy)
    gpu_source: str = "auto"  # auto | nvml | smi


@dataclass
class NodeJob:
    name: str
    url: str           # testinfra URL (may hold a password: never stored)
    shown_url: str     # redacted, stored in meta.json
    spec_raw: dict = field(default_factory=dict)
    persistence_user: str = ""
    #: the host's inventory groups (ansible-core's, ancestors included), kept in meta.json ``groups``
    #: so that a site module's ``testinfra_hosts: ansible://GROUP`` selects the same nodes on --replay
    groups: tuple[str, ...] = ()
    clocks_samples: int = 3


def _extra_probe_items(opts: GatherOptions, url: str) -> str:
    """The NVML item (python3 + pynvml on the node, in the same exec) unless --gpu-source smi.
    For local:// the controller's own interpreter is used: it is the one with nvidia-ml-py."""
    if opts.gpu_source == "smi":
        return ""
    from .nvml import probe_shell_snippet
    if url.startswith("local"):
        import sys
        return probe_shell_snippet(sys.executable)
    return probe_shell_snippet()


def gather_node(job: NodeJob, opts: GatherOptions, stop: threading.Event | None = None) -> Bundle:
    """Run the probe on one node and return its Bundle (never raises for node problems).
    ``stop`` set (SIGINT, SIGTERM, SIGHUP: ``stop.reason``) before the node is contacted: an
    ``interrupted`` bundle, nothing sent; while the probe runs: the exec is cut like a deadline
    cuts it and the evidence read so far is kept, marked cut (``meta.interrupted``)."""
    meta: dict = {"node": job.name, "target": job.shown_url, "started_at": now_iso(), "gpu_source": opts.gpu_source,
                  "probe_version": probe.PROBE_VERSION, "spec": job.spec_raw, "groups": list(job.groups),
                  "status": "ok"}
    t0 = time.monotonic()
    if stop is not None and stop.is_set():
        meta.update(status="interrupted", interrupted=stop_reason(stop), finished_at=now_iso(), gather_s=0.0,
                    error=f"not gathered: the run was interrupted ({stop_reason(stop)}) before this node was contacted")
        return Bundle(job.name, {}, meta)
    try:
        # the spec's declared site evidence after the built-in items, in the same exec
        extra = _extra_probe_items(opts, job.url) + site_probe_items(job.spec_raw)
        script, marker = probe.render_script(user=job.persistence_user, samples=job.clocks_samples,
                                             timeout_s=int(opts.command_timeout), extra=extra)
        target = Target(job.url, hostkeys=opts.hostkeys, connect_timeout=opts.connect_timeout, sudo=opts.sudo)
        r = target.run_probe(script, opts.probe_timeout, marker=marker, item_timeout_s=opts.command_timeout + 10,
                             stop=stop)
    except TransportError as e:
        meta.update(status=e.kind, error=e.message, gather_s=round(time.monotonic() - t0, 3), finished_at=now_iso())
        if e.stage:
            meta["stage"] = e.stage
        return Bundle(job.name, {}, meta)
    except (ValueError, OSError) as e:
        meta.update(status="error", error=f"{type(e).__name__}: {e}", gather_s=round(time.monotonic() - t0, 3),
                    finished_at=now_iso())
        return Bundle(job.name, {}, meta)
    items, complete = probe.split_stream(r.stdout, marker, stderr=r.stderr)
    _, probe_err = probe.split_stderr(r.stderr, marker)
    meta.update(gather_s=round(time.monotonic() - t0, 3), connect_s=round(r.connect_s, 3),
                exec_s=round(r.exec_s, 3), finished_at=now_iso(), complete=complete, exit_code=r.rc)
    if probe_err.strip():
        meta["probe_stderr"] = probe_err[-4000:].decode("utf-8", errors="replace")
    if len(r.stderr) >= STDERR_CAP:
        meta["stderr_capped"] = (f"the probe's stderr reached the controller's cap ({STDERR_CAP} bytes): "
                                 "items after that point have no stderr")
    _mark_cut(meta, items, complete, r, opts)
    return Bundle.from_raw(job.name, items, meta)


def _mark_cut(meta: dict, items: dict, complete: bool, r, opts: GatherOptions) -> None:
    """Record in ``meta`` where and why a probe's evidence ends early (``cut_at``,
    ``cut_reason``; ``interrupted`` for SIGINT/SIGTERM/SIGHUP), or the node's gather error
    when the exec produced no evidence at all."""
    open_items = [k for k, v in items.items() if v.status == "timeout"]
    cut_at = open_items[-1] if open_items else (list(items)[-1] if items else "start")
    if r.stdout_capped:
        # the controller stopped reading (transport.STREAM_CAP): the item being read is cut
        for k in open_items:
            items[k].status = "truncated"
        meta.update(stream_capped=True, cut_at=cut_at,
                    cut_reason=f"probe output exceeded the controller's cap ({STREAM_CAP} bytes): exec stopped, "
                               "later items not collected")
    elif r.timed_out and r.interrupted:
        meta["interrupted"] = r.interrupted
        if not items:
            meta.update(status="interrupted", stage=r.stage,
                        error=f"not gathered: the run was interrupted ({r.interrupted}) during {r.stage or 'the exec'}")
            return
        meta.update(cut_at=cut_at, cut_reason=f"run interrupted ({r.interrupted}) while the probe ran: the evidence "
                                              "read until then is kept, later items were not collected")
    elif r.timed_out:
        deadline = (f"item {opts.command_timeout + 10:.0f}s / probe {opts.probe_timeout:.0f}s / "
                    f"connect {opts.connect_timeout:g}s")
        stage = (r.stage or "reading the output") + (f" ({r.note})" if r.note else "")
        if not items:
            meta.update(status="timeout", stage=r.stage or "reading the output",
                        error=f"the probe produced no output within the controller's deadline ({deadline}): "
                              f"stalled in stage {stage}")
            return
        meta.update(cut_at=cut_at,
                    cut_reason=f"probe stopped by the controller's deadline ({deadline}) in stage {stage}")
    elif not complete:
        if not items:
            meta.update(status="probe-failed",
                        error=f"probe produced no evidence (exit {r.rc}): "
                              + r.stderr[-300:].decode("utf-8", errors="replace").strip())
        else:
            meta["cut_at"] = list(items)[-1]
            meta["cut_reason"] = "probe output ended early (connection dropped or shell died)"


@dataclass
class FleetRun:
    """Everything one pytest session knows about the fleet (see docs/contributing.md contract).

    ``bundles``/``facts``: node name -> Bundle / NodeFacts, in inventory order once the run is
    complete. While a background gather (``start_gather``) is running they hold only the nodes
    merged so far: ``wait(node)`` blocks until that node is gathered and merges it; ``wait_all()``
    merges every node and restores inventory order. Both are called from pytest's main thread
    only, so the dicts are never mutated by another thread while pytest iterates them.
    ``order``: every node name in inventory order, known before any node is contacted.

    Bounded memory (``streaming``, docs/performance.md "4,096 nodes"): a node's Bundle and
    NodeFacts are loaded when its items need them (``wait``: from the gathering process's bundle,
    or from its directory on ``--replay``) and dropped by ``release(node)`` once its items are
    done; ``bundles``/``facts`` then hold the nodes being judged, and a released node is read
    again from disk if asked for. ``wait_all()`` still waits for the whole gather but merges
    nothing. ``on_release`` callables get ``(node, bundle, facts)`` before a node is dropped
    (the reports keep a summary of it). ``all_nodes``: every node of the run; ``nodes``: the
    ones whose items are being collected (a shard of them, nodegate.session.shards)."""

    bundles: dict[str, Bundle] = field(default_factory=dict)
    facts: dict[str, NodeFacts] = field(default_factory=dict)
    spec: dict = field(default_factory=dict)
    spec_errors: dict[str, str] = field(default_factory=dict)
    #: node -> where its spec came from ("inventory <file>", "--spec <file>", "bundle meta.json",
    #: "built-in defaults (...)"), shown in every report (nodegate.session.specfile)
    spec_source: dict[str, str] = field(default_factory=dict)
    #: node -> the raw spec mapping behind ``spec`` (handed to xdist workers)
    spec_raw: dict[str, dict] = field(default_factory=dict)
    #: node -> the other nodes of the run at the same address (host and port of the target URL):
    #: one machine answers for all of them (their items wait for each other: ``identity_clashes``)
    address_twins: dict[str, list[str]] = field(default_factory=dict)
    #: node -> (boot id, machine id) of nodes of the run not loaded here (an xdist worker's others)
    peer_ids: dict[str, tuple] = field(default_factory=dict)
    _id_index: tuple = field(default=(), repr=False)
    _n_nodes: tuple = field(default=(None, 0), repr=False)
    bundles_dir: Path | None = None
    reports_dir: Path | None = None
    #: the inventory sources as messages name them (nodegate.inventory.sources_label), None: no inventory
    inventory_path: str | None = None
    started_at: str = field(default_factory=now_iso)
    gather_s: float = 0.0
    mode: str = "ssh"  # ssh | local | replay
    order: list[str] = field(default_factory=list)
    overlapped: bool = False  # tests ran while nodes were still being gathered
    # -- selection (nodegate.session.selection): what the reports need to say "not evaluated"
    #: every node of the run (inventory after --limit, or the bundles replayed), in order
    targets: list[str] = field(default_factory=list)
    #: nodes with at least one selected item after -k/-m/--lf/--deselect (None until collected)
    selected: list[str] | None = None
    #: node -> number of its selected items (collection)
    items_selected: dict[str, int] = field(default_factory=dict)
    #: node -> number of its items that ran (their setup was reported)
    items_ran: dict[str, int] = field(default_factory=dict)
    _arrived: dict = field(default_factory=dict, repr=False)      # node -> (Bundle, NodeFacts), any thread
    _events: dict = field(default_factory=dict, repr=False)       # node -> threading.Event
    _thread: threading.Thread | None = field(default=None, repr=False)
    _t0: float = field(default=0.0, repr=False)
    _errors: int = field(default=0, repr=False)
    _failure: BaseException | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _proc: object = field(default=None, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)   # the thread pool's
    _reason_box: object = field(default=None, repr=False)      # the gathering process's (interrupt.ReasonBox)
    streaming: bool = False
    on_release: list = field(default_factory=list, repr=False)
    shard: list[str] | None = field(default=None, repr=False)     # nodes collected now (shards)
    _paths: dict = field(default_factory=dict, repr=False)         # node -> bundle dir (lazy / released)
    _released: set = field(default_factory=set, repr=False)
    _roots: dict = field(default_factory=dict, repr=False)         # node -> its --replay root
    _gpu_ids: dict = field(default_factory=dict, repr=False)       # released node -> [(index, serial, uuid)]
    _light: set = field(default_factory=set, repr=False)           # nodes in memory with ID_KEYS only
    surplus: dict[str, int] = field(default_factory=dict, repr=False)  # node -> GPUs seen beyond gpu.count

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
        from .reports.status import selection_reasons   # the one module deciding verdicts
        return selection_reasons(self.targets or self.all_nodes, self.items_selected, self.items_ran)

    def add(self, b: Bundle, facts: NodeFacts | None = None) -> None:
        """Add a node; ``facts`` may be a NodeFacts of ``b`` already built (and parsed) by
        ``gather_fleet``'s ``prepare`` while other nodes were still being gathered."""
        self.bundles[b.node] = b
        f = self.facts[b.node] = facts if facts is not None and facts.bundle is b else NodeFacts(b)
        f.run_identity = lambda node=b.node: self.identity_view(node)

    # ------------------------------------------------------------------ node identity
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

    def shared_gpus(self) -> list[tuple[str, str, list[tuple[str, int | None]]]]:
        """GPUs of different nodes that report one serial or UUID: ``[("serial" | "UUID", value,
        [(node, GPU index), ...])]``, for the summaries (a board cannot be in two nodes: a cloned
        or swapped bundle, or one machine gathered under two names). Unreadable GPUs are left out
        (their checks say why); N/A and all-zero serials identify nothing."""
        from .checks.slots import _ident_value
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

    # ------------------------------------------------------------------ background gather
    def start_gather(self, jobs: list[NodeJob], opts: GatherOptions, *, process: bool = True) -> None:
        """Gather ``jobs`` in the background (the same bounded pool as ``gather_fleet``), writing
        each bundle to ``bundles_dir`` as it arrives. Returns at once; ``wait``/``wait_all`` hand
        the results to the caller's thread.

        ``process`` (and a ``bundles_dir``, and ``fork``): the pool runs in a forked child
        process that reports each node as its bundle is written; this process then reads the
        bundle from disk, so what is judged is exactly the evidence kept. The SSH sessions'
        work (paramiko's packet handling, writing ~110 files per node) then holds the child's
        interpreter lock, not the one pytest's items run under (docs/performance.md). Otherwise
        a thread of this process runs the pool and parses each node's GPU facts as it arrives."""
        self.order = [j.name for j in jobs]
        self.address_twins = address_twins(jobs)
        self._events = {j.name: threading.Event() for j in jobs}
        self._t0 = time.monotonic()
        ctx = None
        if process and self.bundles_dir is not None:
            import multiprocessing
            if "fork" in multiprocessing.get_all_start_methods():
                ctx = multiprocessing.get_context("fork")
        if ctx is not None:
            self._start_process(ctx, jobs, opts)
        else:
            self._start_thread(jobs, opts)

    def _arrive(self, node: str, entry, error: bool) -> None:
        with self._lock:
            if node in self._arrived or node not in self._events:
                return
            self._arrived[node] = entry
            if error:
                self._errors += 1
        self._events[node].set()

    def _finish(self, jobs: list[NodeJob], why: str | None) -> None:
        stopped = stop_reason(self._stop) if self._stop.is_set() else ""
        for j in jobs:  # a node the pool never finished: ERROR, never a silent hole
            if j.name not in self._arrived:
                meta = {"node": j.name, "target": j.shown_url, "status": "error", "spec": j.spec_raw,
                        "groups": list(j.groups), "error": f"internal error while gathering: {why or 'not run'}"}
                if stopped:
                    meta.update(status="interrupted", interrupted=stopped,
                                error=f"not gathered: the run was interrupted ({stopped})")
                self._arrive(j.name, Bundle(j.name, {}, meta), True)
        self.gather_s = round(time.monotonic() - self._t0, 3)

    def _start_thread(self, jobs: list[NodeJob], opts: GatherOptions) -> None:
        def prepare(b: Bundle) -> None:
            # the GPU facts parsed in the gathering thread, while other nodes are still probed
            self._arrive(b.node, (b, _with_gpus_parsed(b)), bool(b.gather_error))

        def body() -> None:
            why = None
            try:
                gather_fleet(jobs, opts, self.bundles_dir, prepare=prepare, prepare_errors=True, stop=self._stop)
            except BaseException as e:  # noqa: BLE001 - e.g. the bundles directory is not writable
                self._failure = e
                why = f"{type(e).__name__}: {e}"
            finally:
                self._finish(jobs, why)

        self._thread = threading.Thread(target=body, name="nodegate-gather", daemon=True)
        self._thread.start()

    def _start_process(self, ctx, jobs: list[NodeJob], opts: GatherOptions) -> None:
        import sys
        recv, send = ctx.Pipe(duplex=False)
        for stream in (sys.stdout, sys.stderr):  # nothing buffered here may be written twice
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        import os

        from .interrupt import ReasonBox
        self._reason_box = ReasonBox(ctx)
        proc = ctx.Process(target=_gather_child, args=(jobs, opts, self.bundles_dir, send, self._reason_box,
                                                       os.getpid()),
                           name="nodegate-gather", daemon=True)
        proc.start()
        send.close()

        def reader() -> None:
            why = None
            try:
                while True:
                    try:
                        kind, node, payload, error, parsed = recv.recv()
                    except EOFError:
                        break
                    if kind == "path":
                        self._arrive(node, (Path(payload), parsed), error)
                    else:   # the child could not write this node's bundle: its meta says why
                        self._arrive(node, Bundle(node, {}, payload), True)
                    if len(self._arrived) == len(self.order):
                        break
            except BaseException as e:  # noqa: BLE001
                why = f"{type(e).__name__}: {e}"
            finally:
                if why is not None and proc.is_alive():
                    proc.kill()   # nothing reads it any more: it must not go on writing bundles
                proc.join(timeout=30)
                if len(self._arrived) < len(self.order) and why is None:
                    why = f"the gathering process ended (exit code {proc.exitcode})"
                    self._failure = RuntimeError(why)
                self._finish(jobs, why)
                recv.close()

        self._proc = proc
        self._thread = threading.Thread(target=reader, name="nodegate-gather-reader", daemon=True)
        self._thread.start()

    def abort(self, reason: str = "Ctrl-C") -> None:
        """Stop the gather (Ctrl-C, SIGTERM, SIGHUP: ``reason``; nodegate.interrupt): every SSH
        session and local process of it ends at once; a probe in flight keeps what it read,
        marked cut; a node not contacted yet comes out ``interrupted`` (ERROR). The gathering
        process gets ``interrupt.ABORT_GRACE_S`` to write those bundles, then is killed.
        Returns at once; ``wait_all`` collects the nodes."""
        from .interrupt import ABORT_GRACE_S
        from .transport import set_stop
        set_stop(self._stop, reason)   # a pool in this process: its deadlines end within POLL_S
        proc = self._proc
        if proc is None:
            return
        if not proc.is_alive():
            return
        if self._reason_box is not None:
            self._reason_box.put(reason)
        proc.terminate()

        def reap():
            proc.join(ABORT_GRACE_S)
            if proc.is_alive():
                proc.kill()
        threading.Thread(target=reap, name="nodegate-gather-reap", daemon=True).start()

    def progress(self) -> tuple[int, int, int, float]:
        """(nodes gathered, nodes in the run, unreachable/errors, seconds since the gather began)."""
        return (len(self._arrived), len(self.order), self._errors,
                (self.gather_s or time.monotonic() - self._t0) if self._t0 else 0.0)

    def ready(self, node: str) -> bool:
        ev = self._events.get(node)
        return ev is None or ev.is_set()

    def wait(self, node: str, tick: Callable[[], None] | None = None, every: float = 0.25) -> Bundle | None:
        """Block until ``node`` is gathered, merge it, return its Bundle (None: not in the run).
        ``tick()`` is called every ``every`` seconds while waiting (progress display)."""
        ev = self._events.get(node)
        if node not in self.bundles and node in self._paths and (ev is None or ev.is_set()):
            self.add(self._load(node, self._paths[node]))   # --replay (lazy) or released
            self._released.discard(node)
            return self.bundles.get(node)
        if ev is not None and node not in self.bundles:
            while not ev.wait(every):
                if tick is not None:
                    tick()
            entry = self._arrived[node]
            if isinstance(entry, tuple) and isinstance(entry[0], Path):
                # written by the gathering process: judge what was kept
                self._add_from_disk(node, *entry)
            elif isinstance(entry, Bundle):
                self.add(entry)
            else:
                self.add(*entry)
        return self.bundles.get(node)

    def _add_from_disk(self, node: str, path: Path, parsed: bytes | None) -> None:
        import pickle
        b = self._load(node, path)
        f = NodeFacts(b)
        if parsed is not None and not b.gather_error:
            # the GPU facts the gathering process parsed from the same bytes (_parsed_gpus);
            # pickle from our own child, over our own pipe
            try:
                f.__dict__.update(pickle.loads(parsed))  # noqa: S301
            except Exception:  # noqa: BLE001 - then they are parsed here on first use
                pass
        self.add(b, f)

    def wait_all(self, tick: Callable[[], None] | None = None) -> None:
        """Block until every node is gathered; merge them all in inventory order. Raises what
        stopped the gather itself (not a node problem: those are in the bundles)."""
        for n in self.order:
            if self.streaming:   # wait for the gather to finish, merge nothing (bounded memory)
                ev = self._events.get(n)
                while ev is not None and not ev.wait(0.25):
                    if tick is not None:
                        tick()
                continue
            self.wait(n, tick)
        if self._thread is not None:
            self._thread.join()
        if self.order and list(self.bundles) != self.order:
            self.bundles = {n: self.bundles[n] for n in self.order if n in self.bundles} | \
                {n: b for n, b in self.bundles.items() if n not in self._events}
            self.facts = {n: self.facts[n] for n in self.bundles}
        if self._failure is not None:
            e, self._failure = self._failure, None
            raise e


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
        from .textsafe import shown as _shown
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


#: niceness added to the gathering process (FleetRun.start_gather)
GATHER_NICE = 19


def _with_gpus_parsed(b: Bundle) -> NodeFacts:
    """NodeFacts of ``b`` with its GPU facts (the nvidia-smi XML or NVML parse, the largest per
    node) already computed and cached, unless the node was not gathered or they cannot be read
    (then the checks meet the problem and report it)."""
    f = NodeFacts(b)
    if not b.gather_error:
        try:
            f.gpus  # noqa: B018 - evaluated for its cache
        except Exception:  # noqa: BLE001
            pass
    return f


def _parsed_gpus(b: Bundle) -> bytes | None:
    """The GPU facts of ``b`` parsed here in the gathering process and pickled: the pytest
    process then reads the bundle from disk but not the XML again (``FleetRun.wait``). None
    when there is nothing to hand over."""
    import pickle
    f = _with_gpus_parsed(b)
    cache = {k: v for k, v in f.__dict__.items() if k not in ("bundle", "node")}
    if not cache:
        return None
    try:
        return pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - then the pytest process parses it itself
        return None


def _gather_child(jobs: list[NodeJob], opts: GatherOptions, bundles_dir: Path, conn, reason_box=None,
                  parent_pid: int = 0) -> None:
    """Body of the gathering process (``FleetRun.start_gather``): gather every node, writing
    its bundle, and report ``("path", node, dir, is_error)`` (or ``("bundle", node, meta,
    True)`` when the bundle could not be written) as each one is done. SIGTERM/SIGHUP (from
    ``FleetRun.abort``, a CI cancel, or the parent's death) stop it: nodegate.interrupt."""
    import os

    from .interrupt import setup_gathering_child
    stop = threading.Event()
    setup_gathering_child(stop, reason_box, parent_pid or os.getppid())
    try:
        # The pool's 32+ threads would otherwise each get the scheduler's share that pytest's one
        # thread gets: on a busy controller the items then wait in the run queue (measured: 4.6 s
        # of 5.1 s). Lower priority, the gatherer uses the CPU pytest leaves; it mostly waits on
        # the network anyway.
        os.nice(GATHER_NICE)
    except OSError:
        pass
    import gc
    # What was forked from pytest (its plugins, config, modules) lives here unchanged: frozen,
    # no collection traverses it again (or copies its pages). The pool keeps no bundle once
    # reported, so what each node leaves (paramiko's reference cycles) is all the GC sees.
    gc.freeze()
    lock = threading.Lock()

    def prepare(b: Bundle) -> None:
        if b.path is None:
            msg = ("bundle", b.node, b.meta, True, None)
        else:
            msg = ("path", b.node, str(b.path), bool(b.gather_error), _parsed_gpus(b))
        with lock:
            try:
                conn.send(msg)
            except (BrokenPipeError, OSError):   # the pytest process is gone: nobody reads
                pass

    try:
        gather_fleet(jobs, opts, bundles_dir, prepare=prepare, prepare_errors=True, keep=False, stop=stop)
    finally:
        conn.close()


def gather_fleet(jobs: list[NodeJob], opts: GatherOptions, bundles_dir: Path | None,
                 progress: Callable[[int, int, int], None] | None = None,
                 prepare: Callable[[Bundle], None] | None = None, prepare_errors: bool = False,
                 keep: bool = True, stop: threading.Event | None = None) -> list[Bundle]:
    """Gather all nodes concurrently (``opts.forks`` at a time); write each bundle as soon as
    it is complete. Returns bundles in job order (``keep=False``: none, each bundle is dropped
    once written and prepared; the gathering process keeps nothing per node, docs/performance.md).

    Each node's bundle is written, then ``prepare(bundle)`` is called (e.g. parse its facts), in
    the worker thread that gathered it: that work overlaps with the other nodes' probes instead
    of running one node after the other once the fleet is in (docs/performance.md). An exception
    from ``prepare`` is ignored (evaluation meets the same problem and reports it); one from
    writing the bundle propagates, as before. ``prepare_errors``: ``prepare`` is also called for
    a node whose bundle could not be written (the bundle then records that error). ``stop``
    set (``transport.set_stop``): the probes in flight are cut and keep what they read, the
    nodes not started are not contacted (``gather_node``)."""
    out: dict[str, Bundle] = {}
    errors = 0
    lock = threading.Lock()
    if not jobs:
        return []

    def one(j: NodeJob) -> Bundle:
        try:
            b = gather_node(j, opts, stop)
        except Exception as e:  # noqa: BLE001 - one bad node never stops the others
            b = Bundle(j.name, {}, {"node": j.name, "target": j.shown_url, "status": "error",
                                    "error": f"internal error while gathering: {type(e).__name__}: {e}",
                                    "spec": j.spec_raw, "groups": list(j.groups)})
        if bundles_dir is not None:
            try:
                b.write(bundles_dir)
            except Exception as e:  # noqa: BLE001
                if not prepare_errors:
                    raise
                b = Bundle(j.name, {}, {"node": j.name, "target": j.shown_url, "status": "error",
                                        "error": f"bundle not written to {bundles_dir}: {type(e).__name__}: {e}",
                                        "spec": j.spec_raw, "groups": list(j.groups)})
        if prepare is not None:
            try:
                prepare(b)
            except Exception:  # noqa: BLE001 - a parse problem is the checks' to report
                pass
        return b

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, min(opts.forks, len(jobs)))) as ex:
        futs = {ex.submit(one, j): j for j in jobs}
        for f in as_completed(futs):
            j = futs.pop(f)
            b = f.result()
            with lock:
                done += 1
                if keep:
                    out[j.name] = b
                if b.gather_error:
                    errors += 1
                if progress:
                    progress(done, len(jobs), errors)
            del f, b
    return [out[j.name] for j in jobs] if keep else []
