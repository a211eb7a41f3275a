"""A replay's next node parsed in a second process while pytest judges this one (issue 40.5).

Parsing a node's evidence (nvidia-smi XML above all) is ~70 % of what judging it costs without
pytest (bench/engine_floor.py: ~25 ms a node, of which ~7.5 ms are the checks on parsed facts);
pytest's items, the records and the reports are the rest of a replay and run in pytest's
process. ``Prefetch`` keeps one forked child that loads the node the run will judge next
(``order``: the run's node order, which the items follow), parses every fact of it
(``NodeFacts.parsed_cache``) and evaluates every check on it (``engine.check_results``) while
the items of the node before it run; the pytest process then takes the bundle the child read
(``Bundle.load``, the same untrusted-input rules: one ``_load`` for both) and its parsed facts
over instead of reading and parsing them again (``FleetRun.wait``), as a live run takes the GPU
facts its gathering process parsed (``fleetrun.background._add_from_disk``), and
``engine.evaluate_item`` takes each check's result once. A node whose bundle could not be read,
or was not gathered, is read here. Facts and rules are pure functions of the bundle's bytes and the spec, so the verdicts are
the same (tests/engine/test_prefetch.py compares every report of the sample fleet with and
without it).

It never makes a run wait for what it would not have waited for: one request in flight at a
time, for the node after the one being loaded; a node asked for out of that order (a released
node read again, a selection that skips nodes) is parsed here as before. Any failure of the
child (it died, a pipe error, a pickle it could not make) leaves the node to this process.
``NODEGATE_PREFETCH=0`` turns it off (benchmarks compare). The pickles come from our own
forked child over our own pipe, never from a bundle.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Callable

#: requests in flight at most, and parsed nodes kept here at most before they are asked for
_IN_FLIGHT = 1
_KEEP = 2
#: seconds the pytest process waits for a node the child is parsing (2 x PARSE_BUDGET_S)
_WAIT_S = 120.0


def flush_before_fork() -> None:
    """Flush stdout and stderr before forking: nothing buffered here may be written twice (by
    the child too). Used by every fork of the pytest process (the gathering process as well)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass


def enabled() -> bool:
    """Whether a replay may prefetch: ``NODEGATE_PREFETCH`` is not ``0`` and fork exists."""
    if os.environ.get("NODEGATE_PREFETCH", "1") == "0":
        return False
    import multiprocessing
    return "fork" in multiprocessing.get_all_start_methods()


