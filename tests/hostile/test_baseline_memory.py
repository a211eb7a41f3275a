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
import tracemalloc
from dataclasses import dataclass, field

from nodegate.baseline.model import KINDS
from nodegate.baseline.run import BaselineRun
from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.spec import load_spec

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
