"""``nodegate --inventory ... --crossnode FILE`` end to end (issue 38, second round): the real
per-node gather over SSH, then the real ``mpirun`` over SSH across the MPI fleet (tools/mpi), the
stand-ins exchanging data; the items, results.jsonl, JUnit, HTML, RMA/actions and the node
verdicts; ``--replay`` re-judging without launching; ``--crossnode-plan``; bad input; ``-k``.
One fleet for the module, one live run per fault profile (the expensive part), replays after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tools.fleet import sshd_available
from tools.mpi import MpiFleet, mpi_unavailable
from .helpers import results

WHY = ("needs root" if os.geteuid() != 0 else None) or sshd_available() or mpi_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"the MPI fleet cannot run here: {WHY}")

ROOT = Path(__file__).resolve().parents[2]
NODES = ["n1", "n2", "n3", "n4"]
#: the ib-port-down profile: mlx5_3 Down, NG-IB-001 FAIL: not used as a partner
DOWN = "n5"
MCA = ["--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo", "--mca", "btl", "self,tcp",
       "--mca", "pml", "ob1", "--mca", "mtl", "^psm,psm2,ofi", "--mca", "osc", "^ucx"]


def section(**kw) -> dict:
    base = {"fabric": "ib-ndr400", "min_bytes": "1G", "max_bytes": "4G", "job_timeout_s": 90, "link_rounds": 1,
            "ranks_per_node": 2, "floors": {"alltoall_busbw_gbs": 300.0}, "nccl_tests_dir": "/usr/local/bin",
            "perftest_dir": "/usr/local/bin", "mpirun_args": MCA}
    base.update(kw)
    return {"crossnode": base}


@pytest.fixture(scope="module")
def fleet():
    f = MpiFleet(NODES)
    f.add("ib-port-down", DOWN)
    f.start()
    try:
        yield f
    finally:
        f.stop()


def nodegate(args: list[str], reports: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--reports-dir", str(reports),
           *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def statuses(reports: Path) -> dict[str, str]:
    """node -> its verdict as JUnit's node suites show it (an accepted node's suite carries no
    properties: nodegate.reports.junit)."""
    root = ET.parse(reports / "junit.xml").getroot()
    out = {}
    for s in root.findall("testsuite"):
        if not s.get("hostname"):
            continue
        props = {p.get("name"): p.get("value") for p in s.findall("properties/property")}
        out[s.get("hostname")] = props.get("status", "accepted")
    return out


def write_spec(tmp: Path, **kw) -> Path:
    p = tmp / "crossnode.yaml"
    p.write_text(yaml.safe_dump(section(**kw)))
    return p


def live(fleet, tmp: Path, *extra: str, faults: str = "", spec: Path | None = None, limit: str | None = None):
    fleet.set_faults(faults)
    try:
        spec = spec or write_spec(tmp)
        args = ["--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
                "--connect-timeout", "60", "--bundles-dir", str(tmp / "bundles"), "--crossnode", str(spec),
                "--crossnode-run-id", "xn1", *extra]
        if limit:
            args += ["--limit", limit]
        r = nodegate(args, tmp / "reports")
    finally:
        fleet.set_faults("")
    return r


@pytest.fixture(scope="module")
def slow_run(fleet, tmp_path_factory):
    """One live run with n3 slow (the slow_node profile) and n5's mlx5_3 down."""
    tmp = tmp_path_factory.mktemp("xn-slow")
    r = live(fleet, tmp, faults="slow_node n3 0.5\n")
    assert (tmp / "reports" / "results.jsonl").is_file(), r.stdout[-4000:] + r.stderr[-3000:]
    return {"tmp": tmp, "proc": r, "results": results(tmp / "reports"), "exec": fleet.exec_counts()}


def node_items(res: dict) -> dict[str, str]:
    return {k[len("test_crossnode_node["):-1]: v["outcome"] for k, v in res.items()
            if k.startswith("test_crossnode_node[")}


def test_slow_node_is_localised_and_not_accepted(slow_run):
    res, tmp = slow_run["results"], slow_run["tmp"]
    assert slow_run["proc"].returncode == 1, slow_run["proc"].stdout[-3000:]
    assert node_items(res) == {"n1": "pass", "n2": "pass", "n3": "fail", "n4": "pass", DOWN: "error"}
    n3 = res["test_crossnode_node[n3]"]
    assert n3["check_id"] == "NG-XN-001" and "confirmed_faulty" in n3["message"]
    down = res[f"test_crossnode_node[{DOWN}]"]
    assert "not used as a partner" in down["message"] and "NG-IB-001" in down["message"]
    # the per-node results are kept: the suite's own checks ran for every node
    assert res[f"test_infiniband_ports[{DOWN}]"]["outcome"] == "fail"
    assert res["test_driver_stack[n1]"]["outcome"] == "pass"
    st = statuses(tmp / "reports")
    assert st["n3"] == "need action" and st[DOWN] == "need action"
    assert st["n1"] == st["n2"] == st["n4"] == "accepted", st
    jobs = {k: v for k, v in res.items() if k.startswith("test_crossnode_job[")}
    assert jobs and all(v["node"] == "" and v["check_id"] == "NG-XN-002" for v in jobs.values())
    assert any(v["outcome"] == "fail" and v["value"] and v["threshold"] and v["rule"] for v in jobs.values())
    assert res[next(k for k in res if k.startswith("test_crossnode_phase["))]["outcome"] == "pass"


