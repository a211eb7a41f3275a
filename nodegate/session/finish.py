"""pytest_sessionfinish's work (before any report is written): every node gathered and merged.

An interrupted run (Ctrl-C, SIGTERM, SIGHUP: ``signals``) stops the gather first
(``FleetRun.abort``): the nodes in flight come back with their evidence cut, the others
``interrupted``; then the reports are written for what was judged. A usage error found after
collection (``exitcodes.usage_error``: nothing selected) stops it the same way; no report follows.
"""

from __future__ import annotations

import pytest

from ..run import RUN_KEY
from . import signals, terminal
from ..textsafe import shown
from .exitcodes import STOP_KEY
from .state import ACTIVE_KEY, GATHER_FAILED_KEY


def finish_session(session, exitstatus) -> None:
    config = session.config
    signals.of(config).finishing()
    run = config.stash.get(RUN_KEY, None)
    if run is None or not config.stash.get(ACTIVE_KEY, False):
        return
    run.stop_prefetch()   # every item ran: the reports parse nothing ahead
    usage = config.stash.get(STOP_KEY, "") == "usage"   # exitcodes.usage_error (pytest's status: 1)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or usage
    if interrupted:
        run.abort("usage error" if usage else signals.reason(config))
    why = config.stash.get(GATHER_FAILED_KEY, None)
    try:
        run.wait_all()
    except Exception as e:  # noqa: BLE001 - the affected nodes' items already ERRORed
        why = why or f"{type(e).__name__}: {e}"
    if why and not interrupted:   # Ctrl-C stopped it: the exit status stays INTERRUPTED
        tw = terminal.terminal_writer(config)
        if tw is not None:
            tw.line(f"nodegate: gathering stopped: {shown(why)}", red=True)
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    if interrupted:
        session.exitstatus = signals.exit_status(config, session.exitstatus)


def stop_gathering(config, reason: str | None = None) -> None:
    """Stop a gather still running (an interruption outside the items, pytest's exit)."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not hasattr(run, "abort"):
        return
    run.stop_prefetch()
    done, total, _, _ = run.progress()
    if done < total:
        run.abort(reason or signals.reason(config))
