"""The site commands' connection to one node: one SSH connection, one site shell on it.

Built from the node's testinfra URL (``nodegate.transport.Target`` parses it) and nodegate's
own transport policy: ``paramiko://`` goes through ``nodegate.transport.SecureParamikoBackend``
(known_hosts verified, ``--accept-new-host-keys`` recording unknown keys, a changed key always
refused, connect deadline), ``ssh://`` through the OpenSSH client with the options
``Target.openssh_argv`` gives the probe (BatchMode, StrictHostKeyChecking, our known_hosts,
ConnectTimeout), ``local://`` and ``chroot://`` as local processes. ``--sudo`` runs the site
shell as ``sudo -n sh -s``, as it runs the probe.

One connection carries every command: the site shell (``nodegate.site.shell``) is started
once, and again on the same paramiko connection only after a command had to be cut (a new
session, never a new handshake). With OpenSSH (one process per connection) that restart is a
new connection: ``shells_started`` says how many there were.
"""

from __future__ import annotations

import threading

from ..transport import HostKeyPolicy, Target, TransportError
from .shell import ChannelStreams, CommandOutput, PipeStreams, ShellError, SiteShell


class SiteConnection:
    """``open()`` connects and starts the site shell (TransportError: connect, auth or host-key
    failure, with the transport's ``kind``; ShellError: the shell did not start); ``run()`` one
    command; ``close()`` ends the shell and the connection. ``open`` may run in a helper
    thread (pre-connect); ``run`` and ``close`` in the caller's, after ``open`` returned."""

    def __init__(self, url: str, *, hostkeys: HostKeyPolicy, connect_timeout: float = 10.0, sudo: bool = False):
        self.target = Target(url, hostkeys=hostkeys, connect_timeout=connect_timeout, sudo=sudo)
        self.connect_timeout = connect_timeout
        self.sudo = bool(sudo or self.target.kw.get("sudo"))
        self.kind = self.target.connection          # paramiko | ssh | local | chroot
        self._backend = None   # a SecureParamikoBackend once connected (paramiko://)
        self.shell: SiteShell | None = None
        self.shells_started = 0
        self._lock = threading.Lock()

    def _shell_command(self) -> str:
        return "sudo -n sh -s" if self.sudo else "sh -s"

    def open(self) -> None:
        with self._lock:
            if self.shell is None or self.shell.broken:
                self._start_shell()

    def _start_shell(self) -> None:
        if self.shell is not None:
            self.shell.close()
            self.shell = None
        if self.kind == "paramiko":
            from ..transport.paramiko_ssh import SecureParamikoBackend   # paramiko only where it is used
            if self._backend is None:
                t = self.target
                self._backend = SecureParamikoBackend(t.host, hostkeys=t.hostkeys, connect_timeout=self.connect_timeout,
                                                      ssh_identity_file=t.kw.get("ssh_identity_file"))
            client = self._backend.client       # connects once; TransportError on any failure
            transport = client.get_transport()
            if transport is None or not transport.is_active():
                raise TransportError("ssh", "the site connection closed")
            try:
                chan = transport.open_session(timeout=self.connect_timeout)
                chan.exec_command(self._shell_command())   # no pty, no agent forwarding (as the probe)
            except Exception as e:  # noqa: BLE001 - paramiko raises SSHException, EOFError, OSError
                raise TransportError("ssh", f"could not start the site shell: {e or type(e).__name__}") from None
            streams = ChannelStreams(chan)
        else:
            streams = PipeStreams(self._argv())
        shell = SiteShell(streams)
        self.shells_started += 1
        try:
            shell.start(self.connect_timeout)
        except ShellError as e:
            shell.close()
            if self.kind == "ssh":
                raise _openssh_error(e) from None
            raise
        self.shell = shell

    def _argv(self) -> list[str]:
        """The probe's own command lines (nodegate.transport.Target): the OpenSSH client ending
        with the remote ``sh -s``, or the local ``sh -s`` / ``chroot <root> sh -s``."""
        if self.kind == "ssh":
            return self.target.openssh_argv(streamed=True)
        return self.target.local_argv(streamed=True)

    def run(self, key: str, command: str, timeout_s: float) -> CommandOutput:
        """Run one command in the site shell (started again first if the last one was cut).
        Raises TransportError/ShellError when no shell can be had."""
        self.open()
        return self.shell.run(key, command, timeout_s)

    def close(self) -> None:
        with self._lock:
            if self.shell is not None:
                self.shell.close()
                self.shell = None
            if self._backend is not None:
                self._backend.close()
                self._backend = None


def _openssh_error(e: ShellError) -> TransportError:
    """The OpenSSH client's failure (exit 255, message on stderr) as the probe reports it."""
    msg = e.message
    low = msg.lower()
    kind = ("hostkey-changed" if "changed" in low else "hostkey-unknown" if "host key verification" in low
            else "auth" if "permission denied" in low else "refused" if "refused" in low
            else "dns" if "resolve" in low else "timeout" if e.kind == "timeout" else "unreachable")
    return TransportError(kind, msg)
