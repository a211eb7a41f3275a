"""``bench/run.py --paired BIG,SMALL``: a BIG-node replay and SMALL-node replays side by side.

The scale bench (bench/scale.py) runs its sizes one after the other; on the 2-core bench machine
one 256-node replay took 24.5-33.2 s within half an hour, and even a pure-Python loop's speed
drifted by 15 % over five minutes (docs/performance.md "Round 9"). A 25-second run and a
7-minute one then meet different spells of the machine. Here the BIG replay runs once while, on
the other core, SMALL replays run back to back until it ends: both see the same machine at the
same moments. Reported:

- ``ratio``: BIG's wall time over the median wall time of the SMALL runs that ran wholly beside it
  (each run's wall from its start to its exit, the same way for both);
- ``windows``: for each of those SMALL runs, its mean user CPU a shard (bench/shardlog_plugin.py)
  and BIG's for the shards it finished in the same seconds, with their ratio. A ratio that rises
  along BIG's run is a per-node cost that grows with the nodes done; flat near 1, there is none.

Two processes share the machine's memory bandwidth and caches, so the walls are longer than
alone; the comparison is between the two, not with bench/scale.py's figures. Generated bundles
as in bench/scale.py (never committed); writes reports/bench-paired.json.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def read_shards(path: Path) -> dict[str, list[tuple[int, float, float, float]]]:
    """bench/shardlog_plugin.py's lines by run tag: ``[(shard, time, user s, system s)]``; lines
    that do not parse are left out."""
    out: dict[str, list[tuple[int, float, float, float]]] = {}
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        f = line.split()
        if len(f) != 5:
            continue
        try:
            out.setdefault(f[0], []).append((int(f[1]), float(f[2]), float(f[3]), float(f[4])))
        except ValueError:
            continue
    return out


def windows(shards: dict[str, list[tuple[int, float, float, float]]],
            small: list[dict], big_tag: str = "big") -> list[dict]:
    """For each complete SMALL run (``{"tag", "start", "end"}``, seconds since the epoch), its mean
    user CPU a shard and BIG's over the shards BIG finished between that run's start and end."""
    big = shards.get(big_tag, [])
    rows = []
    for run in small:
        mine = shards.get(run["tag"], [])
        theirs = [s for s in big if run["start"] <= s[1] <= run["end"]]
        if not mine or not theirs:
            continue
        a = statistics.mean(s[2] for s in mine)
        b = statistics.mean(s[2] for s in theirs)
        rows.append({"small": run["tag"], "small_cpu_per_shard_s": round(a, 4), "big_shards": [theirs[0][0], theirs[-1][0]],
                     "big_cpu_per_shard_s": round(b, 4), "ratio": round(b / a, 3) if a else None})
    return rows


def _argv(fleet: Path, reports: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "-p", "shardlog_plugin",
            "--replay", str(fleet), "--reports-dir", str(reports), *extra]


def main(big_n: int, small_n: int, out: Path | None = None, extra: list[str] = ()) -> int:
    from bench.run import _env, machine
    from bench.scale import make_copies
    out = out or ROOT / "reports" / "bench-paired.json"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nodegate-paired-") as tmp:
        base = Path(tmp)
        make_copies(base / "big", big_n)
        make_copies(base / "small", small_n)
        log = base / "shards.log"
        env = _env()
        env["NODEGATE_BENCH_SHARDLOG"] = str(log)
        print(f"[paired] {big_n} nodes once, {small_n} nodes back to back beside it ...", flush=True)
        started = time.time()
        with open(base / "big.out", "wb") as big_out:
            big = subprocess.Popen(_argv(base / "big", base / "rbig", list(extra)), cwd=ROOT, stdout=big_out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=dict(env, NODEGATE_BENCH_TAG="big"))
            small: list[dict] = []
            try:
                while big.poll() is None:
                    tag = f"small{len(small) + 1}"
                    s0 = time.time()
                    p = subprocess.run(_argv(base / "small", base / "rsmall", list(extra)), cwd=ROOT,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=dict(env, NODEGATE_BENCH_TAG=tag))
                    small.append({"tag": tag, "start": s0, "end": time.time(), "rc": p.returncode})
                big_rc = big.wait()
            finally:
                if big.poll() is None:
                    big.kill()
                    big.wait()
        big_end = time.time()
        if big_rc not in (0, 1) or any(r["rc"] not in (0, 1) for r in small):
            tail = (base / "big.out").read_text(errors="replace")[-3000:]
            raise RuntimeError(f"a paired replay failed: big rc {big_rc}, small rcs {[r['rc'] for r in small]}\n{tail}")
        beside = [r for r in small if r["end"] <= big_end]   # the last one also ran alone
        walls = [round(r["end"] - r["start"], 3) for r in beside]
        shards = read_shards(log)
    big_wall = round(big_end - started, 3)
    row = {"big_nodes": big_n, "small_nodes": small_n, "big_wall_s": big_wall, "small_walls_s": walls,
           "small_median_s": statistics.median(walls) if walls else None,
           "ratio": round(big_wall / statistics.median(walls), 2) if walls else None,
           "nodes_ratio": round(big_n / small_n, 2), "windows": windows(shards, beside),
           # shards each run logged (its last one has no next collection to end it)
           "shards_logged": {tag: len(v) for tag, v in shards.items()}, "machine": machine()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(row, indent=2) + "\n")
    print(f"[paired] {big_n} nodes: {big_wall}s; {small_n} nodes beside it: {len(walls)} runs, median "
          f"{row['small_median_s']}s; wall x{row['ratio']} for x{row['nodes_ratio']} the nodes")
    for w in row["windows"]:
        print(f"  {w['small']:>8}: {w['small_cpu_per_shard_s']:.3f}s a shard; {big_n} nodes' shards "
              f"{w['big_shards'][0]}-{w['big_shards'][1]}: {w['big_cpu_per_shard_s']:.3f}s (x{w['ratio']})")
    print(f"wrote {out} in {time.monotonic() - t0:.0f}s")
    return 0
