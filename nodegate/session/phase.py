"""The pytest side both second-exec phase plugins share (plugins/nodegate_burnin.py,
plugins/nodegate_perf.py): recording a verdict item,
grouping items by node and the first item's pytest-html extra.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import pytest

from ..outcomes import Outcome, Result
from ..reports.records import attach_nodegate
from ..textsafe import shown  # node text pytest prints: control characters escaped
from .state import PRESENT_KEY


#: "<phase> interrupted (<signal>)" once Ctrl-C, SIGTERM or SIGHUP stopped a burn-in or perf phase
PHASE_STOPPED_KEY = pytest.StashKey[str]()


def phase_stopped(config) -> str | None:
    """Why an earlier phase of this session was interrupted, or None."""
    return config.stash.get(PHASE_STOPPED_KEY, None)


def run_interruptibly(config, name: str, fn: Callable[[], None]) -> None:
    """Run a second-exec phase (``fn``: the burn-in or a perf round over every node) so that an
    interrupt ends the PHASE, not the session (issue 37.4).

    run_fleet stops every node's exec on KeyboardInterrupt (Ctrl-C; SIGTERM/SIGHUP raise
    nodegate.interrupt.Terminated, a KeyboardInterrupt) and records what came back (the
    nodes' ``<phase>.run`` status ``interrupted``), then re-raises. Raised out of
    pytest_sessionstart, it would end the session before collection: no results.jsonl, JUnit,
    HTML or verdict line although every node's probe evidence was gathered. Caught here, the
    session goes on to judge what was gathered (the interrupted phase's items ERROR "interrupted",
    a node with one is not accepted), writes every report, and exits with 130 (Ctrl-C) or
    128 + the signal (nodegate.session.exitcodes.nodegate_status). A later phase does not start."""
    if phase_stopped(config):
        sys.stderr.write(f"nodegate: {name} not started: {phase_stopped(config)}\n")
        return
    try:
        fn()
    except KeyboardInterrupt:
        from .exitcodes import STOP_KEY, reason
        why = reason(config)
        config.stash[PHASE_STOPPED_KEY] = f"{name} interrupted ({why})"
        config.stash[STOP_KEY] = "phase"
        sys.stderr.write(f"\nnodegate: {name} interrupted ({why}): every node's {name} was stopped; judging what "
                         "was gathered and writing the reports\n")


def identity_clash(run, node: str) -> str | None:
    """The ERROR message of ``node``'s burn-in and perf items when another node of the run is the
    same machine (nodegate.engine.evaluate.clash_message; issue 37.9: N copies of one machine are
    one machine's figures, never N nodes'), or None. Unreadable ids: None (NG-INV-003 says so)."""
    from ..engine.evaluate import clash_message
    try:
        return clash_message(run.identity_groups(node))
    except Exception:  # noqa: BLE001 - untrusted ids: the probe's NG-INV-003 item reports them
        return None


def record_verdict(request, info_key, info: dict[str, Any], props: tuple[str, ...], check_id: str,
                   res: Result, present=None) -> None:
    """Stash ``info`` (report.nodegate) on the item and its ``present`` (``presenter``: what its
    phase reports get), add ``props`` of it to its user_properties, and end the setup: ERROR
    fails it ("could not evaluate"), SKIP skips it."""
    request.node.stash[info_key] = info
    if present is not None:
        request.node.stash[PRESENT_KEY] = present
    for k in props:
        request.node.user_properties.append((k, info[k]))
    if res.outcome is Outcome.ERROR:
        pytest.fail(shown(f"[{check_id}] could not evaluate: {res.message}"), pytrace=False)
    if res.outcome is Outcome.SKIP:
        pytest.skip(shown(f"[{check_id}] {res.message}"))


def group_by_node(items, param: str, first_key, node_of: Callable[[Any], str | None]) -> None:
    """Mark every item parametrized with ``param`` with its node's xdist group and stash
    ``first_key`` = True on each node's first item. ``node_of(param value)``: its node, None
    for an item to leave alone."""
    first: set[str] = set()
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is None or param not in cs.params:
            continue
        node = node_of(cs.params[param])
        if node is None:
            continue
        item.add_marker(pytest.mark.xdist_group(node))
        if node not in first:
            first.add(node)
            item.stash[first_key] = True


def presenter(info_key, first_key, extra: Callable[[Any, dict], str | None]):
    """A phase item's ``PRESENT_KEY`` value: ``report_with_extra`` with the phase's keys."""
    return lambda item, rep, call: report_with_extra(item, rep, info_key, first_key, extra)


def report_with_extra(item, rep, info_key, first_key, extra: Callable[[Any, dict], str | None]):
    """pytest_runtest_makereport's body: attach report.nodegate; on the final report of a node's
    first item (``first_key``) add ``extra(item, info)``'s HTML as a pytest-html extra (none
    without pytest-html, when ``extra`` raises ImportError, or when it returns None)."""
    info = item.stash.get(info_key, None)
    if info is None:
        return rep
    attach_nodegate(rep, info)
    final = rep.when == "call" or (rep.when == "setup" and not rep.passed)
    if final and item.stash.get(first_key, False):
        try:
            import pytest_html
            html = extra(item, info)
        except ImportError:
            return rep
        if html is not None:
            rep.extras = list(getattr(rep, "extras", [])) + [pytest_html.extras.html(html)]
    return rep
