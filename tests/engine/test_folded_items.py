"""A GPU check is one pytest item per node, its GPUs folded (issue 40.5), and nothing a report or a
verdict says depends on it: results.jsonl, JUnit, HTML and RMA are those of one item per GPU
(``--per-gpu-items``), sharded or not; a selection that names a GPU (``-k``, ``--deselect``, a test
path, ``--lf``) gets per-GPU items and selects what it did (nodegate.session.granularity); the
folded item's outcome is the worst of its GPUs' and its message names each failing GPU
(nodegate.engine.fold)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from nodegate.bundle import Bundle
from nodegate.checks import gpu_slots, load_all
from nodegate.collect import NodeFacts
from nodegate.engine import NodeContext, evaluate_item, fold
from nodegate.outcomes import Outcome, Result
from nodegate.session.granularity import Granularity
from nodegate.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples"
AER = SAMPLES / "fleet" / "aer-fatal-upstream"   # gpu2 FAILs NG-PCIERR-001 (test_pcie_errors)
STAMP = re.compile(r"20\d\d-\d\d-\d\dT[0-9:.]+Z?")


def _run(tmp: Path, fleet: Path, name: str, *extra: str, rc=(0, 1), paths=("suites",)) -> tuple[Path, str]:
    rep = tmp / name
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    env.pop("PYTEST_ADDOPTS", None)
    extra = list(extra)
    if not any(a.startswith("-o") for a in extra):
        extra = ["-p", "no:cacheprovider", *extra]
    r = subprocess.run([sys.executable, "-m", "pytest", *paths, "-q", "--tb=no", "-rN", "--replay", str(fleet),
                        "--reports-dir", str(rep), *extra], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode in rc, r.stdout[-3000:] + r.stderr[-3000:]
    return rep, r.stdout


def _reports(rep: Path) -> dict[str, str]:
    """Every report file of a run, the run's start time and its folder taken out."""
    out = {}
    for p in sorted(rep.rglob("*")):
        if p.is_file() and not p.name.endswith(".tar.gz"):
            out[str(p.relative_to(rep))] = STAMP.sub("T", p.read_text(errors="replace").replace(str(rep), "REP"))
    return out


