"""Issue 37.9 (a): copies of one machine under several names are never judged as several nodes
by the perf and burn-in phases.

Thirteen copies of one machine made every probe check ERROR (NG-INV-003: one machine answered
for all of them) but their perf items PASSed and the fleet rule counted the one machine thirteen
times. Here a replay of four copies of one sample bundle (same boot and machine id) carrying perf
and burn-in evidence, beside a distinct node: every perf and burn-in item of the copies is ERROR
naming the clash, and the distinct node's are judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.bundle import Bundle

from .test_phase_containment import SAMPLES, _k, nccl_body

ROOT = Path(__file__).resolve().parents[2]
COPIES = [f"copy{i}" for i in range(4)]
OTHER = "h100-535-healthy"


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    from tests.burnin.conftest import soak_evidence
    tmp = tmp_path_factory.mktemp("clones")
    soak = soak_evidence(tmp / "soak", 3)
    nccl = nccl_body()
    out = tmp / "bundles"
    for name, src in [(n, "h200-580-open-healthy") for n in COPIES] + [(OTHER, OTHER)]:
        b = Bundle.load(SAMPLES / src)
        b.node = name
        b.meta["node"] = name
        b.items["perf.run"] = _k("perf.run", json.dumps({"node": name, "status": "ok", "label": "",
                                                         "tests": ["nccl"], "complete": True, "exit_code": 0}))
        b.items["perf.tools"] = _k("perf.tools", "gpus: 8\n")
        b.items["perf.nccl"] = _k("perf.nccl", nccl)
        b.items.update(soak)
        b.write(out)
    return out


def test_copies_of_one_machine_error_every_phase_item_and_the_other_node_is_judged(bundles, tmp_path):
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(bundles), "--reports-dir", str(reports),
                        "-q", "--tb=no", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    assert (reports / "results.jsonl").is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    recs = [json.loads(ln) for ln in (reports / "results.jsonl").read_text().splitlines()]
    phase = [x for x in recs if "test_perf" in x["nodeid"] or "test_burnin" in x["nodeid"]]
    for n in COPIES:
        mine = [x for x in phase if f"[{n}-" in x["nodeid"] or f"[{n}]" in x["nodeid"]]
        assert mine, f"no phase item for {n}"
        assert {x["outcome"] for x in mine} == {"error"}, [(x["nodeid"], x["outcome"]) for x in mine if x["outcome"] != "error"]
        assert all("one machine answered" in x["message"] for x in mine)
    other = [x for x in phase if f"[{OTHER}" in x["nodeid"]]
    assert other and not any("one machine answered" in x["message"] for x in other)
    assert any(x["outcome"] == "pass" for x in other)
