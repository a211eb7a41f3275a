"""``--baseline`` memory bounded like replay (issue 31, item 8; docs/security.md, docs/baseline.md).

Every baseline bundle was held whole for the whole run: 40 bundles of sparse files (16 MB on
disk) reached 3.8 GB RSS. Now ``BaselineRun`` reads only the node names up front and a node's
baseline evidence when its comparison is made, dropping it after: one baseline bundle in memory
at a time, each under the bundle reader's budget. The bound is asserted as a figure, measured
with tracemalloc (Python's own allocations, the evidence bytes included) with a generous margin:
the peak while loading and comparing N baseline nodes stays within a few bundles' size, and does
not grow with N."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tracemalloc
from dataclasses import dataclass, field

import pytest

from nodegate.baseline.model import KINDS
from nodegate.baseline.run import BaselineRun
from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.spec import load_spec

from tests.bundle_edit import give_identity
from tests.hostile.harness import ROOT

SRC = ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"
PAD = 4 * 1024 * 1024   # each baseline bundle: a sparse item of 4 MiB (a few KiB on disk)


@dataclass
class Fleet:
    bundles: dict
    facts: dict
    spec: dict
    spec_errors: dict = field(default_factory=dict)


def _clone(dst, node: str, pad: int = 0, link_to=None):
    d = shutil.copytree(SRC, dst / node)
    meta = json.loads((d / "meta.json").read_text())
    meta["node"] = node
    if pad or link_to is not None:
        meta["items"]["padding"] = {"rc": 0, "status": "ok", "bytes": pad}
        if link_to is not None:      # hard links to one sparse file, as the replay's attack
            os.link(link_to, d / "padding.out")
        else:
            with open(d / "padding.out", "wb") as fh:
                fh.truncate(pad)      # sparse: 4 MiB read, nothing on disk
    (d / "meta.json").write_text(json.dumps(meta))
    give_identity(d, node)   # one machine per copy (NG-INV-003 would hold clashing copies together)
    return d


def _measure(tmp_path, n: int, *, links: bool = False) -> tuple[int, BaselineRun]:
    """Peak traced bytes of loading an n-node baseline and making every comparison and item."""
    base, cur = tmp_path / f"base{n}", tmp_path / f"cur{n}"
    first = None
    for i in range(n):
        d = _clone(base, f"n{i:03d}", PAD, link_to=first if links else None)
        if links and first is None:
            first = d / "padding.out"
    bundles = {f"n{i:03d}": Bundle.load(_clone(cur, f"n{i:03d}")) for i in range(n)}
    fleet = Fleet(bundles, {k: NodeFacts(b) for k, b in bundles.items()}, {k: load_spec({}) for k in bundles})
    for f in fleet.facts.values():   # the current side's facts, parsed before the measurement
        f.gpus
    tracemalloc.start()
    try:
        br = BaselineRun.load(base)
        br.all_comparisons(fleet)   # every node compared (what the items, changes.json and HTML read)
        for kind in KINDS:
            for node, label in br.items(kind, fleet)[:3]:
                br.verdict(kind, node, label, fleet)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, br


def test_baseline_bundles_are_read_one_at_a_time_and_dropped(tmp_path):
    peak, br = _measure(tmp_path, 6)
    assert br.peak_held == 1 and br.held == 0
    # 6 x 4 MiB were held before (24 MiB and more); now about one bundle: under 3 bundles' size
    assert peak < 3 * PAD, f"peak {peak / 2**20:.1f} MiB for 6 baseline nodes of {PAD / 2**20:.0f} MiB"
    assert len(br.all_comparisons(Fleet({}, {}, {}))) == 6   # every node compared, nothing of it held


def test_the_peak_does_not_grow_with_the_baseline_nodes(tmp_path):
    small, _ = _measure(tmp_path / "a", 2)
    big, _ = _measure(tmp_path / "b", 8)
    # 4x the nodes: the peak within one bundle's size of the small run's (it was 6 bundles more)
    assert big < small + PAD, (small, big)


def test_hard_links_to_one_sparse_file_in_every_baseline_bundle_are_bounded_too(tmp_path):
    peak, br = _measure(tmp_path, 5, links=True)
    assert br.peak_held == 1
    assert peak < 3 * PAD, f"peak {peak / 2**20:.1f} MiB"


# ---------------------------------------------------------------------------- the current side
#: current nodes of each run (two sizes) and the shard size: a streaming --baseline run holds at
#: most one shard of current nodes, whatever the fleet's size (nodegate.session.memory)
SIZES, SHARD = (4, 16), 4
#: RSS growth a node between the two sizes (bench/baseline_memory.py, docs/performance.md, 8 -> 48
#: nodes): a plain --replay 0.29 MB a node, a --baseline run 0.40 MB; before it streamed (every
#: current node held) 1.84 MB. Generous for a loaded machine, well below the old growth.
GROWTH_MB_A_NODE = 1.0


@pytest.fixture(scope="module")
def current_side(tmp_path_factory):
    """(peak RSS MB, held counts) of a ``--baseline`` replay at each of SIZES (module scope)."""
    from bench.measure import run_measured
    t = tmp_path_factory.mktemp("baseline-current")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    out = {}
    for n in SIZES:
        for i in range(n):
            _clone(t / f"cur{n}", f"n{i:03d}")
            _clone(t / f"base{n}", f"n{i:03d}")
        env["NG_HELD_OUT"] = str(t / f"held{n}.json")
        m = run_measured([sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider",
                          "-p", "tests.hostile.heldplugin", "--replay", str(t / f"cur{n}"),
                          "--baseline", str(t / f"base{n}"), "--shard-nodes", str(SHARD),
                          "--reports-dir", str(t / f"r{n}")], cwd=ROOT, env=env, timeout_s=600)
        held = json.loads((t / f"held{n}.json").read_text()) if (t / f"held{n}.json").is_file() else None
        out[n] = (m, held, t / f"r{n}")
    return out


def test_a_baseline_run_holds_one_shard_of_current_nodes(current_side):
    for n, (m, held, reports) in current_side.items():
        assert held is not None, m.output[-3000:]
        assert held["items"] > 0
        # one shard's nodes loaded at its collection, released node by node; the baseline side one
        assert held["current"] <= SHARD, (n, held)
        assert held["baseline"] == 1, (n, held)
        doc = json.loads((reports / "changes.json").read_text())
        assert doc["summary"]["nodes"] == n   # every node compared


def test_a_baseline_run_grows_a_bounded_amount_a_node(current_side):
    (a, b) = SIZES
    rss = {n: current_side[n][0].peak_rss_mb for n in SIZES}
    per_node = (rss[b] - rss[a]) / (b - a)
    assert per_node < GROWTH_MB_A_NODE, f"{rss}: {per_node:.2f} MB a node"
