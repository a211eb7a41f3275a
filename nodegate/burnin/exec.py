"""One long exec per node with a stop switch: the burn-in's transport.

``Target.run_probe`` (nodegate.transport) runs to its deadline; a burn-in must also stop when the
user interrupts (Ctrl-C) the run. ``run_stream(target, script, deadline_s, stop)`` connects the same
way (testinfra URL, known_hosts policy, connect deadline: ``SecureParamikoBackend``) and returns an
``ExecResult`` when the script ends, the deadline passes or ``stop`` is set. Stopping closes the
channel: sshd then closes the session's pipes, the script's next heartbeat write fails and the
script stops the load (sshd sends no SIGHUP to a session without a pty). Locally (``local://``)
the same happens (our end of stdout is closed) and the shell also gets SIGTERM.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from typing import Callable

import paramiko

from ..transport import STREAM_CAP, ExecResult, SecureParamikoBackend, Target, TransportError, exec_finished

#: After a stop, how long a local script gets to stop its load before its group is killed.
LOCAL_STOP_GRACE_S = 40.0


def run_stream(target: Target, script: str, deadline_s: float, stop: threading.Event,
               on_data: Callable[[bytes], None] | None = None) -> ExecResult:
    """Run ``script`` with ``sh -s`` on ``target``; ``timed_out`` is True when the deadline or
    ``stop`` ended it. Raises TransportError before the command runs (connect, host key, auth)."""
    data = script.encode()
    if target.connection == "local":
        cmd = ["sudo", "-n", "sh", "-s"] if target.sudo else ["sh", "-s"]
        return _local(cmd, data, deadline_s, stop, on_data)
    if target.connection == "ssh":
        return _openssh(target, data, deadline_s, stop, on_data)
    be = SecureParamikoBackend(target.host, hostkeys=target.hostkeys, connect_timeout=target.connect_timeout,
                               ssh_identity_file=target.kw.get("ssh_identity_file"))
    try:
        return _paramiko(be, target._command(), data, deadline_s, stop, on_data)
    finally:
        be.close()


def _paramiko(be: SecureParamikoBackend, command: str, data: bytes, deadline_s: float, stop: threading.Event,
              on_data) -> ExecResult:
    t0 = time.monotonic()
    client = be.client
    t1 = time.monotonic()
    transport = client.get_transport()
    if transport is None or not transport.is_active():
        raise TransportError("ssh", "connection closed before exec")
    try:
        chan = transport.open_session(timeout=be.connect_timeout)
        chan.exec_command(command)  # no pty, no agent forwarding
        chan.sendall(data)
        chan.shutdown_write()
    except (paramiko.SSHException, OSError, EOFError) as e:
        raise TransportError("ssh", f"exec failed: {e}") from None
    out, err = bytearray(), bytearray()
    capped = timed_out = False
    end = t1 + deadline_s
    chan.settimeout(0.0)
    last_data = time.monotonic()
    try:
        while True:
            if stop.is_set() or time.monotonic() >= end:
                timed_out = True
                break
            r, _, _ = select.select([chan], [], [], 0.5)
            got = False
            while chan.recv_ready():
                b = chan.recv(65536)
                if not b:
                    break
                got = True
                if on_data:
                    on_data(b)
                if len(out) < STREAM_CAP:
                    out += b
                else:
                    capped = True
            while chan.recv_stderr_ready():
                b = chan.recv_stderr(65536)
                if not b:
                    break
                got = True
                if len(err) < 1024 * 1024:
                    err += b
            if got:
                last_data = time.monotonic()
            if exec_finished(chan, last_data):
                break
    except (paramiko.SSHException, OSError, EOFError) as e:
        err += f"\n[nodegate] connection dropped during burn-in: {e}\n".encode()
        return ExecResult(bytes(out), bytes(err), None, False, t1 - t0, time.monotonic() - t1, capped)
    rc = chan.recv_exit_status() if (not timed_out and chan.exit_status_ready()) else None
    try:
        chan.close()  # the node notices at its next heartbeat and stops the load
    except Exception:  # noqa: BLE001 - closing a dead channel must never mask the result
        pass
    return ExecResult(bytes(out), bytes(err), rc, timed_out, t1 - t0, time.monotonic() - t1, capped)


def _popen_loop(p: subprocess.Popen, data: bytes, deadline_s: float, stop: threading.Event, on_data,
                on_stop: Callable[[], None]) -> ExecResult:
    """Read stdout/stderr with select in this thread (so that a stop can close our end of stdout
    without a reader blocked on it), until exit, deadline or stop."""
    t0 = time.monotonic()
    out, err = bytearray(), bytearray()
    try:
        p.stdin.write(data)
        p.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    fds = {p.stdout.fileno(): out, p.stderr.fileno(): err}
    end = t0 + deadline_s
    timed_out = False
    while fds:
        if stop.is_set() or time.monotonic() >= end:
            timed_out = True
            break
        r, _, _ = select.select(list(fds), [], [], 0.2)
        for fd in r:
            b = os.read(fd, 65536)
            if not b:
                del fds[fd]
                continue
            buf = fds[fd]
            if buf is out and on_data:
                on_data(b)
            if len(buf) < (STREAM_CAP if buf is out else 1024 * 1024):
                buf += b
    if timed_out:
        on_stop()
    else:
        left = max(1.0, end - time.monotonic())
        try:
            p.wait(timeout=left)
        except subprocess.TimeoutExpired:
            timed_out = True
            on_stop()
    for f in (p.stdout, p.stderr):
        try:
            f.close()
        except OSError:
            pass
    return ExecResult(bytes(out), bytes(err), None if timed_out else p.returncode, timed_out, 0.0,
                      time.monotonic() - t0, len(out) >= STREAM_CAP)


def _close_and_reap(p: subprocess.Popen, sig: int | None) -> None:
    """Stop a local exec the way a closed channel does (our end of stdout closed) plus ``sig``;
    SIGKILL to its process group if it has not ended after LOCAL_STOP_GRACE_S."""
    for f in (p.stdout, p.stderr):
        try:
            f.close()
        except OSError:
            pass
    if sig is not None:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
    try:
        p.wait(timeout=LOCAL_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def _local(cmd: list[str], data: bytes, deadline_s: float, stop: threading.Event, on_data) -> ExecResult:
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    return _popen_loop(p, data, deadline_s, stop, on_data, lambda: _close_and_reap(p, signal.SIGTERM))


def _openssh(target: Target, data: bytes, deadline_s: float, stop: threading.Event, on_data) -> ExecResult:
    p = subprocess.Popen(target.openssh_argv("-T"), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    # ssh exiting closes the connection and with it the channel
    r = _popen_loop(p, data, deadline_s, stop, on_data, lambda: _close_and_reap(p, signal.SIGTERM))
    if r.rc == 255 and not r.stdout:
        msg = r.stderr.decode(errors="replace").strip()
        raise TransportError("ssh", msg.splitlines()[-1] if msg else "ssh exit 255")
    return r
