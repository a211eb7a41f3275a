"""Controller-side limits without a fleet: split_stream's memory on pathological streams, the
probe's per-command isolation (stdin, fd 5, stderr cap) under dash."""

from __future__ import annotations

import os
import shutil
import subprocess
import tracemalloc

import pytest

from nodegate.probe import render_script, split_stream


def _frame(marker: str, key: str, body: bytes) -> bytes:
    return f"{marker} BEGIN {key} 1.0\n".encode() + body + f"\n{marker} END {key} rc=0 2.0\n".encode()


def test_millions_of_short_lines_cost_no_more_than_their_bytes():
    m = "@@NG-" + "ab" * 12
    body = b"a\n" * (4 * 1024 * 1024)  # 8 MiB, 4 M lines: as a list of lines ~200 MiB
    data = _frame(m, "smi.qx", body) + f"{m} DONE\n".encode()
    tracemalloc.start()
    try:
        items, complete = split_stream(data, m)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert complete and items["smi.qx"].stdout == body
    assert peak < 2 * len(data) + 1024 * 1024, peak


def test_a_stream_cut_inside_a_frame_line_keeps_the_item_as_timeout_without_the_partial_frame():
    m = "@@NG-" + "cd" * 12
    data = f"{m} BEGIN a 1.0\nhello\n\n{m} END".encode()
    items, complete = split_stream(data, m)
    assert not complete
    assert items["a"].status == "timeout" and items["a"].stdout == b"hello\n"


@pytest.mark.skipif(shutil.which("dash") is None, reason="dash not installed")
def test_commands_get_no_stdin_no_probe_fd_and_capped_stderr(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tools = {
        "dkms": "#!/bin/sh\ncat\necho read-done >&2\n",                       # reads stdin
        "modinfo": "#!/bin/sh\necho escaped >&5\n",                           # writes to the probe's fd
        "nv-fabricmanager": "#!/bin/sh\nwhile :; do echo eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee; done >&2\n",
    }
    for name, text in tools.items():
        (bindir / name).write_text(text)
        os.chmod(bindir / name, 0o755)
    script, m = render_script(timeout_s=5)
    p = subprocess.run(["dash", "-s"], input=script.encode(), capture_output=True, timeout=120,
                       env={"PATH": f"{bindir}:/usr/bin:/bin"})
    items, complete = split_stream(p.stdout, m, stderr=p.stderr)
    assert complete  # the stdin reader ate nothing of the probe
    assert items["dkms.status"].stdout == b"" and items["dkms.status"].stderr == b"read-done"
    assert b"escaped" not in p.stdout and b"Bad file descriptor" in items["modinfo.nvidia"].stderr
    assert items["fabricmanager.version"].stderr.endswith(b"...[stderr truncated at 65536 bytes]")
    assert len(items["fabricmanager.version"].stderr) == 65536 + 37
    assert items["fabricmanager.version"].rc == 141  # SIGPIPE once the 64 KiB cap closed the pipe


class _FakeChannel:
    """A paramiko channel stand-in that delivers scripted stdout chunks at given times."""

    def __init__(self, chunks, exit_at):
        import time
        self.t0 = time.monotonic()
        self.chunks = list(chunks)   # [(at_s, bytes)]
        self.exit_at = exit_at
        self.r, self.w = os.pipe()
        os.write(self.w, b"x")       # always "readable" for select; recv_ready decides
        self.closed = False
        self.eof_received = False

    def _now(self):
        import time
        return time.monotonic() - self.t0

    def fileno(self):
        return self.r

    def exec_command(self, c): pass
    def sendall(self, d): pass
    def shutdown_write(self): pass
    def settimeout(self, t): pass
    def recv_stderr_ready(self): return False

    def recv_ready(self):
        return bool(self.chunks) and self.chunks[0][0] <= self._now()

    def recv(self, n):
        return self.chunks.pop(0)[1]

    def exit_status_ready(self):
        return not self.chunks and self._now() >= self.exit_at

    def recv_exit_status(self):
        return 0

    def close(self):
        os.close(self.r)
        os.close(self.w)


def test_item_watcher_sees_a_begin_frame_split_across_two_reads():
    """A BEGIN frame cut between two reads still starts the item's clock: the item that then
    hangs is cut by the per-item deadline, long before the exec would end on its own."""
    from types import SimpleNamespace

    from nodegate.transport import HostKeyPolicy, SecureParamikoBackend

    m = "@@NG-" + "ef" * 12
    frame = f"{m} BEGIN smi.qx 1.0\n".encode()
    cut = len(m) + 4  # "...@@NG-xx BEG" | "IN smi.qx 1.0\n"
    chan = _FakeChannel([(0.0, b"earlier output\n" + frame[:cut]), (0.05, frame[cut:])], exit_at=5.0)
    transport = SimpleNamespace(is_active=lambda: True, open_session=lambda timeout=None: chan)
    be = SecureParamikoBackend("paramiko://root@127.0.0.1", hostkeys=HostKeyPolicy())
    be.__dict__["_ng_client"] = SimpleNamespace(get_transport=lambda: transport, close=lambda: None)
    r = be.exec_stream("sh -s", b"", deadline_s=30, marker=m, item_timeout_s=0.5)
    assert r.timed_out is True and r.rc is None
    assert r.stdout.endswith(frame)


class _EarlyExitChannel(_FakeChannel):
    """sshd's order on a busy node: the exit status arrives while output is still on its way;
    EOF only after the last chunk."""

    def exit_status_ready(self):
        return self._now() >= self.exit_at

    @property
    def eof_received(self):
        return not self.chunks

    @eof_received.setter
    def eof_received(self, v):
        pass


def test_output_after_the_exit_status_is_still_read():
    """The exit status before the last 50 KB of output (seen on a 64-node run: -q -x cut and two
    items lost): the exec is read to EOF, nothing is lost, the probe is complete."""
    from types import SimpleNamespace

    from nodegate.probe import split_stream
    from nodegate.transport import HostKeyPolicy, SecureParamikoBackend

    m = "@@NG-" + "ab" * 12
    body = b"x" * 50_000
    last = f"{m} BEGIN smi.qx 1.0\n".encode() + body + f"\n{m} RC 0\n\n{m} END smi.qx rc= 1.1\n{m} DONE\n".encode()
    chan = _EarlyExitChannel([(0.0, b"before\n"), (0.6, last)], exit_at=0.05)
    transport = SimpleNamespace(is_active=lambda: True, open_session=lambda timeout=None: chan)
    be = SecureParamikoBackend("paramiko://root@127.0.0.1", hostkeys=HostKeyPolicy())
    be.__dict__["_ng_client"] = SimpleNamespace(get_transport=lambda: transport, close=lambda: None)
    r = be.exec_stream("sh -s", b"", deadline_s=30, marker=m, item_timeout_s=20)
    assert r.timed_out is False and r.rc == 0
    items, complete = split_stream(r.stdout, m)
    assert complete and items["smi.qx"].stdout == body and items["smi.qx"].rc == 0
