"""Issue 37.7: `nodegate --replay DIR` judges whatever the bundles hold (probe, burn-in, perf)
without the phase options. The README's own replay of a `--burn-in` run's bundles collected
nothing and blamed "the paths given" (exit 2): a replay reads bundles lazily, so the burn-in
plugin found no bundle at collection, parametrized nothing, and the resulting error was hidden by
the "nothing collected" exit. Bundles here: two sample nodes (inventories/samples) plus the
burn-in evidence of a real local burn-in run with shims (tests/burnin/shims.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.bundle import Bundle

from .conftest import soak_evidence

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples" / "fleet"
NODES = ("h200-580-open-healthy", "h100-535-healthy")


@pytest.fixture(scope="module")
def burnin_bundles(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bi-replay")
    soak = soak_evidence(tmp, 4)
    out = tmp / "bundles"
    shutil.rmtree(out)
    for node in NODES:
        base = Bundle.load(SAMPLES / node)
        base.items.update(soak)
        base.write(out)
    return out


def _replay(bundles: Path, reports: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(bundles), "--reports-dir", str(reports),
                        "-q", "--tb=no", "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    res = reports / "results.jsonl"
    assert res.is_file(), f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    out = {}
    for line in res.read_text().splitlines():
        d = json.loads(line)
        out[d["nodeid"].split("::", 1)[1]] = d["outcome"]
    return r, out


def test_replay_of_a_burnin_run_judges_probe_and_burnin_items_of_every_node(burnin_bundles, tmp_path):
    r, got = _replay(burnin_bundles, tmp_path / "reports")
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    for node in NODES:
        bi = {k: v for k, v in got.items() if k.startswith("test_burnin") and f"[{node}" in k}
        assert bi, f"no burn-in item for {node}"
        assert bi[f"test_burnin_load[{node}]"] == "pass"
        assert any(not k.startswith("test_burnin") and f"[{node}" in k for k in got), f"no probe item for {node}"


def test_replay_of_a_burnin_run_is_identical_with_one_node_selected(burnin_bundles, tmp_path):
    _, both = _replay(burnin_bundles, tmp_path / "all")
    _, one = _replay(burnin_bundles, tmp_path / "one", "--limit", NODES[0])
    assert one == {k: v for k, v in both.items() if f"[{NODES[0]}" in k}
