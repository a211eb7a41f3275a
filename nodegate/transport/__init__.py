"""Transport: run the probe on a node in ONE exec, with deadlines and host-key policy ours.

pytest-testinfra's backends are reused for URL grammar and connection set-up
(``paramiko://user@host:port?ssh_identity_file=...``, ``ssh://``, ``local://``); testinfra is
unmaintained since 2025-07 and pinned. Its paramiko backend accepts any host key (WarningPolicy)
and has no command timeout, so ``SecureParamikoBackend`` replaces the client set-up with
known_hosts verification and ``exec_stream`` enforces a client-side deadline.

Result of a run: ``ExecResult`` (stdout bytes as streamed so far, stderr, rc or None,
``timed_out``). Errors before the command runs raise ``TransportError`` with ``kind`` one of
hostkey-unknown, hostkey-changed, auth, unreachable, refused, dns, timeout, ssh.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
from testinfra.backend import get_backend_class, parse_hostspec
from testinfra.backend.paramiko import ParamikoBackend

from ..errors import TransportError as _TransportError

#: Total probe stdout read from one node, bytes. Past it the exec is stopped (``stdout_capped``):
#: a whole probe of a healthy 8-GPU node is a few MiB, and each item is capped on the node at
#: ``probe.DEFAULT_ITEM_CAP``; this bounds the controller's memory per node (docs/security.md).
STREAM_CAP = 64 * 1024 * 1024
#: After the exit status, seconds to wait for the channel's EOF while no more output comes.
EXIT_GRACE_S = 2.0

#: Seconds the exec loop lets output gather after a wake-up before reading it. A probe writes
#: ~250 small chunks (frames, short items), each its own SSH packet; read one by one they cost
#: a wake-up of this thread and of paramiko's each.
COALESCE_S = 0.005

#: Probe stderr kept per node, bytes: every item's stderr (each capped at 64 KiB on the node,
#: ~35 items) fits; past it the rest is read and dropped.
STDERR_CAP = 4 * 1024 * 1024


class TransportError(_TransportError):
    """``kind`` (hostkey-unknown, hostkey-changed, auth, unreachable, refused, dns, timeout, ssh,
    probe-failed) and ``message``; str() is "kind: message"."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


@dataclass
class ExecResult:
    stdout: bytes
    stderr: bytes
    rc: int | None
    timed_out: bool = False
    connect_s: float = 0.0
    exec_s: float = 0.0
    stdout_capped: bool = False


@dataclass
class HostKeyPolicy:
    """known_hosts verification. ``files``: known_hosts files read (the first one is where
    accepted keys are recorded). ``accept_new``: accept and record unknown keys (never a
    changed key)."""

    files: list[Path] = field(default_factory=list)
    accept_new: bool = False


def fingerprint(key: paramiko.PKey) -> str:
    return key.fingerprint  # "SHA256:..." (paramiko >= 3.2)


class _RejectOrRecord(paramiko.MissingHostKeyPolicy):
    def __init__(self, policy: HostKeyPolicy, lock: threading.Lock):
        self.policy = policy
        self.lock = lock

    def missing_host_key(self, client, hostname, key):
        known = client.get_host_keys().lookup(hostname)
        if known:
            # The host has a key of ANOTHER type on record: a node (or a man in the middle) that
            # now offers a different type is a changed key, never a new one (OpenSSH refuses it too).
            old = ", ".join(f"{t} {fingerprint(k)}" for t, k in known.items())
            raise TransportError(
                "hostkey-changed",
                f"host key for {hostname} CHANGED: known_hosts has {old}, node offered {key.get_name()} "
                f"{fingerprint(key)}; no command was sent")
        if not self.policy.accept_new:
            raise TransportError(
                "hostkey-unknown",
                f"host key for {hostname} is not in known_hosts ({key.get_name()} {fingerprint(key)}); "
                "add it or run with --accept-new-host-keys")
        if self.policy.files:
            dest = self.policy.files[0]
            with self.lock:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with open(dest, "a") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


_KH_LOCK = threading.Lock()
_KH_CACHE: dict[str, tuple[tuple, paramiko.HostKeys]] = {}
_KH_CACHE_LOCK = threading.Lock()


