"""The real launchers across simulated nodes (issue 38 item 8): Open MPI's ``mpirun`` over SSH
into chroot nodes behind real sshd (tools/mpi: the node roots can run ``orted``), perftest pairs
over nodegate's SSH transport; the stand-ins really exchange data. Every fault profile is
localised to the right node, HCA or cable; a replay re-judges without launching; Ctrl-C ends
every launched process on every node."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nodegate.crossnode.launchers import MpirunLauncher, SshPairLauncher
from nodegate.crossnode.model import NodeState
from nodegate.crossnode.phase import PhaseConfig, replay_phase, run_phase
from nodegate.crossnode.spec import CrossnodeSpec
from nodegate.outcomes import Outcome
from nodegate.transport import HostKeyPolicy
from tools.fleet import sshd_available
from tools.mpi import MpiFleet, mpi_unavailable

from .helpers import fleet_nodes

WHY = ("needs root" if os.geteuid() != 0 else None) or sshd_available() or mpi_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"the MPI fleet cannot run here: {WHY}")

NODES = ["n1", "n2", "n3", "n4"]
#: the fleet's orteds reach mpirun over loopback; no InfiniBand/UCX/PSM components here
MCA = ["--mca", "oob_tcp_if_include", "lo", "--mca", "btl_tcp_if_include", "lo", "--mca", "btl", "self,tcp",
       "--mca", "pml", "ob1", "--mca", "mtl", "^psm,psm2,ofi", "--mca", "osc", "^ucx"]


@pytest.fixture(scope="module")
def fleet():
    f = MpiFleet(NODES)
    f.add_unreachable("gone")
    f.start()
    try:
        yield f
    finally:
        f.stop()


@pytest.fixture
def faults(fleet):
    def set_(text: str) -> None:
        fleet.set_faults(text)
    yield set_
    fleet.set_faults("")


def spec(**kw) -> CrossnodeSpec:
    base = dict(fabric="ib-ndr400", rails={0: "leaf-r0", 1: "leaf-r1"}, min_bytes="1G", max_bytes="4G",
                job_timeout_s=90, link_rounds=2, floors={"alltoall_busbw_gbs": 300.0},
                nccl_tests_dir="/usr/local/bin", perftest_dir="/usr/local/bin")
    base.update(kw)
    return CrossnodeSpec(**base)


def launchers(fleet, nodes):
    m = MpirunLauncher(ssh_user=fleet.user, identity_file=str(fleet.client_key_path),
                       known_hosts=str(fleet.known_hosts_path), extra_args=MCA, connect_timeout=30)
    # the stand-in server prints "Waiting for client" as soon as it listens (and ends at once when
    # it cannot): waiting up to 60 s for it keeps a client from starting before its server on a
    # loaded machine, where an SSH session can take longer than the default 10 s to start
    p = SshPairLauncher({n.name: n.target for n in nodes}, HostKeyPolicy(files=[Path(fleet.known_hosts_path)]),
                        connect_timeout=60, ready_wait_s=60)
    return m, p


def run(fleet, tmp_path, *, sp=None, nodes=None, **kw):
    nodes = nodes or [n for n in fleet_nodes(fleet, **kw) if n.name in NODES]
    m, p = launchers(fleet, nodes)
    res = run_phase(nodes, PhaseConfig(sp or spec(), run_id="t"), launcher=m, pair_launcher=p,
                    evidence_dir=tmp_path)
    return res, nodes


def states(res):
    return {n.node: n.state.value for n in res.nodes}


def _why(res) -> list:
    """What an assertion prints: each job's stage, hosts/HCAs, verdict and why; the faults."""
    return [(j.job_id, j.stage, j.hcas or j.hosts, j.verdict.value, j.message[:160]) for j in res.jobs] + \
        [(f.kind, f.end_a, f.end_b, f.why) for f in res.faults]


def wait_no_leftovers(fleet, seconds=20.0):
    deadline = time.monotonic() + seconds
    while fleet.leftovers() and time.monotonic() < deadline:
        time.sleep(0.2)
    return fleet.leftovers()


def test_healthy_fleet_every_node_cleared_every_cable_as_planned(fleet, tmp_path):
    res, _ = run(fleet, tmp_path)
    assert res.errors == [] and res.outcome is Outcome.PASS, [j.message for j in res.jobs]
    assert set(states(res).values()) == {"cleared"}
    assert {c.verdict for c in res.cables} == {Outcome.PASS} and len(res.cables) == 8
    assert {j.verdict for j in res.jobs} == {Outcome.PASS}
    stages = [j.stage for j in res.jobs]
    assert stages.count("screen") == 2 and "representatives" not in stages[:2] and "links" in stages
    j = res.jobs[0]
    assert j.launcher == "mpirun" and "--hostfile" in j.command and "/usr/local/bin/all_reduce_perf" in j.command
    agent = j.command[j.command.index("plm_rsh_agent") + 1]
    assert "StrictHostKeyChecking=yes" in agent and "BatchMode=yes" in agent
    d = tmp_path / j.evidence
    assert {p.name for p in d.iterdir()} >= {"meta.json", "launch.out", "hostfile"}
    assert wait_no_leftovers(fleet) == []


