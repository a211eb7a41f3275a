"""The paramiko transport: known_hosts verification, AES-GCM first, and every stage of a
connection under one ``Deadline`` (deadline.py): name resolution, TCP connect, SSH banner, key
exchange, authentication, channel open, exec request, sending the probe, reading its output.

``SecureParamikoBackend`` keeps testinfra's ParamikoBackend shape (constructor, ``client``,
``close``) and adds ``exec_stream`` (the exec loop: channel.py; host keys: hostkeys.py).
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from typing import Callable

import paramiko
from testinfra.backend.paramiko import ParamikoBackend

from .base import STDERR_CAP, ExecResult, HostKeyPolicy, TransportError
from .channel import run_channel
from .deadline import Deadline
from .hostkeys import _KH_LOCK, _RejectOrRecord, fingerprint, known_hosts_entries

# paramiko's transport thread logs every connection it loses (a deadline shutting a socket down
# included) with a traceback at ERROR; without a handler, Python's last resort prints it on the
# terminal. nodegate reports the same failure itself (meta.json, the items' ERROR); a site that
# configures logging still gets paramiko's records.
if not logging.getLogger("paramiko").handlers:
    logging.getLogger("paramiko").addHandler(logging.NullHandler())

#: ciphers offered first, in this order, when paramiko has them; the rest keep paramiko's order
AEAD_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


def _transport(sock, **kw) -> paramiko.Transport:
    """The Transport ``SSHClient.connect`` builds (its ``transport_factory``), offering AES-GCM
    before paramiko's default AES-CTR + HMAC-SHA2.

    AES-GCM is an AEAD mode (RFC 5647; OpenSSH's ``aes128-gcm@openssh.com`` since 6.2, in its
    default cipher list): one pass authenticates and decrypts each packet, where CTR + HMAC
    computes a separate HMAC-SHA2 in Python for every packet. A probe's output arrives as ~260
    packets: paramiko's CPU per node 13.3 -> 11.5 ms (64 nodes, 3 runs each,
    docs/performance.md), and the node's sshd does less work too. A server without GCM still
    negotiates the first cipher both sides have (CTR); the key exchange, host-key and MAC
    choices are paramiko's defaults. ``kw`` is what ``connect`` passes (``disabled_algorithms``;
    before paramiko 5 also ``gss_kex`` and ``gss_deleg_creds``); GCM is in paramiko from 3.5."""
    t = paramiko.Transport(sock, **kw)
    opts = t.get_security_options()
    have = tuple(opts.ciphers)
    first = tuple(c for c in AEAD_CIPHERS if c in have)
    if first:
        opts.ciphers = first + tuple(c for c in have if c not in first)
    return t


def _handshake_stage(t: paramiko.Transport | None) -> str:
    """Which handshake stage ``t`` (inside ``SSHClient.connect``) is in, from paramiko's own
    state: no ``remote_version`` yet = banner, no completed first key exchange = key exchange,
    not authenticated = authentication."""
    if t is None or not getattr(t, "remote_version", ""):
        return "SSH banner"
    if not getattr(t, "initial_kex_done", False):
        return "key exchange"
    return "authentication"


def _shutdown(sock: socket.socket) -> None:
    """Shut ``sock`` down: every thread blocked on it (paramiko's reader, a send) wakes with an
    error. close() alone wakes no blocked recv on Linux."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def _resolve(host: str, port: int, dl: Deadline, target: str) -> list:
    """getaddrinfo within the deadline: an address literal at once; a name in a helper thread
    (getaddrinfo cannot be interrupted; a hung resolver is left behind, the node is not)."""
    try:
        return socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError):
        pass
    box: dict = {}

    def work():
        try:
            box["v"] = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            box["e"] = e

    th = threading.Thread(target=work, name="nodegate-resolve", daemon=True)
    th.start()
    th.join(dl.remaining())
    if "v" in box:
        return box["v"]
    if "e" in box:
        e = box["e"]
        raise TransportError("dns", f"cannot resolve {host}: {getattr(e, 'strerror', None) or e}") from None
    raise dl.error(target)


