"""How a nodegate run ends: its exit codes, one table (README "Exit codes"), whether it may write
reports at all, the signals that end it, and the session finish that waits for the gather.

pytest's own codes overlap nodegate's: pytest's INTERRUPTED (Ctrl-C, and a collection that
failed) is 2, nodegate's usage error; pytest's INTERNAL_ERROR is 3, nodegate's "regressions
only"; pytest's USAGE_ERROR (a bad ``-k`` expression, an unknown option) is 4 and its
NO_TESTS_COLLECTED 5, neither of which the README lists. ``ExitCodes`` (a pytest plugin, at
pytest_unconfigure) maps them, so ``pytest`` and ``nodegate`` alike
return only:

====  ==========================================================================================
0     every item passed or was skipped by the spec
1     at least one FAIL or ERROR
2     usage, inventory or spec error, collection error, nothing selected or collected,
      ``--baseline`` unusable: no report, no archive, no evidence written
3     regressions only (nodegate.baseline.exitcodes)
4     internal error (a nodegate or pytest crash, the background gathering stopped)
130   Ctrl-C; 129 SIGHUP, 143 SIGTERM (nodegate.interrupt): reports of what was judged
====  ==========================================================================================

SIGTERM and SIGHUP end a run the way Ctrl-C does (a CI cancel, a closed terminal); signals while
the reports are written are deferred (``nodegate.interrupt.RunSignals``, installed for the session
with the reports this run would write). At the session finish an interrupted run stops the gather
first (``FleetRun.abort``: the nodes in flight come back with their evidence cut, the others
``interrupted``), then the reports are written for what was judged; a usage error found after
collection (nothing selected) stops it the same way, and no report follows.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from ..interrupt import HANDLED, RunSignals, Terminated  # noqa: F401  (HANDLED: re-exported for tests)
from ..run import RUN_KEY
from ..textsafe import shown
from . import terminal
from .state import ACTIVE_KEY, GATHER_FAILED_KEY, NO_RUN_KEY, REPORT_PATHS_KEY

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_REGRESSIONS_ONLY, EXIT_INTERNAL = 0, 1, 2, 3, 4
#: 128 + SIGINT, the shell's convention (SIGTERM and SIGHUP: nodegate.interrupt)
EXIT_CTRL_C = 130

#: set by the baseline plugin when it made the status 3 (regressions only), so that 3 is not
#: read as pytest's INTERNAL_ERROR
REGRESSIONS_ONLY_KEY = pytest.StashKey[bool]()
#: how the session was stopped early: "usage" (``usage_error``, or pytest.exit with 2), "collection"
#: (collection errors), "ctrl-c", "stopped" (pytest's shouldstop), "signal" (SIGTERM/SIGHUP),
#: "phase" (a burn-in or perf phase interrupted; the session judged what was gathered)
STOP_KEY = pytest.StashKey[str]()

_PLUGIN_NAME = "nodegate-exit-codes"


class UsageStop(pytest.Session.Failed):
    """A usage error stopping the run (``usage_error``). A ``pytest.Session.Failed`` ("signals a
    stop as failed test run", public as ``pytest.Session.Failed``): pytest's ``wrap_session``
    (_pytest/main.py, pytest 9.2: ``except Failed: session.exitstatus = ExitCode.TESTS_FAILED``)
    catches it from pytest_configure, pytest_sessionstart and the collection hooks alike and
    prints nothing; ``ExitCodes.pytest_unconfigure`` then makes the status 2. tests/core/
    test_usage_errors.py fails if pytest stops doing either."""


def usage_error(config, message: str) -> NoReturn:
    """Stop the run as a usage error, the one way every nodegate site does it: README's exit 2,
    ``message`` printed once (stderr, control characters escaped), no report, archive or rma file
    written and the previous run's reports left as they were (``writes_no_report``: STOP_KEY
    "usage").

    Not ``pytest.exit(msg, returncode=2)``: pytest prints its message up to twice ("Exit: msg" on
    stderr when raised before the session started, _pytest/main.py wrap_session; then the
    terminal reporter's "!!! _pytest.outcomes.Exit: msg !!!" from pytest_keyboard_interrupt,
    _pytest/terminal.py, at session finish or unconfigure). Not ``pytest.UsageError`` either:
    pytest prints it once as "ERROR: msg" but ``pytest`` then returns 4 whatever the session's
    status (_pytest/config/__init__.py main), and README promises 2 for ``pytest --inventory``
    as for ``nodegate``."""
    config.stash[STOP_KEY] = "usage"
    install(config)   # the status is made 2 at pytest_unconfigure, also before the plugin's configure ran
    text = shown(message)
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    raise UsageStop(text)


def exit_nothing(config, why: str) -> NoReturn:
    """Exit 2 before any check ran: nothing selected. No report is written (NO_RUN_KEY): the
    previous run's reports in the same folder stay as they were."""
    config.stash[NO_RUN_KEY] = why
    usage_error(config, why)


