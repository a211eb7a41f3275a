"""Stopping a run: SIGINT (Ctrl-C), SIGTERM (a CI cancel) and SIGHUP (the terminal went away).

The pytest process (``RunSignals``, installed by nodegate.session.exitcodes for the session) turns
SIGTERM and SIGHUP into an interruption pytest handles like Ctrl-C.

Python's default for SIGTERM is to die on the spot: no report is written and the gathering
process, its SSH sessions and its local processes live on (seen: bundles still written 25 s
after a CI cancel). Here the first SIGTERM or SIGHUP raises ``Terminated`` (a KeyboardInterrupt,
so pytest stops the items and finishes the session as for Ctrl-C): the session finish stops
the gather and the reports are written for what was judged. The exit status is then 128 + the
signal number (143 SIGTERM, 129 SIGHUP), the shell's convention for a run ended by a signal.

Once the run is stopping (after the first SIGINT, SIGTERM or SIGHUP) or finishing (writing the
reports), SIGINT, SIGTERM and SIGHUP are deferred: they do not interrupt the report writing (two
Ctrl-C 0.4 s apart lost junit.xml, report.html, the RMA files and node pages before: Python's
own SIGINT handler raised KeyboardInterrupt inside the writers), every connection still open is
shut at once, and a line on stderr says the signal was deferred. The ``ABORT_AFTER``-th signal
deferred so ends the process at once (``os._exit``, 128 + the signal), naming on stderr the
reports not written: an operator who insists is obeyed.

``FleetRun.abort(reason)`` then stops the gathering process this way:

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
import time
from typing import Callable

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


#: signal number -> name, the signals the pytest process handles
HANDLED = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}

#: the signals deferred while the reports are written
DEFERRED = {signal.SIGINT: "SIGINT", **HANDLED}

#: signals deferred (received after the one that stopped the run, or while the reports are
#: written) before the process gives up on them: the first ABORT_AFTER - 1 are deferred
ABORT_AFTER = 3


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP received: the run stops as for Ctrl-C; ``signum`` says which."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"nodegate: {HANDLED.get(signum, signum)} received: stopping the run "
                         "(the reports are written for what was judged)")


class RunSignals:
    """The pytest process's handlers of SIGINT, SIGTERM and SIGHUP for one run (module
    docstring). ``missing_reports(since)``: the run's reports not written since ``since`` (epoch
    seconds), named when an insisting operator ends the process."""

    def __init__(self, missing_reports: Callable[[float], list] = lambda since: []):
        self.missing_reports = missing_reports
        self.signum: int | None = None
        self.stopping = self.is_finishing = False
        self.previous: dict = {}
        self.deferred: list[str] = []
        self.start_t, self.finish_t = time.time(), None

    def install(self) -> None:
        """Handle the signals in this (the main) thread's interpreter; nothing elsewhere."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in DEFERRED:
            try:
                if sig == signal.SIGINT and signal.getsignal(sig) is not signal.default_int_handler:
                    continue   # SIGINT ignored by whoever started us (nohup, a background job), or handled
                self.previous[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):   # not the main thread of the main interpreter
                pass

    def _handler(self, signum, frame):  # noqa: ARG002
        if signum in HANDLED and self.signum is None:
            self.signum = signum
        if self.is_finishing or self.stopping:
            self._defer(signum)
            return
        self.stopping = True   # the run stops: later signals must not cut the reports short
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    def _defer(self, signum: int) -> None:
        """A signal while the run stops or writes its reports: connections shut, nothing
        interrupted; the ABORT_AFTER-th one deferred ends the process naming the reports not written."""
        name = DEFERRED.get(signum, f"signal {signum}")
        threading.Thread(target=interrupt_all, args=(name,), daemon=True).start()
        self.deferred.append(name)
        n = len(self.deferred)
        if n >= ABORT_AFTER:
            missing = ", ".join(str(p) for p in self.missing_reports(self.finish_t or self.start_t)) or "none"
            _say(f"nodegate: {n} signals received while the reports were written (the last {name}): stopped now; "
                 f"not written: {missing}\n")
            os._exit(128 + int(signum))
        _say(f"nodegate: {name} received while the reports are written: deferred until they are "
             f"({ABORT_AFTER - n} more signal(s) end the run now, without the reports not written yet)\n")

    def finishing(self) -> None:
        """The run is finishing: a signal from now on must not interrupt the report writing."""
        self.is_finishing, self.finish_t = True, time.time()

    def reason(self) -> str:
        """Why the run was interrupted, as shown in the evidence: "SIGTERM", "SIGHUP" or "Ctrl-C"."""
        return HANDLED.get(self.signum, f"signal {self.signum}") if self.signum is not None else "Ctrl-C"

    def exit_status(self, status):
        """The run's exit status: 128 + the signal number after SIGTERM/SIGHUP, else ``status``."""
        return 128 + int(self.signum) if self.signum is not None else status

    def uninstall(self) -> None:
        for sig, prev in self.previous.items():
            try:
                signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
            except (ValueError, OSError, TypeError):
                pass
        self.previous = {}


def _say(line: str) -> None:
    """One line on stderr from a signal handler: one os.write (no buffered stream re-entered)."""
    try:
        os.write(2, line.encode("utf-8", "replace"))
    except OSError:
        pass
