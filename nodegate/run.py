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
from .transport import STDERR_CAP, STREAM_CAP, HostKeyPolicy, Target, TransportError

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


def gather_node(job: NodeJob, opts: GatherOptions) -> Bundle:
    """Run the probe on one node and return its Bundle (never raises for node problems)."""
    meta: dict = {"node": job.name, "target": job.shown_url, "started_at": now_iso(), "gpu_source": opts.gpu_source,
                  "probe_version": probe.PROBE_VERSION, "spec": job.spec_raw, "status": "ok"}
    t0 = time.monotonic()
    try:
        script, marker = probe.render_script(user=job.persistence_user, samples=job.clocks_samples,
                                             timeout_s=int(opts.command_timeout), extra=_extra_probe_items(opts, job.url))
        target = Target(job.url, hostkeys=opts.hostkeys, connect_timeout=opts.connect_timeout, sudo=opts.sudo)
        r = target.run_probe(script, opts.probe_timeout, marker=marker, item_timeout_s=opts.command_timeout + 10)
    except TransportError as e:
        meta.update(status=e.kind, error=e.message, gather_s=round(time.monotonic() - t0, 3), finished_at=now_iso())
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
    if r.stdout_capped:
        # the controller stopped reading (transport.STREAM_CAP): the item being read is cut
        open_items = [k for k, v in items.items() if v.status == "timeout"]
        for k in open_items:
            items[k].status = "truncated"
        meta["stream_capped"] = True
        meta["cut_at"] = open_items[-1] if open_items else (list(items)[-1] if items else "start")
        meta["cut_reason"] = (f"probe output exceeded the controller's cap ({STREAM_CAP} bytes): exec stopped, "
                            "later items not collected")
    elif r.timed_out:
        open_items = [k for k, v in items.items() if v.status == "timeout"]
        meta["cut_at"] = open_items[-1] if open_items else (list(items)[-1] if items else "start")
        meta["cut_reason"] = (f"probe stopped by the controller's deadline "
                            f"(item {opts.command_timeout + 10:.0f}s / probe {opts.probe_timeout:.0f}s)")
    elif not complete:
        if not items:
            meta.update(status="probe-failed",
                        error=f"probe produced no evidence (exit {r.rc}): "
                              + r.stderr[-300:].decode("utf-8", errors="replace").strip())
        else:
            meta["cut_at"] = list(items)[-1]
            meta["cut_reason"] = "probe output ended early (connection dropped or shell died)"
    return Bundle.from_raw(job.name, items, meta)


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
    bundles_dir: Path | None = None
    reports_dir: Path | None = None
    inventory_path: Path | None = None
    started_at: str = field(default_factory=now_iso)
    gather_s: float = 0.0
    mode: str = "ssh"  # ssh | local | replay
    order: list[str] = field(default_factory=list)
    overlapped: bool = False  # tests ran while nodes were still being gathered
    _arrived: dict = field(default_factory=dict, repr=False)      # node -> (Bundle, NodeFacts), any thread
    _events: dict = field(default_factory=dict, repr=False)       # node -> threading.Event
    _thread: threading.Thread | None = field(default=None, repr=False)
    _t0: float = field(default=0.0, repr=False)
    _errors: int = field(default=0, repr=False)
    _failure: BaseException | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _proc: object = field(default=None, repr=False)
    streaming: bool = False
    spec_source: dict[str, str] = field(default_factory=dict)
    on_release: list = field(default_factory=list, repr=False)
    shard: list[str] | None = field(default=None, repr=False)     # nodes collected now (shards)
    _paths: dict = field(default_factory=dict, repr=False)         # node -> bundle dir (lazy / released)
    _released: set = field(default_factory=set, repr=False)
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

    def add_lazy(self, node: str, path: Path) -> None:
        """A node whose bundle is read from ``path`` when first needed (``--replay``, streaming)."""
        self._paths[node] = Path(path)
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
        for cb in self.on_release:
            try:
                cb(node, b, f)
            except Exception:  # noqa: BLE001 - a report's summary must not stop the run
                pass
        if b.path is not None:
            self._paths.setdefault(node, b.path)
            del self.bundles[node]
            self.facts.pop(node, None)
            self._released.add(node)

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

    def _load(self, node: str, path: Path) -> Bundle:
        try:
            b = Bundle.load(path)
        except Exception as e:  # noqa: BLE001 - unreadable bundle: the node ERRORs
            return Bundle(node, {}, {"node": node, "status": "error",
                                     "error": f"bundle {path} unreadable: {type(e).__name__}: {e}"})
        if b.node != node:   # e.g. two names for one directory on a case-insensitive disk
            return Bundle(node, {}, {"node": node, "status": "error",
                                     "error": f"bundle {path} holds node {b.node!r}, not {node!r}"})
        return b

    def add(self, b: Bundle, facts: NodeFacts | None = None) -> None:
        """Add a node; ``facts`` may be a NodeFacts of ``b`` already built (and parsed) by
        ``gather_fleet``'s ``prepare`` while other nodes were still being gathered."""
        self.bundles[b.node] = b
        self.facts[b.node] = facts if facts is not None and facts.bundle is b else NodeFacts(b)

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
        for j in jobs:  # a node the pool never finished: ERROR, never a silent hole
            if j.name not in self._arrived:
                b = Bundle(j.name, {}, {"node": j.name, "target": j.shown_url, "status": "error",
                                        "error": f"internal error while gathering: {why or 'not run'}",
                                        "spec": j.spec_raw})
                self._arrive(j.name, b, True)
        self.gather_s = round(time.monotonic() - self._t0, 3)

    def _start_thread(self, jobs: list[NodeJob], opts: GatherOptions) -> None:
        def prepare(b: Bundle) -> None:
            # the GPU facts parsed in the gathering thread, while other nodes are still probed
            self._arrive(b.node, (b, _with_gpus_parsed(b)), bool(b.gather_error))

        def body() -> None:
            why = None
            try:
                gather_fleet(jobs, opts, self.bundles_dir, prepare=prepare, prepare_errors=True)
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
        proc = ctx.Process(target=_gather_child, args=(jobs, opts, self.bundles_dir, send),
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
                    proc.terminate()   # nothing reads it any more: it must not go on writing bundles
                proc.join(timeout=30)
                if len(self._arrived) < len(self.order) and why is None:
                    why = f"the gathering process ended (exit code {proc.exitcode})"
                    self._failure = RuntimeError(why)
                self._finish(jobs, why)
                recv.close()

        self._proc = proc
        self._thread = threading.Thread(target=reader, name="nodegate-gather-reader", daemon=True)
        self._thread.start()

    def abort(self) -> None:
        """Stop a gathering process (Ctrl-C): nodes not gathered yet come out ERROR."""
        proc = self._proc
        if proc is not None and proc.is_alive():
            proc.terminate()

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


def _gather_child(jobs: list[NodeJob], opts: GatherOptions, bundles_dir: Path, conn) -> None:
    """Body of the gathering process (``FleetRun.start_gather``): gather every node, writing
    its bundle, and report ``("path", node, dir, is_error)`` (or ``("bundle", node, meta,
    True)`` when the bundle could not be written) as each one is done."""
    import os
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is pytest's: it ends this run from there
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
            conn.send(msg)

    try:
        gather_fleet(jobs, opts, bundles_dir, prepare=prepare, prepare_errors=True, keep=False)
    finally:
        conn.close()


def gather_fleet(jobs: list[NodeJob], opts: GatherOptions, bundles_dir: Path | None,
                 progress: Callable[[int, int, int], None] | None = None,
                 prepare: Callable[[Bundle], None] | None = None, prepare_errors: bool = False,
                 keep: bool = True) -> list[Bundle]:
    """Gather all nodes concurrently (``opts.forks`` at a time); write each bundle as soon as
    it is complete. Returns bundles in job order (``keep=False``: none, each bundle is dropped
    once written and prepared; the gathering process keeps nothing per node, docs/performance.md).

    Each node's bundle is written, then ``prepare(bundle)`` is called (e.g. parse its facts), in
    the worker thread that gathered it: that work overlaps with the other nodes' probes instead
    of running one node after the other once the fleet is in (docs/performance.md). An exception
    from ``prepare`` is ignored (evaluation meets the same problem and reports it); one from
    writing the bundle propagates, as before. ``prepare_errors``: ``prepare`` is also called for
    a node whose bundle could not be written (the bundle then records that error)."""
    out: dict[str, Bundle] = {}
    errors = 0
    lock = threading.Lock()
    if not jobs:
        return []

    def one(j: NodeJob) -> Bundle:
        try:
            b = gather_node(j, opts)
        except Exception as e:  # noqa: BLE001 - one bad node never stops the others
            b = Bundle(j.name, {}, {"node": j.name, "target": j.shown_url, "status": "error",
                                    "error": f"internal error while gathering: {type(e).__name__}: {e}",
                                    "spec": j.spec_raw})
        if bundles_dir is not None:
            try:
                b.write(bundles_dir)
            except Exception as e:  # noqa: BLE001
                if not prepare_errors:
                    raise
                b = Bundle(j.name, {}, {"node": j.name, "target": j.shown_url, "status": "error",
                                        "error": f"bundle not written to {bundles_dir}: {type(e).__name__}: {e}",
                                        "spec": j.spec_raw})
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
