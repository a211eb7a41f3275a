"""SIGTERM and SIGHUP end a nodegate run the way Ctrl-C does (a CI cancel, a closed terminal).

Python's default for SIGTERM is to die on the spot: no report is written and the gathering
process, its SSH sessions and its local processes live on (seen: bundles still written 25 s
after a CI cancel). Here the first SIGTERM or SIGHUP raises ``Terminated`` (a KeyboardInterrupt,
so pytest stops the items and finishes the session as for Ctrl-C): the session finish stops
the gather (``FleetRun.abort``: every SSH session and child process ends within a few seconds,
the probes in flight keep their evidence marked cut) and the reports are written for what was
judged. The exit status is then 128 + the signal number (143 SIGTERM, 129 SIGHUP), the shell's
convention for a run ended by a signal. A signal that arrives once the session is finishing
(writing reports) does not interrupt it: every connection still open is shut at once.
"""

from __future__ import annotations

import signal
import threading

import pytest

from ..transport import interrupt_all

#: signal number -> name, the signals handled
HANDLED = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}

#: the signal received (number) by this session, and whether it is finishing; set by the handler
_STATE_KEY = pytest.StashKey[dict]()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP received: the run stops as for Ctrl-C; ``signum`` says which."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"nodegate: {HANDLED.get(signum, signum)} received: stopping the run "
                         "(the reports are written for what was judged)")


def install(config) -> None:
    """Handle SIGTERM and SIGHUP in this (the main) thread's interpreter for the session."""
    if threading.current_thread() is not threading.main_thread():
        return
    state = {"signum": None, "finishing": False, "previous": {}}
    config.stash[_STATE_KEY] = state

    def handler(signum, frame):  # noqa: ARG001
        first = state["signum"] is None
        if first:
            state["signum"] = signum
        if state["finishing"] or not first:
            # reports are being written, or a second signal: shut what is left, go on finishing
            threading.Thread(target=interrupt_all, args=(HANDLED.get(signum, str(signum)),), daemon=True).start()
            return
        raise Terminated(signum)

    for sig in HANDLED:
        try:
            state["previous"][sig] = signal.signal(sig, handler)
        except (ValueError, OSError):   # not the main thread of the main interpreter
            pass


def finishing(config) -> None:
    """The session is finishing: a signal from now on must not interrupt the report writing."""
    state = config.stash.get(_STATE_KEY, None)
    if state is not None:
        state["finishing"] = True


def received(config) -> int | None:
    """The signal (number) that interrupted this session, or None."""
    state = config.stash.get(_STATE_KEY, None)
    return state["signum"] if state is not None else None


def reason(config) -> str:
    """Why the run was interrupted, as shown in the evidence: "SIGTERM", "SIGHUP" or "Ctrl-C"."""
    sig = received(config)
    return HANDLED.get(sig, f"signal {sig}") if sig is not None else "Ctrl-C"


def exit_status(config, status):
    """The session's exit status: 128 + the signal number after SIGTERM/SIGHUP, else ``status``."""
    sig = received(config)
    return 128 + int(sig) if sig is not None else status


def uninstall(config) -> None:
    state = config.stash.get(_STATE_KEY, None)
    if state is None:
        return
    for sig, prev in state["previous"].items():
        try:
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)
        except (ValueError, OSError, TypeError):
            pass
    state["previous"] = {}