def known_hosts_entries(path: Path, name: str):
    """Keys recorded for ``name`` (``host`` or ``[host]:port``) in the known_hosts file ``path``:
    a ``{key type: PKey}`` mapping, or None. The file is parsed once and shared by every connection
    of the run (reloaded when its size, mtime or inode change): parsing it per connection made a
    fleet gather O(nodes^2), ~11 ms per connection at 256 hosts (docs/performance.md). Same
    matching as ``SSHClient.load_host_keys`` (paramiko's HostKeys: hashed names, comma lists)."""
    st = path.stat()
    sig = (st.st_size, st.st_mtime_ns, st.st_ino)
    with _KH_CACHE_LOCK:
        hit = _KH_CACHE.get(str(path))
        if hit is None or hit[0] != sig:
            hit = (sig, paramiko.HostKeys(str(path)))
            _KH_CACHE[str(path)] = hit
    return hit[1].lookup(name)


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


class SecureParamikoBackend(ParamikoBackend):
    """testinfra's ParamikoBackend with host keys verified and connect deadlines enforced."""

    def __init__(self, hostspec: str, *, hostkeys: HostKeyPolicy, connect_timeout: float = 10.0, **kw):
        super().__init__(hostspec, timeout=max(1, int(connect_timeout)), **kw)
        self.hostkeys = hostkeys
        self.connect_timeout = connect_timeout

    @property
    def client(self) -> paramiko.SSHClient:  # type: ignore[override]
        c = self.__dict__.get("_ng_client")
        if c is not None:
            return c
        client = paramiko.SSHClient()
        port = int(self.host.port) if self.host.port else 22
        # the name paramiko looks the server key up under (SSHClient.connect)
        kh_name = self.host.name if port == 22 else f"[{self.host.name}]:{port}"
        for f in self.hostkeys.files:
            if f.is_file():
                for ktype, key in (known_hosts_entries(f, kh_name) or {}).items():
                    client.get_host_keys().add(kh_name, ktype, key)
        client.set_missing_host_key_policy(_RejectOrRecord(self.hostkeys, _KH_LOCK))
        cfg = dict(hostname=self.host.name, port=port, username=self.host.user,
                   password=self.host.password, timeout=self.connect_timeout,
                   banner_timeout=self.connect_timeout, auth_timeout=self.connect_timeout,
                   channel_timeout=self.connect_timeout, allow_agent=True, look_for_keys=False,
                   transport_factory=_transport)
        if self.ssh_identity_file:
            cfg["key_filename"] = self.ssh_identity_file
        t_connect = time.monotonic()
        try:
            client.connect(**cfg)
        except TransportError:
            client.close()
            raise
        except paramiko.BadHostKeyException as e:
            client.close()
            raise TransportError(
                "hostkey-changed",
                f"host key for {self.host.name} CHANGED: known_hosts has {e.expected_key.get_name()} "
                f"{fingerprint(e.expected_key)}, node offered {e.key.get_name()} {fingerprint(e.key)}; "
                "no command was sent") from None
        except paramiko.AuthenticationException as e:
            client.close()
            raise TransportError("auth", f"authentication failed for {self.host.user}@{self.host.name}: {e}") from None
        except socket.gaierror as e:
            client.close()
            raise TransportError("dns", f"cannot resolve {self.host.name}: {e.strerror or e}") from None
        except ConnectionRefusedError:
            client.close()
            raise TransportError("refused", f"connection refused by {self.host.name}:{port}") from None
        except paramiko.ssh_exception.NoValidConnectionsError as e:
            # paramiko wraps the socket errors of every address it tried: name the real cause
            client.close()
            errs = list(e.errors.values())
            if errs and all(isinstance(x, ConnectionRefusedError) for x in errs):
                raise TransportError("refused", f"connection refused by {self.host.name}:{port}") from None
            why = "; ".join(sorted({x.strerror or str(x) for x in errs})) or str(e)
            raise TransportError("unreachable", f"cannot connect to {self.host.name}:{port}: {why}") from None
        except (socket.timeout, TimeoutError):
            client.close()
            raise TransportError("timeout", f"connect to {self.host.name}:{port} timed out after {self.connect_timeout}s") from None
        except (paramiko.SSHException, OSError, EOFError) as e:
            t = client.get_transport()
            silent = t is not None and not getattr(t, "remote_version", "")
            client.close()
            quick = time.monotonic() - t_connect < 0.8 * self.connect_timeout
            if (silent or "banner" in str(e).lower()) and quick:
                # the peer accepted TCP and hung up before any greeting: not a deadline
                raise TransportError("ssh", f"{self.host.name}:{port}: connection closed by the peer before the SSH "
                                            "banner (not an SSH server, or sshd refused it: MaxStartups, "
                                            "TCP wrappers)") from None
            if silent or "banner" in str(e).lower():
                # TCP accepted but no SSH greeting within the deadline (a wedged sshd, a tarpit)
                raise TransportError("timeout", f"{self.host.name}:{port}: TCP connected but no SSH banner/handshake "
                                                f"within {self.connect_timeout}s") from None
            kind = "unreachable" if isinstance(e, OSError) else "ssh"
            raise TransportError(kind, f"{self.host.name}:{port}: {e or type(e).__name__}") from None
        self.__dict__["_ng_client"] = client
        return client

    def close(self) -> None:
        c = self.__dict__.pop("_ng_client", None)
        if c is not None:
            c.close()

    def exec_stream(self, command: str, stdin: bytes, deadline_s: float, *, marker: str | None = None,
                    item_timeout_s: float | None = None) -> ExecResult:
        """Run ``command`` with ``stdin``; stop at ``deadline_s`` (whole exec) or when one probe
        item (framed with ``marker``) stays open longer than ``item_timeout_s``."""
        t0 = time.monotonic()
        client = self.client
        t1 = time.monotonic()
        transport = client.get_transport()
        if transport is None or not transport.is_active():
            raise TransportError("ssh", "connection closed before exec")
        try:
            chan = transport.open_session(timeout=self.connect_timeout)
            # No agent forwarding, no pty: the probe needs neither.
            chan.exec_command(command)
            chan.sendall(stdin)
            chan.shutdown_write()
        except (paramiko.SSHException, OSError, EOFError) as e:
            raise TransportError("ssh", f"exec failed: {e}") from None
        out, err, capped = bytearray(), bytearray(), False
        end = t1 + deadline_s
        timed_out = False
        chan.settimeout(0.0)
        mk = marker.encode() + b" " if marker else None
        open_since: float | None = None
        tail = b""  # end of the previous chunk: a frame line may straddle two reads
        last_data = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                left = end - now
                if left <= 0 or (open_since is not None and item_timeout_s is not None
                                 and now - open_since > item_timeout_s):
                    timed_out = True
                    break
                r, _, _ = select.select([chan], [], [], min(left, 0.5))
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
                        break
                    out += b
                if capped:  # stop the exec: nothing past the cap would be kept anyway
                    break
                while chan.recv_stderr_ready():
                    b = chan.recv_stderr(65536)
                    if not b:
                        break
                    got = True
                    if len(err) < STDERR_CAP:
                        err += b
                if got:
                    last_data = time.monotonic()
                if exec_finished(chan, last_data):
                    break
        except (paramiko.SSHException, OSError, EOFError) as e:
            err += f"\n[nodegate] connection dropped mid-probe: {e}\n".encode()
            return ExecResult(bytes(out), bytes(err), None, False, t1 - t0, time.monotonic() - t1, capped)
        rc = None
        if capped:
            err += f"\n[nodegate] probe output exceeded {STREAM_CAP} bytes: exec stopped\n".encode()
        elif not timed_out and chan.exit_status_ready():
            rc = chan.recv_exit_status()
        elif not timed_out:
            err += b"\n[nodegate] connection dropped mid-probe\n"
        try:
            chan.close()
        except Exception:  # noqa: BLE001 - closing a dead channel must never mask the result
            pass
        return ExecResult(bytes(out), bytes(err), rc, timed_out, t1 - t0, time.monotonic() - t1, capped)


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


