"""Only nodes with a selected item are contacted, on a real sshd fleet (exec channels counted on
the sshd side): ``-k <node>`` in the default mode (gathering after collection), with
``--gather-first`` and with a node without gpu.count (both learn the selection in a forked
collection first); ``-x`` leaves the nodes after the first failure NOT EVALUATED."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.fleet import Fleet, sshd_available

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

A, B, C = "sel-a", "sel-b", "sel-nocount"


@pytest.fixture(scope="module")
def fleet():
    if NEEDS is not None:
        pytest.skip(f"simulated fleet unavailable: {NEEDS}")
    f = Fleet()
    f.add("h200-580-open-healthy", A)
    f.add("gpu-fallen-off-bus", B)
    f.add("h200-580-open-healthy", C)
    with f:
        inv = yaml.safe_load(f.inventory_path.read_text())
        gpu = inv["all"]["hosts"][C]["nodegate"]["gpu"]
        gpu.pop("count", None)
        gpu.pop("bus_ids", None)
        f.inventory_path.write_text(yaml.safe_dump(inv))
        yield f


def _run(fleet: Fleet, tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict, dict]:
    before = fleet.exec_counts()
    out = tmp / "reports"
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--tb=no",
           "--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
           "--reports-dir", str(out), "--connect-timeout", "60", *extra]
    env = dict(os.environ, COLUMNS="160")
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    after = fleet.exec_counts()
    execs = {n: after.get(n, 0) - before.get(n, 0) for n in (A, B, C)}
    doc = json.loads((out / "rma.json").read_text()) if (out / "rma.json").is_file() else {}
    return r, execs, doc


@pytest.mark.parametrize("mode", [[], ["--gather-first"]], ids=["overlap", "gather-first"])
def test_k_node_gathers_that_node_alone(fleet, tmp_path, mode):
    r, execs, doc = _run(fleet, tmp_path, "-k", B, *mode)
    assert r.returncode == 1, r.stdout[-2000:]          # sel-b lost a GPU: findings
    assert execs == {A: 0, B: 1, C: 0}
    assert sorted(e["node"] for e in doc["not_evaluated"]) == [A, C]
    assert "3 node(s): 0 healthy" in r.stdout


def test_node_without_gpu_count_is_not_contacted_when_deselected(fleet, tmp_path):
    r, execs, _ = _run(fleet, tmp_path, "-k", A)
    assert r.returncode == 0, r.stdout[-2000:]
    assert execs == {A: 1, B: 0, C: 0}


def test_exitfirst_leaves_later_nodes_not_evaluated(fleet, tmp_path):
    r, execs, doc = _run(fleet, tmp_path, "-x", "-k", f"{B} or {A}")
    assert r.returncode == 1
    reasons = {e["node"]: e["reason"] for e in doc["not_evaluated"]}
    # sel-b FAILed or ERRORed, and -x stopped the run: it needs action, which outranks "not
    # evaluated"; sel-nocount was deselected and never contacted
    assert B not in reasons
    outcomes = [json.loads(ln)["outcome"] for ln in (tmp_path / "reports" / "results.jsonl").read_text().splitlines()
                if json.loads(ln)["node"] == B]
    assert outcomes[-1] in ("fail", "error") and not {"fail", "error"} & set(outcomes[:-1])   # -x
    # sel-a's own items all passed, but its node-identity item (NG-INV-003, run after every
    # node's items) was not: not every item of its suite was judged
    assert reasons[A].startswith("NOT EVALUATED: 1 of ") and "not judged" in reasons[A]
    assert "no selected item" in reasons[C]
    assert execs[C] == 0


@pytest.mark.parametrize("select", [[], ["-k", B]], ids=["all", "k-second-shard"])
def test_sharded_live_run_gathers_the_selection_of_every_shard(fleet, tmp_path, select):
    """--shard-nodes 1: each node's items are collected in turn; the selection of every shard is
    known before gathering (the forked collection goes through the shards too)."""
    r, execs, doc = _run(fleet, tmp_path, "--shard-nodes", "1", *select)
    assert r.returncode == 1, r.stdout[-2000:]
    if select:
        assert execs == {A: 0, B: 1, C: 0}
        assert sorted(e["node"] for e in doc["not_evaluated"]) == [A, C]
    else:
        assert execs == {A: 1, B: 1, C: 1}
        assert doc["not_evaluated"] == []


def test_xdist_controller_gathers_the_selection_and_reports_the_rest_not_evaluated(fleet, tmp_path):
    pytest.importorskip("xdist")
    r, execs, doc = _run(fleet, tmp_path, "-n", "2", "--dist", "loadgroup", "-k", A)
    assert r.returncode == 0, r.stdout[-2000:]
    assert execs == {A: 1, B: 0, C: 0}
    assert sorted(e["node"] for e in doc["not_evaluated"]) == [B, C]


def test_collect_only_contacts_nobody_even_for_a_node_without_gpu_count(fleet, tmp_path):
    r, execs, doc = _run(fleet, tmp_path, "--collect-only")
    assert r.returncode == 0, r.stdout[-2000:]
    assert execs == {A: 0, B: 0, C: 0} and doc == {}
    assert not (tmp_path / "reports" / "bundles").exists() or not any((tmp_path / "reports" / "bundles").iterdir())
    # sel-nocount's GPU items stand for its GPUs (unknown without contacting it): one a node, folded
    assert f"test_pcie_link_trained[{C}]" in r.stdout
