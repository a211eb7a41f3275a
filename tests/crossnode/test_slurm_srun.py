"""``srun --mpi=pmix`` on the project's real Slurm (tools/slurm: munged, slurmctld, one slurmd per
node name on this host): the stand-ins run as real PMIx-launched MPI jobs, one task per GPU of
each Slurm node. A fault is localised through srun; a partition that does not exist is an
ERROR naming it; Ctrl-C cancels the step and nothing is left running."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from nodegate.crossnode.launchers import SrunLauncher
from nodegate.crossnode.phase import PhaseConfig, PhaseNode, run_phase
from nodegate.crossnode.spec import CrossnodeSpec
from nodegate.outcomes import Outcome
from tools.mpi import build_shims, mpi_unavailable
from tools.slurm import SlurmCluster, slurm_available

WHY = slurm_available() or mpi_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"Slurm with Open MPI cannot run here: {WHY}")

NODES = ["x1", "x2", "x3", "x4"]


class PmixCluster(SlurmCluster):
    """Several slurmd on one host share /tmp: PMIx's client directory (TmpFS/spmix_appdir_<uid>_<job>.<step>)
    would collide, so each node gets a TmpFS of its own (slurm.conf's %n)."""

    def _write_conf(self) -> None:
        super()._write_conf()
        for n in self.nodes:
            (self.workdir / "tmp" / n).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(self.conf.read_text() + f"TmpFS={self.workdir}/tmp/%n\n")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    shims = build_shims(tmp_path_factory.mktemp("shims"))
    with PmixCluster(NODES, cpus=2) as c:
        yield c, shims


def _faults(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def setup(cluster, tmp_path, faults="", **kw):
    c, shims = cluster
    env = {"NODEGATE_FAULTS": _faults(tmp_path / "faults", faults), "OMPI_MCA_btl": "self,tcp",
           "OMPI_MCA_btl_tcp_if_include": "lo", "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_pml": "ob1",
           "OMPI_MCA_mtl": "^psm,psm2,ofi"}
    sp = CrossnodeSpec(fabric="ib-ndr400", launcher="srun", min_bytes="1G", max_bytes="2G", job_timeout_s=60,
                       nccl_tests_dir=str(shims.dir), floors={"alltoall_busbw_gbs": 300.0}, env=env, **kw)
    nodes = [PhaseNode(n, n, gpu_model="NVIDIA H100 80GB HBM3", gpus=2) for n in NODES]
    launcher = SrunLauncher(mpi="pmix", partition=sp.partition, env_extra={"SLURM_CONF": str(c.conf)})
    return nodes, sp, launcher


def test_srun_pmix_clears_a_healthy_cluster_and_localises_a_slow_node(cluster, tmp_path):
    nodes, sp, launcher = setup(cluster, tmp_path)
    res = run_phase(nodes, PhaseConfig(sp, run_id="ok", stages=("nodes",)), launcher=launcher, evidence_dir=tmp_path)
    assert res.errors == [] and {n.state.value for n in res.nodes} == {"cleared"}, [j.message for j in res.jobs]
    j = res.jobs[0]
    assert j.launcher == "srun" and "--mpi=pmix" in j.command and "--nodelist=x1,x2" in j.command
    nodes, sp, launcher = setup(cluster, tmp_path, faults="slow_node x2 0.5\n")
    res = run_phase(nodes, PhaseConfig(sp, run_id="slow", stages=("nodes",)), launcher=launcher, evidence_dir=tmp_path)
    assert {n.node: n.state.value for n in res.nodes} == {"x1": "cleared", "x2": "confirmed_faulty",
                                                          "x3": "cleared", "x4": "cleared"}


def test_a_partition_that_does_not_exist_is_an_error_naming_it(cluster, tmp_path):
    nodes, sp, launcher = setup(cluster, tmp_path, partition="nosuchpart")
    res = run_phase(nodes, PhaseConfig(sp, run_id="p", stages=("nodes",)), launcher=launcher, evidence_dir=tmp_path)
    assert res.outcome is Outcome.ERROR and "nosuchpart" in res.errors[0] and "does not exist" in res.errors[0]
    assert {n.state.value for n in res.nodes} == {"untested"} and res.jobs == []


def test_a_node_slurm_does_not_know_is_not_used_and_named_the_others_are_judged(cluster, tmp_path):
    nodes, sp, launcher = setup(cluster, tmp_path)
    nodes.insert(2, PhaseNode("x9", "x9", gpu_model="NVIDIA H100 80GB HBM3", gpus=2))   # not in slurm.conf
    res = run_phase(nodes, PhaseConfig(sp, run_id="u", stages=("nodes",)), launcher=launcher, evidence_dir=tmp_path)
    x9 = res.node("x9")
    assert x9.state.value == "not_used" and x9.why == "not used as a partner: Slurm knows no node 'x9'"
    assert {n.node: n.state.value for n in res.nodes if n.node != "x9"} == dict.fromkeys(NODES, "cleared")
    assert not any("x9" in j.hosts for j in res.jobs) and res.errors == []


def test_srun_missing_is_an_error_naming_it(tmp_path):
    nodes = [PhaseNode(n, n, gpus=1) for n in NODES]
    res = run_phase(nodes, PhaseConfig(CrossnodeSpec(launcher="srun"), run_id="m", stages=("nodes",)),
                    launcher=SrunLauncher(srun="/nonexistent/srun"), evidence_dir=tmp_path)
    assert res.outcome is Outcome.ERROR and "srun not found" in res.errors[0]


def _shim_processes(shim_dir: Path) -> list[str]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if os.readlink(p / "exe").startswith(str(shim_dir)):
                    out.append(p.name)
            except OSError:
                pass
    return out


def test_ctrl_c_cancels_the_step_and_leaves_nothing_running(cluster, tmp_path):
    c, shims = cluster
    nodes, sp, launcher = setup(cluster, tmp_path, faults="hang x1\nhang x3\n")
    sp = sp.model_copy(update={"job_timeout_s": 300})
    stop = threading.Event()
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("res", run_phase(
        nodes, PhaseConfig(sp, run_id="int", stages=("nodes",)), launcher=launcher, evidence_dir=tmp_path, stop=stop)))
    th.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_shim_processes(shims.dir)) < 4:
        time.sleep(0.2)
    assert _shim_processes(shims.dir), "the stand-ins never started"
    stop.set()
    th.join(90)
    assert not th.is_alive()
    res = out["res"]
    assert "interrupted" in res.errors[0] and "cleared" not in {n.state.value for n in res.nodes}
    deadline = time.monotonic() + 30
    while _shim_processes(shims.dir) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _shim_processes(shims.dir) == []
    # the steps were cancelled by name (scancel --name): Slurm lets them go within KillWait
    deadline = time.monotonic() + 60
    while "nodegate-xn" in c.run(["squeue", "-h", "-o", "%j %T"]).stdout and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "nodegate-xn" not in c.run(["squeue", "-h", "-o", "%j %T"]).stdout