def test_junit_has_a_testcase_per_job_and_per_node(slow_run):
    res, tmp = slow_run["results"], slow_run["tmp"]
    root = ET.parse(tmp / "reports" / "junit.xml").getroot()
    names = {c.get("name") for c in root.iter("testcase")}
    for k in res:
        if k.startswith(("test_crossnode_job[", "test_crossnode_node[")):
            assert k in names, k
    n3 = next(c for c in root.iter("testcase") if c.get("name") == "test_crossnode_node[n3]")
    assert n3.find("failure") is not None


def test_html_has_the_cable_table_and_the_tree(slow_run):
    html = (slow_run["tmp"] / "reports" / "report.html").read_text()
    assert 'id="ng-xn-tree"' in html and "<svg" in html and 'id="ng-xn-jobs"' in html
    assert "confirmed_faulty" in html and "Cables (Stage A)" in html


def test_evidence_is_recorded_under_the_bundles_dir(slow_run):
    d = slow_run["tmp"] / "bundles" / "crossnode" / "xn1"
    assert (d / "plan.json").is_file() and (d / "result.json").is_file()
    job = next(j for j in sorted((d / "jobs").iterdir()) if "screen" in j.name)
    meta = json.loads((job / "meta.json").read_text())
    assert {"command", "hosts", "env", "duration_s", "launcher"} <= set(meta) and (job / "launch.out").is_file()


def test_replay_rejudges_the_same_verdicts_without_launching(fleet, slow_run, tmp_path):
    before = fleet.exec_counts()
    spec = slow_run["tmp"] / "crossnode.yaml"
    r = nodegate(["--replay", str(slow_run["tmp"] / "bundles"), "--crossnode", str(spec)], tmp_path / "reports")
    assert fleet.exec_counts() == before, "a replay contacted a node"
    again = results(tmp_path / "reports")
    assert r.returncode == 1
    xn = {k: v["outcome"] for k, v in slow_run["results"].items() if k.startswith("test_crossnode_")
          and not k.startswith("test_crossnode_phase")}
    assert {k: v["outcome"] for k, v in again.items() if k in xn} == xn
    assert "replayed" in next(v["message"] for k, v in again.items() if k.startswith("test_crossnode_phase["))
    assert statuses(tmp_path / "reports") == statuses(slow_run["tmp"] / "reports")


def test_deselecting_a_nodes_crossnode_item_leaves_it_not_evaluated(slow_run, tmp_path):
    spec = slow_run["tmp"] / "crossnode.yaml"
    r = nodegate(["--replay", str(slow_run["tmp"] / "bundles"), "--crossnode", str(spec),
                  "--deselect", "suites/test_crossnode.py::test_crossnode_node[n1]"], tmp_path / "reports")
    assert r.returncode == 1
    st = statuses(tmp_path / "reports")
    assert st["n1"] == "not evaluated" and st["n2"] == "accepted" and st["n3"] == "need action"


def test_shard_nodes_keeps_the_verdicts(slow_run, tmp_path):
    spec = slow_run["tmp"] / "crossnode.yaml"
    nodegate(["--replay", str(slow_run["tmp"] / "bundles"), "--crossnode", str(spec), "--shard-nodes", "1"],
             tmp_path / "reports")
    assert statuses(tmp_path / "reports") == statuses(slow_run["tmp"] / "reports")


def test_plan_prints_jobs_and_rounds_and_launches_nothing(fleet, tmp_path):
    spec = write_spec(tmp_path)
    r = nodegate(["--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
                  "--connect-timeout", "60", "--bundles-dir", str(tmp_path / "bundles"), "--crossnode", str(spec),
                  "--crossnode-plan"], tmp_path / "reports")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "cross-node plan: 4 nodes" in r.stdout and "round 1 (screen)" in r.stdout
    assert f"not used: {DOWN}: per-node prerequisite NG-IB-001" in r.stdout
    assert not (tmp_path / "bundles" / "crossnode").exists()
    assert not (tmp_path / "reports" / "results.jsonl").exists()


