"""Run the burn-in on every node at once and add its evidence to each node's bundle.

``burnin_fleet(jobs, opts, duration_s, bundles, bundles_dir, stop)``: one thread and ONE exec per
node; ``stop`` (set on Ctrl-C) ends every exec, which stops every load (nodegate.phase: the exec,
the run record's status and the fleet loop shared with the performance phase). Evidence
keys written (docs/burnin.md):

    burnin.run       JSON: duration, interval, load, start/end, interrupted, exit code, heartbeats
    burnin.tools     load chosen, tools found (rc 127 = no load available)
    burnin.fields    the --query-gpu field list this driver accepts
    burnin.samples   '# fields: ...' then per sample '# sample <seq> uptime=<s> epoch=<s> rc=<n>
                     status=<ok|timeout|...>' + CSV rows (+ '# stderr: ...' lines)
    burnin.load      the load's output tail (dcgmi: its JSON); rc = the load's exit status
    burnin.events    the script's EV lines (start, load-start, stop, interrupted, load-exit)
    burnin.klog_start / burnin.klog_end   NVRM/Xid kernel log lines at start and end
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
from .spec import BurninSpec

_SAMPLE_KEY = re.compile(r"^sample\.(\d+|end)$")


@dataclass
class BurninJob:
    node: str
    url: str
    spec: BurninSpec


def _samples_text(st: S.Stream, fields: str) -> bytes:
    def order(k: str) -> tuple[int, int]:
        n = _SAMPLE_KEY.match(k).group(1)
        return (1, 0) if n == "end" else (0, int(n))

    keys = sorted((k for k in st.items if _SAMPLE_KEY.match(k)), key=order)
    out = [f"# fields: {fields}"]
    for k in keys:
        it = st.items[k]
        up, ep = st.starts.get(k, (None, None))
        out.append(f"# sample {k.split('.', 1)[1]} uptime={up if up is not None else ''} "
                   f"epoch={ep if ep is not None else ''} rc={'' if it.rc is None else it.rc} status={it.status}")
        text = it.stdout.decode("utf-8", errors="replace")
        out.extend(ln for ln in text.splitlines() if ln.strip())
        for ln in it.stderr.decode("utf-8", errors="replace").splitlines()[:20]:
            out.append(f"# stderr: {ln[:500]}")
    return ("\n".join(out) + "\n").encode()


def evidence_from_stream(st: S.Stream, run: dict) -> dict[str, Evidence]:
    """Bundle items from a split stream (pure; used by the runner and by tests)."""
    ev: dict[str, Evidence] = {}
    for k in ("burnin.tools", "burnin.fields", "burnin.klog_start", "burnin.klog_end", "burnin.load"):
        it = st.items.get(k)
        if it is not None:
            ev[k] = Evidence(k, it.stdout, it.stderr, it.rc, it.status, it.duration_s)
    fields = ev["burnin.fields"].text.strip() if "burnin.fields" in ev and ev["burnin.fields"].rc == 0 else ""
    if fields:
        ev["burnin.samples"] = Evidence("burnin.samples", _samples_text(st, fields), b"", 0)
    lines = []
    for e in st.events:
        kv = " ".join(f"{k}={v}" for k, v in e.fields.items())
        lines.append(f"{e.name} {e.epoch if e.epoch is not None else ''} {kv}".rstrip())
    ev["burnin.events"] = Evidence("burnin.events", ("\n".join(lines) + "\n").encode(), b"", 0)
    run = dict(run, heartbeats=st.heartbeats, complete=st.complete)
    ev["burnin.run"] = Evidence("burnin.run", (json.dumps(run, indent=2, sort_keys=True) + "\n").encode(), b"", 0)
    return ev


def burnin_node(job: BurninJob, opts: GatherOptions, duration_s: int, stop: threading.Event) -> dict[str, Evidence]:
    """Run the burn-in on one node; never raises for node problems (the run record says why)."""
    run = {"node": job.node, "duration_s": duration_s, "interval_s": job.spec.interval_s,
           "requested_load": job.spec.load, "started_at": now_iso(), "status": "ok"}

    def prepare() -> tuple[str, str, float]:
        text, marker = S.render(job.spec, duration_s)
        return text, marker, S.deadline_s(job.spec, duration_s)

    return run_node(job.url, opts, prepare, stop, run, evidence_from_stream)


def burnin_fleet(jobs: list[BurninJob], opts: GatherOptions, duration_s: int, bundles: dict[str, Bundle],
                 bundles_dir: Path | None, stop: threading.Event,
                 progress: Callable[[int, int], None] | None = None) -> None:
    """Burn in every job's node concurrently; add the evidence to ``bundles[node]`` and rewrite
    its directory under ``bundles_dir``. Blocks until every node is done (or ``stop``)."""

    def error_evidence(j: BurninJob, e: Exception) -> dict[str, Evidence]:
        return evidence_from_stream(S.Stream(), {"node": j.node, "status": "error",
                                                 "error": f"internal error: {type(e).__name__}: {e}"})

    def record(j: BurninJob, ev: dict[str, Evidence]) -> None:
        b = bundles.get(j.node)
        if b is not None:
            b.items.update(ev)
            b.meta["burnin"] = json.loads(ev["burnin.run"].stdout)
            if bundles_dir is not None:
                try:
                    b.write(bundles_dir)
                except OSError as e:   # a full disk, a link planted at <bundles>/<node> (safeio):
                    # the judged evidence is in memory; one node's bundle never stops the others
                    b.meta["burnin_not_written"] = f"bundle not written to {bundles_dir}: {type(e).__name__}: {e}"

    run_fleet(jobs, lambda j: burnin_node(j, opts, duration_s, stop), error_evidence, record, opts.forks, stop,
              progress)
