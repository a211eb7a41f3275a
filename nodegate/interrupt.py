"""Stopping a run: SIGINT (Ctrl-C), SIGTERM (a CI cancel) and SIGHUP (the terminal went away).

The pytest process (``nodegate.session.signals``) turns SIGTERM and SIGHUP into an interruption
pytest handles like Ctrl-C: the items stop, the session finishes, the reports are written for
what was judged. ``FleetRun.abort(reason)`` then stops the gathering process this way:

- the reason goes into a shared buffer (``ReasonBox``) and the child gets SIGTERM;
- the child (``setup_gathering_child``) sets its run-wide ``stop`` event and shuts every armed
  deadline down (``transport.interrupt_all``): every SSH connection is closed and every local
  process group killed at once; the probes in flight return what they read, their bundles
  are written marked cut (``meta.interrupted``), the nodes not yet contacted get an
  ``interrupted`` bundle without being contacted, and the child exits;
- a child still there ``ABORT_GRACE_S`` later is killed (SIGKILL).

The child also ends when the pytest process dies without a word (SIGKILL, OOM): Linux's
``PR_SET_PDEATHSIG`` sends it SIGTERM (prctl(2)).
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading

from .transport import interrupt_all, set_stop

#: Seconds the gathering process gets to close its sessions and write its bundles after an abort.
ABORT_GRACE_S = 8.0

#: Linux prctl(2) option: the signal a process gets when its parent thread dies.
_PR_SET_PDEATHSIG = 1

SIGNAL_NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP", signal.SIGINT: "SIGINT (Ctrl-C)"}


class ReasonBox:
    """Why the parent stopped the run, readable in the forked child (shared memory)."""

    SIZE = 200

    def __init__(self, ctx):
        self._arr = ctx.Array("c", self.SIZE, lock=False)

    def put(self, reason: str) -> None:
        self._arr.value = reason.encode("utf-8", errors="replace")[: self.SIZE - 1]

    def get(self) -> str:
        return self._arr.value.decode("utf-8", errors="replace")


def _set_pdeathsig(sig: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pipe's EOF still ends the reads
        pass


def setup_gathering_child(stop: threading.Event, box: ReasonBox | None, parent_pid: int) -> None:
    """In the gathering process: SIGTERM/SIGHUP stop the gather (see the module docstring);
    SIGINT is ignored (Ctrl-C reaches the whole foreground process group: pytest decides)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def on_signal(signum, frame):  # noqa: ARG001
        reason = (box.get() if box is not None else "") or (
            "the pytest process ended" if os.getppid() != parent_pid else SIGNAL_NAMES.get(signum, f"signal {signum}"))
        set_stop(stop, reason)
        # closers run in a thread: a handler must not wait on locks the main thread holds
        threading.Thread(target=interrupt_all, args=(reason,), name="nodegate-interrupt", daemon=True).start()

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    _set_pdeathsig(signal.SIGTERM)
    if os.getppid() != parent_pid:   # the parent died before prctl took effect
        on_signal(signal.SIGTERM, None)
