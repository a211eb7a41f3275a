"""Transport: run the probe on a node in ONE exec, with deadlines and host-key policy ours.

pytest-testinfra's backends are reused for URL grammar and connection set-up
(``paramiko://user@host:port?ssh_identity_file=...``, ``ssh://``, ``local://``); testinfra is
unmaintained since 2025-07 and pinned. Its paramiko backend accepts any host key (WarningPolicy)
and has no command timeout, so ``SecureParamikoBackend`` (paramiko_ssh.py) replaces the client
set-up with known_hosts verification (hostkeys.py), and every stage of a connection runs under
one ``Deadline`` (deadline.py) that a watchdog enforces by shutting the connection down; the exec
loop is channel.py.

One node, one deadline: ``Target.run_probe`` arms a Deadline of ``connect_timeout +
deadline_s`` at the start (name resolution, then TCP connect); the connect stages (through
authentication) must be done within ``connect_timeout``, the exec (channel open, exec
request, sending the probe, reading its output) within ``deadline_s`` of its start, and nothing
past the node's deadline: a node holds its slot at most that long, whatever stage its server
stalls in. Local processes (``local://``, ``chroot://``) and the OpenSSH client (``ssh://``,
process.py) run under the same Deadline: it kills their process group.

Result of a run: ``ExecResult`` (stdout bytes as streamed so far, stderr, rc or None,
``timed_out``, the ``stage`` a cut happened in). Errors before the command runs raise
``TransportError`` with ``kind`` one of hostkey-unknown, hostkey-changed, auth, unreachable,
refused, dns, timeout, ssh, probe-failed, interrupted (and ``stage`` for a deadline).
"""

from __future__ import annotations

import importlib
import threading

from .base import STDERR_CAP, STREAM_CAP, ExecResult, HostKeyPolicy, TransportError
from .deadline import STAGES, Deadline, interrupt_all, set_stop, stop_reason
from .process import openssh_exec, popen_stream

#: names of the paramiko and testinfra side, imported when first asked for (PEP 562): a --replay,
#: a local:// or ssh:// run never loads paramiko (~0.2-0.6 s of a replay's start-up, py-spy:
#: docs/performance.md)
_LAZY = {"COALESCE_S": ".channel", "EXIT_GRACE_S": ".channel", "exec_finished": ".channel",
         "run_channel": ".channel", "fingerprint": ".hostkeys", "known_hosts_entries": ".hostkeys",
         "AEAD_CIPHERS": ".paramiko_ssh", "SecureParamikoBackend": ".paramiko_ssh", "_transport": ".paramiko_ssh"}


def __getattr__(name: str):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value

__all__ = ["STDERR_CAP", "STREAM_CAP", "ExecResult", "HostKeyPolicy", "TransportError", "STAGES", "Deadline",
           "interrupt_all", "set_stop", "stop_reason", "AEAD_CIPHERS", "COALESCE_S", "EXIT_GRACE_S",
           "SecureParamikoBackend", "_transport", "exec_finished", "fingerprint", "known_hosts_entries",
           "run_channel", "openssh_exec", "popen_stream", "Target"]


def _popen_stream(argv: list[str], stdin: bytes, deadline_s: float) -> ExecResult:
    """Run a local process with a hard deadline of ``deadline_s`` (process.popen_stream)."""
    with Deadline(deadline_s, label="exec") as dl:
        return popen_stream(argv, stdin, dl)


#: How every one-exec script (probe, burn-in, perf) runs on a node (issue 37.8). With ``sh -s`` the
#: shell read the script from its stdin as it ran, so a command of the script could read the rest
#: of it (the framing marker among it) through /proc/<shell>/fd/0. Here the shell reads the whole
#: script first (``$(cat)``: the controller closes the channel's stdin after sending it), points its
#: stdin at /dev/null, then runs it from memory: a command inherits /dev/null and no descriptor of
#: the script, and the script is in no file or argument. (A process of the same user can still read
#: another's memory through ptrace or /proc/<pid>/mem where Yama's ptrace_scope is 0: docs/security.md.)
SCRIPT_RUNNER = 'ng_s=$(cat) || exit 125; exec </dev/null; eval "$ng_s"'


