"""Serial against pytest-xdist on a replay (issue 40.5): ``bench/run.py --scale N,... --xdist W,...``.

Each size is replayed from generated copies of the healthy 8-GPU bundle (bench/scale.make_copies)
serially, then with ``-n W --dist loadgroup`` for each W (``NODEGATE_XDIST_UNCAPPED=1``: nodegate
would otherwise run serially where a worker cannot pay, nodegate.session.scheduling.cap_workers).
It prints, and writes to reports/bench-xdist.json, each run's wall and CPU (the whole process
tree, ``os.wait4`` of the command) and the peak RSS (VmHWM, sampled every 0.1 s) of every process:
the controller (or the serial run) and each worker. It reports, it does not gate; results.jsonl
of each xdist run is compared with the serial one (``same_records``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import scale

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for ln in f:
                if ln.startswith("VmHWM"):
                    return int(ln.split()[1]) / 1024
    except OSError:
        return None
    return None


def measure(argv: list[str], env: dict) -> dict:
    """Run ``argv``: wall, CPU of the process tree, peak RSS of each of its Python processes."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()))
    reader.start()
    peak: dict[int, float] = {}
    while p.poll() is None:
        todo, seen = [p.pid], []
        while todo:
            q = todo.pop()
            seen.append(q)
            todo += _children(q)
        for q in seen:
            h = _hwm_mb(q)
            if h:
                peak[q] = max(h, peak.get(q, 0.0))
        time.sleep(0.1)
    status = p.returncode
    reader.join()
    wall = time.monotonic() - t0
    import resource
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    main = peak.get(p.pid, 0.0)
    others = sorted((v for q, v in peak.items() if q != p.pid and v > 30), reverse=True)
    text = (out[0] if out else b"").decode(errors="replace").strip().splitlines()
    return {"wall_s": round(wall, 1), "cpu_s_cumulative": ch.ru_utime + ch.ru_stime, "rc": status,
            "main_peak_rss_mb": round(main, 1), "worker_peak_rss_mb": [round(v, 1) for v in others],
            "last_line": text[-1] if text else ""}


def run(sizes, workers, out: Path | None = None) -> int:
    env = dict(os.environ, NODEGATE_XDIST_UNCAPPED="1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="nodegate-xdist-") as tmp:
        for n in sizes:
            fleet = Path(tmp) / f"fleet{n}"
            scale.make_copies(fleet, n)
            serial_records = None
            for w in (0, *workers):
                reports = Path(tmp) / f"r{n}-{w}"
                argv = [sys.executable, "-m", "nodegate.cli", "--replay", str(fleet), "--reports-dir", str(reports),
                        "-q", "--tb=no", "-p", "no:cacheprovider"] + (["-n", str(w), "--dist", "loadgroup"] if w else [])
                cpu0 = __import__("resource").getrusage(__import__("resource").RUSAGE_CHILDREN)
                r = measure(argv, env)
                r["cpu_s"] = round(r.pop("cpu_s_cumulative") - (cpu0.ru_utime + cpu0.ru_stime), 1)
                recs = sorted(_records(reports / "results.jsonl"))
                if w == 0:
                    serial_records = recs
                else:
                    r["same_records"] = recs == serial_records
                rows.append({"nodes": n, "workers": w, **r})
                print(_line(rows[-1]), flush=True)
    out = out or ROOT / "reports" / "bench-xdist.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"written: {out}")
    return 0


def _records(path: Path) -> list[str]:
    """results.jsonl lines without their timings (the same records in any order)."""
    out = []
    for ln in path.read_text().splitlines() if path.is_file() else ():
        d = json.loads(ln)
        for k in ("duration", "start", "stop", "started_at", "finished_at"):
            d.pop(k, None)
        out.append(json.dumps(d, sort_keys=True))
    return out


def _line(r: dict) -> str:
    what = "serial" if not r["workers"] else f"-n {r['workers']}"
    workers = ", ".join(f"{v:.0f}" for v in r["worker_peak_rss_mb"]) or "-"
    same = "" if "same_records" not in r else f", records {'same' if r['same_records'] else 'DIFFER'}"
    return (f"{r['nodes']:>5} nodes {what:>7}: wall {r['wall_s']:6.1f} s, CPU {r['cpu_s']:6.1f} s, peak RSS "
            f"main {r['main_peak_rss_mb']:.0f} MB, workers [{workers}] MB{same} (exit {r['rc']})")