def test_replay_rejudges_without_launching_and_never_accepts_what_was_not_measured(fleet, tmp_path):
    res, nodes = run(fleet, tmp_path)
    before = fleet.exec_counts()
    again = replay_phase(nodes, PhaseConfig(spec(), run_id="t"), tmp_path)
    assert fleet.exec_counts() == before                     # not one SSH session: nothing launched
    assert again.replayed and states(again) == states(res) and again.outcome is Outcome.PASS
    assert [(j.job_id, j.verdict, j.value) for j in again.jobs] == [(j.job_id, j.verdict, j.value) for j in res.jobs]
    # stricter floors on the same evidence: the screens fail, the jobs that would follow were never
    # run, and the replay stops there: ERROR naming the job, no node cleared on what was not measured
    strict = replay_phase(nodes, PhaseConfig(spec(floors={"all_reduce_busbw_gbs": 400.0,
                                                          "alltoall_busbw_gbs": 300.0}), run_id="t"), tmp_path)
    assert strict.outcome is Outcome.ERROR and "was not recorded" in strict.errors[0]
    assert "cleared" not in states(strict).values()


@pytest.mark.parametrize("profile, fault, node, outcome", [
    ("slow node", "slow_node n3 0.5", "n3", "confirmed_faulty"),
    ("#wrong > 0", "wrong n4", "n4", "confirmed_faulty"),
    ("node drops out mid-job", "dropout n2", "n2", "confirmed_faulty"),
])
def test_node_fault_is_localised_to_the_node(fleet, faults, tmp_path, profile, fault, node, outcome):
    faults(fault + "\n")
    res, _ = run(fleet, tmp_path)
    assert states(res) == {n: (outcome if n == node else "cleared") for n in NODES}, profile
    row = res.node(node)
    assert row.outcome is Outcome.FAIL and row.jobs
    failing = [res.job(j) for j in row.jobs]
    if "wrong" in fault:
        assert all("#wrong" in j.message and j.verdict is Outcome.FAIL for j in failing)
    if "dropout" in fault:
        assert all(j.verdict is Outcome.ERROR and "exit code" in j.message for j in failing)
    assert res.faults == []
    assert wait_no_leftovers(fleet) == []


def test_a_hang_is_ended_by_the_deadline_and_localised(fleet, faults, tmp_path):
    faults("hang n1\n")
    res, _ = run(fleet, tmp_path, sp=spec(job_timeout_s=30))   # healthy jobs end well within it under load
    assert states(res) == {"n1": "confirmed_faulty", "n2": "cleared", "n3": "cleared", "n4": "cleared"}
    hung = [res.job(j) for j in res.node("n1").jobs]
    assert hung and all(j.verdict is Outcome.ERROR and "timed out" in j.message for j in hung)
    assert all(j.duration_s < 30 + 15 for j in hung)
    assert wait_no_leftovers(fleet) == []


def test_a_slow_hca_is_blamed_with_two_partners_and_named_by_guid_and_switch_port(fleet, faults, tmp_path):
    faults("slow_hca n2 1 0.5\n")
    res, _ = run(fleet, tmp_path)
    assert len(res.faults) == 1, _why(res)
    (f,) = res.faults
    assert (f.kind, f.end_a, f.end_b) == ("hca", "n2:mlx5_1", "leaf-r1:2")
    assert f.guid.startswith("0x") and "distinct partners" in f.why
    assert len({j for j in f.jobs if "links" in j}) >= 2
    assert res.node("n2").state is NodeState.CONFIRMED_FAULTY and f.fault_id in res.node("n2").faults
    assert {states(res)[n] for n in ("n1", "n3", "n4")} == {"cleared"}, _why(res)


def test_a_bad_cable_between_two_healthy_nodes_is_a_path_named_by_both_ends(fleet, faults, tmp_path):
    faults("bad_path n1 n2 1 0.5\n")                 # one domain (n1, n2), rail 1 only
    res, _ = run(fleet, tmp_path)
    assert set(states(res).values()) == {"cleared"}           # both nodes are healthy
    (f,) = res.faults
    assert f.kind == "path" and {f.end_a, f.end_b} == {"n1:mlx5_1", "n2:mlx5_1"}
    assert sorted(f.cables) == ["n1:mlx5_1/1 <-> leaf-r1:1", "n2:mlx5_1/1 <-> leaf-r1:2"]
    assert res.outcome is Outcome.FAIL