def classify(excinfo) -> str:
    """What stopped the session (``pytest_keyboard_interrupt``'s ``excinfo``)."""
    e = excinfo.value
    if isinstance(e, pytest.exit.Exception):
        return "usage" if e.returncode == EXIT_USAGE else "exit"
    if isinstance(e, Terminated):
        return "signal"
    if isinstance(e, pytest.Session.Interrupted):
        return "collection" if "during collection" in str(e) else "stopped"
    return "ctrl-c"


def writes_no_report(config, exitstatus) -> bool:
    """True when the run stopped as a usage error (exit 2): no report, archive or rma file is
    written and the previous run's reports stay as they were (README "Exit codes")."""
    if config.stash.get(NO_RUN_KEY, None):
        return True
    if int(exitstatus) in (int(pytest.ExitCode.USAGE_ERROR), int(pytest.ExitCode.NO_TESTS_COLLECTED)):
        return True
    return config.stash.get(STOP_KEY, "") in ("usage", "collection")


def nodegate_status(config, status: int) -> int:
    """pytest's final status -> the README's table."""
    status = int(status)
    stop = config.stash.get(STOP_KEY, "")
    if stop == "usage":   # usage_error (pytest's TESTS_FAILED: UsageStop), pytest.exit(msg, returncode=2)
        return EXIT_USAGE
    if status == int(pytest.ExitCode.USAGE_ERROR) or status == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        return EXIT_USAGE
    if status == int(pytest.ExitCode.INTERNAL_ERROR) and not config.stash.get(REGRESSIONS_ONLY_KEY, False):
        return EXIT_INTERNAL
    if stop == "phase" and status in (EXIT_OK, EXIT_FINDINGS):
        # a burn-in or perf phase was interrupted and the session judged what was gathered
        # (nodegate.session.phase.run_interruptibly): the run still ends as interrupted
        return int(exit_status(config, EXIT_CTRL_C))
    if status == int(pytest.ExitCode.INTERRUPTED):
        if stop == "signal":
            return int(exit_status(config, status))   # 143 SIGTERM, 129 SIGHUP
        if stop == "ctrl-c":
            return EXIT_CTRL_C
        if stop == "stopped":   # pytest's shouldstop (--sw stopping at a FAIL)
            return EXIT_FINDINGS
    return status


