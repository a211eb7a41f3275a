"""A pid file left by a daemon that died names a pid that may be another process's by now: stopping
the simulated fleet's sshd (tools/fleet/sshd.py) or the test Slurm (tools/slurm/cluster.py) signals
that pid only while it is still the daemon (its command line names the daemon's config or work
directory: tools.fleet.owner.runs).

Found by a `make test` in a bare chroot (issue 40.7): its pytest controller died of a SIGTERM from
outside mid-run. tests/slurm SIGKILLs a slurmd (``kill_slurmd``: a node that crashes), whose pid file
stayed; ``SlurmCluster.stop`` then SIGTERMed the pid it named, and on this host pids wrap at 32768
within minutes. Needs nothing installed: the daemons are stand-in processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tools.fleet.owner import runs
from tools.fleet.sshd import SshdGroup
from tools.slurm.cluster import SlurmCluster


def _sleeper(*argv: str) -> subprocess.Popen:
    """A process that sleeps, with ``argv`` on its command line (a daemon's -f CONF, or nothing)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *argv])


def _ended(p: subprocess.Popen, timeout: float = 20) -> int | None:
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture
def procs():
    started: list[subprocess.Popen] = []
    yield lambda *argv: started.append(_sleeper(*argv)) or started[-1]
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(10)


def _cmdline_has(pid: int, marker: str, timeout: float = 10) -> None:
    # the child's /proc/<pid>/cmdline is the interpreter's own until exec has run
    end = time.monotonic() + timeout
    while not runs(pid, marker) and time.monotonic() < end:
        time.sleep(0.02)


def test_runs_is_true_only_for_the_process_whose_command_line_names_the_marker(procs, tmp_path):
    conf = str(tmp_path / "sshd-0.conf")
    ours, other = procs("-f", conf), procs()
    _cmdline_has(ours.pid, conf)
    assert runs(ours.pid, conf)
    assert not runs(other.pid, conf)
    ours.kill()
    ours.wait(10)
    assert not runs(ours.pid, conf)      # gone (reaped): no /proc entry


def test_sshd_stop_leaves_alone_a_process_that_reused_the_pid_of_its_pid_file(procs, tmp_path):
    victim = procs()
    g = SshdGroup(0, tmp_path)
    g.pidfile.write_text(f"{victim.pid}\n")     # sshd SIGKILLed; its pid now another process's
    g.stop()
    assert _ended(victim, 1) is None, "stop() signalled a process that is not its sshd"
    assert g.pid is None and not g.pidfile.exists()


def test_sshd_stop_still_stops_its_own_sshd(procs, tmp_path):
    g = SshdGroup(0, tmp_path)
    sshd = procs("-f", str(g.conf), "-E", str(g.log))
    _cmdline_has(sshd.pid, str(g.conf))
    g.pidfile.write_text(f"{sshd.pid}\n")
    g.stop()
    assert _ended(sshd) == -15      # SIGTERM


def test_slurm_stop_leaves_alone_processes_that_reused_its_daemons_pids(procs, tmp_path):
    c = SlurmCluster(["gpu01", "gpu02"], workdir=tmp_path / "slurm")
    victims = {c.slurmd_pidfile("gpu01"): procs(), c.workdir / "run" / "slurmctld.pid": procs(),
               c.workdir / "munge" / "munged.pid": procs()}
    for pf, p in victims.items():
        pf.parent.mkdir(parents=True, exist_ok=True)
        pf.write_text(f"{p.pid}\n")
    c.stop()
    assert all(_ended(p, 1) is None for p in victims.values()), "stop() signalled a process not of the cluster"
    assert not c.workdir.exists()


def test_slurm_stop_still_stops_its_own_daemons(procs, tmp_path):
    c = SlurmCluster(["gpu01"], workdir=tmp_path / "slurm")
    (c.workdir / "run").mkdir(parents=True)
    slurmd = procs("-f", str(c.conf), "-N", "gpu01")
    _cmdline_has(slurmd.pid, str(c.workdir))
    c.slurmd_pidfile("gpu01").write_text(f"{slurmd.pid}\n")
    c.stop()
    assert _ended(slurmd) == -15


def test_kill_slurmd_removes_the_pid_file_of_the_slurmd_it_killed(procs, tmp_path):
    c = SlurmCluster(["gpu01", "gpu02"], workdir=tmp_path / "slurm")
    (c.workdir / "run").mkdir(parents=True)
    slurmd = procs("-f", str(c.conf), "-N", "gpu02")
    _cmdline_has(slurmd.pid, str(c.conf))
    c.slurmd_pidfile("gpu02").write_text(f"{slurmd.pid}\n")
    c.kill_slurmd("gpu02")
    assert _ended(slurmd) == -9
    assert not c.slurmd_pidfile("gpu02").exists()
    other = procs()
    c.slurmd_pidfile("gpu01").write_text(f"{other.pid}\n")
    with pytest.raises(RuntimeError, match="not this cluster's slurmd"):
        c.kill_slurmd("gpu01")
    assert _ended(other, 1) is None
    assert os.path.exists(f"/proc/{other.pid}")
