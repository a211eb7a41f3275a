"""ONE exec on an authenticated paramiko transport under a Deadline: channel open, exec
request, the script sent as the server's window allows, the output read until EOF."""

from __future__ import annotations

import select
import socket
import time
from typing import Callable

import paramiko

from .base import STDERR_CAP, STREAM_CAP, ExecResult, TransportError
from .deadline import Deadline

#: After the exit status, seconds to wait for the channel's EOF while no more output comes.
EXIT_GRACE_S = 2.0

#: Seconds the exec loop lets output gather after a wake-up before reading it. A probe writes
#: ~250 small chunks (frames, short items), each its own SSH packet; read one by one they cost
#: a wake-up of this thread and of paramiko's each.
COALESCE_S = 0.005

#: Bytes of the script handed to the channel per send; seconds between two looks at a closed
#: send window while the script is not all sent (paramiko's channel has no writable fd).
SEND_CHUNK = 32768
SEND_POLL_S = 0.05


def run_channel(transport, command: str, data: bytes, dl: Deadline, target: str, *, marker: str | None = None,
                item_timeout_s: float | None = None, on_data: Callable[[bytes], None] | None = None,
                stop_at_cap: bool = True, stderr_cap: int = STDERR_CAP, setup_s: float | None = None,
                exec_s: float | None = None) -> ExecResult:
    """ONE exec on an authenticated ``transport`` within ``dl``: channel open and exec request
    (each within ``setup_s``), then ``data`` sent as the server's window allows (read and write
    in one loop: the script runs while it is sent) and the output read until EOF
    (``exec_finished``), within ``exec_s``; nothing past ``dl``'s end. The deadline's closers
    must shut the connection (a call blocked in paramiko returns only then). Raises
    TransportError before the exec runs; afterwards a cut exec is ``timed_out``."""
    t1 = time.monotonic()
    if transport is None or not transport.is_active():
        raise TransportError("ssh", "connection closed before exec")
    try:
        dl.stage("channel open")
        if setup_s is not None:
            dl.limit(setup_s, "connect")
        chan = transport.open_session(timeout=dl.remaining() + 1.0)
        dl.stage("exec request")
        if setup_s is not None:
            dl.limit(setup_s, "connect")
        chan.exec_command(command)  # no pty, no agent forwarding: the probe needs neither
    except (paramiko.SSHException, OSError, EOFError) as e:
        if dl.expired():
            raise dl.error(target) from None
        raise TransportError("ssh", f"exec failed: {e}") from None
    out, err, capped = bytearray(), bytearray(), False
    timed_out = False
    chan.settimeout(0.0)
    mk = marker.encode() + b" " if marker else None
    open_since: float | None = None
    tail = b""  # end of the previous chunk: a frame line may straddle two reads
    last_data = time.monotonic()
    sent = 0
    sending = bool(data)
    dl.limit(exec_s, "exec")
    dl.stage("sending the probe")
    if not sending:
        chan.shutdown_write()
        dl.stage("reading the output")
    try:
        while True:
            now = time.monotonic()
            if dl.expired() or (open_since is not None and item_timeout_s is not None
                                and now - open_since > item_timeout_s):
                timed_out = True
                break
            if sending:
                sent = _send_some(chan, data, sent)
                dl.note = f"{sent} of {len(data)} bytes of the script sent"
                if sent >= len(data):
                    sending = False
                    dl.note = ""
                    chan.shutdown_write()
                    dl.stage("reading the output")
            r, _, _ = select.select([chan], [], [], max(0.0, min(dl.remaining(), SEND_POLL_S if sending else 0.5)))
            if r and not chan.eof_received:
                # let the packets of the next few ms gather before draining: one wake-up for
                # many of the probe's small writes instead of one each (docs/performance.md)
                time.sleep(COALESCE_S)
            got = False
            while chan.recv_ready():
                b = chan.recv(65536)
                if not b:
                    break
                got = True
                if on_data is not None:
                    on_data(b)
                if mk is not None:
                    scan = tail + b
                    i = scan.rfind(mk)
                    while i >= 0 and i + len(mk) + 5 > len(scan):  # its word not all here yet
                        i = scan.rfind(mk, 0, i)
                    if i >= 0:
                        word = scan[i + len(mk):i + len(mk) + 5]
                        open_since = time.monotonic() if word == b"BEGIN" else None
                    tail = scan[-(len(mk) + 5):]
                if len(out) + len(b) > STREAM_CAP:
                    out += b[:STREAM_CAP - len(out)]
                    capped = True
                    if stop_at_cap:
                        break
                    continue
                out += b
            if capped and stop_at_cap:  # stop the exec: nothing past the cap would be kept anyway
                break
            while chan.recv_stderr_ready():
                b = chan.recv_stderr(65536)
                if not b:
                    break
                got = True
                if len(err) < stderr_cap:
                    err += b
            if got:
                last_data = time.monotonic()
            if exec_finished(chan, last_data):
                break
    except (paramiko.SSHException, OSError, EOFError) as e:
        if not dl.expired():
            err += f"\n[nodegate] connection dropped mid-exec: {e}\n".encode()
            return ExecResult(bytes(out), bytes(err), None, False, 0.0, time.monotonic() - t1, capped)
        timed_out = True   # the watchdog shut the connection at the deadline
    if dl.fired:
        timed_out = True   # the watchdog closed the channel as the loop saw it close
    stage = (dl.fired_stage or dl.current_stage()) if timed_out else ""
    interrupted = dl.interrupted if timed_out else ""
    note = dl.note if timed_out else ""
    rc = None
    if capped:
        err += f"\n[nodegate] output exceeded {STREAM_CAP} bytes: exec stopped\n".encode()
    elif not timed_out and chan.exit_status_ready():
        rc = chan.recv_exit_status()
    elif not timed_out:
        err += b"\n[nodegate] connection dropped mid-exec\n"
    dl.stage("closing")
    if timed_out:
        dl.fire(f"interrupted: {interrupted}" if interrupted else "deadline")  # no polite close to a stuck peer
    else:
        try:
            chan.close()
        except Exception:  # noqa: BLE001 - closing a dead channel must never mask the result
            pass
    return ExecResult(bytes(out), bytes(err), rc, timed_out, 0.0, time.monotonic() - t1, capped, stage, interrupted,
                      note)


def _send_some(chan, data: bytes, sent: int) -> int:
    """Hand the channel as much of ``data[sent:]`` as its window takes now; returns the new
    offset (all of it once the channel is closed: nothing more can go)."""
    while sent < len(data) and chan.send_ready():
        try:
            n = chan.send(data[sent:sent + SEND_CHUNK])
        except socket.timeout:
            break
        except OSError:   # the channel closed (the command ended without reading it all)
            return len(data)
        if n <= 0:
            return len(data)
        sent += n
    return sent


def exec_finished(chan, last_data: float) -> bool:
    """Whether an exec channel has delivered all it will: its EOF (or close) with nothing left
    buffered. The exit status can arrive before the last of the output: sshd reports the shell's
    exit while what it wrote is still in the pipe or behind the channel window (seen: 50 KB of
    -q -x and two items lost on a busy controller). After the exit status without EOF (a child
    of the probe still holds its stdout), finished once nothing came for EXIT_GRACE_S since
    ``last_data`` (monotonic seconds of the last bytes read)."""
    eof = chan.eof_received or chan.closed   # read first: output sent before EOF is buffered by then
    if chan.recv_ready() or chan.recv_stderr_ready():
        return False
    if chan.exit_status_ready():
        return eof or time.monotonic() - last_data > EXIT_GRACE_S
    return bool(chan.closed)
