"""One node's run and the fleet loop, shared by the burn-in and the performance phase.

``run_node(url, opts, prepare, stop, run, evidence)``: the exec (nodegate.phase.exec.run_stream)
and the run record's status (``ok|interrupted|timeout|incomplete|error|<transport error kind>``);
``run_fleet(jobs, node_fn, error_evidence, record, forks, stop, progress)``: one thread per node,
each node's evidence recorded as it comes back, Ctrl-C stopping every exec and recording the rest.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, TypeVar

from ..bundle import Evidence, now_iso
from ..run import GatherOptions
from ..transport import Target, TransportError
from .exec import run_stream
from .script import Stream, split

J = TypeVar("J")
EvidenceMap = dict[str, Evidence]


def run_node(url: str, opts: GatherOptions, prepare: Callable[[], tuple[str, str, float]], stop: threading.Event,
             run: dict, evidence: Callable[[Stream, dict], EvidenceMap]) -> EvidenceMap:
    """Run the script ``prepare()`` returns (``(script, marker, deadline_s)``) on ``url``; fill
    ``run`` (finished_at, elapsed_s, exit_code, interrupted, timed_out, stderr tail, status, or
    status + error when it could not run) and return ``evidence(stream, run)``. Never raises for
    node problems (TransportError, ValueError, OSError: the run record says why)."""
    t0 = time.monotonic()
    try:
        text, marker, deadline = prepare()
        target = Target(url, hostkeys=opts.hostkeys, connect_timeout=opts.connect_timeout, sudo=opts.sudo)
        r = run_stream(target, text, deadline, stop)
    except TransportError as e:
        run.update(status=getattr(e, "kind", "ssh"), error=str(e), finished_at=now_iso(),
                   elapsed_s=round(time.monotonic() - t0, 3))
        return evidence(Stream(), run)
    except (ValueError, OSError) as e:
        run.update(status="error", error=f"{type(e).__name__}: {e}", finished_at=now_iso(),
                   elapsed_s=round(time.monotonic() - t0, 3))
        return evidence(Stream(), run)
    st = split(r.stdout, marker)
    run.update(finished_at=now_iso(), elapsed_s=round(time.monotonic() - t0, 3), exit_code=r.rc,
               interrupted=bool(stop.is_set()), timed_out=bool(r.timed_out and not stop.is_set()))
    if r.stderr:
        run["stderr"] = r.stderr[-4000:].decode("utf-8", errors="replace")
    if stop.is_set():
        run["status"] = "interrupted"
    elif r.timed_out:
        run["status"] = "timeout"
    elif not st.complete:
        run["status"] = "incomplete"
    return evidence(st, run)


def run_fleet(jobs: list[J], node_fn: Callable[[J], EvidenceMap], error_evidence: Callable[[J, Exception], EvidenceMap],
              record: Callable[[J, EvidenceMap], None], forks: int, stop: threading.Event,
              progress: Callable[[int, int], None] | None = None) -> None:
    """Run ``node_fn(job)`` for every job concurrently (at most ``forks`` at once) and call
    ``record(job, evidence)`` for each as it comes back, one at a time (``error_evidence(job,
    exc)`` when node_fn raised: one bad node never stops the others), then ``progress(done,
    total)``. On KeyboardInterrupt ``stop`` is set (every exec closes its channel; every node
    stops its tool or load), what comes back is recorded, and the interrupt is re-raised."""
    if not jobs:
        return
    lock = threading.Lock()
    done = 0

    def collect(j: J, f) -> None:
        nonlocal done
        try:
            ev = f.result()
        except Exception as e:  # noqa: BLE001 - one bad node never stops the others
            ev = error_evidence(j, e)
        with lock:
            record(j, ev)
            done += 1
            if progress:
                progress(done, len(jobs))

    ex = ThreadPoolExecutor(max_workers=max(1, min(forks, len(jobs))))
    futs = {ex.submit(node_fn, j): j for j in jobs}
    seen = set()
    try:
        for f in as_completed(futs):
            seen.add(f)
            collect(futs[f], f)
    except KeyboardInterrupt:
        # Ctrl-C: every exec closes its channel; every node stops its tool/load; record what came back
        stop.set()
        for f in as_completed(futs):
            if f not in seen:
                collect(futs[f], f)
        raise
    finally:
        stop.set()
        ex.shutdown(wait=True)