class Target:
    """One node's connection: ``url`` in testinfra's grammar. ``run_probe`` does ONE exec."""

    def __init__(self, url: str, *, hostkeys: HostKeyPolicy | None = None, connect_timeout: float = 10.0,
                 sudo: bool = False):
        self.url = url
        self.hostkeys = hostkeys or HostKeyPolicy()
        self.connect_timeout = connect_timeout
        self.sudo = sudo
        from testinfra.backend import parse_hostspec
        host, kw = parse_hostspec(url)
        self.host = host
        self.kw = kw
        self.connection = kw.get("connection", "paramiko" if host else "local")
        if self.connection not in ("paramiko", "ssh", "local", "chroot"):
            raise ValueError(f"unsupported connection type {self.connection!r} (paramiko, ssh, local, chroot)")

    def _command(self, streamed: bool = False) -> str:
        """The remote command: the one-exec ``SCRIPT_RUNNER``, or with ``streamed`` a plain
        ``sh -s`` (the site shell, which is sent one command at a time and runs each with stdin
        from /dev/null itself: nodegate/site/shell.sh)."""
        sh = "sh -s" if streamed else f"sh -c '{SCRIPT_RUNNER}'"
        return ("sudo -n " if self.sudo or self.kw.get("sudo") else "") + sh

    def local_argv(self, streamed: bool = False) -> list[str] | None:
        """The command line of a local:// or chroot:// target (None for SSH targets);
        ``streamed``: see ``_command``."""
        sh = ["sh", "-s"] if streamed else ["sh", "-c", SCRIPT_RUNNER]
        if self.connection == "local":
            return ["sudo", "-n", *sh] if self.sudo else sh
        if self.connection == "chroot":  # testinfra's chroot:///path: a host root seen from a container
            import urllib.parse
            root = urllib.parse.urlparse(self.url).path or "/"
            return ["chroot", root, *sh]
        return None

    def node_deadline(self, exec_s: float, stop: threading.Event | None = None) -> Deadline:
        """The (unarmed) Deadline of one exec on this node: ``connect_timeout + exec_s`` for
        SSH targets, ``exec_s`` for local ones; ``stop`` ends it early."""
        local = self.connection in ("local", "chroot")
        return Deadline(exec_s + (0.0 if local else self.connect_timeout), stop=stop,
                        label="node" if not local else "exec")

    def run_probe(self, script: str, deadline_s: float, *, marker: str | None = None,
                  item_timeout_s: float | None = None, stop: threading.Event | None = None) -> ExecResult:
        """ONE exec of ``script`` (``SCRIPT_RUNNER``) under the node's deadline (``node_deadline``).
        ``stop`` (set on SIGINT/SIGTERM) cuts it like the deadline does, keeping what was read."""
        with self.node_deadline(deadline_s, stop) as dl:
            return self.run(script.encode(), dl, deadline_s, marker=marker, item_timeout_s=item_timeout_s)

    def run(self, data: bytes, dl: Deadline, exec_s: float, *, marker: str | None = None,
            item_timeout_s: float | None = None, on_data=None, stderr_cap: int = STDERR_CAP,
            stop_at_cap: bool = True, grace_s: float = 0.0) -> ExecResult:
        """Run ``data`` with ``sh -c SCRIPT_RUNNER`` on this target within the armed ``dl`` (the exec gets
        ``exec_s`` after the connect). Shared by the probe and the burn-in; ``grace_s``: a
        local process gets SIGTERM first and SIGKILL that much later (process.popen_stream)."""
        argv = self.local_argv()
        if argv is not None:
            return popen_stream(argv, data, dl, on_data=on_data, stderr_cap=stderr_cap, grace_s=grace_s)
        if self.connection == "ssh":
            return openssh_exec(self.openssh_argv("-T"), data, dl, connect_timeout=self.connect_timeout,
                                exec_s=exec_s, on_data=on_data, stderr_cap=stderr_cap, grace_s=grace_s)
        from .paramiko_ssh import SecureParamikoBackend
        be = SecureParamikoBackend(self.host, hostkeys=self.hostkeys, connect_timeout=self.connect_timeout,
                                   deadline=dl, ssh_identity_file=self.kw.get("ssh_identity_file"))
        try:
            return be.exec_stream(self._command(), data, exec_s, marker=marker, item_timeout_s=item_timeout_s,
                                  on_data=on_data, stderr_cap=stderr_cap, stop_at_cap=stop_at_cap)
        finally:
            be.close()

    def openssh_argv(self, *extra_opts: str, streamed: bool = False) -> list[str]:
        """The OpenSSH client command line for this target (testinfra's SshBackend parses the
        host spec): batch mode, no agent/X11 forwarding, host keys verified against our
        known_hosts files (``accept-new`` only with --accept-new-host-keys), connect deadline."""
        from testinfra.backend import get_backend_class
        cls = get_backend_class("ssh")
        be = cls(self.host, ssh_identity_file=self.kw.get("ssh_identity_file"),
                 timeout=int(self.connect_timeout), controlpersist=0)
        opts = ["-o", "BatchMode=yes", "-o", "ForwardAgent=no", "-o", "ForwardX11=no",
                "-o", f"StrictHostKeyChecking={'accept-new' if self.hostkeys.accept_new else 'yes'}",
                # ours (process.py) is the deadline that counts; ssh's own is the backstop
                "-o", f"ConnectTimeout={int(self.connect_timeout) + 1}", *extra_opts]
        if self.hostkeys.files:
            # ssh_config(5) splits the value at spaces; a path with a space is double-quoted
            opts += ["-o", "UserKnownHostsFile=" + " ".join(f'"{f}"' if " " in str(f) else str(f)
                                                             for f in self.hostkeys.files)]
        h = be.host
        if h.user:
            opts += ["-l", h.user]
        if h.port:
            opts += ["-p", str(h.port)]
        if be.ssh_identity_file:
            opts += ["-i", be.ssh_identity_file]
        # "--": the host can never be read as an option (the inventory refuses such addresses
        # too: nodegate.inventory.address_problem)
        return ["ssh", *opts, "--", h.name, self._command(streamed)]
