"""Existing launchers, never a collective of nodegate's own (issue 38 item 3).

- ``MpirunLauncher``: Open MPI / HPC-X ``mpirun`` from this host over SSH with a generated
  hostfile: the agentless default (ClusterKit, GCM, CVS). Its SSH is ours: batch mode, host keys
  checked against nodegate's known_hosts, the inventory's key; no tree spawn (the nodes need no
  SSH to each other).
- ``SrunLauncher``: ``srun --mpi=pmix`` (or ``pmi2``) where the site has Slurm (Azure, Nebius);
  each job named ``nodegate-xn-<job id>`` so an interruption ``scancel``s exactly its steps.
- ``SshPairLauncher``: perftest's server and client, each started over nodegate's SSH transport
  (known_hosts, deadlines) with ``timeout`` on the node as well: deadlines on both sides.
- the Kubernetes MPIJob manifest: nodegate/crossnode/k8s.py (written, not applied).

Every launch runs in a process group of its own under a ``nodegate.transport.Deadline``: the
deadline or an interruption (Ctrl-C sets ``stop``) sends SIGTERM to the group (mpirun and srun
then end their remote processes: mpirun tells its daemons, srun cancels the step), and SIGKILL
``grace_s`` later; ``cancel()`` then cleans up what could outlive it (scancel by job name,
perftest processes by the pid file each one wrote).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..transport import Deadline, HostKeyPolicy, Target, TransportError
from ..transport.process import popen_stream
from .evidence import Item, LaunchRecord

#: seconds between SIGTERM and SIGKILL of a launcher's process group
GRACE_S = 5.0
_SSH_ERR = re.compile(r"ssh: (?:connect to host (?P<h1>\S+) port \d+: (?P<m1>[^\r\n]+)|"
                      r"Could not resolve hostname (?P<h2>\S+?): (?P<m2>[^\r\n]+))")
_HOSTKEY = re.compile(r"Host key verification failed")


@dataclass
class LaunchRequest:
    """One job to launch: ``hosts`` (node names, rank order), their ``addresses`` (what the
    launcher connects to; the Slurm node name for srun), ``ranks_per_node``, the payload
    ``argv`` and ``env``, the deadline and the job's evidence directory (the hostfile's home)."""

    job_id: str
    hosts: list[str]
    addresses: dict[str, str]
    ranks_per_node: int
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    deadline_s: float = 240.0
    workdir: Path | None = None


def _item(r) -> Item:
    status = "timeout" if r.timed_out else "ok"
    return Item(r.stdout, r.stderr, r.rc, status, round(r.exec_s, 3))


def _record(launcher, req: "LaunchRequest") -> LaunchRecord:
    rec = LaunchRecord(launcher.name, hosts=list(req.hosts), env=dict(req.env))
    rec.setup_error = launcher.available() or ""
    return rec


def _execute(rec: LaunchRecord, req: "LaunchRequest", stop: threading.Event | None,
             env: dict[str, str] | None = None) -> None:
    """Run ``rec.command`` in a process group of its own under the job's deadline; fill ``rec``.
    ``env``: the launcher process's environment (None: nodegate's)."""
    t0 = time.monotonic()
    try:
        r = _run_group(rec.command, req.deadline_s, stop, env=env)
    except TransportError as e:   # the launcher binary could not be started
        rec.setup_error = str(e)
        return
    rec.duration_s = time.monotonic() - t0
    rec.items["launch"] = _item(r)
    rec.timed_out = bool(r.timed_out and not (stop and stop.is_set()))
    rec.interrupted = r.interrupted or ("stopped" if stop is not None and stop.is_set() else "")


def _run_group(argv: list[str], deadline_s: float, stop: threading.Event | None, grace_s: float = GRACE_S,
               env: dict[str, str] | None = None):
    with Deadline(deadline_s, label="job", stop=stop) as dl:
        return popen_stream(argv, b"", dl, grace_s=grace_s, env=env)


class MpirunLauncher:
    """``mpirun`` over SSH. ``ssh_user``/``identity_file``/``known_hosts``/``ssh_port``: how
    mpirun's ssh reaches the nodes (nodegate's own policy: BatchMode, StrictHostKeyChecking=yes);
    ``extra_args``: further mpirun arguments (``--mca btl_tcp_if_include ib0``...)."""

    name = "mpirun"

    def __init__(self, *, mpirun: str = "mpirun", ssh_user: str | None = None, identity_file: str | None = None,
                 known_hosts: str | None = None, ssh_port: int | None = None, connect_timeout: float = 10.0,
                 extra_args: list[str] | None = None, allow_run_as_root: bool | None = None):
        self.mpirun = mpirun
        self.ssh_user, self.identity_file, self.known_hosts = ssh_user, identity_file, known_hosts
        self.ssh_port = ssh_port
        self.connect_timeout = connect_timeout
        self.extra_args = list(extra_args or [])
        self.allow_root = (os.geteuid() == 0) if allow_run_as_root is None else allow_run_as_root

    def ssh_argv(self) -> list[str]:
        a = ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ForwardAgent=no",
             "-o", "ForwardX11=no", "-o", f"ConnectTimeout={int(self.connect_timeout)}", "-o", "LogLevel=ERROR"]
        if self.known_hosts:
            a += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.identity_file:
            a += ["-i", self.identity_file]
        if self.ssh_user:
            a += ["-l", self.ssh_user]
        if self.ssh_port:
            a += ["-p", str(self.ssh_port)]
        return a

    def available(self) -> str | None:
        """Why this launcher cannot run here, or None."""
        if shutil.which(self.mpirun) is None:
            return f"mpirun not found ({self.mpirun!r} is not on PATH): install Open MPI or HPC-X on this host"
        if shutil.which("ssh") is None:
            return "ssh (OpenSSH client) not found on this host: mpirun starts its daemons with it"
        return None

    def preflight(self, addresses: dict[str, str], stop: threading.Event | None = None) -> dict[str, str]:
        """Nodes mpirun's ssh cannot reach (``ssh <node> true``, in parallel): node -> why."""
        def one(item):
            node, addr = item
            try:
                r = _run_group(self.ssh_argv() + ["--", addr, "true"], self.connect_timeout + 5, stop, grace_s=0)
            except TransportError as e:
                return node, str(e)
            if r.rc == 0:
                return node, ""
            msg = r.stderr.decode("utf-8", "replace").strip().splitlines()
            return node, (msg[-1] if msg else f"ssh exited {r.rc}")[:300] if not r.timed_out else "ssh timed out"
        with ThreadPoolExecutor(max_workers=min(32, max(1, len(addresses)))) as ex:
            res = dict(ex.map(one, addresses.items()))
        return {n: f"unreachable over SSH from the launcher ({addresses[n]}): {w}" for n, w in res.items() if w}

    def command(self, req: LaunchRequest, hostfile: Path) -> list[str]:
        n = len(req.hosts) * req.ranks_per_node
        agent = " ".join(shlex.quote(a) for a in self.ssh_argv())
        argv = [self.mpirun]
        if self.allow_root:
            argv.append("--allow-run-as-root")
        argv += ["--hostfile", str(hostfile), "-np", str(n), "--map-by", f"ppr:{req.ranks_per_node}:node",
                 "--bind-to", "none", "--mca", "plm_rsh_agent", agent, "--mca", "plm_rsh_no_tree_spawn", "1",
                 *self.extra_args]
        for k, v in sorted(req.env.items()):
            argv += ["-x", f"{k}={v}"]
        return argv + req.argv

    def launch(self, req: LaunchRequest, stop: threading.Event | None = None) -> LaunchRecord:
        rec = _record(self, req)
        if rec.setup_error:
            return rec
        # hosts in rank order, one slot per rank; written in a private directory (never through
        # the evidence tree: safeio writes the job's copy there) and removed after the launch
        text = "".join(f"{req.addresses[h]} slots={req.ranks_per_node}\n" for h in req.hosts)
        tmp = tempfile.mkdtemp(prefix="nodegate-xn-")
        hostfile = Path(tmp) / "hostfile"
        try:
            hostfile.write_text(text)
            rec.extra_files["hostfile"] = text.encode()
            rec.command = self.command(req, hostfile)
            # mpirun's session directory goes under the job's private TMPDIR: concurrent mpiruns
            # on one host race on the shared <TMPDIR>/ompi.<host>.<uid> (one removes it as the other
            # creates its pid.N under it: "A call to mkdir was unable to create the desired
            # directory", open-mpi/ompi#8510), and the screen rounds run disjoint jobs at once.
            # TMPDIR reaches mpirun alone: its remote daemons keep their nodes' own.
            _execute(rec, req, stop, env={**os.environ, "TMPDIR": tmp})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        err = b"".join(it.stderr for it in rec.items.values()).decode("utf-8", "replace")
        for m in _SSH_ERR.finditer(err):
            host = m.group("h1") or m.group("h2")
            node = next((h for h, a in req.addresses.items() if a == host), host)
            rec.unreachable[node] = (m.group("m1") or m.group("m2")).strip()[:200]
        if _HOSTKEY.search(err) and not rec.unreachable:
            rec.unreachable["?"] = "Host key verification failed"
        return rec

    def cancel(self, job_ids: list[str]) -> None:
        """mpirun ends its daemons itself on SIGTERM; a daemon that loses mpirun kills its ranks."""


