"""Issue 37.5: a node judged on nothing is not accepted, and what the spec turned off is shown
with the file that set it.

An inventory whose host_vars skip every check gave "1 accepted, 1 healthy" with 0 checks run.
Now: NOT EVALUATED "no acceptance check judged this node", exit 1, and every report names the
spec key and the host_vars/group_vars file (SKIP messages, the terminal's "checks turned off by
the spec" lines, the node page, the JUnit node property ``spec_set_in``). A node with some
checks turned off (group_vars) and the others passing stays accepted, its off-switch shown.
Replays of a sample bundle (inventories/samples) with an inventory written here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from nodegate import checks

ROOT = Path(__file__).resolve().parents[2]
NODE = "h200-580-open-healthy"
BUNDLE = ROOT / "inventories" / "samples" / "fleet" / NODE


def _inventory(tmp: Path, host_spec: dict | None, group_spec: dict | None) -> Path:
    (tmp / "host_vars").mkdir(parents=True)
    (tmp / "group_vars").mkdir()
    inv = tmp / "inventory.yml"
    inv.write_text(yaml.safe_dump({"all": {"children": {"gpu": {"hosts": {NODE: {}}}}}}))
    if host_spec is not None:
        (tmp / "host_vars" / f"{NODE}.yml").write_text(yaml.safe_dump({"nodegate": host_spec}))
    if group_spec is not None:
        (tmp / "group_vars" / "gpu.yml").write_text(yaml.safe_dump({"nodegate": group_spec}))
    return inv


def _run(inv: Path, reports: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(BUNDLE), "--inventory", str(inv),
                           "--reports-dir", str(reports), "-q", "--tb=no", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_every_check_skipped_by_host_vars_is_not_evaluated_exit_1_and_names_the_file(tmp_path):
    inv = _inventory(tmp_path / "inv", {"checks": {"skip": sorted(checks.load_all())}}, None)
    r = _run(inv, tmp_path / "reports")
    hv = str(tmp_path / "inv" / "host_vars" / f"{NODE}.yml")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 accepted, 0 need action, 1 not evaluated" in r.stdout
    assert "no acceptance check judged this node" in r.stdout
    assert f"{NODE}: spec checks.skip set in {hv}" in r.stdout
    recs = [json.loads(ln) for ln in (tmp_path / "reports" / "results.jsonl").read_text().splitlines()]
    assert recs and {x["outcome"] for x in recs} == {"skip"}
    assert all(x["message"].endswith(f"[spec checks.skip set in {hv}]") for x in recs)
    junit = (tmp_path / "reports" / "junit.xml").read_text()
    assert f'name="spec_set_in" value="spec checks.skip set in {hv}"' in junit
    page = next((tmp_path / "reports" / "nodes").glob("*.html")).read_text()
    assert "Turned off by the spec" in page and hv in page


def test_some_checks_off_in_group_vars_stay_accepted_and_name_the_group_file(tmp_path):
    inv = _inventory(tmp_path / "inv", None, {"kernel_log": {"enabled": False}})
    r = _run(inv, tmp_path / "reports")
    gv = str(tmp_path / "inv" / "group_vars" / "gpu.yml")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 accepted" in r.stdout
    assert f"spec kernel_log.enabled set in {gv}" in r.stdout
    recs = [json.loads(ln) for ln in (tmp_path / "reports" / "results.jsonl").read_text().splitlines()]
    klog = [x for x in recs if x["check_name"].startswith("kernel_log") or "KLOG" in x["check_id"]]
    assert klog and all(x["outcome"] == "skip" and gv in x["message"] for x in klog)


def test_a_default_that_skips_names_no_file(tmp_path):
    # memory.repair=auto is nodegate's default here (not in the inventory): no file to name
    inv = _inventory(tmp_path / "inv", None, None)
    r = _run(inv, tmp_path / "reports")
    assert r.returncode == 0, r.stdout[-3000:]
    assert "checks turned off by the spec" not in r.stdout
