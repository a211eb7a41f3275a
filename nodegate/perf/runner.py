"""Run the performance phase on every node at once and add its evidence to each node's bundle.

``perf_fleet(jobs, opts, bundles, bundles_dir, stop)``: one thread and ONE exec per node (the
burn-in's transport, nodegate.burnin.exec.run_stream: deadline, stop switch, streaming, Ctrl-C).
Evidence keys written (docs/bundle.md "Performance"):

    perf.run                 JSON: tests asked for, status ok|interrupted|timeout|incomplete|<ssh error>,
                             start/end, per-key timing, heartbeats, events
    perf.tools               GPU count, sampled fields, prefix, where each tool was found
    perf.<tool>[.<hca>]      the tool's output exactly as printed (capped), rc = its exit status
                             (127 = not found), duration = its run time
    perf.<tool>[.<hca>].state  GPU state during that test: '# fields: ...', per sample
                             '# sample <n> uptime=<s> epoch=<s>' + CSV rows, then '# apps' + the
                             compute processes found on the GPUs before it started
"""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..bundle import Bundle, Evidence, now_iso
from ..burnin.exec import run_stream
from ..run import GatherOptions
from ..transport import Target, TransportError
from . import script as S
from .spec import PerfSpec

_SAMPLE = re.compile(r"^(perf\..+)\.sample\.(\d+)$")
_APPS = re.compile(r"^(perf\..+)\.apps$")


@dataclass
class PerfJob:
    node: str
    url: str
    spec: PerfSpec
    label: str = ""       # "before" / "after" when composed with --burn-in


def _fields(st: S.Stream) -> str:
    it = st.items.get("perf.tools")
    for ln in (it.stdout.decode("utf-8", "replace").splitlines() if it else []):
        if ln.startswith("fields: "):
            return ln[8:].strip()
    return ""


def evidence_from_stream(st: S.Stream, run: dict, prefix: str = "perf") -> dict[str, Evidence]:
    """Bundle items from a split stream (pure; used by the runner and by tests)."""
    ev: dict[str, Evidence] = {}
    samples: dict[str, list[tuple[int, str]]] = {}
    apps: dict[str, str] = {}
    timing = {}
    for k, it in st.items.items():
        if m := _SAMPLE.match(k):
            up, ep = st.starts.get(k, (None, None))
            head = f"# sample {m.group(2)} uptime={'' if up is None else up} epoch={'' if ep is None else ep} rc={it.rc}"
            body = "\n".join(ln for ln in it.stdout.decode("utf-8", "replace").splitlines() if ln.strip())
            samples.setdefault(m.group(1), []).append((int(m.group(2)), head + "\n" + body))
        elif m := _APPS.match(k):
            apps[m.group(1)] = it.stdout.decode("utf-8", "replace").strip()
            if it.rc not in (0, None):
                apps[m.group(1)] = ""
        elif k == "perf.tools" or k.startswith("perf."):
            ev[k] = Evidence(k, it.stdout, it.stderr, it.rc, it.status, it.duration_s)
            timing[k] = {"duration_s": it.duration_s, "rc": it.rc, "started": st.starts.get(k, (None, None))[1]}
    # the tool's own run time, from the node's uptime at its start and exit (events)
    t_start = {e.fields.get("key"): e.fields.get("uptime") for e in st.events if e.name == "tool-start"}
    for e in st.events:
        k = e.fields.get("key")
        if e.name == "tool-exit" and k in ev and t_start.get(k):
            try:
                d = round(float(e.fields["uptime"]) - float(t_start[k]), 3)
            except (KeyError, ValueError):
                continue
            old = ev[k]
            ev[k] = Evidence(k, old.stdout, old.stderr, old.rc, old.status, d)
            timing[k]["duration_s"] = d
    fields = _fields(st)
    for key in set(samples) | set(apps):
        text = [f"# fields: {fields}"] + [t for _, t in sorted(samples.get(key, []))] + ["# apps"]
        if apps.get(key):
            text.append(apps[key])
        k = f"{key}.state"
        ev[k] = Evidence(k, ("\n".join(text) + "\n").encode(), b"", 0)
    run = dict(run, heartbeats=st.heartbeats, complete=st.complete, timing=timing,
               events=[{"name": e.name, "epoch": e.epoch, **e.fields} for e in st.events[:200]])
    ev["perf.run"] = Evidence("perf.run", (json.dumps(run, indent=2, sort_keys=True) + "\n").encode(), b"", 0)
    if prefix != "perf":   # --burn-in composition: perf.before.* / perf.after.* keep both runs
        ev = {k.replace("perf.", f"{prefix}.", 1): Evidence(k.replace("perf.", f"{prefix}.", 1), e.stdout, e.stderr,
                                                          e.rc, e.status, e.duration_s) for k, e in ev.items()}
    return ev


