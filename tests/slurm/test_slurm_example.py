"""examples/slurm/collect.sbatch on a real Slurm (Debian's slurm-wlm: munged, slurmctld, 7 slurmd on
this machine; needs root, openssh-server, busybox-static, slurm-wlm, munge; skipped with the reason
where they are missing or the daemons do not start).

One ``sbatch -N 7`` of the unmodified example: one ``nodegate-collect --root <node root>`` task per
Slurm node, then one ``pytest suites --replay`` in the job. Its per-test outcomes equal the SSH run's
over the same node roots, also for the two nodes that fail (a node whose slurmd died after the
allocation, a node whose probe cannot run): every item ERROR, as for an unreachable SSH node.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.bench.helpers import junit_cases, outcomes

from .conftest import LOST, NEEDS, NODES, NOROOT, PROFILES

pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"Slurm example cannot run here: {NEEDS}")


def _node_of(case_id: str) -> str:
    """``suites.test_pcie::test_pcie_link_gen[gpu02-gpu3]`` -> ``gpu02``."""
    param = case_id.rsplit("[", 1)[1].rstrip("]")
    return param.rsplit("-gpu", 1)[0] if re.search(r"-gpu\d+$", param) else param


def _names(cases: dict[str, dict]) -> dict[str, str]:
    """{test name with parameters: outcome}, as tools/fleet's expected.yaml keys them."""
    out = {k.split("::", 1)[1]: v for k, v in outcomes(cases).items()}
    assert len(out) == len(cases)  # no test name in two modules
    return out


@pytest.fixture(scope="module")
def replay_cases(slurm_run) -> dict[str, dict]:
    return junit_cases(slurm_run.run_dir / "reports" / "junit.xml")


def test_job_fails_with_exit_1_and_leaves_the_documented_layout(slurm_run):
    job, run = slurm_run.job, slurm_run.run_dir
    step = re.search(r"^nodegate: collect step ended after (\d+) s \(srun exit (\d+)\)$", slurm_run.stdout, re.M)
    assert step, slurm_run.stdout[-3000:]
    print(f"\nslurm job {slurm_run.job_id}: {job.get('NodeList')}, submit to end {slurm_run.wall_s:.1f} s "
          f"(RunTime {job.get('RunTime')}; collect step {step[1]} s, srun exit {step[2]})")
    assert step[2] != "0"  # LOST's task launch failed and NOROOT's task exited 3
    # COMPLETING: the script has ended (exit code known), LOST's slurmd never confirms the clean-up
    assert job["JobState"] in ("FAILED", "COMPLETING") and job["ExitCode"] == "1:0", slurm_run.stdout[-3000:]
    assert job["NodeList"] == "gpu[01-07]"
    assert (run / "nodes.txt").read_text().split() == NODES
    assert sorted(p.name for p in (run / "bundles").iterdir()) == NODES
    assert sorted(p.stem for p in (run / "logs").iterdir()) == sorted(set(NODES) - {LOST})
    assert (run / "missing.txt").read_text() == f"{LOST}\n"
    for f in ("report.html", "junit.xml", "rma.csv", "rma.json"):
        assert (run / "reports" / f).stat().st_size > 0, f
    assert f"nodegate: job {slurm_run.job_id}, 7 nodes (gpu[01-07])" in slurm_run.stdout
    assert f"nodegate: {LOST}: MISSING bundle" in slurm_run.stdout
    assert f"nodegate: report at {run}/reports/report.html (pytest exit 1)" in slurm_run.stdout
    assert f"nodegate: 1 node(s) left no bundle: {LOST}" in slurm_run.stdout


def test_every_collected_node_names_its_evidence_count_in_the_job_output(slurm_run):
    for node in PROFILES:
        log = (slurm_run.run_dir / "logs" / f"{node}.log").read_text().strip()
        assert re.fullmatch(rf"nodegate-collect: {node}: \d+ evidence items -> \S+/bundles/{node}", log), log
        assert f"\n{log}\n" in slurm_run.stdout
        meta = json.loads((slurm_run.run_dir / "bundles" / node / "meta.json").read_text())
        assert (meta["status"], meta["target"], meta["complete"]) == ("ok", f"collect://{node}", True)


