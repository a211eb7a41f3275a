"""The real suite in a subprocess over simulated upgrades of the H200 capture (tests/baseline/fleet.py).

Scenario "upgrade" (inventory, strict spec): node02 loses PCIe Gen5 on GPU 1, node03 gains
uncorrectable ECC errors on GPU 0, node04 gets the driver (and kernel) the spec now expects,
node07 loses GPU 1 (Xid 79), node05 is in the baseline and the inventory but not gathered,
node06 is new. Scenario "within spec": the same PCIe and ECC regressions on nodes whose spec
tolerates them -> only regression items fail -> exit 3. Scenario "planned": only the planned
driver upgrade -> exit 0. Each asserts every regression item's JUnit outcome, changes.json and
the exit code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from . import fleet as F

pytestmark = pytest.mark.skipif(not F.H200.is_dir(), reason="inventories/samples/h200-vm (real capture) not built")

ROOT = F.ROOT
REG_FILE = "suites/test_regressions.py"


def _plugins() -> list[str]:
    """-p for every nodegate plugin module (a no-op for those conftest already registers)."""
    out = []
    for p in sorted((ROOT / "plugins").glob("nodegate_*.py")):
        out += ["-p", f"nodegate.plugins.{p.stem}"]
    return out


def run_suite(after: Path, before: Path | None, reports: Path, *extra: str, args=("suites",)):
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", *_plugins(), "--replay", str(after),
           "--reports-dir", str(reports), "--junitxml", str(reports / "junit.xml"), "-q", *extra]
    if before is not None:
        cmd += ["--baseline", str(before)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def junit_outcomes(path: Path) -> dict[str, str]:
    """{testcase name: pass|fail|error|skip} for the regression items (tests/junit_view.py)."""
    from tests.junit_view import outcomes
    return {k: v for k, v in outcomes(path).items() if k.startswith("test_regression_")}


def expected_items(both: list[str], new: list[str], missing: list[str], gpus=("gpu0", "gpu1")) -> set[str]:
    items = {f"test_regression_node_presence[{n}]" for n in both + new + missing}
    for n in both:
        items |= {f"test_regression_{k}[{n}]" for k in ("checks", "xid", "flavor", "persistence")}
        items |= {f"test_regression_{k}[{n}-{g}]" for k in ("pcie", "gpu_missing", "ecc", "remapped_rows")
                  for g in gpus}
    return items


def changes_summary(doc: dict) -> dict:
    return {n: {"presence": v["presence"],
                "changes": sorted((c["kind"], c["field"], json.dumps(c["before"]), json.dumps(c["after"]),
                                   c["planned"]) for c in v["changes"]),
                "regressions": sorted((r["item"], r["field"], json.dumps(r["before"]), json.dumps(r["after"]))
                                      for r in v["regressions"]),
                "errors": sorted((e["kind"], e["gpu"]) for e in v["errors"])}
            for n, v in doc["nodes"].items()}


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, list[str]]:
    d = F.two_gpu(tmp_path_factory.mktemp("h200") / "base")
    return d, F.not_passing_checks(d)


# ---------------------------------------------------------------------------- scenario: upgrade
@pytest.fixture(scope="module")
def upgrade(base, tmp_path_factory):
    src, skip = base
    t = tmp_path_factory.mktemp("upgrade")
    before, after, reports = t / "before", t / "after", t / "reports"
    for n in ("node01", "node02", "node03", "node04", "node05", "node07"):
        F.clone(src, before / n, n)
    for n in ("node01", "node02", "node03", "node04", "node06", "node07"):
        F.clone(src, after / n, n)
    F.lower_pcie(after / "node02", F.BUS1, gen=4)
    F.add_ecc(after / "node03", F.BUS0, volatile=2, aggregate=2)
    F.upgrade_driver(after / "node04")
    F.upgrade_kernel(after / "node04")
    F.lose_gpu(after / "node07", F.BUS1)
    hosts = {f"node0{i}": {} for i in range(1, 8)}
    hosts["node04"] = {"nodegate": {"driver": {"version": F.NEW_DRIVER}}}
    inv = t / "hosts.yaml"
    inv.write_text(yaml.safe_dump({"all": {"vars": {"nodegate": {"checks": {"skip": skip}}}, "hosts": hosts}}))
    r = run_suite(after, before, reports, "--inventory", str(inv))
    return r, reports


def test_upgrade_exit_code_is_1(upgrade):
    r, _ = upgrade
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]


def test_upgrade_regression_items_exact(upgrade):
    r, reports = upgrade
    got = junit_outcomes(reports / "junit.xml")
    items = expected_items(["node01", "node02", "node03", "node04", "node07"], ["node06"], ["node05"])
    fails = {"test_regression_pcie[node02-gpu1]", "test_regression_checks[node02]",
             "test_regression_ecc[node03-gpu0]", "test_regression_checks[node03]",
             "test_regression_gpu_missing[node07-gpu1]", "test_regression_xid[node07]",
             "test_regression_checks[node07]", "test_regression_node_presence[node05]"}
    errors = {"test_regression_pcie[node07-gpu1]", "test_regression_ecc[node07-gpu1]",
              "test_regression_remapped_rows[node07-gpu1]"}
    want = {i: "fail" if i in fails else "error" if i in errors else "pass" for i in items}
    assert got == want


def test_upgrade_changes_json_exact(upgrade):
    _, reports = upgrade
    doc = json.loads((reports / "changes.json").read_text())
    assert doc["schema"] == 1
    assert doc["summary"] == {"nodes": 7, "nodes_with_regressions": 4, "regressions": 11, "changes": 5,
                              "new_nodes": ["node06"], "missing_nodes": ["node05"]}
    s = changes_summary(doc)
    none = {"changes": [], "regressions": [], "errors": []}
    assert s["node01"] == {"presence": "both", **none}
    assert s["node02"] == {"presence": "both", "errors": [],
                           "changes": [("link", "current_link_gen", "5", "4", None)],
                           "regressions": [("test_regression_checks[node02]", "NG-PCIE-001[gpu1]", '"pass"', '"fail"'),
                                           ("test_regression_pcie[node02-gpu1]", "max_device_link_gen", "5", "4"),
                                           ("test_regression_pcie[node02-gpu1]", "max_link_gen", "5", "4")]}
    assert s["node03"] == {"presence": "both", "errors": [], "changes": [],
                           "regressions": [("test_regression_checks[node03]", "NG-ECC-002[gpu0]", '"pass"', '"fail"'),
                                           ("test_regression_ecc[node03-gpu0]", "ecc.aggregate.uncorrectable", "0", "2"),
                                           ("test_regression_ecc[node03-gpu0]", "ecc.volatile.uncorrectable", "0", "2")]}
    assert s["node04"] == {"presence": "both", "errors": [], "regressions": [],
                           "changes": [("check", "NG-DRV-001", '"fail"', '"pass"', None),
                                       ("driver", "driver_version", f'"{F.OLD_DRIVER}"', f'"{F.NEW_DRIVER}"', True),
                                       ("kernel", "kernel_release", f'"{F.OLD_KERNEL}"', f'"{F.NEW_KERNEL}"', None)]}
    assert s["node05"] == {"presence": "missing", "changes": [], "errors": [],
                           "regressions": [("test_regression_node_presence[node05]", "presence", '"present"',
                                            '"absent"')]}
    assert s["node06"] == {"presence": "new", "regressions": [], "errors": [],
                           "changes": [("node", "presence", '"absent"', '"present"', None)]}
    assert s["node07"]["regressions"] == [
        ("test_regression_checks[node07]", "NG-INV-001", '"pass"', '"fail"'),
        ("test_regression_checks[node07]", "NG-LOG-001", '"pass"', '"fail"'),
        ("test_regression_gpu_missing[node07-gpu1]", "gpu",
         json.dumps({"index": 1, "pci_bus_id": F.BUS1, "serial": F.SERIAL1, "uuid": F.UUID1}), "null"),
        ("test_regression_xid[node07]", "kernel_log", "null",
         '"NVRM: Xid (PCI:0000:00:07): 79, pid=0, name=, GPU has fallen off the bus."')]
    assert s["node07"]["errors"] == [("ecc", "gpu1"), ("pcie", "gpu1"), ("remapped_rows", "gpu1")]


def test_upgrade_regression_report_fields(upgrade):
    """JUnit properties of a per-GPU regression item follow the suite contract (order, values)."""
    _, reports = upgrade
    # nodegate's JUnit: a failing item's properties on the <testsuite> around its testcase (junit-10.xsd)
    from tests.junit_view import cases
    props = next(c[4] for c in cases(reports / "junit.xml") if c[1] == "test_regression_pcie[node02-gpu1]")
    assert [k for k, _ in props] == ["node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial",
                                     "gpu_uuid", "expected", "observed", "remediation", "spec_source"]
    # (one property list for every FAIL/ERROR item in nodegate's JUnit: the suite's, spec_source included)
    d = dict(props)
    assert (d["node"], d["check_id"], d["severity"], d["gpu_index"], d["pci_bus_id"], d["gpu_serial"],
            d["gpu_uuid"]) == ("node02", "NG-REG-PCIE", "major", "1", F.BUS1, F.SERIAL1, F.UUID1)
    assert d["observed"] == "max_link_gen: 5 -> 4; max_device_link_gen: 5 -> 4"


def test_upgrade_html_has_change_tables(upgrade):
    _, reports = upgrade
    html = (reports / "report.html").read_text()
    assert "Changes since baseline" in html
    assert f"{F.OLD_DRIVER}</td><td>{F.NEW_DRIVER}" in html.replace("\\", "")


# ---------------------------------------------------------------------------- scenario: within spec -> 3
@pytest.fixture(scope="module")
def within_spec(base, tmp_path_factory):
    src, skip = base
    t = tmp_path_factory.mktemp("within")
    before, after, reports = t / "before", t / "after", t / "reports"
    specs = {"node01": {}, "node02": {"pcie": {"gen": 4, "width": 16}},
             "node03": {"ecc": {"max_uncorrectable_volatile": 5, "max_uncorrectable_aggregate": 5}}}
    for n, sp in specs.items():
        F.clone(src, before / n, n, {"checks": {"skip": skip}, **sp})
        F.clone(src, after / n, n, {"checks": {"skip": skip}, **sp})
    F.clone(src, before / "node05", "node05")
    F.lower_pcie(after / "node02", F.BUS1, gen=4)
    F.add_ecc(after / "node03", F.BUS0, volatile=2, aggregate=2)
    return run_suite(after, before, reports), reports, before, after


def test_regressions_only_exit_code_is_3(within_spec):
    r, reports, _, _ = within_spec
    assert r.returncode == 3, r.stdout[-3000:] + r.stderr[-2000:]
    got = junit_outcomes(reports / "junit.xml")
    items = expected_items(["node01", "node02", "node03"], [], [])
    fails = {"test_regression_pcie[node02-gpu1]", "test_regression_ecc[node03-gpu0]"}
    assert got == {i: "fail" if i in fails else "pass" for i in items}


def test_regressions_only_exit_code_3_with_xdist(within_spec, tmp_path):
    """Exit code 3 is decided on the xdist controller from every worker's reports."""
    _, _, before, after = within_spec
    r = run_suite(after, before, tmp_path / "reports", "-n", "2", "--dist", "loadgroup")
    assert r.returncode == 3, r.stdout[-3000:] + r.stderr[-2000:]
    assert junit_outcomes(tmp_path / "reports" / "junit.xml")["test_regression_ecc[node03-gpu0]"] == "fail"