def perf_node(job: PerfJob, opts: GatherOptions, stop: threading.Event) -> dict[str, Evidence]:
    """Run the phase on one node; never raises for node problems (the run record says why)."""
    run = {"node": job.node, "tests": list(job.spec.tests), "started_at": now_iso(), "status": "ok",
           "label": job.label}
    t0 = time.monotonic()
    prefix = f"perf.{job.label}" if job.label else "perf"
    try:
        text, marker = S.render(job.spec)
        target = Target(job.url, hostkeys=opts.hostkeys, connect_timeout=opts.connect_timeout, sudo=opts.sudo)
        r = run_stream(target, text, S.deadline_s(job.spec), stop)
    except TransportError as e:
        run.update(status=getattr(e, "kind", "ssh"), error=str(e), finished_at=now_iso(),
                   elapsed_s=round(time.monotonic() - t0, 3))
        return evidence_from_stream(S.Stream(), run, prefix)
    except (ValueError, OSError) as e:
        run.update(status="error", error=f"{type(e).__name__}: {e}", finished_at=now_iso(),
                   elapsed_s=round(time.monotonic() - t0, 3))
        return evidence_from_stream(S.Stream(), run, prefix)
    st = S.split(r.stdout, marker)
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
    return evidence_from_stream(st, run, prefix)


def perf_fleet(jobs: list[PerfJob], opts: GatherOptions, bundles: dict[str, Bundle], bundles_dir: Path | None,
               stop: threading.Event, progress: Callable[[int, int], None] | None = None) -> None:
    """Run every job concurrently; add the evidence to ``bundles[node]`` and rewrite its directory
    under ``bundles_dir``. Blocks until every node is done (or ``stop``)."""
    if not jobs:
        return
    lock = threading.Lock()
    done = 0

    def record(j: PerfJob, f) -> None:
        nonlocal done
        try:
            ev = f.result()
        except Exception as e:  # noqa: BLE001 - one bad node never stops the others
            ev = evidence_from_stream(S.Stream(), {"node": j.node, "tests": list(j.spec.tests), "status": "error",
                                                   "error": f"internal error: {type(e).__name__}: {e}"},
                                      f"perf.{j.label}" if j.label else "perf")
        with lock:
            b = bundles.get(j.node)
            if b is not None:
                b.items.update(ev)
                runkey = f"perf.{j.label}.run" if j.label else "perf.run"
                b.meta[runkey.replace(".run", "")] = json.loads(ev[runkey].stdout)
                if bundles_dir is not None:
                    b.write(bundles_dir)
            done += 1
            if progress:
                progress(done, len(jobs))

    ex = ThreadPoolExecutor(max_workers=max(1, min(opts.forks, len(jobs))))
    futs = {ex.submit(perf_node, j, opts, stop): j for j in jobs}
    seen = set()
    try:
        for f in as_completed(futs):
            seen.add(f)
            record(futs[f], f)
    except KeyboardInterrupt:
        stop.set()   # every exec closes its channel; every node stops its tool; record what came back
        for f in as_completed(futs):
            if f not in seen:
                record(futs[f], f)
        raise
    finally:
        stop.set()
        ex.shutdown(wait=True)
