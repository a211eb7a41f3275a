"""testinfra's ``Host`` on an inventory node, with a backend of ours.

``SiteBackend`` is a ``testinfra.backend.base.BaseBackend``: testinfra's ``Host`` and every
module (service, file, package, sysctl, process, socket, mount_point, ...) build their command
lines as usual (``get_command``: quoting, ``host.sudo()``) and call ``run``; ``run`` hands the
command to a source:

- ``LiveSource``: the node's ``SiteConnection`` (one SSH connection, one site shell), every
  command recorded (``nodegate.site.recording.Recorder``);
- ``ReplaySource``: the recording in the node's bundle; a command that is not there is ERROR
  ("not recorded in the bundle: <command>"), never a connection.

A command that could not be evaluated (deadline, output past the cap, connection lost, not
recorded) raises ``SiteCommandError``: the site test is ERROR, not FAIL. Its exit code is the
test's to judge (testinfra's semantics: ``check_output`` asserts rc 0).
"""

from __future__ import annotations

import time

from testinfra.backend.base import BaseBackend, CommandResult

from ..errors import NodegateError
from .recording import CommandRecord, Recorder, load_recording
from .shell import ShellError


class SiteCommandError(NodegateError):
    """A site command could not be evaluated; ``command`` and ``reason`` (the test is ERROR)."""

    def __init__(self, command: str, reason: str):
        self.command, self.reason = command, reason
        super().__init__(f"{reason}: {command}" if reason.startswith("not recorded") else
                         f"{command!r}: {reason}")


class LiveSource:
    """Runs each command on the node through ``conn`` (a SiteConnection) and records it."""

    live = True

    def __init__(self, conn, recorder: Recorder):
        self.conn, self.recorder = conn, recorder

    def answer(self, command: str, timeout_s: float, check_id: str) -> CommandRecord:
        rec_key = self.recorder.next_key()
        if not self.recorder.room():
            rec = CommandRecord(rec_key, command, rc=None, status="error", check_id=check_id,
                                note=f"the node's site recordings reached {self.recorder.budget} bytes")
        else:
            try:
                out = self.conn.run(rec_key, command, timeout_s)
                rec = CommandRecord(rec_key, command, out.stdout, out.stderr, out.rc, out.status, out.duration_s,
                                    check_id, out.note)
            except (ShellError, NodegateError, OSError) as e:
                rec = CommandRecord(rec_key, command, rc=None, status="error", check_id=check_id,
                                    note=f"{type(e).__name__}: {e}"[:500])
        self.recorder.add(rec)
        return rec


class ReplaySource:
    """Answers each command from the node's bundle: the k-th run of a command gets the k-th
    recording of it (the last one again when the test asks more often than the recorded run)."""

    live = False

    def __init__(self, bundle):
        self.recorded = load_recording(bundle)
        self._seen: dict[str, int] = {}

    def answer(self, command: str, timeout_s: float, check_id: str) -> CommandRecord:  # noqa: ARG002
        recs = self.recorded.get(command)
        if not recs:
            raise SiteCommandError(command, "not recorded in the bundle")
        k = self._seen.get(command, 0)
        self._seen[command] = k + 1
        return recs[min(k, len(recs) - 1)]


class ClosedSource:
    """The source of a node's host after its connection was released: a site test of that node
    running later (items out of node order) is ERROR, never a second connection."""

    live = False

    def __init__(self, node: str):
        self.node = node

    def answer(self, command: str, timeout_s: float, check_id: str) -> CommandRecord:  # noqa: ARG002
        raise SiteCommandError(command, f"{self.node}'s site connection was closed after its last site test")


class SiteBackend(BaseBackend):
    """The backend of one node's ``testinfra.host.Host``. ``hostname`` (and the pytest id) is
    the inventory node name. ``check_id``/``timeout_s``: the running site check and its command
    deadline (set per test by nodegate.site.items). ``errors``: the SiteCommandErrors raised
    while the current check ran (a test that swallows one is still ERROR)."""

    NAME = "nodegate"

    def __init__(self, node: str, source, *, timeout_s: float = 30.0):
        super().__init__(node)
        self.source = source
        self.timeout_s = float(timeout_s)
        self.default_timeout_s = float(timeout_s)
        self.check_id = ""
        self.errors: list[SiteCommandError] = []
        self.ran: list[CommandRecord] = []       # this check's commands (evidence of a FAIL)
        #: time.monotonic() the node's site budget ends (SiteRun.until), None: no budget
        self.until: float | None = None
        self.budget_s: float | None = None
        # site nodes speak UTF-8 (every supported distribution's default); testinfra would run
        # python3 on the node to ask (BaseBackend.get_encoding): one command fewer, and the
        # same decoding live and on replay
        self._encoding = "utf-8"

    def get_pytest_id(self) -> str:
        return self.hostname

    def get_sudo_command(self, command: str, sudo_user):
        # testinfra's `sudo /bin/sh -c`, non-interactive: a password prompt would wait for the
        # deadline (the probe's --sudo is `sudo -n` too)
        if sudo_user is None:
            return self.quote("sudo -n /bin/sh -c %s", command)
        return self.quote("sudo -n -u %s /bin/sh -c %s", sudo_user, command)

    def run(self, command: str, *args: str, **kwargs) -> CommandResult:
        """testinfra's backend API: ``command % quoted(args)``, run (or answered) -> CommandResult.
        ``timeout=`` (seconds) overrides the command deadline for this call."""
        cmd = self.get_command(command, *args)
        timeout = float(kwargs.get("timeout") or self.timeout_s)
        # the node's site budget bounds every command: none starts past it, none runs beyond it
        # (a live node only: a replay answers from the recording, in no time)
        cut_by_budget = False
        if self.until is not None and getattr(self.source, "live", False):
            left = self.until - time.monotonic()
            if left <= 0:
                err = SiteCommandError(cmd, self._spent())
                self.errors.append(err)
                raise err
            if left < timeout:
                timeout, cut_by_budget = left, True
        try:
            rec = self.source.answer(cmd, timeout, self.check_id)
        except SiteCommandError as e:   # not recorded: ERROR even if the test catches it
            self.errors.append(e)
            raise
        self.ran.append(rec)
        why = rec.problem()
        if why is not None and cut_by_budget and rec.status == "timeout":
            why = f"{self._spent()} (cut after {timeout:.1f} s)"
        if why is not None:
            err = SiteCommandError(cmd, why)
            self.errors.append(err)
            raise err
        return self.result(rec.rc, self.encode(cmd), rec.stdout, rec.stderr)

    def begin(self, check_id: str, timeout_s: float | None, until: float | None = None,
              budget_s: float | None = None) -> None:
        """A site check starts using this host: its id, command deadline and the node's site
        budget (``budget_s`` seconds, ending at ``until``, time.monotonic(); None: unchanged)."""
        self.check_id = check_id
        self.timeout_s = float(timeout_s or self.default_timeout_s)
        self.errors, self.ran = [], []
        if until is not None:
            self.until = until
        if budget_s is not None:
            self.budget_s = budget_s

    def _spent(self) -> str:
        budget = getattr(self, "budget_s", None)
        return budget_spent(budget) if budget is not None else "the node's site budget is spent: not evaluated"


def budget_spent(budget_s: float) -> str:
    """The words of a site check not run, or cut, because its node's site budget is spent."""
    return (f"the node's site checks used their budget of {budget_s:g} s (--site-timeout, default "
            "--connect-timeout + --probe-timeout): not evaluated")
