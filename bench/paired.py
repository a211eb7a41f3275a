"""``bench/run.py --paired BIG,SMALL``: a BIG-node replay and SMALL-node replays side by side.

The scale bench (bench/scale.py) runs its sizes one after the other; on the 2-core bench machine
one 256-node replay took 24.5-33.2 s within half an hour, and even a pure-Python loop's speed
drifted by 15 % over five minutes (docs/performance.md "Round 9"). A 25-second run and a
7-minute one then meet different spells of the machine. Here the BIG replay runs once while, on
the other core, SMALL replays run back to back until it ends: both see the same machine at the
same moments. Reported:

- ``ratio``: BIG's wall time over the median wall time of the SMALL runs that ended before BIG
  did (or, ``small_outlasted_big``, the first one when none did: on a loaded machine it ran
  beside BIG for BIG's whole run; each run's wall, CPU and peak RSS from bench/measure.run_measured, the same way for both);
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
import sys
import tempfile
import threading
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
        rows.append({"small": run["tag"], "small_cpu_per_shard_s": round(a, 4),
                     "big_shards": [theirs[0][0], theirs[-1][0]], "big_cpu_per_shard_s": round(b, 4),
                     "ratio": round(b / a, 3) if a else None})
    return rows


def main(big_n: int, small_n: int, out: Path | None = None, extra: list[str] = ()) -> int:
    from bench.measure import run_measured
    from bench.common import _env, machine
    from bench.scale import make_copies, replay_argv
    out = out or ROOT / "reports" / "bench-paired.json"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nodegate-paired-") as tmp:
        base = Path(tmp)
        make_copies(base / "big", big_n)
        make_copies(base / "small", small_n)
        log = base / "shards.log"
        env = dict(_env(), NODEGATE_BENCH_SHARDLOG=str(log))
        print(f"[paired] {big_n} nodes once, {small_n} nodes back to back beside it ...", flush=True)
        got: dict = {}

        def run_big() -> None:
            # run_measured waits for the child itself: BIG's end is when it exited, not when the
            # SMALL run going on at that moment ends
            got["m"] = run_measured(replay_argv(base / "big", base / "rbig", extra, "shardlog_plugin"),
                                    cwd=ROOT, env=dict(env, NODEGATE_BENCH_TAG="big"), timeout_s=7200)
            got["end"] = time.time()

        big = threading.Thread(target=run_big, name="paired-big")
        big.start()
        small: list[dict] = []
        while big.is_alive():
            tag = f"small{len(small) + 1}"
            s0 = time.time()
            m = run_measured(replay_argv(base / "small", base / "rsmall", extra, "shardlog_plugin"),
                             cwd=ROOT, env=dict(env, NODEGATE_BENCH_TAG=tag), timeout_s=3600)
            small.append({"tag": tag, "start": s0, "end": time.time(), "wall_s": m.wall_s, "rc": m.rc})
        big.join()
        if "m" not in got:
            raise RuntimeError(f"the {big_n}-node replay could not be started (its thread's error is above)")
        bm = got["m"]
        if bm.rc not in (0, 1) or any(r["rc"] not in (0, 1) for r in small):
            raise RuntimeError(f"a paired replay failed: big rc {bm.rc}, small rcs {[r['rc'] for r in small]}\n"
                               f"{bm.output[-3000:]}")
        beside = [r for r in small if r["end"] <= got["end"]]   # the last one also ran alone
        # on a loaded machine the first SMALL run may outlast BIG: then it is the only one that
        # ran beside BIG (for all of BIG's time), counted and marked, rather than no figure at all
        partial = not beside and bool(small)
        if partial:
            beside = small[:1]
        walls = [r["wall_s"] for r in beside]
        shards = read_shards(log)
    row = {"big_nodes": big_n, "small_nodes": small_n, "big_wall_s": bm.wall_s, "big_cpu_s": bm.cpu_s,
           "big_peak_rss_mb": bm.peak_rss_mb, "small_runs": len(small), "small_walls_s": walls,
           "small_median_s": statistics.median(walls) if walls else None, "small_outlasted_big": partial,
           "ratio": round(bm.wall_s / statistics.median(walls), 2) if walls else None,
           "nodes_ratio": round(big_n / small_n, 2), "windows": windows(shards, beside),
           # shards each run logged (its last one has no next collection to end it)
           "shards_logged": {tag: len(v) for tag, v in shards.items()}, "machine": machine()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(row, indent=2) + "\n")
    print(f"[paired] {big_n} nodes: {bm.wall_s}s; {small_n} nodes beside it: {len(walls)} runs, median "
          f"{row['small_median_s']}s; wall x{row['ratio']} for x{row['nodes_ratio']} the nodes")
    for w in row["windows"]:
        print(f"  {w['small']:>8}: {w['small_cpu_per_shard_s']:.3f}s a shard; {big_n} nodes' shards "
              f"{w['big_shards'][0]}-{w['big_shards'][1]}: {w['big_cpu_per_shard_s']:.3f}s (x{w['ratio']})")
    print(f"wrote {out} in {time.monotonic() - t0:.0f}s")
    return 0