class SrunLauncher:
    """``srun --mpi=<mpi>`` inside a new allocation per job (``-N`` the job's nodes, by name).
    ``env_extra``: environment for srun itself (``SLURM_CONF``); the payload's ``env`` is exported
    to the tasks (``--export=ALL`` after setting it for srun)."""

    name = "srun"

    def __init__(self, *, srun: str = "srun", mpi: str = "pmix", partition: str | None = None,
                 extra_args: list[str] | None = None, env_extra: dict[str, str] | None = None, run_tag: str = "nodegate-xn"):
        self.srun, self.mpi, self.partition = srun, mpi, partition
        self.extra_args = list(extra_args or [])
        self.env_extra = dict(env_extra or {})
        self.tag = run_tag

    def available(self) -> str | None:
        if shutil.which(self.srun) is None:
            return f"srun not found ({self.srun!r} is not on PATH): this host is not a Slurm submit host"
        return None

    def _env_argv(self, env: dict[str, str]) -> list[str]:
        return ["env"] + [f"{k}={v}" for k, v in sorted({**self.env_extra, **env}.items())]

    def preflight(self, addresses: dict[str, str], stop: threading.Event | None = None) -> dict[str, str]:
        """Nodes Slurm does not know or will not run on (``sinfo -N``), and the partition: a
        partition that does not exist raises PhaseSetupError naming it."""
        sinfo = shutil.which("sinfo")
        if sinfo is None:
            return {}
        argv = self._env_argv({}) + ["sinfo", "-h", "-N", "-o", "%N %t"]
        if self.partition:
            argv += ["-p", self.partition]
        r = _run_group(argv, 30, stop, grace_s=0)
        out = r.stdout.decode("utf-8", "replace")
        if self.partition and r.rc == 0 and not out.strip():
            raise PhaseSetupError(f"Slurm partition {self.partition!r} does not exist (or has no nodes)")
        if r.rc != 0:
            err = r.stderr.decode("utf-8", "replace").strip()
            if "partition" in err.lower():
                raise PhaseSetupError(f"Slurm partition {self.partition!r} does not exist: {err[:200]}")
            return {}
        state = {}
        for ln in out.splitlines():
            parts = ln.split()
            if len(parts) >= 2:
                state[parts[0]] = parts[1]
        bad = {}
        for node, addr in addresses.items():
            st = state.get(addr)
            if st is None:
                bad[node] = f"Slurm knows no node {addr!r}" + (f" in partition {self.partition}" if self.partition else "")
            elif st.rstrip("*~#!%$@^-").lower() in ("down", "drain", "drained", "draining", "fail", "failing",
                                                      "unk", "unknown", "maint", "inval", "futr") or st.endswith("*"):
                bad[node] = f"Slurm node {addr} is {st}"
        return bad

    def command(self, req: LaunchRequest) -> list[str]:
        minutes = max(1, int((req.deadline_s + 59) // 60))
        argv = self._env_argv(req.env) + [self.srun, f"--mpi={self.mpi}", "-N", str(len(req.hosts)),
                                          f"--ntasks-per-node={req.ranks_per_node}",
                                          "--nodelist=" + ",".join(req.addresses[h] for h in req.hosts),
                                          f"--job-name={self.tag}-{req.job_id}", f"--time={minutes}",
                                          "--kill-on-bad-exit=1", "--export=ALL"]
        if self.partition:
            argv.append(f"--partition={self.partition}")
        return argv + self.extra_args + req.argv

    def launch(self, req: LaunchRequest, stop: threading.Event | None = None) -> LaunchRecord:
        rec = _record(self, req)
        if rec.setup_error:
            return rec
        rec.command = self.command(req)
        _execute(rec, req, stop)
        err = b"".join(it.stderr for it in rec.items.values()).decode("utf-8", "replace")
        low = err.lower()
        if "invalid partition" in low:
            rec.setup_error = f"Slurm partition {self.partition!r} does not exist ({err.strip().splitlines()[0][:200]})"
        elif "invalid node name" in low:
            rec.setup_error = f"Slurm refused the node list: {err.strip().splitlines()[0][:200]}"
        if rec.timed_out or rec.interrupted:
            self.cancel([req.job_id])
        return rec

    def cancel(self, job_ids: list[str]) -> None:
        """``scancel`` the jobs by name (srun SIGKILLed leaves its step to Slurm)."""
        if shutil.which("scancel") is None:
            return
        for j in job_ids:
            subprocess.run(self._env_argv({}) + ["scancel", f"--name={self.tag}-{j}"], capture_output=True,
                           timeout=30)


class PhaseSetupError(Exception):
    """The launcher cannot run the phase at all (missing, a partition that does not exist)."""


class SshPairLauncher:
    """A perftest pair: the server's and then the client's command, each in ONE exec over
    nodegate's SSH transport. ``targets``: node -> target URL (``paramiko://user@host:port?...``);
    ``hostkeys``: known_hosts policy. On the node each command runs as ``exec timeout -k 3 T cmd``
    after writing its PID to ``/tmp/nodegate-xn-<token>.pid`` (what ``cancel`` kills)."""

    name = "ssh"
    READY = (b"Waiting for client", b"waiting for client")

    def __init__(self, targets: dict[str, str], hostkeys: HostKeyPolicy | None = None, *,
                 connect_timeout: float = 10.0, ready_wait_s: float = 10.0):
        self.targets = dict(targets)
        self.hostkeys = hostkeys or HostKeyPolicy()
        self.connect_timeout = connect_timeout
        self.ready_wait_s = ready_wait_s
        self._pids: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def _script(self, argv: list[str], token: str, seconds: float) -> bytes:
        cmd = " ".join(shlex.quote(a) for a in argv)
        t = max(1, int(seconds))
        return (f"echo $$ > /tmp/nodegate-xn-{token}.pid\n"
                f"if command -v timeout >/dev/null 2>&1; then exec timeout -k 3 {t} {cmd}; else exec {cmd}; fi\n").encode()

    def _exec(self, node: str, argv: list[str], token: str, seconds: float, stop, on_data=None) -> Item:
        with self._lock:
            self._pids.setdefault(node, set()).add(token)
        t = Target(self.targets[node], hostkeys=self.hostkeys, connect_timeout=self.connect_timeout)
        t0 = time.monotonic()
        try:
            with t.node_deadline(seconds + 5, stop) as dl:
                r = t.run(self._script(argv, token, seconds), dl, seconds + 5, on_data=on_data)
        except TransportError as e:
            return Item(b"", str(e).encode(), None, "error", round(time.monotonic() - t0, 3))
        return _item(r)

    def run_pair(self, job_id: str, server: str, client: str, cmds: dict[str, list[str]], deadline_s: float,
                 stop: threading.Event | None = None) -> LaunchRecord:
        """bw then lat: each the server exec, then (once the server waits for its client, or
        after ``ready_wait_s``) the client exec; both bounded by ``deadline_s``."""
        rec = LaunchRecord(self.name, hosts=[server, client])
        rec.command = [" ".join(shlex.quote(a) for a in cmds[k]) for k in ("bw_server", "bw_client", "lat_server",
                                                                              "lat_client")]
        t0 = time.monotonic()
        for test in ("bw", "lat"):
            if stop is not None and stop.is_set():
                rec.interrupted = "stopped"
                break
            start = time.monotonic()
            left = max(1.0, deadline_s - (start - t0))
            ready = threading.Event()
            out: dict[str, Item] = {}

            def watch(chunk: bytes, _r=ready):
                if any(m in chunk for m in self.READY):
                    _r.set()

            def serve():
                out["server"] = self._exec(server, cmds[f"{test}_server"], f"{job_id}-{test}-s", left, stop, watch)
                ready.set()

            th = threading.Thread(target=serve, daemon=True)
            th.start()
            ready.wait(min(self.ready_wait_s, left))
            out["client"] = self._exec(client, cmds[f"{test}_client"], f"{job_id}-{test}-c",
                                       max(1.0, left - (time.monotonic() - start)), stop)
            th.join(left + self.connect_timeout + 10)
            rec.items[f"{test}_server"] = out.get("server", Item(b"", b"server did not finish", None, "timeout"))
            rec.items[f"{test}_client"] = out["client"]
        rec.duration_s = time.monotonic() - t0
        rec.timed_out = any(it.status == "timeout" for it in rec.items.values())
        for it in rec.items.values():
            if it.status == "error":
                msg = it.stderr.decode("utf-8", "replace")
                node = server if it in (rec.items.get("bw_server"), rec.items.get("lat_server")) else client
                rec.unreachable.setdefault(node, msg[:200])
        if rec.timed_out or (stop is not None and stop.is_set()):
            self.cancel([job_id])
        return rec

    def cancel(self, job_ids: list[str]) -> None:
        """Kill what each pair started (by its pid file), one short exec per node, in parallel."""
        with self._lock:
            work = {n: sorted(t for t in toks if any(t.startswith(j) for j in job_ids)) for n, toks in self._pids.items()}
        work = {n: t for n, t in work.items() if t}
        if not work:
            return

        def one(item):
            node, toks = item
            files = " ".join(f"/tmp/nodegate-xn-{shlex.quote(t)}.pid" for t in toks)
            script = (f"for f in {files}; do [ -f \"$f\" ] || continue; p=$(cat \"$f\"); "
                      f"kill -TERM \"$p\" 2>/dev/null; rm -f \"$f\"; done; exit 0\n").encode()
            t = Target(self.targets[node], hostkeys=self.hostkeys, connect_timeout=self.connect_timeout)
            try:
                with t.node_deadline(10) as dl:
                    t.run(script, dl, 10)
            except TransportError:
                pass

        with ThreadPoolExecutor(max_workers=min(16, len(work))) as ex:
            list(ex.map(one, work.items()))

