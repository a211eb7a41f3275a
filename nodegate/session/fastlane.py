"""The runtest protocol of a check item: the engine decides, pytest's public hooks present.

A check item (a suite test taking ``verdict``) runs no fixture and no user code besides its test
body (``assert verdict.ok, verdict.message``): the engine decides its outcome in setup
(``verdicts.evaluate``). pytest's default protocol still wraps each of its three phases in every
plugin's ``pytest_runtest_setup``/``_call``/``_teardown`` (capture, logging, warnings, xfail, the
fixture SetupState): ~0.5 ms an item, the larger part of a replay's cost above the engine's own
(docs/performance.md "Issue 40.5, the fast lane").

So ``pytest_runtest_protocol`` (a public hook) runs a check item as ``_pytest.runner.runtestprotocol``
does (pytest 8 and 9), with the same public hooks around each phase: logstart; setup
(``verdicts.evaluate`` in ``CallInfo.from_call``), makereport, logreport; call (when setup passed:
``item.runtest()``); teardown; logfinish. Every report is pytest's: the terminal, JUnit,
pytest-html, xdist, ``-x`` and ``--maxfail`` see what they saw. ``PYTEST_CURRENT_TEST`` is set per
phase (nodegate.session.currenttest).

Only where nothing else can tell the difference (``after_collection``, per collection; the plugins
and options once per run): every ``pytest_runtest_setup``/``_call``/``_teardown`` implementation
is pytest's or nodegate's, no other plugin runs items itself, no ``--pdb``/``--trace``/``--setup-*``,
and every item of the collection is a check item with no other fixture and no
``skip``/``skipif``/``xfail``/``usefixtures`` mark: a run mixing in items of pytest's protocol
(baseline, burn-in, perf, cross-node, site) keeps pytest's protocol for all. What differs: no
"Captured stdout/stderr/log" sections (the engine prints and logs nothing); an unraisable or
thread exception is reported at the next item of pytest's protocol or at the session's end.
``NODEGATE_PYTEST_PROTOCOL=1`` runs every item with pytest's own protocol.
tests/engine/test_fastlane.py compares every report with pytest's protocol and fails the day
pytest's runner changes the phases it reports.
"""

from __future__ import annotations

import bdb
import os

import pytest

from . import verdicts
from .currenttest import VAR, function_id
from .items import verdict_param
from .memory import node_done_after

_ALLOWS_KEY = pytest.StashKey[bool]()
_ON_KEY = pytest.StashKey[bool]()
#: how many items this run ran in the fast lane (the tests read it)
RAN_KEY = pytest.StashKey[int]()
#: the hooks whose implementations a check item's phases skip: only these plugins may have them
PHASE_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")
#: plugins (module names) whose phase hooks do nothing a check item needs (what the fast lane
#: does instead: verdicts.evaluate and teardown below; nodegate_site acts on site items only)
OWN = ("nodegate.plugins.nodegate_plugin", "nodegate.plugins.nodegate_site")
#: other plugins whose phase hooks act on their own tests only: Hypothesis' (installed with the
#: project's test extras) wraps ``pytest_runtest_call`` for ``@given`` tests
HARMLESS = ("_hypothesis_pytestplugin",)
_MARKS = ("skip", "skipif", "xfail", "usefixtures")


def _plugin_name(impl) -> str:
    """The module of a hook implementation's plugin: a module plugin's name, or the module of
    an object plugin's class (pytest's capture and logging plugins are objects)."""
    plugin = impl.plugin
    mod = plugin.__name__ if isinstance(getattr(plugin, "__name__", None), str) and hasattr(plugin, "__file__") \
        else type(plugin).__module__
    return mod if isinstance(mod, str) else ""


def run_allows(config) -> bool:
    """Whether this run's plugins and options leave check items to the fast lane (module
    docstring); decided once per run."""
    got = config.stash.get(_ALLOWS_KEY, None)
    if got is None:
        got = config.stash[_ALLOWS_KEY] = _run_allows(config)
    return got


