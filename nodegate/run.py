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
from .transport import STREAM_CAP, HostKeyPolicy, Target, TransportError

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
    items, complete = probe.split_stream(r.stdout, marker)
    meta.update(gather_s=round(time.monotonic() - t0, 3), connect_s=round(r.connect_s, 3),
                exec_s=round(r.exec_s, 3), finished_at=now_iso(), complete=complete, exit_code=r.rc)
    if r.stderr:
        meta["probe_stderr"] = r.stderr[-4000:].decode("utf-8", errors="replace")
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
    """Everything one pytest session knows about the fleet (see docs/contributing.md contract)."""

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

    def add(self, b: Bundle, facts: NodeFacts | None = None) -> None:
        """Add a node; ``facts`` may be a NodeFacts of ``b`` already built (and parsed) by
        ``gather_fleet``'s ``prepare`` while other nodes were still being gathered."""
        self.bundles[b.node] = b
        self.facts[b.node] = facts if facts is not None and facts.bundle is b else NodeFacts(b)


def gather_fleet(jobs: list[NodeJob], opts: GatherOptions, bundles_dir: Path | None,
                 progress: Callable[[int, int, int], None] | None = None,
                 prepare: Callable[[Bundle], None] | None = None) -> list[Bundle]:
    """Gather all nodes concurrently (``opts.forks`` at a time); write each bundle as soon as
    it is complete. Returns bundles in job order.

    Each node's bundle is written, then ``prepare(bundle)`` is called (e.g. parse its facts), in
    the worker thread that gathered it: that work overlaps with the other nodes' probes instead
    of running one node after the other once the fleet is in (docs/performance.md). An exception
    from ``prepare`` is ignored (evaluation meets the same problem and reports it); one from
    writing the bundle propagates, as before."""
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
            b.write(bundles_dir)
        if prepare is not None:
            try:
                prepare(b)
            except Exception:  # noqa: BLE001 - a parse problem is the checks' to report
                pass
        return b

    with ThreadPoolExecutor(max_workers=max(1, min(opts.forks, len(jobs)))) as ex:
        futs = {ex.submit(one, j): j for j in jobs}
        for f in as_completed(futs):
            j = futs[f]
            b = f.result()
            with lock:
                out[j.name] = b
                if b.gather_error:
                    errors += 1
                if progress:
                    progress(len(out), len(jobs), errors)
    return [out[j.name] for j in jobs]
