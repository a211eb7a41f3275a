"""Misbehaving SSH servers on 127.0.0.1, one per connection stage, for the deadline tests.

Each ``Server(mode)`` listens on a free loopback port and misbehaves in ONE stage of every
connection it accepts, forever (until ``close()``):

=================  ===================================================================  =========================
mode               what the server does                                                 stage a client is held in
=================  ===================================================================  =========================
``mute``           accepts TCP, never sends a byte (raw socket)                         SSH banner
``slow-banner``    sends ``SSH-2.0-...`` one byte a second (raw socket)                 SSH banner
``banner-lines``   sends a new pre-banner text line every second (RFC 4253 4.2 allows  SSH banner
                   lines before the version line; raw socket)
``kex-stall``      sends its version line, reads the client's, never sends KEXINIT      key exchange
                   (raw socket)
``auth-stall``     paramiko server whose publickey check never returns                  authentication
``no-channel``     paramiko server that never answers the session channel open          channel open
``no-exec-reply``  accepts the session, never answers the exec request                  exec request
``tiny-window``    answers the exec, advertises a 256-byte window, never reads          sending the probe
``silent``         answers the exec, reads the script, never writes or exits            reading the output
``healthy``        reads the script, answers ``SERVER_OUTPUT`` and exit status 0          (none)
=================  ===================================================================  =========================

The paramiko modes use paramiko's server API (``ServerInterface``, ``Transport.start_server``);
a callback that "never returns" blocks the server's transport thread until ``close()``. Every
server accepts any public key, so the OpenSSH client works against them too.
"""

from __future__ import annotations

import shutil
import socket
import threading
from pathlib import Path

import paramiko
import pytest

MODES = ("mute", "slow-banner", "banner-lines", "kex-stall", "auth-stall", "no-channel", "no-exec-reply",
         "tiny-window", "silent", "healthy")
SERVER_OUTPUT = b"hello from the test server\n"
_HOST_KEY: list = []

#: why a test that connects with the OpenSSH client (nodegate's ``ssh`` transport: ``ssh`` on PATH,
#: Ansible's default connection) cannot run here, or None
NO_SSH_CLIENT = (None if shutil.which("ssh")
                 else "the OpenSSH client (ssh) is not installed (apt-get install openssh-client)")
needs_ssh_client = pytest.mark.skipif(NO_SSH_CLIENT is not None, reason=str(NO_SSH_CLIENT))


def host_key() -> paramiko.PKey:
    if not _HOST_KEY:
        _HOST_KEY.append(paramiko.ECDSAKey.generate())
    return _HOST_KEY[0]


def client_key_file(directory: Path) -> Path:
    """A private key for the client (any key logs in), in PEM form: paramiko and OpenSSH read it."""
    p = directory / "client_ecdsa"
    if not p.exists():
        paramiko.ECDSAKey.generate().write_private_key_file(str(p))
        p.chmod(0o600)
    return p


class _Iface(paramiko.ServerInterface):
    def __init__(self, server: "Server"):
        self.server = server

    def get_allowed_auths(self, username):
        return "publickey"

    def check_auth_publickey(self, username, key):
        if self.server.mode == "auth-stall":
            self.server.closed.wait()
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind, chanid):
        if self.server.mode == "no-channel":
            self.server.closed.wait()
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        if self.server.mode == "no-exec-reply":
            self.server.closed.wait()
            return False
        self.server.commands.append(command.decode() if isinstance(command, bytes) else command)
        threading.Thread(target=self.server._session, args=(channel,), daemon=True).start()
        return True


class Server:
    """One misbehaving server (see the module docstring). ``port``; ``accepted``: connections
    taken; ``commands``: exec commands received; ``known_hosts_line``."""

    def __init__(self, mode: str):
        assert mode in MODES, mode
        self.mode = mode
        self.closed = threading.Event()
        self.accepted = 0
        self.commands: list[str] = []
        self.received = bytearray()       # what ``silent`` read of the script
        self._conns: list = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def known_hosts_line(self) -> str:
        k = host_key()
        return f"[127.0.0.1]:{self.port} {k.get_name()} {k.get_base64()}\n"

    def url(self, key: Path, scheme: str = "paramiko") -> str:
        return f"{scheme}://ng@127.0.0.1:{self.port}?ssh_identity_file={key}"

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self._conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c: socket.socket) -> None:
        try:
            if self.mode == "mute":
                self.closed.wait()
            elif self.mode == "slow-banner":
                for b in b"SSH-2.0-OpenSSH_9.2 slow\r\n" * 1000:
                    if self.closed.wait(1.0):
                        return
                    c.sendall(bytes([b]))
            elif self.mode == "banner-lines":
                for i in range(100000):
                    if self.closed.wait(1.0):
                        return
                    c.sendall(b"pre-banner line %d\r\n" % i)
            elif self.mode == "kex-stall":
                c.sendall(b"SSH-2.0-OpenSSH_9.2 kex-stall\r\n")
                c.settimeout(0.5)
                while not self.closed.is_set():
                    try:
                        if not c.recv(65536):
                            return
                    except socket.timeout:
                        continue
            else:
                t = paramiko.Transport(c, default_window_size=256 if self.mode == "tiny-window" else 2097152,
                                       default_max_packet_size=256 if self.mode == "tiny-window" else 32768)
                self._conns.append(t)
                t.add_server_key(host_key())
                t.start_server(server=_Iface(self))
                self.closed.wait()
        except (OSError, EOFError, paramiko.SSHException):
            return

    def _session(self, chan: paramiko.Channel) -> None:
        try:
            if self.mode == "healthy":
                # read the script first: the client sends it once the exec reply is in, and an
                # answer before that reply would close the channel under the exec request
                while chan.recv(65536):
                    pass
                chan.sendall(SERVER_OUTPUT)
                chan.send_exit_status(0)
                chan.shutdown_write()
                chan.close()
            elif self.mode == "silent":
                chan.settimeout(0.5)
                while not self.closed.is_set():
                    try:
                        b = chan.recv(65536)
                    except socket.timeout:
                        continue
                    if not b:
                        self.closed.wait()
                        return
                    self.received += b
            else:   # tiny-window: never reads, so the window never opens again
                self.closed.wait()
        except (OSError, EOFError, paramiko.SSHException):
            return

    def close(self) -> None:
        self.closed.set()
        try:
            self.sock.close()
        except OSError:
            pass
        for c in self._conns:
            try:
                c.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
