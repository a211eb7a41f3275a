"""Local processes under one Deadline: ``sh -s`` (local://), ``chroot ROOT sh -s`` and the
OpenSSH client (``ssh://``).

Each runs in a process group of its own (``start_new_session``); the deadline's closer kills
that group, so the deadline (or an interruption) ends the process and, for ``ssh``, its
connection. The script is written to stdin by a thread, so a peer that never reads it (a
channel window that never opens, a full pipe) cannot hold the caller past the deadline.

The OpenSSH client logs at ``LogLevel=DEBUG2`` to a private file (``-E``; ssh closes every
inherited descriptor above 2, so a pipe cannot be handed to it); its lines name each stage
(OpenSSH 9's sshconnect.c, sshconnect2.c, clientloop.c, channels.c: "Connecting to",
"Connection established", "Remote protocol version", "SSH2_MSG_NEWKEYS received",
"Authenticated to", "Sending command", "exec request accepted", "channel 0: send eof"). The
stages then get the paramiko transport's budgets: the connect stages ``connect_timeout`` from
the first line, the channel open and the exec request ``connect_timeout`` each, the rest
``exec_s``; a log that names no stage (another client) leaves only the overall deadline.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .base import STDERR_CAP, STREAM_CAP, ExecResult, TransportError
from .deadline import Deadline

#: Seconds a killed process group gets to be reaped before the caller stops waiting for it.
REAP_S = 5.0
#: OpenSSH's debug log kept per connection, bytes.
SSH_LOG_CAP = 256 * 1024

#: (line pattern, stage entered once it is seen, budget from then: "connect" = connect_timeout,
#: "exec" = exec_s, None = unchanged), in connection order.
_SSH_STAGES = (
    (re.compile(r"^debug1: Connecting to "), "TCP connect", "connect"),
    (re.compile(r"^debug1: Connection established\."), "SSH banner", None),
    (re.compile(r"^debug1: Remote protocol version "), "key exchange", None),
    (re.compile(r"^debug1: SSH2_MSG_NEWKEYS received"), "authentication", None),
    (re.compile(r"^(debug1: )?Authenticated to |^debug1: Authentication succeeded"), "channel open", "connect"),
    (re.compile(r"^debug1: Sending command: "), "exec request", "connect"),
    (re.compile(r"^debug2: exec request accepted on channel"), "sending the probe", "exec"),
    (re.compile(r"^debug2: channel \d+: send eof"), "reading the output", None),
)
_STAGE_ORDER = {st: i for i, (_, st, _) in enumerate(_SSH_STAGES)}


def ssh_stage(log: str) -> str:
    """The stage an OpenSSH client is in, from its DEBUG2 log text ("" when the log names none).
    Stages are entered in order only: ssh may send the script and its EOF before the server
    has answered the exec request, so a later line never skips an unanswered stage; the EOF
    (all of the script handed to the server) counts wherever it is logged."""
    i = -1
    lines = log.splitlines()
    for line in lines:
        if i + 1 < len(_SSH_STAGES) and _SSH_STAGES[i + 1][0].match(line):
            i += 1
    last = len(_SSH_STAGES) - 1
    if i == last - 1 and any(_SSH_STAGES[last][0].match(ln) for ln in lines):
        i = last
    return _SSH_STAGES[i][1] if i >= 0 else ""


_BUDGET = {st: b for _, st, b in _SSH_STAGES}


def ssh_errors(log: str) -> str:
    """The client's own messages from its log (everything not a debug line)."""
    return "\n".join(ln for ln in log.splitlines() if ln.strip() and not ln.startswith("debug"))


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def popen_stream(argv: list[str], stdin: bytes, dl: Deadline, *, ssh_log: str | None = None,
                 connect_timeout: float | None = None, exec_s: float | None = None,
                 on_data=None, stderr_cap: int = STDERR_CAP, grace_s: float = 0.0,
                 env: dict[str, str] | None = None) -> ExecResult:
    """Run ``argv`` with ``stdin`` until it exits or ``dl`` ends it (then its whole process
    group is killed and what was read so far is kept). ``ssh_log``: the ``-E`` file of an
    OpenSSH client in ``argv``: its stages are followed, the connect stages get
    ``connect_timeout`` and the rest ``exec_s`` (both within ``dl``). ``on_data`` gets each
    stdout chunk (in a reader thread). ``grace_s``: the cut sends SIGTERM and SIGKILL follows
    only after that many seconds (a burn-in script stops its load on TERM); 0 = SIGKILL at
    once. ``env``: the process's whole environment (None: this process's). Raises
    TransportError("probe-failed") when ``argv[0]`` cannot be run."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True, env=env)
    except OSError as e:  # sh, sudo, ssh or chroot missing on the controller
        raise TransportError("probe-failed", f"cannot run {argv[0]}: {e.strerror or e}") from None
    dl.add_closer(lambda: _signal_group(p, signal.SIGTERM if grace_s else signal.SIGKILL))
    out, err = bytearray(), bytearray()
    capped = [False]

    def pump(src, dst, cap, cb):
        for chunk in iter(lambda: src.read1(65536), b""):
            if cb is not None:
                cb(chunk)
            if len(dst) < cap:
                dst += chunk[:cap - len(dst)]
            else:
                capped[0] = capped[0] or dst is out

    def feed():
        try:
            p.stdin.write(stdin)
            p.stdin.close()
        except (BrokenPipeError, OSError, ValueError):
            pass

    threads = [threading.Thread(target=pump, args=(p.stdout, out, STREAM_CAP, on_data), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err, stderr_cap, None), daemon=True),
               threading.Thread(target=feed, daemon=True)]
    for t in threads:
        t.start()
    log = _SshLog(ssh_log) if ssh_log else None
    dl.stage("reading the output")
    if log is not None:
        dl.stage_fn = lambda: log.stage() or "TCP connect"
    seen = ""
    timed_out = False
    while True:
        try:
            p.wait(timeout=max(0.0, min(0.1, dl.remaining())))
            break
        except subprocess.TimeoutExpired:
            pass
        if log is not None:
            log.read()
            st = log.stage()
            if out and _STAGE_ORDER.get(st, -1) < _STAGE_ORDER["sending the probe"]:
                st = "sending the probe"   # output: the exec runs, whatever the log says
            if st != seen:
                # the budget of the last stage entered since the previous look
                passed = [b for x, b in _BUDGET.items()
                          if _STAGE_ORDER.get(seen, -1) < _STAGE_ORDER[x] <= _STAGE_ORDER.get(st, -1) and b]
                seen = st
                if passed and passed[-1] == "connect" and connect_timeout is not None:
                    dl.limit(connect_timeout, "connect")
                elif passed and passed[-1] == "exec":
                    dl.limit(exec_s, "exec")
        if dl.expired():
            timed_out = True
            break
    if dl.fired:   # the watchdog (or an interruption) killed it first
        timed_out = True
    stage, interrupted = "", ""
    if timed_out:
        interrupted = dl.interrupted
        dl.fire(f"interrupted: {interrupted}" if interrupted else "deadline")
        stage = dl.fired_stage
        try:
            p.wait(timeout=grace_s or REAP_S)
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            try:
                p.wait(timeout=REAP_S)
            except subprocess.TimeoutExpired:   # D state: nobody can kill it; its output is not awaited
                err += f"\n[nodegate] process {p.pid} did not end after SIGKILL\n".encode()
    for t in threads[:2]:
        t.join(timeout=2)
    dl.stage_fn = None
    r = ExecResult(bytes(out), bytes(err), None if timed_out else p.returncode, timed_out, 0.0,
                   time.monotonic() - t0, capped[0], stage, interrupted)
    if log is not None:
        log.read()
        r.ssh_log = log.text  # type: ignore[attr-defined]
        if timed_out and not interrupted:
            r.stage = log.stage() or stage
    return r


class _SshLog:
    """The OpenSSH client's ``-E`` log file, read as it grows (at most SSH_LOG_CAP bytes)."""

    def __init__(self, path: str):
        self.path = path
        self.data = bytearray()
        self._stage = ""

    def read(self) -> None:
        if len(self.data) >= SSH_LOG_CAP:
            return
        try:
            with open(self.path, "rb") as fh:
                fh.seek(len(self.data))
                self.data += fh.read(SSH_LOG_CAP - len(self.data))
        except OSError:
            return
        self._stage = ssh_stage(self.text) or self._stage

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")

    def stage(self) -> str:
        return self._stage

    def errors(self) -> str:
        return ssh_errors(self.text)


