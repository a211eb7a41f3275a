"""What every transport shares: its error, its result, its host-key policy and its caps."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import TransportError as _TransportError

#: Total probe stdout read from one node, bytes. Past it the exec is stopped (``stdout_capped``):
#: a whole probe of a healthy 8-GPU node is a few MiB, and each item is capped on the node at
#: ``probe.DEFAULT_ITEM_CAP``; this bounds the controller's memory per node (docs/security.md).
STREAM_CAP = 64 * 1024 * 1024

#: Probe stderr kept per node, bytes: every item's stderr (each capped at 64 KiB on the node,
#: ~35 items) fits; past it the rest is read and dropped.
STDERR_CAP = 4 * 1024 * 1024


class TransportError(_TransportError):
    """``kind`` (hostkey-unknown, hostkey-changed, auth, unreachable, refused, dns, timeout, ssh,
    probe-failed, interrupted) and ``message``; str() is "kind: message". ``stage``: the
    connection stage that was running when a deadline or an interruption ended it ("" when
    not a deadline), one of ``deadline.STAGES``."""

    def __init__(self, kind: str, message: str, stage: str = ""):
        self.kind = kind
        self.message = message
        self.stage = stage
        super().__init__(f"{kind}: {message}")


@dataclass
class ExecResult:
    """One exec: ``stdout``/``stderr`` bytes as read so far, ``rc`` (None: no exit status, the
    exec was cut), ``timed_out`` (our deadline or an interruption ended it), seconds spent
    connecting (``connect_s``) and in the exec (``exec_s``), ``stdout_capped`` (STREAM_CAP
    reached). ``stage``: the stage the cut happened in (``deadline.STAGES``; "" when not cut),
    ``note`` a detail of it (bytes of the script sent); ``interrupted``: why the run was
    stopped (SIGINT, SIGTERM...) when that, not the deadline, cut it."""

    stdout: bytes
    stderr: bytes
    rc: int | None
    timed_out: bool = False
    connect_s: float = 0.0
    exec_s: float = 0.0
    stdout_capped: bool = False
    stage: str = ""
    interrupted: str = ""
    note: str = ""


@dataclass
class HostKeyPolicy:
    """known_hosts verification. ``files``: known_hosts files read (the first one is where
    accepted keys are recorded). ``accept_new``: accept and record unknown keys (never a
    changed key)."""

    files: list[Path] = field(default_factory=list)
    accept_new: bool = False
