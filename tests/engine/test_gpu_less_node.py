"""A node without GPUs (issue 40.8): ``gpu.count: 0`` in its spec is a login or storage node of the
cluster, accepted when PCI and the driver show no NVIDIA GPU. Before issue 40, 0 read as "at least
one GPU" and such a node could never be accepted. The sample is tools/fleet/profiles/cpu-login-node.yaml
(nvidia module not loaded, no nvidia-smi), built into inventories/samples/fleet/cpu-login-node."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from nodegate.bundle import Bundle
from nodegate.checks import evaluate, gpu_slots
from nodegate.collect import NodeFacts
from nodegate.engine import NodeContext, evaluate as engine_evaluate, node_verdict
from nodegate.outcomes import Outcome
from nodegate.spec import Spec

ROOT = Path(__file__).resolve().parents[2]
FLEET = ROOT / "inventories" / "samples" / "fleet"
CPU = FLEET / "cpu-login-node"
GPU_NODE = FLEET / "h100-535-healthy"


def _spec(**gpu) -> Spec:
    return Spec.model_validate({"gpu": gpu})


def _replay(tmp_path: Path, spec: dict) -> tuple[int, list[dict], str]:
    root = tmp_path / "fleet"
    root.mkdir()
    shutil.copytree(CPU, root / CPU.name)
    inv = tmp_path / "inv.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": {CPU.name: {"nodegate": spec}}}}))
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(root), "--inventory", str(inv),
                        "--reports-dir", str(reports), "-q", "--tb=no", "-p", "no:cacheprovider"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    recs = [json.loads(line) for line in (reports / "results.jsonl").read_text().splitlines()]
    return r.returncode, recs, r.stdout


def test_a_node_the_spec_says_has_no_gpus_is_accepted(tmp_path):
    rc, recs, out = _replay(tmp_path, {"gpu": {"count": 0}})
    assert rc == 0, out[-3000:]
    assert "1 accepted, 0 need action, 0 not evaluated" in out
    by = {r["check_id"]: r for r in recs}
    assert {r["node"] for r in recs} == {CPU.name}             # no placeholder "NOTSET" node
    assert by["NG-INV-001"]["outcome"] == "pass" and by["NG-INV-001"]["expected"].startswith("0 GPU(s)")
    assert by["NG-INV-003"]["outcome"] == "pass"
    assert by["NG-DRV-001"]["outcome"] == "skip" and "gpu.count=0" in by["NG-DRV-001"]["message"]
    assert all(r["scope"] == "node" for r in recs)              # no per-GPU item
    assert all(r["gpus_expected"] == "0" for r in recs)


def test_the_same_node_without_gpu_count_0_is_not_accepted(tmp_path):
    rc, recs, out = _replay(tmp_path, {})
    assert rc == 1, out[-3000:]
    by = {(r["check_id"], r["gpu_index"]): r["outcome"] for r in recs}
    assert by[("NG-INV-001", None)] in ("fail", "error")
    assert "0 accepted" in out


def test_gpu_count_0_on_a_node_with_gpus_fails():
    facts = NodeFacts(Bundle.load(GPU_NODE))
    res = evaluate("NG-INV-001", facts, _spec(count=0))
    assert res.outcome is Outcome.FAIL, res
    assert "8 GPUs observed, 0 specified" in res.message
    assert [s.index for s in gpu_slots(facts, _spec(count=0))] == list(range(8))   # they are judged too


def test_gpu_count_0_with_pci_unread_is_error_not_pass():
    b = Bundle.load(CPU)
    del b.items["pci.sysfs"]
    res = evaluate("NG-INV-001", NodeFacts(b), _spec(count=0))
    assert res.outcome is Outcome.ERROR, res
    assert "cannot be ruled out" in res.message and "pci.sysfs" in res.message


def test_the_engine_alone_gives_the_same_verdict():
    """The pure engine (no pytest) on the same evidence: every node check, then node_verdict."""
    from collections import Counter

    from nodegate.checks import load_all
    facts = NodeFacts(Bundle.load(CPU))
    spec = _spec(count=0)
    selection = [(cid, None) for cid, c in load_all().items() if c.scope == "node"]
    results = engine_evaluate(facts, spec, selection, NodeContext(node=CPU.name))
    counts = Counter(r.result.outcome.value for r in results)
    catalog = tuple(load_all())
    from nodegate.engine.verdict import not_applicable_to
    status, why = node_verdict(counts, len(selection), judged={r.check.id for r in results}, catalog=catalog,
                               not_applicable=not_applicable_to("0", catalog))
    assert (status, why) == ("accepted", ""), (counts, why)
    assert [r for r in results if r.result.outcome is Outcome.SKIP][0].record["gpus_expected"] == "0"
