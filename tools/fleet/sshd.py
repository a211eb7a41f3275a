"""OpenSSH sshd instances serving simulated nodes on loopback (../shared/spec/testbed-notes.md).

One sshd per group of at most 16 nodes (sshd's MAX_LISTEN_SOCKS); each node has its own
loopback address and ``Match LocalAddress`` selects its ``ChrootDirectory``. Keys are generated
per fleet run: one host key per sshd group (``rekey`` moves a node to a group of its own with a
fresh key) and one client key authorized for root.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.fleet.owner import runs

SSHD = "/usr/sbin/sshd"
MAX_LISTEN = 16


def sshd_available() -> str | None:
    """None when sshd, ssh-keygen and busybox are installed and we are root; else the reason."""
    if os.geteuid() != 0:
        return "needs root (sshd ChrootDirectory and mknod)"
    for tool, pkg in ((SSHD, "openssh-server"), ("/usr/bin/ssh-keygen", "openssh-client"),
                      ("/usr/bin/busybox", "busybox-static"), ("/usr/bin/dash", "dash")):
        if not Path(tool).exists():
            return f"{tool} not installed (apt-get install {pkg})"
    return None


def keygen(path: Path, comment: str) -> str:
    """Create an ed25519 key pair at ``path``; returns the public key line (``ssh-ed25519 AAAA...``)."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    pub = path.with_name(path.name + ".pub").read_text().split()
    return f"{pub[0]} {pub[1]}"