def _parsed(b, spec) -> bytes | None:
    """The pickled ``{"bundle": b, "facts": NodeFacts.parsed_cache(), "checked":
    engine.check_results()}`` of bundle ``b`` (the check results only when they pickle), or None.
    The bundle itself too: the pytest process takes it instead of reading the node's ~50 files
    again (a bundle pickles in ~0.1 ms, one read is ~1.5 ms: docs/performance.md)."""
    from ..collect import NodeFacts
    from ..engine.evaluate import check_results
    if getattr(b, "gather_error", None):
        return None
    f = NodeFacts(b)
    cache = f.parsed_cache()
    if not cache:
        return None
    checked: dict = {}
    if spec is not None:
        try:
            checked = check_results(f, spec)
        except Exception:  # noqa: BLE001 - the facts alone then
            checked = {}
    try:
        return pickle.dumps({"bundle": b, "facts": cache, "checked": checked}, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a result that does not pickle: the bundle and facts alone
        return pickle.dumps({"bundle": b, "facts": cache, "checked": {}}, protocol=pickle.HIGHEST_PROTOCOL)


def _child(conn, parent_end, load: Callable[[str], object], spec_of: Callable[[str], object]) -> None:
    """Body of the prefetching process: for each node name received, ``(node, _parsed(...) or
    None)`` sent back; None received, or the pipe closed (the pytest process ended), ends it."""
    import gc

    parent_end.close()   # EOF reaches us when the pytest process's end closes
    # Ctrl-C is the pytest process's to handle; SIGTERM and SIGHUP end this process (nodegate's
    # handlers, inherited through fork, are the pytest process's: nodegate.interrupt.RunSignals)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    # the pytest process runs with the cyclic GC paused (nodegate.session.memory): here each
    # node's garbage must go, and what was inherited is never traversed (nor copied on write)
    gc.freeze()
    gc.enable()
    while True:
        try:
            node = conn.recv()
        except (EOFError, OSError):
            return
        if node is None:
            return
        try:
            blob = _parsed(load(node), spec_of(node))
        except Exception:  # noqa: BLE001 - the pytest process parses this node itself
            blob = None
        try:
            conn.send((node, blob))
        except (OSError, ValueError):
            return


class Prefetch:
    """One prefetching child for the run's ``order`` (node names); ``load(node)`` reads a node's
    bundle (``NodeRegistry._load`` with its path), ``spec_of(node)`` its validated spec (the
    checks are computed ahead with it; None: the facts only). Started by the first ``take``."""

    def __init__(self, order: list[str], load: Callable[[str], object],
                 spec_of: Callable[[str], object] = lambda node: None):
        self._spec_of = spec_of
        self._rank = {n: i for i, n in enumerate(order)}
        self._order = list(order)
        self._load = load
        self._conn = None
        self._proc = None
        self._asked: list[str] = []
        self._ready: dict[str, bytes | None] = {}
        self.dead = False
        #: nodes whose parsed facts were taken over (tests, benchmarks)
        self.taken = 0

    def _start(self) -> bool:
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        parent_end, child_end = ctx.Pipe(duplex=True)
        flush_before_fork()
        proc = ctx.Process(target=_child, args=(child_end, parent_end, self._load, self._spec_of), name="nodegate-prefetch",
                           daemon=True)
        proc.start()
        child_end.close()
        self._conn, self._proc = parent_end, proc
        return True

    def _next_after(self, node: str) -> str | None:
        i = self._rank.get(node)
        if i is None or i + 1 >= len(self._order):
            return None
        return self._order[i + 1]

    def take(self, node: str, ask_next: bool = True) -> dict | None:
        """What the child made of ``node`` when it has it or is making it now:
        ``{"facts": {...} for NodeFacts.__dict__, "checked": {(check id, slot): Result}}``, else
        None (this process parses it). Then asks the child for the node after it (``ask_next``).
        Never raises."""
        if self.dead:
            return None
        try:
            if self._proc is None:
                self._start()
            while self._asked and self._conn.poll(0):   # what the child finished, without waiting
                got, data = self._conn.recv()
                self._asked.remove(got)
                self._keep(got, data)
            blob = self._ready.pop(node, None)
            if blob is None and node in self._asked:
                while self._asked:
                    # the child parses within the node's parse budget (nodegate.collect): a child
                    # stuck past twice that is given up, and the node parsed here
                    if not self._conn.poll(_WAIT_S):
                        raise TimeoutError("prefetching process stalled")
                    got, data = self._conn.recv()
                    self._asked.remove(got)
                    if got == node:
                        blob = data
                        break
                    self._keep(got, data)
            nxt = self._next_after(node) if ask_next else None
            if nxt is not None and nxt not in self._asked and nxt not in self._ready and len(self._asked) < _IN_FLIGHT:
                self._conn.send(nxt)
                self._asked.append(nxt)
        except Exception:  # noqa: BLE001 - the child died or the pipe broke: parse here from now on
            self.stop()
            return None
        if blob is None:
            return None
        try:
            cache = pickle.loads(blob)  # noqa: S301 - our own forked child, our own pipe
        except Exception:  # noqa: BLE001
            return None
        if not isinstance(cache, dict) or not isinstance(cache.get("facts"), dict):
            return None
        self.taken += 1
        return cache

    def _keep(self, node: str, data) -> None:
        self._ready[node] = data
        while len(self._ready) > _KEEP:
            self._ready.pop(next(iter(self._ready)))

    def stop(self) -> None:
        """End the child (the session's end, an interruption, a failure): idempotent."""
        self.dead = True
        self._ready.clear()
        self._asked.clear()
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        if conn is not None:
            try:
                conn.send(None)
            except Exception:  # noqa: BLE001
                pass
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass
        if proc is not None:
            proc.join(2)
            if proc.is_alive():
                proc.kill()
                proc.join(2)
