"""``nodegate --replay DIR --crossnode FILE --crossnode-live`` with ``launcher: srun``: the Slurm
fan-out (examples/slurm: each node's bundle from nodegate-collect, then one report run inside
the allocation) with the phase launched through the real ``srun --mpi=pmix`` of tools/slurm;
a later ``--replay`` re-judges it without launching; a partition that does not exist is an
ERROR naming it with every per-node result kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tools.mpi import build_shims, mpi_unavailable
from tools.slurm import slurm_available

from .test_slurm_srun import PmixCluster
from .helpers import results

WHY = slurm_available() or mpi_unavailable()
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"Slurm with Open MPI cannot run here: {WHY}")

ROOT = Path(__file__).resolve().parents[2]
NODES = ["x1", "x2", "x3", "x4"]
SAMPLE = ROOT / "inventories" / "samples" / "fleet" / "h100-535-healthy"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    shims = build_shims(tmp_path_factory.mktemp("shims"))
    with PmixCluster(NODES, cpus=2) as c:
        yield c, shims


def collected(tmp: Path) -> Path:
    """What nodegate-collect leaves for each node of the allocation: the sample H100 bundle as x1..x4,
    each with its own boot and machine id (same length: meta.json's sizes still hold)."""
    out = tmp / "bundles"
    for i, n in enumerate(NODES):
        d = out / n
        shutil.copytree(SAMPLE, d)
        for f in ("meta.boot_id.out", "meta.machine_id.out"):
            t = (d / f).read_text()
            (d / f).write_text(t[:-3] + f"{i:02d}" + t[-1:])
        meta = json.loads((d / "meta.json").read_text())
        meta["node"] = n
        (d / "meta.json").write_text(json.dumps(meta))
    return out


def spec(tmp: Path, shims, faults: str = "", **kw) -> Path:
    (tmp / "faults").write_text(faults)
    env = {"NODEGATE_FAULTS": str(tmp / "faults"), "OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
           "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_pml": "ob1", "OMPI_MCA_mtl": "^psm,psm2,ofi"}
    sec = {"launcher": "srun", "fabric": "ib-ndr400", "min_bytes": "1G", "max_bytes": "2G", "job_timeout_s": 60,
           "ranks_per_node": 2, "nccl_tests_dir": str(shims.dir), "floors": {"alltoall_busbw_gbs": 300.0}, "env": env}
    sec.update(kw)
    p = tmp / "crossnode.yaml"
    p.write_text(yaml.safe_dump({"crossnode": sec}))
    return p


def nodegate(args: list[str], reports: Path, conf: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--reports-dir", str(reports),
           *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SLURM_CONF": str(conf)})


def node_outcomes(res: dict) -> dict[str, str]:
    return {v["node"]: v["outcome"] for v in res.values() if v["check_id"] == "NG-XN-001"}


def test_the_slurm_fan_out_launches_through_srun_and_a_replay_rejudges_it(cluster, tmp_path):
    c, shims = cluster
    b = collected(tmp_path)
    sp = spec(tmp_path, shims, "slow_node x2 0.5\n")
    r = nodegate(["--replay", str(b), "--crossnode", str(sp), "--crossnode-live", "--crossnode-run-id", "s1"],
                 tmp_path / "r1", c.conf)
    res = results(tmp_path / "r1")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]
    assert node_outcomes(res) == {"x1": "pass", "x2": "fail", "x3": "pass", "x4": "pass"}
    jobs = [v for k, v in res.items() if k.startswith("test_crossnode_job[")]
    assert jobs and all("via srun" in v["message"] for v in jobs)
    assert (b / "crossnode" / "s1" / "result.json").is_file()
    assert res["test_driver_stack[x1]"]["outcome"] == "pass"
    again = nodegate(["--replay", str(b), "--crossnode", str(sp)], tmp_path / "r2", c.conf)
    assert again.returncode == 1
    assert node_outcomes(results(tmp_path / "r2")) == node_outcomes(res)


def test_a_partition_that_does_not_exist_is_an_error_naming_it(cluster, tmp_path):
    c, shims = cluster
    b = collected(tmp_path)
    r = nodegate(["--replay", str(b), "--crossnode", str(spec(tmp_path, shims, partition="nosuchpart")),
                  "--crossnode-live"], tmp_path / "r", c.conf)
    res = results(tmp_path / "r")
    assert r.returncode == 1
    assert set(node_outcomes(res).values()) == {"error"}
    assert all("nosuchpart" in v["message"] for v in res.values() if v["check_id"] == "NG-XN-001")
    assert res["test_driver_stack[x1]"]["outcome"] == "pass"        # the per-node results are kept
