"""SIGTERM and SIGHUP end a nodegate run the way Ctrl-C does (a CI cancel, a closed terminal).

Python's default for SIGTERM is to die on the spot: no report is written and the gathering
process, its SSH sessions and its local processes live on (seen: bundles still written 25 s
after a CI cancel). Here the first SIGTERM or SIGHUP raises ``Terminated`` (a KeyboardInterrupt,
so pytest stops the items and finishes the session as for Ctrl-C): the session finish stops
the gather (``FleetRun.abort``: every SSH session and child process ends within a few seconds,
the probes in flight keep their evidence marked cut) and the reports are written for what was
judged. The exit status is then 128 + the signal number (143 SIGTERM, 129 SIGHUP), the shell's
convention for a run ended by a signal.

Once the run is stopping (after the first SIGINT, SIGTERM or SIGHUP) or finishing (writing the
reports), SIGINT, SIGTERM and SIGHUP are deferred: they do not interrupt the report writing (two
Ctrl-C 0.4 s apart lost junit.xml, report.html, the RMA files and node pages before: Python's
own SIGINT handler raised KeyboardInterrupt inside the writers), every connection still open is
shut at once, and a line on stderr says the signal was deferred. The ``ABORT_AFTER``-th signal
deferred so ends the process at once (``os._exit``, 128 + the
signal), naming on stderr the reports not written: an operator who insists is obeyed.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from ..transport import interrupt_all

#: signal number -> name, the signals handled
HANDLED = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}

#: the signals deferred while the reports are written
DEFERRED = {signal.SIGINT: "SIGINT", **HANDLED}

#: signals deferred (received after the one that stopped the run, or while the reports are
#: written) before the process gives up on them: the first ABORT_AFTER - 1 are deferred
ABORT_AFTER = 3

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
    state = {"signum": None, "finishing": False, "stopping": False, "previous": {}, "deferred": [],
             "finish_t": None, "start_t": time.time(), "config": config}
    config.stash[_STATE_KEY] = state

    def handler(signum, frame):  # noqa: ARG001
        if signum in HANDLED and state["signum"] is None:
            state["signum"] = signum
        if state["finishing"] or state["stopping"]:
            _defer(state, signum)
            return
        state["stopping"] = True   # the run stops: later signals must not cut the reports short
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    for sig in DEFERRED:
        try:
            if sig == signal.SIGINT and signal.getsignal(sig) is not signal.default_int_handler:
                continue   # SIGINT ignored by whoever started us (nohup, a background job), or handled
            state["previous"][sig] = signal.signal(sig, handler)
        except (ValueError, OSError):   # not the main thread of the main interpreter
            pass


def _defer(state: dict, signum: int) -> None:
    """A signal while the run stops or writes its reports: connections shut, nothing interrupted;
    the ABORT_AFTER-th one deferred ends the process naming the reports not written."""
    name = DEFERRED.get(signum, f"signal {signum}")
    threading.Thread(target=interrupt_all, args=(name,), daemon=True).start()
    state["deferred"].append(name)
    n = len(state["deferred"])
    if n >= ABORT_AFTER:
        missing = ", ".join(str(p) for p in missing_reports(state["config"], state["finish_t"] or state["start_t"])) or "none"
        _say(f"nodegate: {n} signals received while the reports were written (the last {name}): stopped now; "
             f"not written: {missing}\n")
        os._exit(128 + int(signum))
    _say(f"nodegate: {name} received while the reports are written: deferred until they are "
         f"({ABORT_AFTER - n} more signal(s) end the run now, without the reports not written yet)\n")


def _say(line: str) -> None:
    """One line on stderr from a signal handler: one os.write (no buffered stream re-entered)."""
    try:
        os.write(2, line.encode("utf-8", "replace"))
    except OSError:
        pass


def missing_reports(config, since: float | None) -> list:
    """The reports of this run not written (absent, or older than ``since``, the time the
    session began finishing): the JUnit and HTML files, results.jsonl, the RMA files."""
    from pathlib import Path
    from .state import REPORT_PATHS_KEY
    paths = dict(config.stash.get(REPORT_PATHS_KEY, None) or {})
    reports = Path(getattr(config.option, "reports_dir", None) or "reports")
    want = [paths.get("junit"), paths.get("html"), reports / "results.jsonl"]
    if not getattr(config.option, "collectonly", False):
        want += [reports / n for n in ("rma.csv", "rma.json", "actions.csv")]
    out = []
    for p in want:
        if p is None:
            continue
        try:
            if since is not None and os.stat(p).st_mtime < since - 1:
                out.append(p)
        except OSError:
            out.append(p)
    return out


def finishing(config) -> None:
    """The session is finishing: a signal from now on must not interrupt the report writing."""
    state = config.stash.get(_STATE_KEY, None)
    if state is not None:
        state["finishing"] = True
        state["finish_t"] = time.time()


def deferred(config) -> list[str]:
    """The names of the signals deferred while this session wrote its reports, in order."""
    state = config.stash.get(_STATE_KEY, None)
    return list(state["deferred"]) if state is not None else []


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