def openssh_exec(argv: list[str], stdin: bytes, dl: Deadline, *, connect_timeout: float, exec_s: float,
                 on_data=None, stderr_cap: int = STDERR_CAP, grace_s: float = 0.0) -> ExecResult:
    """Run the OpenSSH client ``argv`` (``ssh [options] host command``) with its DEBUG2 log
    in a private temporary directory (removed afterwards). Raises TransportError when ssh
    exits 255 without output (its own error: host key, auth, refused...) or when the deadline
    cut it before it was logged in; ``r.ssh_log`` holds the log."""
    tmp = tempfile.mkdtemp(prefix="nodegate-ssh-")
    try:
        path = os.path.join(tmp, "ssh.log")
        full = [argv[0], "-o", "LogLevel=DEBUG2", "-E", path, *argv[1:]]
        r = popen_stream(full, stdin, dl, ssh_log=path, connect_timeout=connect_timeout, exec_s=exec_s,
                         on_data=on_data, stderr_cap=stderr_cap, grace_s=grace_s)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log = getattr(r, "ssh_log", "")
    target = _ssh_target(log) or (argv[-2] if len(argv) >= 2 else "node")
    if r.timed_out and not r.stdout and r.stage in _BEFORE_OUTPUT:
        dl.fired_stage = r.stage
        raise dl.error(target)
    if r.rc == 255 and not r.stdout:
        msg = (ssh_errors(log) + "\n" + r.stderr.decode(errors="replace")).strip()
        stage = ssh_stage(log)
        line = msg.splitlines()[-1] if msg else "ssh exit 255"
        kind = _ssh_kind(msg)
        raise TransportError(kind, line + (f" [stage: {stage}]" if stage and kind == "timeout" else ""),
                             stage if kind == "timeout" else "")
    return r


#: Stages an OpenSSH client can be cut in before the command runs (then: TransportError).
_BEFORE_OUTPUT = ("TCP connect", "SSH banner", "key exchange", "authentication", "channel open", "exec request")

_TARGET_RE = re.compile(r"^debug1: Connecting to (\S+) \[([^\]]*)\] port (\d+)\.", re.M)


def _ssh_target(log: str) -> str:
    m = _TARGET_RE.search(log)
    return f"{m.group(1)}:{m.group(3)}" if m else ""


def _ssh_kind(msg: str) -> str:
    """TransportError kind of an OpenSSH client's own error message."""
    low = msg.lower()
    if "remote host identification has changed" in low or "host key for" in low and "has changed" in low:
        return "hostkey-changed"
    if "host key verification failed" in low or "no matching host key" in low:
        return "hostkey-unknown"
    if "permission denied" in low:
        return "auth"
    if "connection refused" in low:
        return "refused"
    if "could not resolve" in low or "name or service not known" in low:
        return "dns"
    if "timed out" in low:
        return "timeout"
    return "unreachable"
