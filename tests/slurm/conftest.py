"""Fixtures for examples/slurm on a real Slurm: the simulated fleet (node roots + sshd), a SlurmCluster
with one slurmd per node, the SSH run of the fleet and one sbatch of examples/slurm/collect.sbatch.

Both runs judge the same node roots: the SSH run through sshd (ChrootDirectory), the Slurm job
through ``nodegate-collect --root <node root>`` in one task per Slurm node. Two nodes fail on
purpose: LOST's slurmd is killed after the cluster is up (its task never starts; the SSH run has
it unreachable) and NOROOT has no root (the probe cannot run; unreachable in the SSH run too).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.bench.helpers import ROOT, junit_cases, run_suite
from tools.fleet import Fleet, load_profile, sshd_available
from tools.slurm import SlurmCluster, SlurmUnavailable, slurm_available

SBATCH = ROOT / "examples" / "slurm" / "collect.sbatch"

#: Slurm node name -> fleet profile: a healthy node, a per-GPU FAIL, a node FAIL, a node whose
#: GPUs cannot be read (ERRORs), a GPU fallen off the bus. All five share one spec (the H100 one).
PROFILES = {"gpu01": "h100-535-healthy", "gpu02": "pcie-gen4-slot", "gpu03": "persistenced-inactive",
            "gpu04": "driver-library-mismatch", "gpu05": "gpu-fallen-off-bus"}
LOST = "gpu06"    # slurmd killed: allocated, its task launch fails, no bundle
NOROOT = "gpu07"  # no node root: nodegate-collect exits 3 with a bundle naming the error
NODES = [*PROFILES, LOST, NOROOT]

NEEDS = sshd_available() or slurm_available()


@dataclass
class SlurmRun:
    """One sbatch of the example: its job record, stdout, run directory and figures."""

    job_id: str
    job: dict[str, str]
    stdout: str
    run_dir: Path
    wall_s: float           # submit -> job ended, measured here
    slurmd_killed: str


@pytest.fixture(scope="module")
def spec() -> dict:
    return load_profile("h100-535-healthy").spec


@pytest.fixture(scope="module")
def fleet(spec):
    if NEEDS is not None:
        pytest.skip(f"Slurm example cannot run here: {NEEDS}")
    f = Fleet(spec=spec)
    for node, prof in PROFILES.items():
        f.add(prof, node)
    f.add_unreachable(LOST)
    f.add_unreachable(NOROOT)
    with f:
        yield f


@pytest.fixture(scope="module")
def ssh_run(fleet, tmp_path_factory) -> dict[str, dict]:
    """JUnit cases of the SSH run of the fleet (inventory order; LOST and NOROOT unreachable)."""
    out = tmp_path_factory.mktemp("ssh")
    r = run_suite("--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
                  reports=out)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]  # the fleet has failing nodes
    return junit_cases(out / "junit.xml")


@pytest.fixture(scope="module")
def slurm(fleet):
    try:
        with SlurmCluster(NODES) as c:
            yield c
    except SlurmUnavailable as e:
        pytest.skip(f"Slurm daemons did not start here: {e}")


def job_env(**extra: str) -> dict[str, str]:
    """The submitting shell's environment without the outer pytest's variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(extra)
    return env


def submit(slurm: SlurmCluster, fleet: Fleet, spec: dict, base: Path, *sbatch_args: str,
           killed: str = "") -> SlurmRun:
    """``sbatch ARGS examples/slurm/collect.sbatch`` as an operator would submit it, from ``base``
    (the job's output file and run directory land there); waits until the script has ended."""
    spec_file = base / "spec.yml"
    spec_file.write_text(yaml.safe_dump({"nodegate": spec}, sort_keys=False))
    run_dir = base / "run"
    env = job_env(SLURM_CONF=str(slurm.conf), NODEGATE_SRC=str(ROOT), NODEGATE_VENV=sys.prefix,
                  NODEGATE_SPEC=str(spec_file), NODEGATE_ROOT=str(fleet.workdir / "nodes" / "%N"),
                  RUN_DIR=str(run_dir), NODEGATE_COMMAND_TIMEOUT="10", NODEGATE_PROBE_TIMEOUT="120",
                  # word-split into srun's options (srun refuses a wrong one: the step would not run)
                  NODEGATE_SRUN_ARGS="--cpus-per-task=1 --job-name=nodegate-collect")
    t0 = time.monotonic()
    job_id = slurm.sbatch(SBATCH, *sbatch_args, "--chdir", str(base), env=env)
    job = slurm.wait_job(job_id, timeout=500)
    wall = time.monotonic() - t0
    out = base / f"nodegate-{job_id}.out"
    return SlurmRun(job_id, job, out.read_text() if out.exists() else "", run_dir, wall, killed)


@pytest.fixture(scope="module")
def slurm_run_collected(fleet, slurm, spec, tmp_path_factory) -> SlurmRun:
    """``sbatch -w gpu[01-05]``: the five nodes with a root, every slurmd up (submitted first: a job
    after the one with a dead node waits until Slurm gives up on that node's clean-up)."""
    return submit(slurm, fleet, spec, tmp_path_factory.mktemp("slurm5"), "-w", "gpu[01-05]")


@pytest.fixture(scope="module")
def slurm_run(slurm_run_collected, fleet, slurm, spec, tmp_path_factory) -> SlurmRun:
    """``sbatch -N 7``, LOST's slurmd killed just before (slurmctld still has it idle, so the job
    gets it and the task launch there fails)."""
    slurm.kill_slurmd(LOST)
    return submit(slurm, fleet, spec, tmp_path_factory.mktemp("slurm"), "-N", str(len(NODES)), killed=LOST)
