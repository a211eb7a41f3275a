"""Issue 37.2: one node's perf or burn-in evidence never stops the others.

An exception raised while judging one node's phase evidence at collection (a parser or rule bug
reached by hostile output) was a collection error: exit 2, no results.jsonl, JUnit or HTML for
any node. Here a replay of two sample nodes (inventories/samples) where one node's perf and
burn-in evidence is hostile (`#wrong inf`, JSON nested 200,000 deep, a 5,000-digit figure, a
burn-in window that is not a number): the run ends with findings (1), every report is written,
the hostile node's phase items ERROR naming why, and the other node's items are judged as alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.bundle import Bundle, Evidence

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples" / "fleet"
GOOD, BAD = "h200-580-open-healthy", "h100-535-healthy"
def nccl_body() -> str:
    """A real nccl-tests all_reduce_perf output (tests/perf/fixtures/306, its body below the header)."""
    f = next((ROOT / "tests" / "perf" / "fixtures").glob("306-*.txt"))
    return f.read_bytes().decode().split("\n---\n", 1)[1]


def _ev(text: str, rc: int = 0) -> Evidence:
    return Evidence(key="", stdout=text.encode(), stderr=b"", rc=rc)


def _perf_run(node: str) -> str:
    return json.dumps({"node": node, "status": "ok", "label": "", "tests": ["nccl", "nvbandwidth"],
                       "complete": True, "exit_code": 0, "events": []})


def _k(key: str, text: str, rc: int = 0) -> Evidence:
    e = _ev(text, rc)
    e.key = key
    return e


HOSTILE = {
    "nested": "[" * 200_000,
    "wrong-inf": "#  size count type redop root time algbw busbw #wrong\n 8589934592 2147483648 float sum -1 "
                 "1000 100.0 180.0 inf\n# Avg bus bandwidth : 180.0\n",
    "digits": "SUM H2D\n" + "9" * 5000 + "\n",
}


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    from tests.burnin.conftest import soak_evidence
    tmp = tmp_path_factory.mktemp("contain")
    soak = soak_evidence(tmp / "soak", 3)
    out = tmp / "bundles"
    nccl = nccl_body()
    for node in (GOOD, BAD):
        b = Bundle.load(SAMPLES / node)
        b.items["perf.run"] = _k("perf.run", _perf_run(node))
        b.items["perf.tools"] = _k("perf.tools", "gpus: 8\n")
        if node == GOOD:
            b.items["perf.nccl"] = _k("perf.nccl", nccl)
            b.items["perf.nvbandwidth"] = _k("perf.nvbandwidth", "", rc=127)
        else:
            b.items["perf.nccl"] = _k("perf.nccl", HOSTILE["wrong-inf"] + HOSTILE["digits"])
            b.items["perf.nvbandwidth"] = _k("perf.nvbandwidth", HOSTILE["nested"])
            b.items.update(soak)
            run = json.loads(soak["burnin.run"].stdout)
            run["duration_s"] = "not a number"   # int() raises ValueError in burnin_data
            b.items["burnin.run"] = _k("burnin.run", json.dumps(run))
        b.write(out)
    return out


def test_hostile_phase_evidence_of_one_node_stays_with_that_node(bundles, tmp_path):
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(bundles), "--reports-dir", str(reports),
                        "-q", "--tb=no", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    text = r.stdout[-3000:] + r.stderr[-3000:]
    assert r.returncode == 1, text
    for name in ("results.jsonl", "junit.xml", "report.html"):
        assert (reports / name).is_file(), f"{name} not written\n{text}"
    recs = [json.loads(ln) for ln in (reports / "results.jsonl").read_text().splitlines()]
    bad_phase = [x for x in recs if f"[{BAD}" in x["nodeid"] and ("test_perf" in x["nodeid"] or "test_burnin" in x["nodeid"])]
    good = [x for x in recs if f"[{GOOD}" in x["nodeid"]]
    assert bad_phase and good
    assert {x["outcome"] for x in bad_phase} == {"error"}, [(x["nodeid"], x["outcome"]) for x in bad_phase]
    assert any(x["outcome"] == "pass" for x in good)
    assert not any("test_perf" in x["nodeid"] and x["outcome"] == "pass" for x in recs if f"[{BAD}" in x["nodeid"])


def test_an_exception_judging_the_fleet_is_isolated_to_the_node_that_raises_it(monkeypatch):
    from nodegate.perf import judge as J
    from nodegate.perf.rules import NodeInput
    from nodegate.plugins import nodegate_perf as P
    real = J.judge_run

    def judge_run(inputs, baselines, th_by_node=None):
        if any(ni.node == "bad" for ni in inputs):
            raise OverflowError("int too large to convert to float")
        return real(inputs, baselines, th_by_node=th_by_node)

    monkeypatch.setattr(J, "judge_run", judge_run)
    errors: dict = {}
    got = P._judge_contained([NodeInput("good", None, ""), NodeInput("bad", None, "")], None, {}, errors)
    assert "good" in got and "bad" not in got
    assert errors == {"bad": "internal error judging this node's performance evidence: OverflowError: "
                             "int too large to convert to float"}


@pytest.mark.parametrize("text,why", [
    ("[" * 200_000, "RecursionError"),        # nested past json's decoder depth: was an uncaught RecursionError
    ("not json", "JSONDecodeError"),
    ("[1, 2]", "is not a JSON object"),
])
def test_an_unusable_perf_run_record_errors_its_node_naming_it(text, why):
    """perf.run, the phase's own record, present but unusable: the node's performance ERRORs naming
    the record (never "perf.run missing", never an exception out of the judge)."""
    from nodegate.perf import judge as J
    b = Bundle("n1", {"perf.run": _k("perf.run", text), "perf.nccl.out": _k("perf.nccl.out", nccl_body())},
               {"node": "n1", "status": "ok"})
    rec = J.run_record(b)
    assert rec["status"] == "unreadable" and why in rec["error"], rec
    ni = J.node_input(b, J.node_context(None), J.PerfSpec(), "")
    assert "perf.run" in ni.problems["perf"] and why in ni.problems["perf"], ni.problems
    assert not ni.reports   # nothing judged on a run whose record is unreadable


def test_a_burnin_run_record_that_is_not_an_object_is_evidence_error():
    from nodegate.burnin.series import burnin_data
    from nodegate.errors import EvidenceError
    b = Bundle("n1", {"burnin.run": _k("burnin.run", "[1, 2]")}, {"node": "n1", "status": "ok"})
    with pytest.raises(EvidenceError, match="not an object"):
        burnin_data(b)