def test_a_rail_cabled_to_the_wrong_leaf_is_a_cable_row_keyed_by_both_ends(fleet, tmp_path):
    res, _ = run(fleet, tmp_path, wrong_leaf=("n3", 1))
    bad = [c for c in res.cables if c.verdict is not Outcome.PASS]
    assert [(c.node_end, c.switch_end, c.problem) for c in bad] == [("n3:mlx5_1/1", "leaf-r0:3", "wrong-rail")]
    assert res.outcome is Outcome.FAIL


def test_nccl_tests_json_output_is_judged(fleet, tmp_path):
    res, _ = run(fleet, tmp_path, sp=spec(nccl_json=True))
    screens = [j for j in res.jobs if j.stage == "screen"]
    assert screens and all(j.versions.get("format") == "nccl-tests -J JSON" for j in screens)
    assert res.outcome is Outcome.PASS


def test_an_unreachable_hostfile_node_is_not_used_and_named(fleet, tmp_path):
    nodes = fleet_nodes(fleet)                         # n1..n4 and "gone" (nothing listens)
    res, _ = run(fleet, tmp_path, nodes=nodes)
    gone = res.node("gone")
    assert gone.state is NodeState.NOT_USED and "unreachable over SSH" in gone.why and "127.0.1.250" in gone.why
    assert {states(res)[n] for n in NODES} == {"cleared"}


def test_a_node_lost_after_the_preflight_is_not_judged_never_blamed(fleet, tmp_path):
    """A node that answers the pre-flight and is gone when mpirun's ssh reaches for it (here:
    the pre-flight is skipped, and the real mpirun meets "Connection refused"): the jobs with it
    are ERROR, it is not_used with why, never confirmed_faulty; its partners are cleared by
    other jobs; a replay judges the same."""
    nodes = fleet_nodes(fleet)                         # n1..n4 and "gone"
    m, p = launchers(fleet, nodes)
    m.preflight = lambda addresses, stop=None: {}      # it answered then, it is gone now
    res = run_phase(nodes, PhaseConfig(spec(), run_id="lost", stages=("static", "nodes")), launcher=m,
                    evidence_dir=tmp_path)
    gone = res.node("gone")
    assert gone.state is NodeState.NOT_USED and gone.outcome is Outcome.ERROR, _why(res)
    assert "could not reach it during the run (Connection refused)" in gone.why and gone.jobs
    assert all(res.job(j).verdict is Outcome.ERROR for j in gone.jobs)
    assert {states(res)[n] for n in NODES} == {"cleared"} and res.faults == []
    again = replay_phase(nodes, PhaseConfig(spec(), run_id="lost", stages=("static", "nodes")), tmp_path)
    assert states(again) == states(res) and again.node("gone").why == gone.why


def test_mpirun_missing_is_an_error_naming_it_and_the_static_rows_are_kept(fleet, tmp_path):
    nodes = [n for n in fleet_nodes(fleet) if n.name in NODES]
    m = MpirunLauncher(mpirun="/nonexistent/mpirun")
    res = run_phase(nodes, PhaseConfig(spec(), run_id="t"), launcher=m, evidence_dir=tmp_path)
    assert res.outcome is Outcome.ERROR and "mpirun not found" in res.errors[0]
    assert len(res.cables) == 8 and {n.state for n in res.nodes} == {NodeState.UNTESTED}
    assert all("mpirun not found" in n.why for n in res.nodes)


def test_ctrl_c_ends_every_launched_process_on_every_node(fleet, faults, tmp_path):
    faults("hang n1\nhang n3\n")                        # both screens hang
    nodes = [n for n in fleet_nodes(fleet) if n.name in NODES]
    m, p = launchers(fleet, nodes)
    stop = threading.Event()
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("res", run_phase(
        nodes, PhaseConfig(spec(job_timeout_s=300), run_id="t"), launcher=m, pair_launcher=p,
        evidence_dir=tmp_path, stop=stop)))
    th.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any("perf" in p for p in fleet.leftovers()):
        time.sleep(0.2)
    assert any("perf" in p for p in fleet.leftovers()), "the stand-ins never started"
    t0 = time.monotonic()
    stop.set()                                          # what SIGINT does in nodegate
    th.join(60)
    assert not th.is_alive() and time.monotonic() - t0 < 40
    res = out["res"]
    assert res.outcome is Outcome.ERROR and "interrupted" in res.errors[0]
    assert "cleared" not in states(res).values()
    assert wait_no_leftovers(fleet) == []               # nothing left on any node