@dataclass
class SshdGroup:
    """One sshd process: its nodes (name -> (address, root)), host key and files."""

    index: int
    dir: Path
    nodes: dict[str, tuple[str, Path]] = field(default_factory=dict)
    hostkey_pub: str = ""
    pid: int | None = None
    #: sshd also takes password logins (Ansible's ansible_password hosts; the user and its password
    #: are the host's own: sshd checks them before it enters the node's chroot)
    passwords: bool = False

    @property
    def conf(self) -> Path:
        return self.dir / f"sshd-{self.index}.conf"

    @property
    def log(self) -> Path:
        return self.dir / f"sshd-{self.index}.log"

    @property
    def pidfile(self) -> Path:
        return self.dir / f"sshd-{self.index}.pid"

    @property
    def hostkey(self) -> Path:
        return self.dir / f"ssh_host_ed25519_key-{self.index}"

    def write_config(self, authorized_keys: Path, port: int = 22) -> None:
        if not self.hostkey.exists():
            self.hostkey_pub = keygen(self.hostkey, f"nodegate-fleet-hostkey-{self.index}")
        lines = [f"ListenAddress {addr}:{port}" for addr, _ in self.nodes.values()]
        lines += [
            f"HostKey {self.hostkey}",
            f"PidFile {self.pidfile}",
            f"AuthorizedKeysFile {authorized_keys}",
            "StrictModes no", "UsePAM no", "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes", f"PasswordAuthentication {'yes' if self.passwords else 'no'}",
            "KbdInteractiveAuthentication no",
            "UseDNS no", "X11Forwarding no", "AllowTcpForwarding no", "AllowAgentForwarding no",
            "PermitTunnel no", "PrintMotd no", "PermitUserEnvironment no",
            # one line per session in the log: exec channels per node are counted from it
            "LogLevel VERBOSE",
            # fan-out of hundreds of parallel connects (testbed notes)
            "MaxStartups 200:30:400", "MaxSessions 64",
            # OpenSSH's default (sshd_config(5)): with 30, a loaded 2-core machine running two 40-node
            # fleets at once saw sshd drop connections whose key exchange and authentication had not
            # finished in 30 s (the client saw a bare EOF, "node not gathered")
            "LoginGraceTime 120",
            "ClientAliveInterval 0",
        ]
        for name, (addr, root) in self.nodes.items():
            lines += [f"# node {name}", f"Match LocalAddress {addr}", f"  ChrootDirectory {root}"]
        self.conf.write_text("\n".join(lines) + "\n")
        os.chmod(self.conf, 0o600)

    def start(self, timeout_s: float = 90.0) -> None:
        """Start this group's sshd and wait until it listens on every node address. A restart
        (``Fleet.rekey``) may find a port still held by the old sshd or its sessions on a loaded
        machine: sshd then logs "Address already in use", cannot bind and exits without a pid
        file; it is started again until ``timeout_s`` (a 15 s single try failed under a load of 6)."""
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.log.stat().st_size if self.log.exists() else 0
            self.pidfile.unlink(missing_ok=True)     # a SIGKILLed sshd leaves its old one
            subprocess.run([SSHD, "-f", str(self.conf), "-E", str(self.log)], check=True,
                           stdin=subprocess.DEVNULL, capture_output=True)
            if self._wait_pidfile(deadline, seen):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd {self.conf} wrote no pid file within {timeout_s:g} s; see {self.log}")
            time.sleep(0.5)      # could not bind yet: the old sshd is still going away
        for addr, _ in self.nodes.values():
            wait_listening(addr, 22, deadline)

    def _wait_pidfile(self, deadline: float, log_from: int) -> bool:
        """True once sshd wrote its PidFile (a complete line, after daemonizing); False when it
        logged that it cannot bind (it has exited: try again) or at ``deadline``."""
        while time.monotonic() <= deadline:
            txt = self.pidfile.read_text() if self.pidfile.exists() else ""
            if txt.endswith("\n"):
                self.pid = int(txt.split()[0])
                return True
            if self.log.exists():
                with open(self.log, "rb") as fh:
                    fh.seek(log_from)
                    if b"Cannot bind any address" in fh.read():
                        return False
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if sshd is still there after 30 s (a loaded machine); returns
        once it is gone (a zombie counts as gone: its sockets are closed)."""
        if self.pid is None and self.pidfile.exists():
            txt = self.pidfile.read_text().split()
            self.pid = int(txt[0]) if txt else None
        if self.pid is None:
            return
        for sig, wait_s in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            if not runs(self.pid, str(self.conf)):    # gone, or its pid reused by another process
                break
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                break
            if _gone_within(self.pid, wait_s):
                break
        self.pid = None
        self.pidfile.unlink(missing_ok=True)


def _gone_within(pid: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def wait_listening(addr: str, port: int, deadline: float) -> None:
    while True:
        try:
            with socket.create_connection((addr, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"sshd did not start listening on {addr}:{port}") from None
            time.sleep(0.02)




_CHROOT = re.compile(r'Changed root directory to "([^"]+)"')


def count_sessions(logs: list[Path]) -> dict[str, int]:
    """Sessions (exec channels) per node root, from sshd VERBOSE logs.

    Every session's child logs ``Changed root directory to "<root>"`` when it applies the node's
    ChrootDirectory: one line per exec channel naming the node, so no client ports need matching
    (a client may reuse one source port towards two node addresses at once, which made port-based
    attribution ambiguous at fan-out). A connection refused before authentication (changed host
    key, wrong client key) never gets there: zero sessions.
    """
    counts: dict[str, int] = {}
    for log in logs:
        if not log.exists():
            continue
        for root in _CHROOT.findall(log.read_text(errors="replace")):
            counts[root] = counts.get(root, 0) + 1
    return counts


_CONNECTION = re.compile(r"^Connection from \S+ port \d+ on (\S+) port \d+", re.M)


def count_connections(logs: list[Path]) -> dict[str, int]:
    """TCP connections accepted per node address, from sshd VERBOSE logs: sshd logs
    ``Connection from <client> port <p> on <node address> port 22`` for every connection it
    accepts, before any key exchange (so a refused host key or a port probe counts too: compare
    counts before and after a run). Each node listens on an address of its own."""
    counts: dict[str, int] = {}
    for log in logs:
        if not log.exists():
            continue
        for addr in _CONNECTION.findall(log.read_text(errors="replace")):
            counts[addr] = counts.get(addr, 0) + 1
    return counts
