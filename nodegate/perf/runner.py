"""Run the performance phase on every node at once and add its evidence to each node's bundle.

``perf_fleet(jobs, opts, bundles, bundles_dir, stop)``: one thread and ONE exec per node (the
burn-in's machinery, nodegate.phase: exec with deadline, stop switch, streaming, Ctrl-C).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..bundle import Bundle, Evidence, now_iso
from ..phase.runner import run_fleet, run_node
from ..run import GatherOptions
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
    prefix = f"perf.{job.label}" if job.label else "perf"

    def prepare() -> tuple[str, str, float]:
        text, marker = S.render(job.spec)
        return text, marker, S.deadline_s(job.spec)

    return run_node(job.url, opts, prepare, stop, run, lambda st, r: evidence_from_stream(st, r, prefix))


def perf_fleet(jobs: list[PerfJob], opts: GatherOptions, bundles: dict[str, Bundle], bundles_dir: Path | None,
               stop: threading.Event, progress: Callable[[int, int], None] | None = None) -> None:
    """Run every job concurrently; add the evidence to ``bundles[node]`` and rewrite its directory
    under ``bundles_dir``. Blocks until every node is done (or ``stop``)."""

    def error_evidence(j: PerfJob, e: Exception) -> dict[str, Evidence]:
        return evidence_from_stream(S.Stream(), {"node": j.node, "tests": list(j.spec.tests), "status": "error",
                                                 "error": f"internal error: {type(e).__name__}: {e}"},
                                    f"perf.{j.label}" if j.label else "perf")

    def record(j: PerfJob, ev: dict[str, Evidence]) -> None:
        b = bundles.get(j.node)
        if b is not None:
            b.items.update(ev)
            runkey = f"perf.{j.label}.run" if j.label else "perf.run"
            b.meta[runkey.replace(".run", "")] = json.loads(ev[runkey].stdout)
            if bundles_dir is not None:
                b.write(bundles_dir)

    run_fleet(jobs, lambda j: perf_node(j, opts, stop), error_evidence, record, opts.forks, stop, progress)
