"""Gathering: one node's probe (``gather_node``) and a fleet's, in a bounded pool (``gather_fleet``).

``gather_fleet`` runs the probe on all nodes concurrently in a bounded pool (``forks``); a slow
or hung node never delays the others beyond its own deadline, and one bad node never stops the
others: its bundle records the transport error (meta.status/meta.error) and its checks ERROR.
``_gather_child`` is the same in a child process (FleetRun.start_gather: the tests run while it
gathers). Imports the transport, the probe and the bundle; nothing of the run, session or reports.
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
