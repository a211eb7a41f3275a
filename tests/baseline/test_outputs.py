"""Spec section, engine on real bundles, BaselineRun items/verdicts, changes.json/HTML, exit codes, CI files."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest
import yaml
from pydantic import ValidationError

from nodegate.baseline import render
from nodegate.baseline.engine import compare_node
from nodegate.baseline.exitcodes import final_exit_status
from nodegate.baseline.model import Change, GpuRef, NodeComparison, Regression, Row
from nodegate.baseline.run import BaselineError, BaselineRun
from nodegate.baseline.spec import BaselineSpec, baseline_spec
from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.outcomes import Outcome
from nodegate.spec import load_spec

from . import fleet as F

ROOT = F.ROOT
needs_h200 = pytest.mark.skipif(not F.H200.is_dir(), reason="inventories/samples/h200-vm (real capture) not built")


# ---------------------------------------------------------------------------- spec
def test_baseline_spec_defaults():
    b = BaselineSpec()
    assert (b.allowed_ecc_growth.uncorrectable, b.allowed_ecc_growth.correctable, b.allowed_remapped_rows_growth,
            b.xid_min_severity, b.planned, b.ignore) == (0, None, 0, "critical", [], [])


def test_baseline_spec_forbids_unknown_keys():
    with pytest.raises(ValidationError, match="extra"):
        BaselineSpec.model_validate({"allowed_ecc_grwoth": {}})


def test_baseline_spec_rejects_unknown_kind():
    with pytest.raises(ValidationError):
        BaselineSpec.model_validate({"ignore": ["pcie", "bogus"]})


def test_baseline_spec_from_spec_without_section_is_default():
    assert baseline_spec(load_spec({})) == BaselineSpec()


def test_baseline_spec_from_mounted_section():
    @dataclass
    class S:
        baseline: dict = field(default_factory=lambda: {"allowed_ecc_growth": {"uncorrectable": 2}})
    assert baseline_spec(S()).allowed_ecc_growth.uncorrectable == 2


# ---------------------------------------------------------------------------- engine on real bundles
@needs_h200
def test_identical_bundles_compare_clean():
    c = compare_node("h200-vm", NodeFacts(Bundle.load(F.H200)), NodeFacts(Bundle.load(F.H200)), load_spec({}))
    assert (c.regressions, c.changes, c.errors) == ([], [], {})
    assert [g.label for g in c.gpus] == ["gpu0"]
    # the VM has no systemctl: persistence unit fields are noted as not compared, never PASSed silently
    assert sorted(n.split(" ")[0] for n in c.notes[("persistence", None)]) == [
        "DropInPaths", "ExecStart", "UnitFileState", "User"]


@needs_h200
def test_unreachable_node_now_errors_every_item(tmp_path):
    after = Bundle("h200-vm", {}, {"node": "h200-vm", "status": "unreachable", "error": "connection refused"})
    c = compare_node("h200-vm", NodeFacts(Bundle.load(F.H200)), NodeFacts(after), load_spec({}))
    assert c.regressions == []
    # "site" (issue 18): the site checks' regression item errors alike on a node not gathered now
    assert sorted(c.errors) == sorted([(k, None) for k in ("checks", "xid", "flavor", "persistence", "site")] +
                                      [(k, "gpu0") for k in ("pcie", "gpu_missing", "ecc", "remapped_rows")])
    assert all("node not gathered now (unreachable: connection refused)" == v for v in c.errors.values())


@needs_h200
def test_remapped_rows_regression_on_real_xml(tmp_path):
    src = F.two_gpu(tmp_path / "base")
    after = F.clone(src, tmp_path / "after", "n1")
    F.add_remapped_rows(after, F.BUS1, corr=3)
    c = compare_node("n1", NodeFacts(Bundle.load(src)), NodeFacts(Bundle.load(after)), load_spec({}))
    assert [(r.kind, r.gpu.label, r.after) for r in c.regressions] == [
        ("remapped_rows", "gpu1", {"correctable": 3, "uncorrectable": 0})]


# ---------------------------------------------------------------------------- BaselineRun
@dataclass
class FakeFleet:
    bundles: dict
    facts: dict
    spec: dict
    spec_errors: dict = field(default_factory=dict)


@needs_h200
def test_run_items_and_verdicts(tmp_path):
    src = F.two_gpu(tmp_path / "base")
    for n in ("n1", "gone1", "miss1"):
        F.clone(src, tmp_path / "before" / n, n)
    F.clone(src, tmp_path / "after" / "n1", "n1")
    F.clone(src, tmp_path / "after" / "new1", "new1")
    F.lower_pcie(tmp_path / "after" / "n1", F.BUS0, gen=3)
    br = BaselineRun.load(tmp_path / "before", inventory={"n1", "new1", "miss1"})
    cur = {n: Bundle.load(tmp_path / "after" / n) for n in ("n1", "new1")}
    fl = FakeFleet(cur, {n: NodeFacts(b) for n, b in cur.items()}, {n: load_spec({}) for n in cur})
    assert br.items("node_presence", fl) == [("n1", None), ("new1", None), ("miss1", None)]
    assert br.items("pcie", fl) == [("n1", "gpu0"), ("n1", "gpu1")]
    assert br.items("xid", fl) == [("n1", None)]
    assert [br.verdict("node_presence", n, None, fl).outcome for n in ("n1", "new1", "miss1")] == [
        Outcome.PASS, Outcome.PASS, Outcome.FAIL]
    v = br.verdict("pcie", "n1", "gpu0", fl)
    assert (v.outcome, v.observed) == (Outcome.FAIL, "max_link_gen: 5 -> 3; max_device_link_gen: 5 -> 3")
    assert br.verdict("pcie", "n1", "gpu1", fl).outcome is Outcome.PASS
    assert br.all_comparisons(fl)["gone1"].presence == "gone"


@needs_h200
def test_run_verdict_skips_kind_listed_in_baseline_ignore(tmp_path):
    @dataclass
    class S:
        baseline: BaselineSpec
    src = F.clone(F.H200, tmp_path / "b" / "n1", "n1")
    br = BaselineRun.load(tmp_path / "b")
    b = Bundle.load(src)
    fl = FakeFleet({"n1": b}, {"n1": NodeFacts(b)}, {"n1": S(BaselineSpec(ignore=["xid"]))})
    br._cmp["n1"] = NodeComparison("n1")
    v = br.verdict("xid", "n1", None, fl)
    assert (v.outcome, v.message) == (Outcome.SKIP, "baseline.ignore lists xid: not compared on this node")


def test_baseline_dir_without_bundles_is_an_error(tmp_path):
    with pytest.raises(BaselineError, match="no bundle found"):
        BaselineRun.load(tmp_path)
    with pytest.raises(BaselineError, match="not a directory"):
        BaselineRun.load(tmp_path / "nope")


# ---------------------------------------------------------------------------- outputs
def _hostile() -> NodeComparison:
    ref = GpuRef(0, "0000:19:00.0", "<b>s</b>", "GPU-x")
    c = NodeComparison("n1")
    c.regressions.append(Regression("pcie", "max_link_gen", 5, 4, "GPU <script>alert(1)</script> lowered", ref))
    c.changes.append(Change("vbios", "vbios_version", "96.00", "<img src=x onerror=alert(1)>", ref))
    c.rows.append(Row("VBIOS", "gpu0", "96.00", "<img src=x onerror=alert(1)>", "change", "gpu_missing"))
    c.errors[("xid", None)] = "dmesg: \x1b[31m<denied>"
    return c


def test_html_section_escapes_node_strings():
    html = render.html_section({"n1": _hostile()}, "/tmp/<b>")
    assert "<script>" not in html and "<img" not in html and "<b>" not in html and "\x1b" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<details class=\"ng-bl-node\" open>" in html


def test_changes_json_document(tmp_path):
    doc = render.changes_document({"n1": _hostile()}, baseline_dir="b", current="c", generated_at="t")
    p = render.write_changes_json(tmp_path, doc)
    back = json.loads(p.read_text())
    assert back["summary"] == {"nodes": 1, "nodes_with_regressions": 1, "regressions": 1, "changes": 1,
                               "new_nodes": [], "missing_nodes": []}
    n1 = back["nodes"]["n1"]
    assert n1["regressions"][0]["item"] == "test_regression_pcie[n1-gpu0]"
    assert (n1["regressions"][0]["before"], n1["regressions"][0]["after"]) == (5, 4)
    assert n1["changes"][0]["after"] == "<img src=x onerror=alert(1)>"
    assert n1["errors"] == [{"kind": "xid", "gpu": None, "reason": "dmesg: \x1b[31m<denied>"}]


@pytest.mark.parametrize("status,reg,other,want", [
    (0, 0, 0, 0), (1, 2, 0, 3), (1, 2, 1, 1), (1, 0, 3, 1), (2, 0, 0, 2), (1, 0, 0, 1)],
    ids=["pass", "regressions_only", "regression_and_check_failure", "check_failures", "spec_error",
         "failed_without_seen_reports"])
def test_final_exit_status(status, reg, other, want):
    assert final_exit_status(status, reg, other) == want


# ---------------------------------------------------------------------------- CI examples
def test_gitlab_example_is_valid_and_runs_the_gate():
    doc = yaml.safe_load((ROOT / "examples/ci/gitlab-ci.yml").read_text())
    assert doc["stages"] == ["baseline", "upgrade", "gate"]
    assert doc["baseline"]["artifacts"]["paths"][0] == "baseline/bundles/"
    gate = doc["gate"]
    assert any("--baseline baseline/bundles" in s for s in gate["script"])
    assert gate["artifacts"]["reports"] == {"junit": "reports/junit.xml"}
    assert {"reports/report.html", "reports/changes.json", "reports/rma.csv"} <= set(gate["artifacts"]["paths"])
    assert gate["artifacts"]["when"] == "always"


def test_gitlab_example_comment_names_the_bundles_the_baseline_job_writes():
    """The baseline job's comment says where its bundles are: <reports-dir>/bundles of its command."""
    text = (ROOT / "examples/ci/gitlab-ci.yml").read_text()
    said = re.findall(r"bundles under (\S+)/bundles\b", text)
    assert said == ["baseline"]
    (cmd,) = yaml.safe_load(text)["baseline"]["script"]
    assert re.search(r"--reports-dir[ =]baseline(\s|$)", cmd)


def test_github_example_is_valid_and_runs_the_gate():
    doc = yaml.safe_load((ROOT / "examples/ci/github-actions.yml").read_text())
    jobs = doc["jobs"]
    assert list(jobs) == ["baseline", "upgrade", "gate"]
    assert jobs["gate"]["needs"] == "upgrade" and jobs["upgrade"]["needs"] == "baseline"
    runs = " ".join(s.get("run", "") for s in jobs["gate"]["steps"])
    assert "--baseline baseline/bundles" in runs
    uses = [s.get("uses", "") for s in jobs["gate"]["steps"]]
    assert "mikepenz/action-junit-report@v4" in uses
    up = next(s for s in jobs["gate"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact"))
    assert "reports/changes.json" in up["with"]["path"] and up["if"] == "always()"