def open_socket(host: str, port: int, dl: Deadline, connect_timeout: float) -> socket.socket:
    """A TCP connection to ``host:port`` within ``dl``: each address getaddrinfo gives, in
    order, until one connects. Raises TransportError dns / refused / unreachable / timeout."""
    target = f"{host}:{port}"
    dl.stage("name resolution")
    infos = _resolve(host, port, dl, target)
    errors: list[OSError] = []
    dl.stage("TCP connect")
    for af, _, _, _, addr in infos:
        left = dl.remaining()
        if left <= 0:
            break
        s = socket.socket(af, socket.SOCK_STREAM)
        s.settimeout(left)
        try:
            s.connect(addr)
            return s
        except (socket.timeout, TimeoutError):
            s.close()
            break
        except OSError as e:
            s.close()
            errors.append(e)
    if dl.expired() or not errors:
        raise TransportError("timeout", f"connect to {target} timed out after {connect_timeout:g}s", "TCP connect")
    if all(e.errno == errno.ECONNREFUSED for e in errors):
        raise TransportError("refused", f"connection refused by {target}")
    why = "; ".join(sorted({e.strerror or str(e) for e in errors}))
    raise TransportError("unreachable", f"cannot connect to {target}: {why}")


class SecureParamikoBackend(ParamikoBackend):
    """testinfra's ParamikoBackend with host keys verified and every stage under our deadline.

    ``deadline``: the node's Deadline (``Target.run_probe``), covering the connect and every
    exec; without one, ``client`` connects within ``connect_timeout`` and each ``exec_stream``
    gets a Deadline of its own. A Deadline that ends shuts the connection down (the only way
    to free a call paramiko blocks in): after a timed-out exec, ``close()`` and reconnect."""

    def __init__(self, hostspec: str, *, hostkeys: HostKeyPolicy, connect_timeout: float = 10.0,
                 deadline: Deadline | None = None, **kw):
        super().__init__(hostspec, timeout=max(1, int(connect_timeout)), **kw)
        self.hostkeys = hostkeys
        self.connect_timeout = connect_timeout
        self.deadline = deadline

    @property
    def port(self) -> int:
        return int(self.host.port) if self.host.port else 22

    @property
    def target(self) -> str:
        return f"{self.host.name}:{self.port}"

    @property
    def client(self) -> paramiko.SSHClient:  # type: ignore[override]
        c = self.__dict__.get("_ng_client")
        if c is not None:
            return c
        if self.deadline is not None:
            return self._connect(self.deadline)
        with Deadline(self.connect_timeout, label="connect") as dl:
            return self._connect(dl)

    def _kill(self) -> None:
        """Closer for a deadline: shut the socket down, stop paramiko's thread."""
        sock = self.__dict__.get("_ng_sock")
        if sock is not None:
            _shutdown(sock)
        t = self.__dict__.get("_ng_transport")
        if t is not None:
            t.close()

    def _connect(self, dl: Deadline) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        port = self.port
        # the name paramiko looks the server key up under (SSHClient.connect)
        kh_name = self.host.name if port == 22 else f"[{self.host.name}]:{port}"
        for f in self.hostkeys.files:
            if f.is_file():
                for ktype, key in (known_hosts_entries(f, kh_name) or {}).items():
                    client.get_host_keys().add(kh_name, ktype, key)
        client.set_missing_host_key_policy(_RejectOrRecord(self.hostkeys, _KH_LOCK))
        dl.limit(self.connect_timeout, "connect")
        dl.add_closer(self._kill)
        sock = open_socket(self.host.name, port, dl, self.connect_timeout)
        self.__dict__["_ng_sock"] = sock

        def factory(s, **kw):
            t = _transport(s, **kw)
            self.__dict__["_ng_transport"] = t
            return t

        # paramiko's own timeouts only ever come after ours (they restart per read or step)
        left = dl.remaining() + 1.0
        cfg = dict(hostname=self.host.name, port=port, username=self.host.user, password=self.host.password,
                   sock=sock, timeout=left, banner_timeout=left, auth_timeout=left, channel_timeout=left,
                   allow_agent=True, look_for_keys=False, transport_factory=factory)
        if self.ssh_identity_file:
            cfg["key_filename"] = self.ssh_identity_file
        dl.stage("SSH banner")
        dl.stage_fn = lambda: _handshake_stage(self.__dict__.get("_ng_transport"))
        t_connect = time.monotonic()
        try:
            client.connect(**cfg)
        except TransportError:
            client.close()
            raise
        except Exception as e:  # noqa: BLE001 - mapped to a TransportError kind below
            client.close()
            self.__dict__.pop("_ng_sock", None)
            raise self._connect_error(e, dl, time.monotonic() - t_connect) from None
        finally:
            dl.stage_fn = None
        if dl.expired():   # connected, but the watchdog had already shut it: do not use it
            client.close()
            raise dl.error(self.target)
        dl.limit(None)
        self.__dict__["_ng_client"] = client
        return client

    def _connect_error(self, e: Exception, dl: Deadline, took: float) -> TransportError:
        target = self.target
        if dl.expired():
            dl.stage(dl.fired_stage or _handshake_stage(self.__dict__.get("_ng_transport")))
            return dl.error(target)
        if isinstance(e, paramiko.BadHostKeyException):
            return TransportError(
                "hostkey-changed",
                f"host key for {self.host.name} CHANGED: known_hosts has {e.expected_key.get_name()} "
                f"{fingerprint(e.expected_key)}, node offered {e.key.get_name()} {fingerprint(e.key)}; "
                "no command was sent")
        if isinstance(e, paramiko.AuthenticationException):
            return TransportError("auth", f"authentication failed for {self.host.user}@{self.host.name}: {e}")
        if isinstance(e, (paramiko.SSHException, OSError, EOFError)):
            t = self.__dict__.get("_ng_transport")
            silent = t is not None and not getattr(t, "remote_version", "")
            if silent or "banner" in str(e).lower():
                # the peer accepted TCP and hung up before any greeting: not a deadline
                return TransportError("ssh", f"{target}: connection closed by the peer before the SSH "
                                             "banner (not an SSH server, or sshd refused it: MaxStartups, "
                                             "TCP wrappers)")
            kind = "unreachable" if isinstance(e, OSError) else "ssh"
            if not str(e):
                # paramiko raises a bare EOFError/SSHException when the peer hangs up mid-handshake
                # (sshd's LoginGraceTime, a dropped connection): say so instead of an empty message
                stage = _handshake_stage(t) if t is not None else "the SSH handshake"
                return TransportError(kind, f"{target}: connection closed by the peer during {stage} "
                                            f"({type(e).__name__}, after {took:.1f}s)")
            return TransportError(kind, f"{target}: {e}")
        return TransportError("ssh", f"{target}: {type(e).__name__}: {e}")

    def close(self) -> None:
        c = self.__dict__.pop("_ng_client", None)
        self.__dict__.pop("_ng_sock", None)
        self.__dict__.pop("_ng_transport", None)
        if c is not None:
            c.close()

    def exec_stream(self, command: str, stdin: bytes, deadline_s: float, *, marker: str | None = None,
                    item_timeout_s: float | None = None, deadline: Deadline | None = None,
                    on_data: Callable[[bytes], None] | None = None, stop_at_cap: bool = True,
                    stderr_cap: int = STDERR_CAP) -> ExecResult:
        """Run ``command`` with ``stdin``, connecting first if needed. The exec (channel open,
        exec request, sending ``stdin``, reading to EOF) ends ``deadline_s`` after it starts, and
        never past ``deadline`` (or the backend's own); also when one probe item (framed with
        ``marker``) stays open longer than ``item_timeout_s``. The channel open and the exec
        request are server round trips: each gets ``connect_timeout``. ``on_data`` gets each stdout chunk;
        ``stop_at_cap``: stop at STREAM_CAP (else read on and drop). Raises TransportError
        before any output (connect, host key, auth, no channel, no exec reply)."""
        dl = deadline or self.deadline
        own = dl is None
        if own:
            dl = Deadline(deadline_s + (0 if "_ng_client" in self.__dict__ else self.connect_timeout),
                          label="exec").arm()
        try:
            t0 = time.monotonic()
            client = self._connect(dl) if "_ng_client" not in self.__dict__ else self.client
            t1 = time.monotonic()
            dl.add_closer(self._kill)
            r = run_channel(client.get_transport(), command, stdin, dl, self.target, marker=marker,
                            item_timeout_s=item_timeout_s, on_data=on_data, stop_at_cap=stop_at_cap,
                            stderr_cap=stderr_cap, setup_s=self.connect_timeout, exec_s=deadline_s)
            r.connect_s = t1 - t0
            return r
        finally:
            if own:
                dl.disarm()
