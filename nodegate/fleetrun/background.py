"""FleetRun's background gathering: the tests run while nodes are gathered, each waited for once.

``start_gather`` starts the bounded pool (nodegate.gather.gather_fleet) in a thread, or in a
child process (``_gather_child``: parsing there keeps the controller's GIL for pytest); ``wait``
hands one node to pytest's thread when an item of it first needs it, ``wait_all`` every node.
``abort`` (Ctrl-C, SIGTERM) ends every node's transport. Imports the gathering functions; the
registry and the identity index are FleetRun's other parts (methods on the same object).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable

from ..bundle import Bundle
from ..collect import NodeFacts
from ..gather import GatherOptions, NodeJob, _gather_child, _with_gpus_parsed, gather_fleet
from ..transport import stop_reason
from .identity import address_twins
from .prefetch import Prefetch, enabled, flush_before_fork


class Gathering:
    """FleetRun's gathering methods (state: ``_arrived``, ``_events``, ``_thread``, ``_proc``,
    ``_stop``, ``_reason_box``, ``_t0``, ``_errors``, ``_failure``, ``_lock``, ``gather_s``;
    FleetRun declares the fields)."""

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
        try:
            if ctx is not None:
                try:
                    self._start_process(ctx, jobs, opts)
                except OSError:
                    if self._proc is not None:
                        raise
                    ctx = None   # fork refused (EAGAIN): the same pool in a thread of this process
            if ctx is None:
                self._start_thread(jobs, opts)
        except Exception as e:  # noqa: BLE001 - fork or thread refused (EAGAIN: a user's process limit)
            # nothing will ever gather these nodes: each is an ERROR bundle naming why now, and
            # wait_all raises it (the session says "gathering stopped", exit 4), never a wait
            # on events no one sets (seen once: a non-root make test in a loaded chroot hung)
            if self._proc is not None and self._proc.is_alive():
                self._proc.kill()   # its reader never started: nothing would read what it gathers
            if self._thread is not None and self._thread.ident is None:
                self._thread = None   # never started: wait_all has nothing to join
            self._failure = e
            self._finish(jobs, f"the gathering could not start: {type(e).__name__}: {e}")

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
        recv, send = ctx.Pipe(duplex=False)
        flush_before_fork()
        import os

        from ..interrupt import ReasonBox
        try:
            self._reason_box = ReasonBox(ctx)
        except OSError:
            # no usable /dev/shm for the shared array (a non-root user in a chroot or a hardened
            # container: PermissionError): the child then says "interrupted" without the signal
            self._reason_box = None
        proc = ctx.Process(target=_gather_child, args=(jobs, opts, self.bundles_dir, send, self._reason_box,
                                                       os.getpid()),
                           name="nodegate-gather", daemon=True)
        proc.start()
        self._proc = proc
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

        self._thread = threading.Thread(target=reader, name="nodegate-gather-reader", daemon=True)
        self._thread.start()

    def abort(self, reason: str = "Ctrl-C") -> None:
        """Stop the gather (Ctrl-C, SIGTERM, SIGHUP: ``reason``; nodegate.interrupt): every SSH
        session and local process of it ends at once; a probe in flight keeps what it read,
        marked cut; a node not contacted yet comes out ``interrupted`` (ERROR). The gathering
        process gets ``interrupt.ABORT_GRACE_S`` to write those bundles, then is killed.
        Returns at once; ``wait_all`` collects the nodes."""
        from ..interrupt import ABORT_GRACE_S
        from ..transport import set_stop
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
            # --replay (lazy) or released: the prefetching child's bundle and facts, else read here
            self.add(*(self._prefetched(node) or (self._load(node, self._paths[node]),)))
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

    def enable_prefetch(self) -> None:
        """A serial replay: the node after the one being loaded is parsed in a second process
        (nodegate.fleetrun.prefetch) while this one's items run."""
        if enabled() and self.order:
            self._prefetch = Prefetch(self.order, lambda n: self._load(n, self._paths[n]), self.spec.get)

    def stop_prefetch(self) -> None:
        p = getattr(self, "_prefetch", None)
        if p is not None:
            p.stop()

    def _prefetched(self, node: str) -> tuple[Bundle, NodeFacts] | None:
        """``node``'s Bundle and its NodeFacts as the prefetching process read and parsed them
        (with the checks' results), or None (read and parsed here). A released node read again
        is read here."""
        p = getattr(self, "_prefetch", None)
        if p is None or node in self._released:
            return None
        got = p.take(node)
        b = got.get("bundle") if got else None
        if not isinstance(b, Bundle) or b.node != node or b.gather_error:
            return None
        f = NodeFacts(b)
        f.__dict__.update(got["facts"])
        f.checked = got.get("checked") or None   # engine.evaluate_item takes each result once
        return b, f

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