def test_healthy_fleet_is_accepted(fleet, tmp_path):
    r = live(fleet, tmp_path, limit=":".join(NODES))
    res = results(tmp_path / "reports")
    assert r.returncode == 0, r.stdout[-4000:]
    assert node_items(res) == {n: "pass" for n in NODES}
    assert set(statuses(tmp_path / "reports").values()) == {"accepted"}


def test_missing_mpirun_is_an_error_naming_it_and_keeps_the_per_node_results(fleet, tmp_path):
    spec = write_spec(tmp_path, mpirun="/nonexistent/mpirun")
    r = live(fleet, tmp_path, spec=spec, limit=":".join(NODES))
    res = results(tmp_path / "reports")
    assert r.returncode == 1
    assert set(node_items(res).values()) == {"error"}
    assert all("mpirun not found" in res[f"test_crossnode_node[{n}]"]["message"] for n in NODES)
    assert res["test_driver_stack[n1]"]["outcome"] == "pass"         # per-node results kept
    assert set(statuses(tmp_path / "reports").values()) == {"need action"}
    phase = next(v for k, v in res.items() if k.startswith("test_crossnode_phase["))
    assert phase["outcome"] == "error" and "mpirun not found" in phase["message"]


def test_a_run_id_already_recorded_is_not_launched_into_again(fleet, tmp_path):
    """A second live run with the run id of one recorded in the same bundles dir mixed both runs'
    jobs in one evidence directory: refused, nothing launched, every node ERROR (fail closed)."""
    old = tmp_path / "bundles" / "crossnode" / "xn1"
    old.mkdir(parents=True)
    (old / "plan.json").write_text("{}")
    r = live(fleet, tmp_path, limit=":".join(NODES))
    res = results(tmp_path / "reports")
    assert r.returncode == 1, r.stdout[-3000:]
    assert set(node_items(res).values()) == {"error"}
    assert all("already holds a recorded run" in res[f"test_crossnode_node[{n}]"]["message"] for n in NODES)
    assert sorted(p.name for p in old.iterdir()) == ["plan.json"]   # nothing written into it


def test_xdist_is_refused_with_a_usage_error(fleet, tmp_path):
    spec = write_spec(tmp_path)
    r = nodegate(["--inventory", str(fleet.inventory_path), "--crossnode", str(spec), "-n", "2"], tmp_path / "r")
    assert r.returncode == 2 and "--crossnode does not run under pytest-xdist" in r.stderr


