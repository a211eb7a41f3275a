"""A ``--baseline`` run streams like a plain ``--replay`` (issue 31, item 8; docs/baseline.md).

The current nodes are loaded when their items run and released after (``FleetRun.streaming``),
collected in shards of ``--shard-nodes`` nodes; each node is compared with its baseline node while
both are loaded. The verdicts and every output must not depend on the sharding: one fleet of
bundle copies with a few regressions (PCIe on a GPU, ECC on a GPU, a driver upgrade the spec does
not expect, a baseline node in the inventory but not gathered, a new node) run with
``--shard-nodes 1``, ``4`` and ``0`` (unsharded): the same exit code, the same JUnit testcases in
the same order with the same outcomes and properties, the same changes.json and the same
results.jsonl records. The figures of the regression items are asserted too (what the run was
before it streamed: tests/baseline/test_gate.py holds the same verdicts on the same profiles).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from . import fleet as F
from .test_gate import run_suite

pytestmark = pytest.mark.skipif(not F.H200.is_dir(), reason="inventories/samples/h200-vm (real capture) not built")

CURRENT = ["n01", "n02", "n03", "n04", "n05", "n06", "n08"]   # n07: in the baseline and inventory, not gathered
BASELINE = ["n01", "n02", "n03", "n04", "n05", "n06", "n07"]  # n08: new
SHARDINGS = ("1", "4", "0")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    t = tmp_path_factory.mktemp("stream")
    src = F.two_gpu(t / "src")
    skip = F.not_passing_checks(src)
    before, after = t / "before", t / "after"
    for n in BASELINE:
        F.clone(src, before / n, n)
    for n in CURRENT:
        F.clone(src, after / n, n)
    F.lower_pcie(after / "n02", F.BUS1, gen=4)
    F.add_ecc(after / "n05", F.BUS0, volatile=2, aggregate=2)
    F.upgrade_driver(after / "n06")
    hosts = {n: {} for n in sorted(set(CURRENT) | set(BASELINE))}
    inv = t / "hosts.yaml"
    inv.write_text(yaml.safe_dump({"all": {"vars": {"nodegate": {"checks": {"skip": skip}}}, "hosts": hosts}}))
    out = {}
    for s in SHARDINGS:
        reports = t / f"reports-{s}"
        r = run_suite(after, before, reports, "--inventory", str(inv), "--shard-nodes", s)
        out[s] = (r, reports)
    return out


_VOLATILE = re.compile(r'\s(?:time|timestamp|hostname)="[^"]*"')


def _junit(reports: Path) -> list[str]:
    """The JUnit file without its timings and host: one line a testcase/property, in file order."""
    text = _VOLATILE.sub("", (reports / "junit.xml").read_text())
    return [ln.strip() for ln in text.replace("><", ">\n<").splitlines() if ln.strip()]


def _changes(reports: Path) -> dict:
    doc = json.loads((reports / "changes.json").read_text())
    doc.pop("generated_at", None)
    return doc


def _results(reports: Path) -> list[str]:
    """results.jsonl's records without their timings, sorted: a sharded run writes a shard's
    node identity items after that shard's nodes (nodegate.session.items.order_items), an
    unsharded one after every node, as a plain --replay does (JUnit groups them by node)."""
    p = next(reports.rglob("results.jsonl"), None)
    if p is None:
        return []
    out = []
    for line in p.read_text().splitlines():
        rec = json.loads(line)
        for k in ("duration", "start", "stop", "started_at", "finished_at", "time", "timestamp"):
            rec.pop(k, None)
        out.append(json.dumps(rec, sort_keys=True))
    return sorted(out)


_WHEN = re.compile(r"20\d\d-\d\d-\d\dT[\d:]{8}Z|\d+(?:\.\d+)? ?s\b")


def _pages(reports: Path) -> dict[str, str]:
    """The other reports (actions, RMA, the HTML run and node pages) without times and durations."""
    names = ["actions.csv", "rma.csv", "rma.json", "report.html"]
    names += sorted(str(p.relative_to(reports)) for p in (reports / "nodes").glob("*.html"))
    return {n: _WHEN.sub("", (reports / n).read_text()) for n in names}


def test_sharded_and_unsharded_baseline_runs_agree(runs):
    ref_r, ref = runs["0"]
    assert ref_r.returncode == 1, ref_r.stdout[-3000:] + ref_r.stderr[-2000:]
    for s in ("1", "4"):
        r, rep = runs[s]
        assert r.returncode == ref_r.returncode, (s, r.stdout[-3000:] + r.stderr[-2000:])
        assert _junit(rep) == _junit(ref), s
        assert _changes(rep) == _changes(ref), s
        assert _results(rep) == _results(ref), s
        assert _pages(rep) == _pages(ref), s


def test_streamed_baseline_verdicts(runs):
    from .test_gate import expected_items, junit_outcomes
    for s, (r, reports) in runs.items():
        got = junit_outcomes(reports / "junit.xml")
        both = ["n01", "n02", "n03", "n04", "n05", "n06"]
        assert set(got) == expected_items(both, ["n08"], ["n07"]), s
        fails = {"test_regression_pcie[n02-gpu1]", "test_regression_checks[n02]",
                 "test_regression_ecc[n05-gpu0]", "test_regression_checks[n05]",
                 "test_regression_node_presence[n07]"}
        assert {k for k, v in got.items() if v == "fail"} >= fails, (s, got)
        assert {k for k, v in got.items() if v == "fail"} <= fails | {"test_regression_checks[n06]"}, (s, got)
        doc = _changes(reports)
        assert doc["summary"]["missing_nodes"] == ["n07"] and doc["summary"]["new_nodes"] == ["n08"], s
        assert any("pcie" in r["item"] for r in doc["nodes"]["n02"]["regressions"]), s


def test_shards_ran(runs):
    """``--shard-nodes 1`` did shard the run (the terminal's progress is per shard, no item ids):
    the comparison above is between a streamed, sharded run and an unsharded one."""
    r1, _ = runs["1"]
    r0, _ = runs["0"]
    assert r1.returncode == r0.returncode
