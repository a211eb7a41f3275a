"""A run's site hosts: one testinfra ``Host`` per node, one connection each, held for that node's
site tests only.

Items run node by node (nodegate.session.items), so a node's site tests come one after the
other: its connection is opened when the first of them (or, ahead of it, ``prefetch`` while the
previous node's tests run) needs it, and closed with its recording flushed into the bundle
after the last (``release``). At most ``lookahead`` + 1 site connections are open at once; with
the probe's, a node sees at most two connections in all.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from testinfra.host import Host

from ..errors import NodegateError
from ..transport import HostKeyPolicy
from .backend import ClosedSource, LiveSource, ReplaySource, SiteBackend
from .connection import SiteConnection
from .recording import Recorder
from .shell import ShellError


class SiteUnavailable(NodegateError):
    """The node's site host cannot be had (not gathered, connect/host-key/auth failure, shell did
    not start, no target): every site test of the node is ERROR with this reason."""


@dataclass
class SiteHost:
    """One node's site host: ``host`` (testinfra.host.Host), its ``backend`` (SiteBackend),
    ``conn`` (live: SiteConnection) and ``recorder`` (live: Recorder)."""

    node: str
    host: Host
    backend: SiteBackend
    conn: SiteConnection | None = None
    recorder: Recorder | None = None


@dataclass
class PoolOptions:
    """Transport policy of the run (the probe's): host keys, connect deadline (s), per-command
    deadline (s), ``sudo``, how many nodes ahead connections are opened, and ``site_timeout``:
    the seconds all the site checks of one node may take together (``--site-timeout``, default
    ``--connect-timeout + --probe-timeout``: the probe's own per-node bound)."""

    hostkeys: HostKeyPolicy = field(default_factory=HostKeyPolicy)
    connect_timeout: float = 10.0
    command_timeout: float = 30.0
    site_timeout: float = 190.0
    sudo: bool = False
    lookahead: int = 2


class SitePool:
    """``host(node)`` -> SiteHost (SiteUnavailable when it cannot be had); ``prefetch(nodes)``
    opens connections ahead in helper threads; ``release(node, results)`` closes the node's
    connection and flushes its recording (returns why it could not be written, or None);
    ``close_all()`` at the end of the run. ``live`` False: every host answers from its
    bundle's recording (``--replay``), no connection is ever opened."""

    def __init__(self, run, *, live: bool, urls: dict[str, str] | None = None, options: PoolOptions | None = None):
        self.run = run
        self.live = live
        self.urls = dict(urls or {})
        self.opts = options or PoolOptions()
        self.hosts: dict[str, SiteHost] = {}
        self.failed: dict[str, str] = {}
        self.released: set[str] = set()
        self._pending: dict[str, Future] = {}
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    # ------------------------------------------------------------------ opening
    def _bundle(self, node: str):
        b = self.run.bundles.get(node)
        if b is None:
            b = self.run.wait(node)
        return b

    def _why_not(self, node: str) -> str | None:
        if node in self.failed:
            return self.failed[node]
        if node in self.released:
            return "its site connection was already closed (its site tests ran earlier in this run)"
        errs = getattr(self.run, "spec_errors", {}) or {}
        if errs.get(node):
            return f"spec error: {errs[node]}"
        b = self._bundle(node)
        if b is None:
            return "node not in this run"
        if b.gather_error:
            # the probe's own refusal (host key, auth, unreachable...): the site test is refused alike
            return f"node not gathered: {b.gather_error}"
        if self.live and node not in self.urls:
            return "no connection target for this node (not in the inventory of this run)"
        return None

    def _open(self, node: str, b) -> SiteHost:
        """Open the node's site host (``b``: its Bundle, resolved by the caller in pytest's
        thread: FleetRun's dicts are merged there only)."""
        if not self.live:
            backend = SiteBackend(node, ReplaySource(b), timeout_s=self.opts.command_timeout)
            return self._wrap(node, backend)
        o = self.opts
        conn = SiteConnection(self.urls[node], hostkeys=o.hostkeys, connect_timeout=o.connect_timeout, sudo=o.sudo)
        try:
            conn.open()
        except Exception:
            conn.close()
            raise
        rec = Recorder(node)
        backend = SiteBackend(node, LiveSource(conn, rec), timeout_s=o.command_timeout)
        return self._wrap(node, backend, conn, rec)

    @staticmethod
    def _wrap(node, backend, conn=None, rec=None) -> SiteHost:
        h = Host(backend)
        backend.set_host(h)
        return SiteHost(node, h, backend, conn, rec)

    def host(self, node: str) -> SiteHost:
        """The node's SiteHost, opening it (or waiting for ``prefetch``'s) when needed."""
        sh = self.hosts.get(node)
        if sh is not None:
            return sh
        why = self._why_not(node)
        if why:
            raise SiteUnavailable(why)
        with self._lock:
            fut = self._pending.pop(node, None)
        try:
            sh = fut.result() if fut is not None else self._open(node, self._bundle(node))
        except (NodegateError, ShellError, OSError, ValueError) as e:
            self.failed[node] = f"site connection failed: {e}"
            raise SiteUnavailable(self.failed[node]) from None
        self.hosts[node] = sh
        return sh

    def prefetch(self, nodes) -> None:
        """Start opening the site hosts of ``nodes`` (already gathered, live runs) in helper
        threads, at most ``lookahead`` at a time: their handshakes overlap the current tests."""
        if not self.live or self.opts.lookahead <= 0:
            return
        for node in nodes:
            with self._lock:
                if node in self.hosts or node in self._pending or node in self.failed or node in self.released:
                    continue
                if not self.run.ready(node) or self._why_not(node) is not None:
                    continue
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self.opts.lookahead,
                                                        thread_name_prefix="nodegate-site-open")
                self._pending[node] = self._executor.submit(self._open, node, self._bundle(node))

    # ------------------------------------------------------------------ closing
    def release(self, node: str, results: dict | None = None) -> str | None:
        """Close the node's site connection and write its recording and results into its bundle.
        Returns why the recording could not be written, else None."""
        self.released.add(node)
        with self._lock:
            fut = self._pending.pop(node, None)
        if fut is not None:
            fut.add_done_callback(_close_quietly)
        sh = self.hosts.pop(node, None)
        if sh is None:
            return None
        if sh.conn is not None:
            sh.conn.close()
            sh.backend.source = ClosedSource(node)   # pytest may still hold this Host (its fixture cache)
        if sh.recorder is None:
            return None
        b = self.run.bundles.get(node)
        path = getattr(b, "path", None)
        if path is None:
            return f"{node}: its bundle was not written: the site commands are not recorded"
        try:
            sh.recorder.flush(path, results)
        except (OSError, ValueError) as e:
            return f"{node}: site recording not written to {path}: {e}"
        return None

    def close_all(self, results_of=lambda node: None) -> list[str]:
        """``release`` every node still open (``results_of(node)`` gives its results); returns
        the problems writing recordings."""
        problems = [p for p in (self.release(n, results_of(n)) for n in list(self.hosts)) if p]
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for fut in pending:
            fut.add_done_callback(_close_quietly)
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
        return problems


def _close_quietly(fut: Future) -> None:
    """A site host opened ahead but never used (its tests were deselected or the run stopped)."""
    try:
        sh = fut.result()
    except BaseException:  # noqa: BLE001 - it failed to open: nothing to close
        return
    if sh.conn is not None:
        sh.conn.close()