def _run_allows(config) -> bool:
    if os.environ.get("NODEGATE_PYTEST_PROTOCOL"):
        return False
    opt = config.option
    if any(getattr(opt, o, False) for o in ("usepdb", "trace", "setuponly", "setupplan", "setupshow")):
        return False
    hook = config.pluginmanager.hook
    for name in PHASE_HOOKS:
        for impl in getattr(hook, name).get_hookimpls():
            mod = _plugin_name(impl)
            if not (mod.startswith("_pytest.") or mod in OWN or mod in HARMLESS):
                return False
    for impl in hook.pytest_runtest_protocol.get_hookimpls():
        mod = _plugin_name(impl)
        if not (impl.hookwrapper or impl.wrapper or mod.startswith("_pytest.") or mod == OWN[0]):
            return False   # another plugin runs items itself (re-runs, repeats): its protocol
    return True


def _check_item(item) -> bool:
    """A check item with nothing pytest's protocol would do for it: no fixture but ``verdict``
    (an autouse fixture of a conftest puts it back on pytest's protocol), no skip, skipif, xfail
    or usefixtures mark."""
    if verdict_param(item) is None or getattr(item, "fixturenames", None) != ["verdict"]:
        return False
    return not any(m.name in _MARKS for m in item.iter_markers())


def after_collection(session) -> None:
    """pytest_collection_finish (each shard's collection too): whether this collection's items
    run in the fast lane: all of them, or none. A run mixing check items with items of
    pytest's protocol (baseline, burn-in, perf, cross-node, site) keeps pytest's protocol for
    all: those items' fixtures and collectors are set up and torn down by pytest's SetupState,
    which assumes every item before them went through it (a check item run in between leaves
    its stack stale: "previous item was not torn down properly")."""
    config = session.config
    config.stash[_ON_KEY] = run_allows(config) and all(_check_item(i) for i in session.items)


def applies(item) -> bool:
    """Whether the fast lane runs ``item`` (``after_collection`` decided it for its collection)."""
    return item.config.stash.get(_ON_KEY, False)


def _phase(item, ihook, when: str, func) -> pytest.TestReport:
    """One phase as ``_pytest.runner.call_and_report`` runs it (pytest 8 and 9); ``ihook``: the
    item's ``item.ihook``, looked up once per item (each lookup asks the session for the
    conftests of the item's path)."""
    def run():
        __tracebackhide__ = True   # an error's traceback shows what pytest's protocol shows
        os.environ[VAR] = f"{function_id(item)} ({when})"
        try:
            return func()
        finally:
            if when == "teardown":   # pytest removes it at the end of the teardown, before its report
                os.environ.pop(VAR, None)
    call = pytest.CallInfo.from_call(run, when=when, reraise=(pytest.exit.Exception, KeyboardInterrupt))
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    exc = call.excinfo
    if exc is not None and not hasattr(report, "wasxfail") and not isinstance(exc.value, (pytest.skip.Exception,
                                                                                         bdb.BdbQuit)):
        ihook.pytest_exception_interact(node=item, call=call, report=report)
    return report


def setup_item(item) -> None:
    """A check item's setup, in either protocol: the engine evaluates its check (ERROR fails the
    setup, SKIP skips; verdicts.evaluate)."""
    p = verdict_param(item)
    if p is not None:
        verdicts.evaluate(item, p)


def teardown_item(item, nextitem) -> None:
    """A check item's teardown, in either protocol: its Result dropped (the report keeps what it
    needs: item stash, user_properties), its node released after its last item."""
    p = verdict_param(item)
    if p is not None:
        p.result = None
    node_done_after(item, nextitem)


def run_item(item, nextitem) -> bool:
    """``pytest_runtest_protocol`` for a check item (module docstring): True (it ran)."""
    ihook = item.ihook
    item.config.stash[RAN_KEY] = item.config.stash.get(RAN_KEY, 0) + 1
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    try:
        if _phase(item, ihook, "setup", lambda: setup_item(item)).passed:
            _phase(item, ihook, "call", item.runtest)
        # a session about to stop (-x, --maxfail) tears everything down, as pytest does (#11706)
        last = None if item.session.shouldfail or item.session.shouldstop else nextitem
        _phase(item, ihook, "teardown", lambda: teardown_item(item, last))
    finally:
        os.environ.pop(VAR, None)
        item.funcargs = None   # as pytest's protocol leaves an item: no argument kept
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
