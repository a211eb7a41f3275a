"""A real Slurm on this machine: munged + slurmctld + one slurmd per node name, all on loopback.

Debian's ``slurm-wlm`` (22.05) and ``munge`` run without systemd (testbed notes): munged as the
``munge`` user with its own key and socket, then ``slurmctld -f CONF`` and ``slurmd -f CONF -N
<node>`` as root. Several slurmd share this host: each node has ``NodeHostname`` = this host,
``NodeAddr=127.0.0.1`` and a port of its own, so ``sbatch -N 7`` really allocates seven Slurm
nodes and ``srun --ntasks-per-node=1`` starts one task on each (``SLURMD_NODENAME`` = the node).
Nothing outside ``workdir`` is used: the munge key, socket, state, spool, pid and log files all
live there, the ports are picked free, so the system's own /etc/slurm and /etc/munge are untouched.

Usage::

    with SlurmCluster(["gpu01", "gpu02"]) as c:
        c.run(["sbatch", "--wait", "-N", "2", "job.sh"])      # env has SLURM_CONF
        c.kill_slurmd("gpu02")                                 # a node that dies

``start()`` raises SlurmUnavailable with the reason (and the daemon's log) when a daemon does not
come up; ``stop()`` cancels jobs, stops every daemon by its pid file, ends slurmstepd processes
left holding files under ``workdir`` and removes it.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

from tools.fleet.owner import runs

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "sinfo", "squeue", "scancel", "munge", "unmunge")


class SlurmUnavailable(RuntimeError):
    """Slurm cannot run here; the message says why (missing package, a daemon that did not start)."""


def slurm_available() -> str | None:
    """None when a SlurmCluster can start here, else the reason (not root, package missing)."""
    if os.geteuid() != 0:
        return "needs root (slurmd and munged are started as root / the munge user)"
    missing = [b for b in DAEMONS + CLIENTS if _which(b) == b]
    if missing:
        return f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)"
    try:
        pwd.getpwnam("munge")
    except KeyError:
        return "no `munge` user (created by Debian's munge package)"
    return None


def _which(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


def _free_ports(n: int) -> list[int]:
    """``n`` distinct free TCP ports on 127.0.0.1 (held together while drawn, so no repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"({path.name}: no log)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own exited child not yet reaped) counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        return False


class SlurmCluster:
    """One Slurm cluster (controller and ``nodes``) on this machine; see the module docstring.

    ``nodes``: Slurm node names (each gets a slurmd); ``cpus``: CPUs declared per node (1: one
    ``--exclusive`` task per node); ``workdir``: default a new /tmp/nodegate-slurm-* (0755, as
    munged requires every component of its socket path to be searchable by everyone)."""

    def __init__(self, nodes: Sequence[str], workdir: Path | str | None = None, *, cpus: int = 1,
                 cluster: str = "nodegate-test"):
        if not nodes:
            raise ValueError("a cluster needs at least one node")
        self.nodes = list(nodes)
        self.cpus = cpus
        self.cluster = cluster
        # /tmp, not $TMPDIR: a private (0700) TMPDIR would hide munged's socket from everyone else
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="nodegate-slurm-", dir="/tmp"))
        self.host = socket.gethostname().split(".")[0]
        self.started = False

    # ------------------------------------------------------------------ paths
    @property
    def conf(self) -> Path:
        return self.workdir / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.workdir / "munge" / "munge.socket"

    def slurmd_pidfile(self, node: str) -> Path:
        return self.workdir / "run" / f"slurmd-{node}.pid"

    def slurmd_log(self, node: str) -> Path:
        return self.workdir / "log" / f"slurmd-{node}.log"

    @property
    def env(self) -> dict[str, str]:
        """The environment for Slurm's clients (sbatch, srun, scontrol ...): SLURM_CONF set."""
        return dict(os.environ, SLURM_CONF=str(self.conf))

    # ------------------------------------------------------------------ start
    def start(self) -> "SlurmCluster":
        try:
            self._layout()
            self._start_munged()
            self._write_conf()
            self._start(["slurmctld", "-f", str(self.conf)], self.workdir / "run" / "slurmctld.pid",
                        self.workdir / "log" / "slurmctld.log")
            for n in self.nodes:
                (self.workdir / "spool" / n).mkdir(parents=True, exist_ok=True)
                self._start(["slurmd", "-f", str(self.conf), "-N", n], self.slurmd_pidfile(n), self.slurmd_log(n))
            self.wait_state(self.nodes, "idle", timeout=60)
            self.started = True
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> "SlurmCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _layout(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir, 0o755)
        for d in ("state", "spool", "run", "log"):
            (self.workdir / d).mkdir(exist_ok=True)
        mu = pwd.getpwnam("munge")
        sock_dir, priv = self.workdir / "munge", self.workdir / "munge" / "priv"
        for d, mode in ((sock_dir, 0o755), (priv, 0o700)):
            d.mkdir(exist_ok=True)
            os.chown(d, mu.pw_uid, mu.pw_gid)
            os.chmod(d, mode)
        key = priv / "munge.key"
        # a key of our own (munge accepts 32 bytes to 1 MiB): /etc/munge/munge.key is never read
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, mu.pw_uid, mu.pw_gid)

    def _start_munged(self) -> None:
        priv = self.workdir / "munge" / "priv"
        pidfile = self.workdir / "munge" / "munged.pid"
        argv = [_which("munged"), f"--socket={self.munge_socket}", f"--key-file={priv / 'munge.key'}",
                f"--pid-file={pidfile}", f"--log-file={priv / 'munged.log'}", f"--seed-file={priv / 'munged.seed'}"]
        r = subprocess.run(argv, user="munge", group="munge", extra_groups=[], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise SlurmUnavailable(f"munged did not start (exit {r.returncode}): {r.stderr.strip()}\n"
                                   + _tail(priv / "munged.log"))
        self._wait_file(self.munge_socket, "munged", priv / "munged.log")
        cred = subprocess.run([_which("munge"), "-n", "-S", str(self.munge_socket)], capture_output=True, text=True,
                              timeout=10)
        check = subprocess.run([_which("unmunge"), "-S", str(self.munge_socket)], input=cred.stdout,
                               capture_output=True, text=True, timeout=10)
        if check.returncode != 0:
            raise SlurmUnavailable(f"munge credential round trip failed: {check.stderr.strip()}")

    def _write_conf(self) -> None:
        w = self.workdir
        ctld_port, *node_ports = _free_ports(1 + len(self.nodes))
        lines = [
            f"ClusterName={self.cluster}",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={ctld_port}",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.munge_socket}",
            "SlurmUser=root", "SlurmdUser=root",
            # no cgroups on these VMs (testbed notes): process tracking by /proc, no task binding
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU",
            "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "JobCompType=jobcomp/none",
            # SlurmdTimeout 600: slurmctld pings a node not heard from for SlurmdTimeout/3 (200 s), so a
            # slurmd killed now (kill_slurmd) is still believed idle by the job submitted right after
            "ReturnToService=2", "SlurmdTimeout=600", "MessageTimeout=10", "KillWait=5", "InactiveLimit=0",
            f"StateSaveLocation={w / 'state'}", f"SlurmdSpoolDir={w / 'spool'}/%n",
            f"SlurmctldPidFile={w / 'run' / 'slurmctld.pid'}", f"SlurmdPidFile={w / 'run'}/slurmd-%n.pid",
            f"SlurmctldLogFile={w / 'log' / 'slurmctld.log'}", f"SlurmdLogFile={w / 'log'}/slurmd-%n.log",
        ]
        for n, port in zip(self.nodes, node_ports):
            lines.append(f"NodeName={n} NodeHostname={self.host} NodeAddr=127.0.0.1 Port={port} CPUs={self.cpus}")
        lines.append("PartitionName=nodegate Nodes=ALL Default=YES MaxTime=60 State=UP")
        self.conf.write_text("\n".join(lines) + "\n")

    def _start(self, argv: list[str], pidfile: Path, log: Path) -> None:
        r = subprocess.run([_which(argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise SlurmUnavailable(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}\n{_tail(log)}")
        self._wait_file(pidfile, argv[0], log)

    @staticmethod
    def _wait_file(path: Path, what: str, log: Path, timeout: float = 20) -> None:
        end = time.monotonic() + timeout
        while not path.exists():
            if time.monotonic() > end:
                raise SlurmUnavailable(f"{what} did not come up within {timeout:.0f} s (no {path.name}):\n{_tail(log)}")
            time.sleep(0.1)

    # ------------------------------------------------------------------ use
    def run(self, argv: Sequence[str], timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        """Run a Slurm client (``argv[0]`` one of sbatch, scontrol, ...) with SLURM_CONF; text output."""
        return subprocess.run([_which(argv[0]), *argv[1:]], env=kw.pop("env", self.env), capture_output=True,
                              text=True, timeout=timeout, **kw)

    def node_states(self) -> dict[str, str]:
        """{node: state} from ``sinfo -N`` (idle, alloc, down*, comp* ...)."""
        r = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=20)
        return dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)

    def wait_state(self, nodes: Sequence[str], state: str, timeout: float = 60) -> None:
        """Wait until every one of ``nodes`` shows ``state`` in sinfo; SlurmUnavailable otherwise."""
        end = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < end:
            states = self.node_states()
            if all(states.get(n) == state for n in nodes):
                return
            time.sleep(0.5)
        logs = "\n".join(_tail(self.slurmd_log(n), 5) for n in nodes if states.get(n) != state)
        raise SlurmUnavailable(f"nodes not {state} within {timeout:.0f} s: {states}\n"
                               f"{_tail(self.workdir / 'log' / 'slurmctld.log', 10)}\n{logs}")

    def job(self, job_id: str) -> dict[str, str]:
        """``scontrol show job -o ID`` as {key: value} (JobState, ExitCode, NodeList, RunTime ...)."""
        r = self.run(["scontrol", "show", "job", "-o", str(job_id)], timeout=20)
        out: dict[str, str] = {}
        for tok in r.stdout.split():
            k, sep, v = tok.partition("=")
            if sep:
                out[k] = v
        return out

    #: JobState values of a job that has ended (scontrol; a COMPLETING job still has nodes cleaning up)
    ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
             "DEADLINE", "PREEMPTED")

    def sbatch(self, script: Path | str, *args: str, env: dict[str, str] | None = None) -> str:
        """Submit ``script`` (``sbatch --parsable ARGS SCRIPT``); returns the job id. RuntimeError
        with sbatch's message when it refuses the job."""
        r = self.run(["sbatch", "--parsable", *args, str(script)], env=env or self.env, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"sbatch exited {r.returncode}: {r.stderr.strip()}")
        return r.stdout.strip().split(";")[0]

    def wait_job(self, job_id: str, timeout: float = 300) -> dict[str, str]:
        """Poll ``scontrol show job`` (every 0.5 s; ``sbatch --wait`` backs off to 10 s) until the
        batch script has ended: an ENDED state, or COMPLETING (the exit code is known; a node that
        died keeps the job completing until slurmctld gives up on it). Returns the record;
        TimeoutError naming the state it was left in."""
        end = time.monotonic() + timeout
        rec: dict[str, str] = {}
        while time.monotonic() < end:
            rec = self.job(job_id)
            if rec.get("JobState") in self.ENDED + ("COMPLETING",):
                return rec
            time.sleep(0.5)
        raise TimeoutError(f"job {job_id} not ended within {timeout:.0f} s: {rec.get('JobState')}")

    def kill_slurmd(self, node: str) -> None:
        """SIGKILL ``node``'s slurmd (a node that crashes): slurmctld still believes it idle until
        SlurmdTimeout (600 s here), so a job submitted now gets it and its task launch fails."""
        pf = self.slurmd_pidfile(node)
        pid = int(pf.read_text().split()[0])
        if not runs(pid, str(self.conf)):
            raise RuntimeError(f"{pf} names pid {pid}, which is not this cluster's slurmd")
        os.kill(pid, signal.SIGKILL)
        end = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < end:
            time.sleep(0.05)
        pf.unlink(missing_ok=True)      # SIGKILLed, slurmd cannot remove it: stop() must not signal its pid

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Cancel jobs, stop slurmd/slurmctld/munged by pid file, end leftovers, remove workdir."""
        if self.conf.exists() and (self.workdir / "run" / "slurmctld.pid").exists():
            try:
                ids = self.run(["squeue", "-h", "-o", "%i"], timeout=10).stdout.split()
                if ids:
                    self.run(["scancel", "--quiet", *ids], timeout=15)
                end = time.monotonic() + 15
                # a job left COMPLETING by a dead slurmd stays until slurmctld gives up: not waited for
                while time.monotonic() < end and self.run(["squeue", "-h", "-t", "PD,CF,R", "-o", "%i"],
                                                          timeout=10).stdout.strip():
                    time.sleep(0.5)
            except (OSError, subprocess.SubprocessError):
                pass
        pidfiles = [self.slurmd_pidfile(n) for n in self.nodes]
        pidfiles += [self.workdir / "run" / "slurmctld.pid", self.workdir / "munge" / "munged.pid"]
        for pf in pidfiles:
            self._stop_pidfile(pf)
        self._kill_holders()
        self.started = False
        shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_pidfile(self, pf: Path) -> None:
        """SIGTERM (SIGKILL after 10 s) the daemon ``pf`` names, if that pid is still one of this
        cluster's daemons (its command line names a file under ``workdir``): a daemon that died
        leaves its pid file, and its pid may be another process's by now (tools.fleet.owner.runs)."""
        try:
            pid = int(pf.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return
        ours = str(self.workdir)
        if not runs(pid, ours):
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        end = time.monotonic() + 10
        while _alive(pid):
            if time.monotonic() > end:
                try:
                    if runs(pid, ours):
                        os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                break
            time.sleep(0.05)

    def _kill_holders(self) -> None:
        """SIGKILL processes holding a file under workdir (a slurmstepd whose slurmd is gone keeps
        its log open): only processes of this cluster, found by their open files."""
        base = str(self.workdir.resolve()) + "/"
        for p in Path("/proc").iterdir():
            if not p.name.isdigit() or int(p.name) == os.getpid():
                continue
            try:
                fds = [os.readlink(f) for f in (p / "fd").iterdir()]
            except OSError:
                continue
            if any(f.startswith(base) for f in fds):
                try:
                    os.kill(int(p.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass
