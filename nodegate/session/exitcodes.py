"""The exit codes of a nodegate run, one table (README "Exit codes"), and whether the run may
write reports at all.

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
"""

from __future__ import annotations

import sys
from typing import NoReturn

import pytest

from ..textsafe import shown
from .state import ACTIVE_KEY, NO_RUN_KEY

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


def classify(excinfo) -> str:
    """What stopped the session (``pytest_keyboard_interrupt``'s ``excinfo``)."""
    from .signals import Terminated
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
    from .signals import exit_status
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
            import sys
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
