"""``--baseline`` memory against the replay's (issue 31, item 8; docs/performance.md).

For each size N: N copies of one sample node (the current run, replayed) and N baseline copies
each holding a sparse item of ``--pad-mib`` MiB (a few KiB on disk, read in full: the attack of
the issue, 40 such bundles made 3.8 GB RSS when every baseline bundle was held). Measured: the
peak RSS of ``pytest suites --replay CUR`` alone and with ``--baseline BASE`` (bench.measure:
the largest process of the tree), and between consecutive sizes each run's growth a node (the
current side: a ``--baseline`` run streams as ``--replay`` does, one shard of current nodes in
memory). The baseline run must stay within the replay's bound: one baseline bundle in memory at a
time, so the difference stays about one bundle whatever N is. Each copy has its own boot id and
machine id (copies sharing them are one machine to NG-INV-003, whose items hold them together).

    .venv/bin/python bench/baseline_memory.py --nodes 8,32 --pad-mib 8
    .venv/bin/python bench/baseline_memory.py --nodes 256,4096 --pad-mib 8   # the scale figure (long)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import run_measured  # noqa: E402
from tests.bundle_edit import give_identity  # noqa: E402

SRC = ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"


def _clone(dst: Path, node: str, pad: int) -> None:
    d = Path(shutil.copytree(SRC, dst / node))
    meta = json.loads((d / "meta.json").read_text())
    meta["node"] = node
    if pad:
        meta["items"]["padding"] = {"rc": 0, "status": "ok", "bytes": pad}
        with open(d / "padding.out", "wb") as fh:
            fh.truncate(pad)   # sparse
    (d / "meta.json").write_text(json.dumps(meta))
    # a boot id and machine id of its own: copies sharing one are one machine to NG-INV-003,
    # whose items then load every clashing node together (not the fleet this measures)
    give_identity(d, node)


def measure(n: int, pad: int, work: Path) -> dict:
    cur, base = work / f"cur{n}", work / f"base{n}"
    for i in range(n):
        _clone(cur, f"n{i:05d}", 0)
        _clone(base, f"n{i:05d}", pad)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    out = {"nodes": n, "pad_mib": pad / 2**20}
    for name, extra in (("replay", []), ("baseline", ["--baseline", str(base)])):
        m = run_measured([sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider",
                          "--replay", str(cur), "--reports-dir", str(work / f"r-{name}{n}"), *extra],
                         cwd=ROOT, env=env, timeout_s=6 * 3600)
        out[f"{name}_rc"] = m.rc
        out[f"{name}_peak_rss_mb"] = round(m.peak_rss_mb, 1)
        out[f"{name}_wall_s"] = round(m.wall_s, 1)
    out["baseline_minus_replay_mb"] = round(out["baseline_peak_rss_mb"] - out["replay_peak_rss_mb"], 1)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="8,32", help="comma-separated sizes (default 8,32)")
    ap.add_argument("--pad-mib", type=float, default=8.0, help="sparse item per baseline bundle, MiB")
    a = ap.parse_args(argv)
    pad = int(a.pad_mib * 2**20)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nodegate-bench-baseline-") as t:
        for n in (int(x) for x in a.nodes.split(",")):
            rows.append(measure(n, pad, Path(t)))
            print(json.dumps(rows[-1]), flush=True)
    # the current side (issue 31, item 8): a --baseline run streams like --replay, so its RSS
    # grows a node about as the replay's does (every current node held: ~1.9 MB a node)
    for lo, hi in zip(rows, rows[1:]):
        d = hi["nodes"] - lo["nodes"]
        print(json.dumps({"from_nodes": lo["nodes"], "to_nodes": hi["nodes"], **{
            f"{k}_growth_mb_a_node": round((hi[f"{k}_peak_rss_mb"] - lo[f"{k}_peak_rss_mb"]) / d, 3)
            for k in ("replay", "baseline")}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
