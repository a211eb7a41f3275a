"""The probe's node-side cost on one simulated node: wall time, CPU, bytes and processes per run.

    .venv/bin/python bench/probe_cost.py [--profile h100-535-healthy] [--runs 30] [--repo DIR] [--strace]

Builds the profile's node root (tools/fleet: root, busybox, dash), runs the real probe in it
(``chroot <root> /bin/sh -s``, as tools/build_samples.py does) ``--runs`` times and reports the median
and minimum wall time and CPU (the probe's process tree: RUSAGE_CHILDREN), stdout and stderr bytes and
the item count; ``--strace`` also counts the forks and execs of one run (``strace -f``). ``--repo``
measures another checkout's probe and simulator (e.g. the commit before a change, unpacked with
``git archive``), so before/after figures come from the same script. Wall and CPU are shared with
whatever else runs on the machine: compare medians of runs taken back to back.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _strace_counts(root: Path, script: bytes) -> dict[str, int]:
    """forks (clone/fork/vfork) and execs (execve) of one probe run, from strace -f -c."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        subprocess.run(["strace", "-f", "-c", "-o", out.name, "-e", "trace=process", "chroot", str(root),
                        "/bin/sh", "-s"], input=script, capture_output=True, timeout=120)
        text = Path(out.name).read_text()
    counts = {}
    for line in text.splitlines():
        m = re.match(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+(\w+)\s*$", line)
        if m:
            counts[m.group(2)] = int(m.group(1))
    forks = sum(v for k, v in counts.items() if k in ("clone", "clone3", "fork", "vfork"))
    return {"forks": forks - 1, "execs": counts.get("execve", 0) - 1}   # less strace's own chroot exec/fork


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h100-535-healthy")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent))
    ap.add_argument("--strace", action="store_true")
    a = ap.parse_args(argv)
    sys.path.insert(0, a.repo)
    from nodegate import probe                      # noqa: E402  (the measured checkout's)
    from tools.fleet import Fleet, load_profile     # noqa: E402
    from tools.fleet.local import SSHD_PATH         # noqa: E402

    prof = load_profile(a.profile)
    fleet = Fleet([prof], run_id="probecost-" + next(tempfile._get_candidate_names()))
    walls, cpus, outs, errs, items = [], [], [], [], set()
    try:
        fleet.build()
        root = fleet.root(a.profile)
        user = (prof.spec.get("persistence") or {}).get("user", "nvidia-persistenced")
        for _ in range(a.runs):
            script, marker = probe.render_script(user=user, timeout_s=5)
            c0, t0 = _children_cpu(), time.monotonic()
            p = subprocess.run(["chroot", "--groups=0", str(root), "/bin/sh", "-s"], input=script.encode(),
                               capture_output=True, timeout=120, env={"PATH": SSHD_PATH, "HOME": "/root"})
            walls.append(time.monotonic() - t0)
            cpus.append(_children_cpu() - c0)
            outs.append(len(p.stdout))
            errs.append(len(p.stderr))
            items.add(len(probe.split_stream(p.stdout, marker, stderr=p.stderr)[0]))
        res = {"repo": a.repo, "profile": a.profile, "runs": a.runs, "items": sorted(items),
               "wall_s_median": round(statistics.median(walls), 4), "wall_s_min": round(min(walls), 4),
               "cpu_s_median": round(statistics.median(cpus), 4), "cpu_s_min": round(min(cpus), 4),
               "stdout_bytes": sorted(set(outs)), "stderr_bytes": sorted(set(errs))}
        if a.strace:
            script, _ = probe.render_script(user=user, timeout_s=5)
            res.update(_strace_counts(root, script.encode()))
    finally:
        fleet.stop()
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