def test_node_whose_slurmd_died_is_recorded_missing(slurm_run):
    meta = json.loads((slurm_run.run_dir / "bundles" / LOST / "meta.json").read_text())
    assert meta["status"] == "missing"
    assert meta["error"].startswith(f"no bundle after the collect step of job {slurm_run.job_id} (srun exit ")
    assert meta["items"] == {}
    assert meta["spec"]["gpu"]["count"] == 8  # its 8 per-GPU items are in the report too


def test_node_whose_probe_cannot_run_exits_3_with_a_bundle_naming_the_error(slurm_run):
    meta = json.loads((slurm_run.run_dir / "bundles" / NOROOT / "meta.json").read_text())
    assert meta["status"] == "probe-failed"
    assert "chroot" in meta["error"] and f"nodes/{NOROOT}" in meta["error"], meta["error"]
    log = (slurm_run.run_dir / "logs" / f"{NOROOT}.log").read_text()
    assert log.startswith(f"nodegate-collect: {NOROOT}: probe-failed: "), log


def test_replay_outcomes_equal_the_ssh_run_per_test(slurm_run, ssh_run, replay_cases, fleet):
    got, want = _names(replay_cases), _names(ssh_run)
    assert got == want
    assert got == fleet.expected()  # and both are what the profiles say, not two equal mistakes
    per_node = {n: sorted({o for k, o in got.items() if _node_of("x::" + k) == n}) for n in NODES}
    assert per_node == {"gpu01": ["pass", "skip"], "gpu02": ["fail", "pass", "skip"],
                        "gpu03": ["fail", "pass", "skip"], "gpu04": ["error", "fail", "pass", "skip"],
                        "gpu05": ["error", "fail", "pass", "skip"], LOST: ["error"], NOROOT: ["error"]}
    counts = {o: list(got.values()).count(o) for o in ("pass", "fail", "skip", "error")}
    print(f"\n{len(got)} items compared, {len(NODES)} nodes: {counts}")


def _spec_sources(cases: dict[str, dict]) -> set[str]:
    return {v for c in cases.values() for k, v in c["properties"] if k == "spec_source"}


def _without_spec_source(cases: dict[str, dict]) -> dict[str, dict]:
    return {t: dict(c, properties=[(k, v) for k, v in c["properties"] if k != "spec_source"])
            for t, c in cases.items()}


def test_collected_nodes_have_the_ssh_runs_messages_and_properties(ssh_run, replay_cases):
    ours = {k: v for k, v in replay_cases.items() if _node_of(k) in PROFILES}
    assert len(ours) > 0
    theirs = {k: v for k, v in ssh_run.items() if _node_of(k) in PROFILES}
    # every property but the spec's origin (issue 17): the SSH run's spec is the inventory's, the
    # replay's the one each collected bundle recorded (nodegate-collect --spec)
    assert {s.split(" ", 1)[0] for s in _spec_sources(theirs)} == {"inventory"}
    assert _spec_sources(ours) == {"bundle meta.json"}
    assert _without_spec_source(ours) == _without_spec_source(theirs)


def test_failed_nodes_items_name_why_they_were_not_evaluated(slurm_run, replay_cases):
    for k, v in replay_cases.items():
        node = _node_of(k)
        if node == LOST:
            assert "could not evaluate: node not gathered: missing: no bundle after the collect step" \
                in v["message"], (k, v)
        elif node == NOROOT:
            assert "could not evaluate: node not gathered: probe-failed: probe produced no evidence" in v["message"]


def test_job_on_nodes_that_all_collect_has_no_missing_list_and_the_same_outcomes(slurm_run_collected,
                                                                                 replay_cases):
    run = slurm_run_collected
    step = re.search(r"^nodegate: collect step ended after (\d+) s \(srun exit (\d+)\)$", run.stdout, re.M)
    print(f"\nslurm job {run.job_id}: {run.job.get('NodeList')}, submit to end {run.wall_s:.1f} s "
          f"(RunTime {run.job.get('RunTime')}; collect step {step[1]} s, srun exit {step[2]})")
    assert (run.job["JobState"], run.job["ExitCode"]) == ("FAILED", "1:0")  # the fleet has findings
    assert step[2] == "0"
    assert not (run.run_dir / "missing.txt").exists()
    assert "left no bundle" not in run.stdout and "MISSING" not in run.stdout
    assert sorted(p.name for p in (run.run_dir / "bundles").iterdir()) == list(PROFILES)
    got = junit_cases(run.run_dir / "reports" / "junit.xml")
    assert got == {k: v for k, v in replay_cases.items() if _node_of(k) in PROFILES}