def _counts(out: str) -> dict[str, int]:
    last = out.strip().splitlines()[-1]
    return {k.rstrip("s"): int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", last)}


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """The demo fleet (passes, FAILs, SKIPs and ERRORs) with folded items and with one item per GPU,
    unsharded and in shards of 4."""
    base = tmp_path_factory.mktemp("fold")
    return {name: _run(base, SAMPLES, name, *extra) for name, extra in (
        ("folded", ("--shard-nodes", "0")), ("folded-shards", ("--shard-nodes", "4")),
        ("per-gpu", ("--per-gpu-items", "--shard-nodes", "0")),
        ("per-gpu-shards", ("--per-gpu-items", "--shard-nodes", "4")))}


def test_folded_items_write_every_report_as_per_gpu_items(demo_runs):
    for folded, per_gpu_run in (("folded", "per-gpu"), ("folded-shards", "per-gpu-shards")):
        per_gpu = _reports(demo_runs[per_gpu_run][0])
        assert "results.jsonl" in per_gpu and "junit.xml" in per_gpu and "report.html" in per_gpu
        got = _reports(demo_runs[folded][0])
        assert sorted(got) == sorted(per_gpu), folded
        for f in per_gpu:
            assert got[f] == per_gpu[f], (folded, f)
    # sharded or not: the same records (a shard writes its node-identity items after its nodes)
    whole, shards = (sorted(_reports(demo_runs[n][0])["results.jsonl"].splitlines()) for n in ("folded", "folded-shards"))
    assert whole == shards
    lines = [json.loads(ln) for ln in per_gpu["results.jsonl"].splitlines()]
    assert any(d["nodeid"].endswith("-gpu7]") for d in lines)   # one record per GPU, its per-GPU id


def test_folded_items_are_fewer_with_the_same_outcomes(demo_runs):
    folded, per_gpu = _counts(demo_runs["folded"][1]), _counts(demo_runs["per-gpu"][1])
    assert sum(folded.values()) * 3 < sum(per_gpu.values()), (folded, per_gpu)
    for k in ("failed", "error"):   # a node that FAILs or ERRORs a GPU check still does so
        assert (folded.get(k, 0) > 0) == (per_gpu.get(k, 0) > 0), (folded, per_gpu)
    assert _counts(demo_runs["folded-shards"][1]) == folded


def test_the_folded_item_names_the_failing_gpu(tmp_path):
    fleet = tmp_path / "fleet"
    shutil.copytree(AER, fleet / AER.name)
    rep, out = _run(tmp_path, fleet, "r", "--tb=short", "-rf", rc=(1,))
    assert "FAILED suites/test_pcie_errors.py::test_pcie_errors[aer-fatal-upstream] - [NG-PCIERR-001] " in out
    # the GPU as its own message names it: index, bus id, serial
    assert "[NG-PCIERR-001] 1 of 8 GPU(s) failed: GPU 2 (0000:4c:00.0, serial 1320000060493): upstream port" in out
    recs = [json.loads(ln) for ln in (rep / "results.jsonl").read_text().splitlines()]
    pcie = {d["gpu_index"]: d["outcome"] for d in recs if d["check_id"] == "NG-PCIERR-001"}
    assert pcie == {**{i: "pass" for i in range(8) if i != 2}, 2: "fail"}


@pytest.mark.parametrize("how", ["-k", "--deselect", "path", "--lf"])
def test_a_selection_naming_a_gpu_selects_what_per_gpu_items_select(tmp_path, how):
    fleet = tmp_path / "fleet"
    shutil.copytree(AER, fleet / AER.name)
    gpu2 = "suites/test_pcie_errors.py::test_pcie_errors[aer-fatal-upstream-gpu2]"
    paths = ("suites",)
    if how == "-k":
        argv = ["-k", "pcie_errors and gpu2"]
    elif how == "--deselect":
        argv = ["--deselect", gpu2]
    elif how == "path":
        argv, paths = [], (gpu2,)
    else:
        # the last run failed one GPU's item (per-GPU items): --lf selects that item again
        cache = tmp_path / "cache"
        _run(tmp_path, fleet, "first", "-o", f"cache_dir={cache}", "--per-gpu-items", rc=(1,))
        argv = ["-o", f"cache_dir={cache}", "--lf"]
    rep, out = _run(tmp_path, fleet, "folded", *argv, paths=paths)
    per_gpu_rep, per_gpu_out = _run(tmp_path, fleet, "per-gpu", *argv, "--per-gpu-items", paths=paths)
    assert _reports(rep)["results.jsonl"] == _reports(per_gpu_rep)["results.jsonl"]
    if how != "--deselect":   # only the named GPUs' items are selected: per-GPU items in both runs
        assert _counts(out) == _counts(per_gpu_out), (out[-500:], per_gpu_out[-500:])
    ids = [json.loads(ln)["nodeid"] for ln in (rep / "results.jsonl").read_text().splitlines()]
    if how == "--deselect":
        assert gpu2 not in ids and gpu2.replace("gpu2", "gpu3") in ids
    else:
        assert ids == [gpu2], ids


# ------------------------------------------------------------------ the rule, without pytest
def _gran(**opt) -> Granularity:
    o = dict(per_gpu_items=False, keyword="", deselect=None, lf=False, failedfirst=False, stepwise=False,
             stepwise_skip=False)
    o.update(opt)
    return Granularity(SimpleNamespace(option=SimpleNamespace(**o), args=[], cache=None))


BASE = "suites/test_ecc.py::test_ecc_errors"
LABELS = [f"gpu{i}" for i in range(8)]


@pytest.mark.parametrize("kw,per_gpu", [
    ("", False), ("ecc", False), ("n1", False), ("not n1", False), ("critical", False), ("gpu007", False),
    ("gpu3", True), ("n1-gpu3", True), ("not gpu", True), ("ecc and not gpu1", True),
    # the folded item's own name (what --collect-only prints): the folded item, per-GPU items also
    # carry it as a keyword (markers.mark_item), so it never needs them
    ("n1]", False), ("test_ecc_errors[n1]", False), ("not test_ecc_errors[n1]", False)])
def test_k_tells_gpus_apart_only_when_it_can(kw, per_gpu):
    # gpu007: a node's name ("gpu0" then another digit: no GPU's label is a part of it)
    assert _gran(keyword=kw).per_gpu(BASE, "n1", LABELS) is per_gpu


def test_deselect_paths_and_flag():
    assert _gran(deselect=[f"{BASE}[n1-gpu3]"]).per_gpu(BASE, "n1", LABELS)
    assert not _gran(deselect=[f"{BASE}[n1-gpu3]"]).per_gpu(BASE, "n2", LABELS)
    assert not _gran(deselect=[f"{BASE}[n1"]).per_gpu(BASE, "n1", LABELS)   # both forms start with it
    assert not _gran(deselect=["suites/test_ecc.py"]).per_gpu(BASE, "n1", LABELS)
    # the folded id as --collect-only prints it: the folded item, deselected (per-GPU items would
    # not start with it and would all run), whatever else the selection names
    assert not _gran(deselect=[f"{BASE}[n1]"]).per_gpu(BASE, "n1", LABELS)
    assert not _gran(deselect=[f"{BASE}[n1]"], keyword="gpu3").per_gpu(BASE, "n1", LABELS)
    assert not _gran(deselect=[f"{BASE}[n1]", f"{BASE}[n1-gpu3]"]).per_gpu(BASE, "n1", LABELS)
    assert not _gran(deselect=["suites/test_ecc.py"], keyword="gpu3").per_gpu(BASE, "n1", LABELS)
    assert _gran(deselect=[f"{BASE}[n1]"], keyword="gpu3").per_gpu(BASE, "n2", LABELS)
    assert _gran(per_gpu_items=True).per_gpu(BASE, "n1", LABELS)
    g = Granularity(SimpleNamespace(option=SimpleNamespace(keyword="", deselect=None), cache=None,
                                    args=[f"suites/test_ecc.py::test_ecc_errors[n1-gpu3]"]))
    assert g.per_gpu(BASE, "n1", LABELS) and not g.per_gpu(BASE, "n2", LABELS)
    # a test path naming the folded item: pytest collects that name, so it stays one item
    g = Granularity(SimpleNamespace(option=SimpleNamespace(keyword="gpu3", deselect=None), cache=None,
                                    args=["suites/test_ecc.py::test_ecc_errors[n1]"]))
    assert not g.per_gpu(BASE, "n1", LABELS) and g.per_gpu(BASE, "n2", LABELS)


PCIE = "suites/test_pcie_errors.py::test_pcie_errors"


def _collect(tmp: Path, *argv: str, paths=("suites",)) -> list[str]:
    """The ids ``--collect-only -q`` prints for the AER node alone (nothing is evaluated)."""
    fleet = tmp / "fleet"
    if not fleet.exists():
        shutil.copytree(AER, fleet / AER.name)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    env.pop("PYTEST_ADDOPTS", None)
    if not any(a.startswith("cache_dir=") for a in argv):
        argv = ("-p", "no:cacheprovider", *argv)
    r = subprocess.run([sys.executable, "-m", "pytest", *paths, "--collect-only", "-q", "--replay", str(fleet),
                        "--reports-dir", str(tmp / "rep"), *argv], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return [ln for ln in r.stdout.splitlines() if "::" in ln]


def _lastfailed(tmp: Path, nodeid: str) -> tuple[str, ...]:
    cache = tmp / "cache"
    (cache / "v" / "cache").mkdir(parents=True)
    (cache / "v" / "cache" / "lastfailed").write_text(json.dumps({nodeid: True}))
    return ("-o", f"cache_dir={cache}", "--lf")


@pytest.mark.parametrize("how", ["deselect-folded", "deselect-gpu", "deselect-module", "k-folded", "k-not-folded",
                                 "k-gpu", "path-folded", "path-gpu", "lf-folded", "lf-gpu"])
def test_a_selection_selects_what_pytest_selects_with_the_ids_it_printed(tmp_path, how):
    """The ids --collect-only prints are the folded ones: a selection naming one of them selects
    (or deselects) that item, as pytest does with one item per check and node; a selection naming
    a per-GPU id (``[node-gpu3]``) that GPU's item alone."""
    node = AER.name
    folded, gpu3 = f"{PCIE}[{node}]", f"{PCIE}[{node}-gpu3]"
    everything = _collect(tmp_path)
    assert folded in everything and gpu3 not in everything
    per_gpu = [f"{PCIE}[{node}-gpu{i}]" for i in range(8)]
    paths = ("suites",)
    if how == "deselect-folded":
        argv, want = ("--deselect", folded), [i for i in everything if i != folded]
    elif how == "deselect-gpu":
        argv = ("--deselect", gpu3)
        at = everything.index(folded)
        want = everything[:at] + [i for i in per_gpu if i != gpu3] + everything[at + 1:]
    elif how == "deselect-module":
        argv, want = ("--deselect", "suites/test_pcie_errors.py"), [i for i in everything if "test_pcie_errors" not in i]
    elif how == "k-folded":
        argv, want = ("-k", f"test_pcie_errors[{node}]"), [folded]
    elif how == "k-not-folded":
        argv, want = ("-k", f"not test_pcie_errors[{node}]"), [i for i in everything if i != folded]
    elif how == "k-gpu":
        argv, want = ("-k", "pcie_errors and gpu3"), [gpu3]
    elif how == "path-folded":
        argv, want, paths = ("-k", "gpu3"), [], (folded,)
    elif how == "path-gpu":
        argv, want, paths = (), [gpu3], (gpu3,)
    elif how == "lf-folded":
        argv, want = _lastfailed(tmp_path, folded), [folded]
    else:
        argv, want = _lastfailed(tmp_path, gpu3), [gpu3]
    if how == "path-folded":   # the folded path with a GPU-naming -k: one folded item, -k deselects it
        r = subprocess.run([sys.executable, "-m", "pytest", folded, "--collect-only", "-q", "-p", "no:cacheprovider",
                            "--replay", str(tmp_path / "fleet"), "--reports-dir", str(tmp_path / "rep"), "-k", "gpu3"],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert "not found" not in r.stdout + r.stderr and "1 deselected" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
        assert _collect(tmp_path, paths=paths) == [folded]
        return
    assert _collect(tmp_path, *argv, paths=paths) == want


def test_fold_is_the_worst_gpu_and_names_each_failing_one():
    b = Bundle.load(AER)
    facts = NodeFacts(b)
    spec = load_spec(b.meta.get("spec") or {}, "meta.json")
    ctx = NodeContext(node=b.node)
    cache: dict = {}
    parts = [evaluate_item(ctx, facts, spec, "NG-PCIERR-001", s, cache=cache) for s in gpu_slots(facts, spec)]
    f = fold(parts, b.node)
    assert f.result.outcome is Outcome.FAIL and f.check is load_all()["NG-PCIERR-001"]
    assert f.result.message.startswith("1 of 8 GPU(s) failed: ") and "0000:4c:00.0" in f.result.message
    assert f.record["parts"] == [p.record for p in parts] and f.record["outcome"] == "fail"
    # an ERROR beside a FAIL: the item FAILs and names both; ERROR alone is ERROR; SKIP beats PASS
    err = parts[0].__class__(**{**parts[0].__dict__, "result": Result.errored("smi.qx unreadable")})
    both = fold([err, *parts[1:]], b.node)
    assert both.result.outcome is Outcome.FAIL and "could not evaluate: smi.qx unreadable" in both.result.message
    assert fold([err, parts[1]], b.node).result.outcome is Outcome.ERROR
    skip = parts[0].__class__(**{**parts[0].__dict__, "result": Result.skipped("x=off: not applicable")})
    assert fold([skip, parts[1]], b.node).result.outcome is Outcome.SKIP
    assert fold(parts[:2], b.node).result.outcome is Outcome.PASS
