"""The site shell: ONE long-lived ``sh -s`` per node that runs every site command in turn.

testinfra's own backends open an SSH exec channel per command (a new session on the node: sshd
forks, sets up the session and starts the login shell each time; ~50 ms a command on the
simulated fleet, 13 channels for one ``host.service(...).is_running``). Here the commands travel
as lines on the stdin of one session (``shell.sh``), each runs as ``$SHELL -c '<command>'`` in a
child of that shell, and comes back framed exactly as a probe item (``nodegate.probe``
``split_stream``/``split_stderr``): stdout capped on the node at ``probe.DEFAULT_ITEM_CAP``,
stderr at ``probe.ITEM_STDERR_CAP``, the exit code on stdout.

Deadlines are enforced here: ``start`` waits for the shell's READY line, ``run`` for the
command's END frames; past them the session is abandoned (``broken``) and the caller starts a
new one. The node-side ``timeout`` (when the node has one) stops the command at its deadline,
this side ``CLIENT_GRACE_S`` later.

Streams: a paramiko channel (``ChannelStreams``) or a local process's pipes (``PipeStreams``:
the OpenSSH client, ``sh``, ``chroot``).
"""

from __future__ import annotations

import os
import re
import secrets
import select
import subprocess
import time
from dataclasses import dataclass
from importlib import resources

from ..probe import DEFAULT_ITEM_CAP, ITEM_STDERR_CAP, split_stderr, split_stream

#: seconds the controller waits past a command's node-side deadline before it cuts the command
CLIENT_GRACE_S = 5.0
#: room for the framing around a command's capped output (``probe._RC_ROOM`` and the frames)
_FRAME_ROOM = 4096
_HCAP = DEFAULT_ITEM_CAP + 128   # stdout + "\nM RC n\n" capped together on the node, as in the probe


class ShellError(Exception):
    """The site shell could not be started or died (``kind``: timeout, ssh, eof)."""

    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message
        super().__init__(f"{kind}: {message}")


@dataclass
class CommandOutput:
    """One command's result as the shell framed it. ``status``: ok | timeout (node-side
    ``timeout`` fired, or the controller cut it) | truncated (stdout past the cap) | malformed
    (frames broken) | lost (the session ended before the command did). ``rc`` None when the
    command did not finish."""

    stdout: bytes
    stderr: bytes
    rc: int | None
    status: str
    duration_s: float
    note: str = ""


def template() -> str:
    return resources.files(__package__).joinpath("shell.sh").read_text()


class ChannelStreams:
    """A paramiko channel running ``sh -s``."""

    def __init__(self, chan):
        self.chan = chan
        chan.settimeout(0.0)

    def send(self, data: bytes) -> None:
        self.chan.settimeout(10.0)
        try:
            self.chan.sendall(data)
        finally:
            self.chan.settimeout(0.0)

    def read(self, timeout: float) -> tuple[bytes, bytes, bool]:
        chan = self.chan
        if not (chan.recv_ready() or chan.recv_stderr_ready() or chan.closed or chan.eof_received):
            select.select([chan], [], [], max(0.0, timeout))
        out, err = bytearray(), bytearray()
        while chan.recv_ready():
            b = chan.recv(65536)
            if not b:
                break
            out += b
        while chan.recv_stderr_ready():
            b = chan.recv_stderr(65536)
            if not b:
                break
            err += b
        eof = (chan.eof_received or chan.closed) and not chan.recv_ready() and not chan.recv_stderr_ready()
        return bytes(out), bytes(err), eof and not out and not err

    def close(self) -> None:
        try:
            self.chan.close()
        except Exception:  # noqa: BLE001 - closing a dead channel must never mask the result
            pass