def test_regressions_only_node_gone_without_inventory_is_a_change(within_spec):
    _, reports, _, _ = within_spec
    s = changes_summary(json.loads((reports / "changes.json").read_text()))
    assert s["node05"] == {"presence": "gone", "regressions": [], "errors": [],
                           "changes": [("node", "presence", '"present"', '"absent"', None)]}


# ---------------------------------------------------------------------------- scenario: planned -> 0
def test_planned_driver_upgrade_exit_code_is_0(base, tmp_path):
    src, skip = base
    before, after, reports = tmp_path / "before", tmp_path / "after", tmp_path / "reports"
    spec = {"checks": {"skip": skip}, "driver": {"version": F.NEW_DRIVER}}
    F.clone(src, before / "node04", "node04", spec)
    F.clone(src, after / "node04", "node04", spec)
    F.upgrade_driver(after / "node04")
    r = run_suite(after, before, reports)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    got = junit_outcomes(reports / "junit.xml")
    assert got == {i: "pass" for i in expected_items(["node04"], [], [])}
    s = changes_summary(json.loads((reports / "changes.json").read_text()))
    assert s["node04"]["changes"] == [("check", "NG-DRV-001", '"fail"', '"pass"', None),
                                      ("driver", "driver_version", f'"{F.OLD_DRIVER}"', f'"{F.NEW_DRIVER}"', True)]


# ---------------------------------------------------------------------------- usage
def test_baseline_not_a_directory_exits_2(base, tmp_path):
    src, _ = base
    F.clone(src, tmp_path / "after" / "node01", "node01")
    r = run_suite(tmp_path / "after", tmp_path / "nope", tmp_path / "reports")
    assert r.returncode == 2
    assert "--baseline" in r.stdout + r.stderr


def test_without_baseline_regression_functions_make_no_item(base, tmp_path):
    src, _ = base
    F.clone(src, tmp_path / "after" / "node01", "node01")
    r = run_suite(tmp_path / "after", None, tmp_path / "reports", "--collect-only",
                  args=(REG_FILE, "suites/test_driver.py"))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "test_regression_" not in r.stdout
    assert "test_driver_stack[node01]" in r.stdout
    # the ten test_regression_* functions (nine kinds and test_regression_site) make no item at all:
    # nothing "deselected" on every run, nothing in a node's suite (plugins/nodegate_baseline.py)
    assert "2 tests collected" in r.stdout and "deselected" not in r.stdout