class ExitCodes:
    """See the module docstring. The status is mapped at pytest_unconfigure: pytest returns
    ``session.exitstatus`` after it, also when the session finish never ran (Ctrl-C or a signal
    while ``--gather-first`` gathers in pytest_sessionstart)."""

    def __init__(self, config):
        self.config = config

    def pytest_keyboard_interrupt(self, excinfo):
        self.config.stash[STOP_KEY] = classify(excinfo)

    def pytest_unconfigure(self, config):
        session = config.pluginmanager.get_plugin("session")   # pytest registers its Session so
        if session is None or not hasattr(session, "exitstatus"):
            return
        if config.stash.get(STOP_KEY, "") == "usage":   # usage_error: 2 also where the run is not active
            session.exitstatus = EXIT_USAGE
            return
        if hasattr(config, "workerinput") or not config.stash.get(ACTIVE_KEY, False):
            return
        if int(session.exitstatus) == int(pytest.ExitCode.NO_TESTS_COLLECTED):
            sys.stderr.write("nodegate: no test collected: no nodegate check and no site test in the paths given; "
                             "no node was contacted (exit 2)\n")
        session.exitstatus = nodegate_status(config, session.exitstatus)


def install(config) -> None:
    if not config.pluginmanager.has_plugin(_PLUGIN_NAME):
        config.pluginmanager.register(ExitCodes(config), _PLUGIN_NAME)


def check_expressions(config) -> None:
    """Exit 2 at configure time, before anything is gathered or written, for a ``-k``/``-m``
    expression pytest would refuse only at collection (a UsageError after the run started:
    evidence gathered, reports written). pytest's own parser, and its message."""
    try:
        from _pytest.mark.expression import Expression
    except ImportError:   # pytest moved it: the sessionfinish guard still keeps the reports out
        return
    o = config.option
    for opt, expr in (("-k", (getattr(o, "keyword", "") or "").lstrip()), ("-m", getattr(o, "markexpr", ""))):
        if not expr:
            continue
        try:
            Expression.compile(expr)
        except (SyntaxError, ValueError) as e:   # pytest's ParseError is a SyntaxError (mark/__init__.py)
            usage_error(config, f"nodegate: wrong expression passed to '{opt}': {getattr(e, 'text', None) or expr}: "
                                f"at column {getattr(e, 'offset', '?')}: {getattr(e, 'msg', None) or e} "
                                "(nothing was contacted)")


# ------------------------------------------------------------------ signals (nodegate.interrupt)
_SIGNALS_KEY = pytest.StashKey[RunSignals]()


def install_signals(config) -> None:
    """Handle SIGTERM, SIGHUP (and SIGINT's repeats) in this process for the session."""
    rs = config.stash[_SIGNALS_KEY] = RunSignals(lambda since: missing_reports(config, since))
    rs.install()


def signals_of(config) -> RunSignals:
    """The session's RunSignals; a fresh one (no signal received) when none was installed."""
    return config.stash.get(_SIGNALS_KEY, None) or RunSignals()


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
    return signals_of(config).reason()


def exit_status(config, status):
    """128 + the signal number after SIGTERM/SIGHUP, else ``status`` (``RunSignals.exit_status``)."""
    return signals_of(config).exit_status(status)


def uninstall_signals(config) -> None:
    rs = config.stash.get(_SIGNALS_KEY, None)
    if rs is not None:
        rs.uninstall()


# ------------------------------------------------------------------ the session finish
def finish_session(session, exitstatus) -> None:
    config = session.config
    signals_of(config).finishing()
    run = config.stash.get(RUN_KEY, None)
    if run is None or not config.stash.get(ACTIVE_KEY, False):
        return
    run.stop_prefetch()   # every item ran: the reports parse nothing ahead
    usage = config.stash.get(STOP_KEY, "") == "usage"   # usage_error (pytest's status: 1)
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or usage
    if interrupted:
        run.abort("usage error" if usage else reason(config))
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
        session.exitstatus = exit_status(config, session.exitstatus)


def stop_gathering(config, why: str | None = None) -> None:
    """Stop a gather still running (an interruption outside the items, pytest's exit)."""
    run = config.stash.get(RUN_KEY, None)
    if run is None or not hasattr(run, "abort"):
        return
    run.stop_prefetch()
    done, total, _, _ = run.progress()
    if done < total:
        run.abort(why or reason(config))