class PipeStreams:
    """A local process (the OpenSSH client, ``sh``, ``chroot``) with its stdin, stdout and
    stderr as pipes, in a session of its own (closed: the whole process group is killed)."""

    def __init__(self, argv: list[str]):
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True, bufsize=0)
        except OSError as e:
            raise ShellError("ssh", f"cannot run {argv[0]}: {e.strerror or e}") from None
        self.fds = {self.proc.stdout.fileno(): "out", self.proc.stderr.fileno(): "err"}

    def send(self, data: bytes) -> None:
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise ShellError("eof", f"the shell's stdin is closed: {e}") from None

    def read(self, timeout: float) -> tuple[bytes, bytes, bool]:
        if not self.fds:
            return b"", b"", True
        r, _, _ = select.select(list(self.fds), [], [], max(0.0, timeout))
        out, err = b"", b""
        for fd in r:
            b = os.read(fd, 65536)
            if not b:
                del self.fds[fd]
            elif self.fds[fd] == "out":
                out += b
            else:
                err += b
        return out, err, not self.fds and not out and not err

    def close(self) -> None:
        p = self.proc
        for f in (p.stdin, p.stdout, p.stderr):
            try:
                f.close()
            except OSError:
                pass
        if p.poll() is None:
            try:
                os.killpg(p.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class SiteShell:
    """One ``sh -s`` session on a node. ``start(deadline_s)`` sends ``shell.sh`` and waits for
    READY; ``run(key, command, timeout_s)`` runs one command; ``broken`` once a deadline or
    the end of the session left it unusable (then ``close`` it and start another)."""

    def __init__(self, streams, marker: str | None = None):
        self.streams = streams
        self.marker = marker or f"@@NG-{secrets.token_hex(12)}"
        if not re.fullmatch(r"@@NG-[0-9a-f]{8,64}", self.marker):
            raise ValueError("bad marker")
        self.broken = False
        self.early_stderr = b""   # what the login shell said before READY (e.g. a motd, sudo's complaint)

    def start(self, deadline_s: float) -> None:
        s = template()
        for k, v in {"MARKER": self.marker, "HCAP": str(_HCAP), "ECAP": str(ITEM_STDERR_CAP + 1)}.items():
            s = s.replace(f"@@{k}@@", v)
        self.streams.send(s.encode())
        ready = f"{self.marker} READY\n".encode()
        out, err = bytearray(), bytearray()
        end = time.monotonic() + deadline_s
        while ready not in out:
            left = end - time.monotonic()
            if left <= 0:
                self.broken = True
                raise ShellError("timeout", f"the site shell did not start within {deadline_s:.0f}s"
                                 + _said(err))
            o, e, eof = self.streams.read(min(left, 0.5))
            out += o
            if len(err) < 4096:
                err += e
            if eof:
                self.broken = True
                raise ShellError("eof", "the site shell ended before it was ready" + _said(err))
            if len(out) > _FRAME_ROOM:
                self.broken = True
                raise ShellError("ssh", "the site shell printed unexpected output before it was ready")
        self.early_stderr = bytes(err)

    def run(self, key: str, command: str, timeout_s: float) -> CommandOutput:
        """Run ``command`` (a shell command line, as testinfra builds it) as item ``key``;
        the node-side deadline is ``timeout_s``, this side's ``timeout_s + CLIENT_GRACE_S``."""
        if self.broken:
            raise ShellError("eof", "the site shell is no longer usable")
        mk = self.marker
        t0 = time.monotonic()
        line = f"ng_run {key} {max(1, int(round(timeout_s)))} {_sh_quote(command)}\n"
        try:
            self.streams.send(line.encode("utf-8", errors="surrogateescape"))
        except ShellError:
            self.broken = True
            raise
        end_mark = f"\n{mk} END {key} rc= 0\n".encode()
        err_mark = f"\n{mk} ERREND {key}\n".encode()
        out, err = bytearray(), bytearray()
        err_tail = b""
        out_done = err_done = False
        cut = t0 + timeout_s + CLIENT_GRACE_S
        while not (out_done and err_done):
            left = cut - time.monotonic()
            if left <= 0:
                self.broken = True
                return CommandOutput(*_partial(out, err, mk, key), None, "timeout", round(time.monotonic() - t0, 3),
                                     f"cut by the controller after {timeout_s + CLIENT_GRACE_S:.0f}s")
            o, e, eof = self.streams.read(min(left, 0.5))
            if o and not out_done:
                start = max(0, len(out) - len(end_mark))
                out += o
                out_done = out.find(end_mark, start) >= 0
                if not out_done and len(out) > _HCAP + _FRAME_ROOM:
                    # the node sent more than its own cap allows: not our shell's output
                    self.broken = True
                    return CommandOutput(bytes(out[:DEFAULT_ITEM_CAP]), b"", None, "truncated",
                                         round(time.monotonic() - t0, 3), "output past the cap without an END frame")
            if e and not err_done:
                scan = err_tail + e
                err_done = err_mark in scan
                if len(err) < ITEM_STDERR_CAP + _FRAME_ROOM:
                    err += e
                err_tail = scan[-len(err_mark):]
            if eof:
                self.broken = True
                return CommandOutput(*_partial(out, err, mk, key), None, "lost", round(time.monotonic() - t0, 3),
                                     "the site shell ended before the command did (connection lost?)")
        dt = round(time.monotonic() - t0, 3)
        items, _ = split_stream(bytes(out), mk)
        it = items.get(key)
        blocks, _ = split_stderr(_before(bytes(err), err_mark), mk)
        stderr = blocks.get(key, b"")
        if it is None:
            return CommandOutput(b"", stderr, None, "malformed", dt, "no frames for the command")
        status = it.status
        if it.rc in (124, 137, 143) and dt >= timeout_s - 0.5:
            # the node-side `timeout` fired: coreutils exits 124, busybox passes on the child's
            # SIGTERM death (143), and KILL after -k 3 is 137 (see probe.sh ng_to)
            status = "timeout"
        return CommandOutput(it.stdout, stderr, it.rc, status, dt)

    def close(self) -> None:
        self.broken = True
        self.streams.close()


def _sh_quote(s: str) -> str:
    """POSIX single quotes (shlex.quote without its bare-word shortcut: always one word)."""
    return "'" + s.replace("'", "'\"'\"'") + "'"


def _before(data: bytes, mark: bytes) -> bytes:
    i = data.find(mark)
    return data if i < 0 else data[:i]


def _partial(out: bytearray, err: bytearray, mk: str, key: str) -> tuple[bytes, bytes]:
    """What arrived of a command that did not finish: stdout after its BEGIN line, stderr after
    its ERR line."""
    o, e = bytes(out), bytes(err)
    begin = f"{mk} BEGIN {key} 0\n".encode()
    i = o.find(begin)
    o = o[i + len(begin):] if i >= 0 else o
    errl = f"\n{mk} ERR {key}\n".encode()
    j = e.find(errl)
    e = e[j + len(errl):] if j >= 0 else e
    return o[:DEFAULT_ITEM_CAP], e[:ITEM_STDERR_CAP]


def _said(err: bytearray) -> str:
    t = bytes(err).decode("utf-8", errors="replace").strip()
    return f" (stderr: {t.splitlines()[-1][:300]})" if t else ""
