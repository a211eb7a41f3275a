"""SIGTERM and SIGHUP end a nodegate run the way Ctrl-C does (a CI cancel, a closed terminal);
signals while the reports are written are deferred: ``nodegate.interrupt.RunSignals``, installed
here for the session (its state on the config), with the reports this run would write.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..interrupt import HANDLED, RunSignals, Terminated  # noqa: F401  (re-exported: exitcodes, tests)
from .state import REPORT_PATHS_KEY

_KEY = pytest.StashKey[RunSignals]()


def install(config) -> None:
    """Handle SIGTERM, SIGHUP (and SIGINT's repeats) in this process for the session."""
    rs = config.stash[_KEY] = RunSignals(lambda since: missing_reports(config, since))
    rs.install()


def of(config) -> RunSignals:
    """The session's RunSignals; a fresh one (no signal received) when none was installed."""
    return config.stash.get(_KEY, None) or RunSignals()


def missing_reports(config, since: float | None) -> list:
    """The reports of this run not written (absent, or older than ``since``, the time the
    session began finishing): the JUnit and HTML files, results.jsonl, the RMA files."""
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


def reason(config) -> str:
    """Why the run was interrupted: "SIGTERM", "SIGHUP" or "Ctrl-C" (``RunSignals.reason``)."""
    return of(config).reason()


def exit_status(config, status):
    """128 + the signal number after SIGTERM/SIGHUP, else ``status`` (``RunSignals.exit_status``)."""
    return of(config).exit_status(status)


def uninstall(config) -> None:
    rs = config.stash.get(_KEY, None)
    if rs is not None:
        rs.uninstall()