def test_a_spec_that_does_not_validate_is_a_usage_error(fleet, tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("crossnode:\n  launcher: pdsh\n")
    r = nodegate(["--inventory", str(fleet.inventory_path), "--crossnode", str(p)], tmp_path / "r")
    assert r.returncode == 2 and "crossnode.launcher" in r.stderr


def test_a_slow_hca_is_an_rma_row_naming_its_guid(fleet, tmp_path):
    # an HCA is blamed after failing with two distinct partners: reshuffled per-HCA rounds
    r = live(fleet, tmp_path, faults="slow_hca n2 1 0.5\n", limit=":".join(NODES),
             spec=write_spec(tmp_path, link_rounds=3))
    res = results(tmp_path / "reports")
    assert r.returncode == 1, r.stdout[-3000:]
    faults = {k: v for k, v in res.items() if k.startswith("test_crossnode_fault[")}
    assert list(faults) == ["test_crossnode_fault[n2-F001]"], faults
    assert res["test_crossnode_node[n2]"]["outcome"] == "fail"
    rows = json.loads((tmp_path / "reports" / "rma.json").read_text())["rows"]
    hca = [x for x in rows if x["part"] == "HCA"]
    assert len(hca) == 1 and hca[0]["node"] == "n2" and hca[0]["part_location"].startswith("n2:mlx5_1 <-> ")
    assert "NG-XN-003" in hca[0]["failed_checks"] and hca[0]["action"] == "RMA"
    # the fleet's sysfs has no port GUIDs: the serial is left blank, never guessed (with one, it is
    # the GUID: tests/crossnode/test_present.py)
    assert hca[0]["part_serial"] == "" and "switch port unknown" in hca[0]["part_location"]


def test_a_bad_path_is_an_action_row_naming_the_cable_by_both_ends(fleet, tmp_path):
    r = live(fleet, tmp_path, faults="bad_path n1 n2 1 0.5\n", limit=":".join(NODES))
    res = results(tmp_path / "reports")
    assert r.returncode == 1, r.stdout[-3000:]
    assert node_items(res) == {n: "pass" for n in NODES}        # both nodes are healthy
    text = (tmp_path / "reports" / "actions.csv").read_text()
    assert "cable" in text and "n1:mlx5_1 <-> n2:mlx5_1" in text


def test_ctrl_c_ends_every_launched_process_and_writes_the_reports(fleet, tmp_path):
    import signal
    import time
    fleet.set_faults("hang n1\nhang n3\n")                # both screens hang
    spec = write_spec(tmp_path, job_timeout_s=300)
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--reports-dir",
           str(tmp_path / "reports"), "--inventory", str(fleet.inventory_path), "--known-hosts",
           str(fleet.known_hosts_path), "--connect-timeout", "60", "--bundles-dir", str(tmp_path / "bundles"),
           "--crossnode", str(spec), "--limit", ":".join(NODES)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not any("perf" in x for x in fleet.leftovers()):
            time.sleep(0.2)
        assert any("perf" in x for x in fleet.leftovers()), "the stand-ins never started"
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
        fleet.set_faults("")
    assert p.returncode == 130, out[-3000:] + err[-2000:]
    deadline = time.monotonic() + 20
    while fleet.leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fleet.leftovers() == []                        # nothing left on any node
    res = results(tmp_path / "reports")
    assert set(node_items(res).values()) == {"error"}
    assert all("interrupted" in res[f"test_crossnode_node[{n}]"]["message"] for n in NODES), (out[-3000:], err[-3000:])
    assert res["test_driver_stack[n1]"]["outcome"] == "pass"


def test_a_hostile_node_name_reaches_the_html_escaped(slow_run, tmp_path):
    """n1's bundle replayed under a name that is markup: the phase's section (the tree's node row,
    the error naming the job it cannot find recorded) shows it escaped, never as markup."""
    import shutil
    evil = '<img src=x onerror=alert(1)>&"n1'
    src = slow_run["tmp"] / "bundles"
    dst = tmp_path / "bundles"
    shutil.copytree(src, dst)
    (dst / "n1").rename(dst / evil)
    meta = json.loads((dst / evil / "meta.json").read_text())
    meta["node"] = evil
    (dst / evil / "meta.json").write_text(json.dumps(meta))
    r = nodegate(["--replay", str(dst), "--crossnode", str(slow_run["tmp"] / "crossnode.yaml")], tmp_path / "reports")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    html = (tmp_path / "reports" / "report.html").read_text()
    assert 'id="ng-xn-tree"' in html and "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;n1" in html
    assert "<img src=x" not in html
    res = results(tmp_path / "reports")
    (row,) = [v for v in res.values() if v["check_id"] == "NG-XN-001" and v["node"] == evil]
    assert row["outcome"] == "error"              # never judged on evidence recorded for another name


def test_a_cable_plan_naming_an_unknown_node_and_a_broken_topology_file_are_errors_naming_them(slow_run, tmp_path):
    (tmp_path / "cables.yaml").write_text("gpu99:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 9, rail: 0}\n")
    (tmp_path / "x.topo").write_text('Switch\t36 "S-0008f105001"\t# "leaf" base port 0 lid 1 lmc 0\n[3]\t"S-00\n')
    spec = write_spec(tmp_path, cable_plan=str(tmp_path / "cables.yaml"), topology_file=str(tmp_path / "x.topo"))
    r = nodegate(["--replay", str(slow_run["tmp"] / "bundles"), "--crossnode", str(spec)], tmp_path / "reports")
    assert r.returncode == 1
    res = results(tmp_path / "reports")
    phase = next(v for k, v in res.items() if k.startswith("test_crossnode_phase["))
    assert phase["outcome"] == "error"
    assert f"topology file {tmp_path}/x.topo:2 does not parse" in phase["message"]
    assert f"cable plan names a node not in the inventory: gpu99 ({tmp_path}/cables.yaml:1)" in phase["message"]
    (cable,) = [v for k, v in res.items() if k.startswith("test_crossnode_link[")]
    assert cable["outcome"] == "error" and "unknown-node" in cable["message"] and cable["node"] == ""
    # what was measured is kept: the node verdicts are the recorded run's
    assert node_items(res) == node_items(slow_run["results"])
    html = (tmp_path / "reports" / "report.html").read_text()
    assert 'id="ng-xn-cables"' in html and "gpu99:mlx5_0/1" in html and "unknown-node" in html


def test_a_cable_plan_that_does_not_validate_is_a_usage_error(fleet, tmp_path):
    (tmp_path / "cables.yaml").write_text("n1:\n  - {hca: mlx5_0, switch: leaf-r0}\n")
    spec = write_spec(tmp_path, cable_plan=str(tmp_path / "cables.yaml"))
    r = nodegate(["--inventory", str(fleet.inventory_path), "--crossnode", str(spec)], tmp_path / "r")
    assert r.returncode == 2 and f"cable plan {tmp_path}/cables.yaml:2: n1 cable 1: switch_port" in r.stderr
    assert not (tmp_path / "r" / "results.jsonl").exists()