def _popen_stream(argv: list[str], stdin: bytes, deadline_s: float) -> ExecResult:
    """Run a local process (sh or the OpenSSH client) with a hard deadline: on expiry the
    whole process group is killed and what was read so far is kept."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    except OSError as e:  # sh, sudo, ssh or chroot missing on the controller
        raise TransportError("probe-failed", f"cannot run {argv[0]}: {e.strerror or e}") from None
    out, err = bytearray(), bytearray()
    capped = [False]

    def pump(src, dst, cap):
        for chunk in iter(lambda: src.read1(65536), b""):
            if len(dst) < cap:
                dst += chunk
            else:
                capped[0] = True

    threads = [threading.Thread(target=pump, args=(p.stdout, out, STREAM_CAP), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err, STDERR_CAP), daemon=True)]
    for t in threads:
        t.start()
    try:
        p.stdin.write(stdin)
        p.stdin.close()
    except BrokenPipeError:
        pass
    timed_out = False
    try:
        p.wait(timeout=deadline_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(p.pid, 9)
        except ProcessLookupError:
            pass
        p.wait()
    for t in threads:
        t.join(timeout=2)
    return ExecResult(bytes(out), bytes(err), None if timed_out else p.returncode, timed_out, 0.0,
                      time.monotonic() - t0, capped[0])


class Target:
    """One node's connection: ``url`` in testinfra's grammar. ``run_probe`` does ONE exec."""

    def __init__(self, url: str, *, hostkeys: HostKeyPolicy | None = None, connect_timeout: float = 10.0,
                 sudo: bool = False):
        self.url = url
        self.hostkeys = hostkeys or HostKeyPolicy()
        self.connect_timeout = connect_timeout
        self.sudo = sudo
        host, kw = parse_hostspec(url)
        self.host = host
        self.kw = kw
        self.connection = kw.get("connection", "paramiko" if host else "local")
        if self.connection not in ("paramiko", "ssh", "local", "chroot"):
            raise ValueError(f"unsupported connection type {self.connection!r} (paramiko, ssh, local, chroot)")

    def _command(self) -> str:
        return "sudo -n sh -s" if self.sudo or self.kw.get("sudo") else "sh -s"

    def run_probe(self, script: str, deadline_s: float, *, marker: str | None = None,
                  item_timeout_s: float | None = None) -> ExecResult:
        data = script.encode()
        if self.connection == "local":
            cmd = ["sudo", "-n", "sh", "-s"] if self.sudo else ["sh", "-s"]
            return _popen_stream(cmd, data, deadline_s)
        if self.connection == "chroot":  # testinfra's chroot:///path: a host root seen from a container
            import urllib.parse
            root = urllib.parse.urlparse(self.url).path or "/"
            return _popen_stream(["chroot", root, "sh", "-s"], data, deadline_s)
        if self.connection == "ssh":
            return self._run_openssh(data, deadline_s)
        be = SecureParamikoBackend(self.host, hostkeys=self.hostkeys, connect_timeout=self.connect_timeout,
                                   ssh_identity_file=self.kw.get("ssh_identity_file"))
        try:
            return be.exec_stream(self._command(), data, deadline_s, marker=marker, item_timeout_s=item_timeout_s)
        finally:
            be.close()

    def openssh_argv(self, *extra_opts: str) -> list[str]:
        """The OpenSSH client command line for this target (testinfra's SshBackend parses the
        host spec): batch mode, no agent/X11 forwarding, host keys verified against our
        known_hosts files (``accept-new`` only with --accept-new-host-keys), connect deadline."""
        cls = get_backend_class("ssh")
        be = cls(self.host, ssh_identity_file=self.kw.get("ssh_identity_file"),
                 timeout=int(self.connect_timeout), controlpersist=0)
        opts = ["-o", "BatchMode=yes", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
                "-o", f"StrictHostKeyChecking={'accept-new' if self.hostkeys.accept_new else 'yes'}",
                "-o", f"ConnectTimeout={int(self.connect_timeout)}", *extra_opts]
        if self.hostkeys.files:
            opts += ["-o", "UserKnownHostsFile=" + " ".join(str(f) for f in self.hostkeys.files)]
        h = be.host
        if h.user:
            opts += ["-l", h.user]
        if h.port:
            opts += ["-p", str(h.port)]
        if be.ssh_identity_file:
            opts += ["-i", be.ssh_identity_file]
        return ["ssh", *opts, h.name, self._command()]

    def _run_openssh(self, data: bytes, deadline_s: float) -> ExecResult:
        r = _popen_stream(self.openssh_argv(), data, deadline_s)
        if r.rc == 255 and not r.stdout:
            msg = r.stderr.decode(errors="replace").strip()
            low = msg.lower()
            kind = ("hostkey-changed" if "changed" in low else "hostkey-unknown" if "host key verification" in low
                    else "auth" if "permission denied" in low else "refused" if "refused" in low
                    else "dns" if "resolve" in low else "unreachable")
            raise TransportError(kind, msg.splitlines()[-1] if msg else "ssh exit 255")
        return r
