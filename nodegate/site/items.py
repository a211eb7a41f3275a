"""Site tests as nodegate items: parametrized by node, evaluated in setup, reported like checks.

A site test (one using ``host``, ``site_evidence`` or ``nodegate_node``) gets one item per node
of the run, ids ``[<node>]`` (``[<node>-<its own params>]``), ordered with that node's other
items (nodegate.session.items.NODE_FIXTURES). Like a suite item's verdict, it is evaluated in
setup: once its fixtures are set up, ``run_in_setup`` calls the test function there and

- returns normally                      -> PASS (call passes);
- ``assert`` / ``pytest.fail`` / xfail, or any other exception its body raises (a KeyError, a
  ValueError from a testinfra module)   -> FAIL: the exception is raised again in call, as pytest
  and testinfra report an exception in a test's body;
- ``pytest.skip``                       -> SKIP;
- what nodegate could not do: a command that could not be evaluated (deadline, cap, connection
  lost, not recorded on --replay), declared evidence missing, a nodegate EvidenceError, the node
  not gathered -> ERROR: the setup fails (JUnit ``<error>``, pytest's ERROR), as nodegate's own
  checks do. A site fixture of the test's own that raises is pytest's ERROR too (setup).

A module's ``testinfra_hosts`` restricts its tests to the run's nodes it names
(nodegate.site.hosts); a test it restricts to no node of the run is deselected.

So every report of the item (setup, call, teardown) carries the final verdict in
``report.nodegate`` (docs/contributing.md contract) from setup on.
"""

from __future__ import annotations

import pytest

from ..errors import NodegateError
from ..engine.evaluate import PROP_KEYS, driver_version, item_record
from ..outcomes import Outcome, Result
from .backend import SiteCommandError
from .checks import SiteCheck, site_check
from .state import SITE_KEY

PARAM = "nodegate_site_node"
SITE_FIXTURES = ("host", "site_evidence", "nodegate_node", PARAM)
CHECK_KEY = pytest.StashKey[SiteCheck]()
#: the stored exception of a FAIL, re-raised in call; None: nothing to raise
OUTCOME_KEY = pytest.StashKey[tuple]()
INFO_KEY = pytest.StashKey[dict]()
#: (node, result key) -> the site file that recorded it first (result_key)
KEY_FILES_KEY = pytest.StashKey[dict]()
_REGRESSION = "test_regression_site"


def site_node(item) -> str | None:
    cs = getattr(item, "callspec", None)
    p = cs.params.get(PARAM) if cs is not None else None
    return p[1] if isinstance(p, tuple) and len(p) == 2 and p[0] == "site" else None


def check_of(item) -> SiteCheck:
    c = item.stash.get(CHECK_KEY, None)
    if c is None:
        m = item.get_closest_marker("nodegate_check")
        c = item.stash[CHECK_KEY] = site_check(item.function, _where(item), m.kwargs if m is not None else None)
    return c


def _where(item) -> str:
    return f"{item.nodeid.split('::', 1)[0]}::{item.originalname}" if hasattr(item, "originalname") else item.nodeid


def parametrize(metafunc) -> None:
    """pytest_generate_tests in a nodegate run: one item per node for every test using a site
    fixture. A module's ``testinfra_hosts`` is refused (it would name other hosts than the
    inventory's); a bad ``nodegate_check`` marker is a collection error naming it."""
    if "_testinfra_host" in metafunc.fixturenames:   # testinfra's own host list: local unless --hosts
        raise pytest.UsageError(
            f"{metafunc.function.__name__}: _testinfra_host is testinfra's per --hosts fixture; in a nodegate run "
            "use the host fixture (every node of the inventory)")
    if not any(f in metafunc.fixturenames for f in SITE_FIXTURES):
        return
    if "verdict" in metafunc.fixturenames:
        return
    where = metafunc.definition.nodeid.split("::", 1)[0]
    m = metafunc.definition.get_closest_marker("nodegate_check")
    site_check(metafunc.function, f"{where}::{metafunc.function.__name__}",
               m.kwargs if m is not None else None)   # ValueError: a collection error naming the marker
    st = metafunc.config.stash.get(SITE_KEY, None)
    nodes = list(st.run.nodes) if st is not None else _preselect_nodes(metafunc.config)
    th = getattr(metafunc.module, "testinfra_hosts", None)
    if th is not None:
        from .hosts import TestinfraHostsError, node_groups, restrict
        from ..run import RUN_KEY
        run = st.run if st is not None else metafunc.config.stash.get(RUN_KEY, None)
        try:
            nodes = restrict(th, where, nodes, node_groups(metafunc.config, run, nodes))
        except TestinfraHostsError as e:
            raise pytest.UsageError(str(e)) from None
    metafunc.parametrize(PARAM, [("site", n) for n in nodes], ids=nodes, indirect=True, scope="session")


def _preselect_nodes(config) -> list[str]:
    """The run's nodes while nodegate learns the selection in a forked collection
    (nodegate.session.preselect, before this plugin's sessionstart made its state):
    site items count there like suite items; [] otherwise."""
    from ..run import RUN_KEY
    from ..session.api import preselecting
    run = config.stash.get(RUN_KEY, None)
    return list(run.nodes) if run is not None and preselecting(config) else []


def order(config, items) -> None:
    """After nodegate's ordering (node by node): each node's last site item (its connection is
    released after it), the nodes whose site items use ``host`` in the order they come, and the
    ``test_regression_site[<node>]`` items moved right after their node's last site item
    (deselected for nodes without site items: nothing to compare)."""
    # a test testinfra_hosts restricts to no node of the run: pytest's "empty parameter set" item
    none = [i for i in items if _no_node(i)]
    if none:
        config.hook.pytest_deselected(items=none)
        items[:] = [i for i in items if not _no_node(i)]
    from ..session.api import PRESENT_KEY
    for item in items:
        if site_node(item) is not None:
            item.stash[PRESENT_KEY] = present   # nodegate_plugin's makereport wrapper calls it
    st = config.stash.get(SITE_KEY, None)
    if st is None:
        return
    st.last.clear()
    st.order.clear()
    for item in items:
        node = site_node(item)
        if node is not None:
            st.last[node] = item.nodeid
            # connections are opened ahead only for nodes whose site tests use `host`
            if node not in st.order and "host" in getattr(item, "fixturenames", ()):
                st.order.append(node)
    regs = {}
    for item in items:
        if getattr(item, "originalname", "") == _REGRESSION:
            cs = getattr(item, "callspec", None)
            p = cs.params.get("regression") if cs is not None else None
            regs[item] = p[1] if isinstance(p, tuple) and len(p) > 1 else None
    if not regs:
        return
    drop = [i for i, n in regs.items() if n not in st.last]
    if drop:
        config.hook.pytest_deselected(items=drop)
        # not part of the node's suite either (the reports' "every item ran": COLLECTED_KEY)
        from ..session.api import COLLECTED_KEY
        collected = config.stash.get(COLLECTED_KEY, None)
        for n in (regs[i] for i in drop):
            if collected and collected.get(n):
                collected[n] -= 1
    rest = [i for i in items if i not in regs]
    by_last = {st.last[n]: i for i, n in regs.items() if n in st.last}
    out = []
    for i in rest:
        out.append(i)
        if i.nodeid in by_last:
            out.append(by_last[i.nodeid])
    items[:] = out


def _no_node(item) -> bool:
    cs = getattr(item, "callspec", None)
    return cs is not None and PARAM in cs.params and site_node(item) is None


def begin(item, st) -> None:
    """pytest_runtest_setup, first (before its fixtures: a check the spec skips opens no
    connection): the check ``checks.skip`` names is SKIP; else the item's check and deadline
    for its node's commands, and the next nodes' connections opened ahead."""
    node = site_node(item)
    chk = check_of(item)
    skip = getattr(getattr(st.run.spec.get(node), "checks", None), "skip", None) or ()
    if chk.id in skip or chk.name in skip:
        named = chk.id if chk.id in skip else chk.name
        _record(item, st, node, chk, "skip", f"checks.skip lists {named}: not applicable to this node")
        pytest.skip(f"[{chk.id}] checks.skip lists {named}")
    st.begin(node, chk.id, chk.timeout_s)
    spent = st.over_budget(node)
    if spent is not None and getattr(st.pool, "live", False):   # the node's remaining site items: ERROR
        _record(item, st, node, chk, "error", spent)
        pytest.fail(f"[{chk.id}] could not evaluate: {spent}", pytrace=False)
    try:
        i = st.order.index(node)
    except ValueError:
        return
    st.pool.prefetch(st.order[i + 1:i + 1 + st.pool.opts.lookahead])


def run_in_setup(item, st) -> None:
    """pytest_runtest_setup, last (fixtures are set up): the test function runs here and its
    outcome is classified (module docstring)."""
    node = site_node(item)
    chk = check_of(item)
    if item.config.getoption("setuponly", False) or item.config.getoption("setupplan", False):
        return
    item.stash[OUTCOME_KEY] = ("running", None)
    exc = None
    try:
        item.runtest()
    except (KeyboardInterrupt, SystemExit, pytest.exit.Exception):
        raise
    except BaseException as e:  # noqa: BLE001 - classified below
        exc = e
    be = st.backend(node)
    errors = list(be.errors) if be is not None else []
    if isinstance(exc, pytest.skip.Exception):
        item.stash[OUTCOME_KEY] = ("done", None)
        _record(item, st, node, chk, "skip", str(exc.msg if hasattr(exc, "msg") else exc))
        raise exc
    if errors or isinstance(exc, (NodegateError,)):
        why = errors[0] if errors else exc
        item.stash[OUTCOME_KEY] = ("done", None)
        _record(item, st, node, chk, "error", str(why))   # the reports say "could not evaluate"
        pytest.fail(f"[{chk.id}] could not evaluate: {why}", pytrace=False)
    if exc is None:
        item.stash[OUTCOME_KEY] = ("done", None)
        _record(item, st, node, chk, "pass", "")
        return
    # the test's own failure, as pytest and testinfra report it: an assertion, pytest.fail, or
    # any other exception raised in its body (KeyError, a testinfra module's ValueError)
    item.stash[OUTCOME_KEY] = ("done", exc)
    why = _exc_line(exc)
    if not isinstance(exc, (AssertionError, pytest.fail.Exception)):
        why = f"{type(exc).__name__}: {why}"
    _record(item, st, node, chk, "fail", why)


def pyfunc_call(item) -> bool | None:
    """pytest_pyfunc_call: the call phase of an item already run in setup re-raises its FAIL
    (True: the function is not called again); None lets pytest call it (the run in setup)."""
    state = item.stash.get(OUTCOME_KEY, None)
    if state is None or state[0] == "running":
        return None
    if state[1] is not None:
        exc = state[1]
        item.stash[OUTCOME_KEY] = ("done", None)
        raise exc
    return True


def _exc_line(exc: BaseException) -> str:
    msg = getattr(exc, "msg", None) if isinstance(exc, pytest.fail.Exception) else None
    text = str(msg if msg is not None else exc) or type(exc).__name__
    lines = [ln for ln in text.splitlines() if ln.strip()] or [type(exc).__name__]
    # the test's own assertion message when it gave one; else pytest's explanation: the
    # assertion and its first "where" lines
    keep = lines[:1] if not lines[0].startswith("assert ") and len(lines) > 1 and \
        lines[1].startswith("assert ") else lines[:3]
    return " ".join(" ".join(keep).split())[:1000]


def _evidence(st, node: str) -> str:
    be = st.backend(node)
    lines = []
    for rec in (be.ran if be is not None else [])[-12:]:
        rc = "no exit code" if rec.rc is None else f"rc {rec.rc}"
        lines.append(f"$ {rec.command}  [{rc}, {rec.status}, {rec.duration_s or 0:.2f}s]")
        out = rec.stdout.decode("utf-8", errors="replace").strip().splitlines()
        lines += ["  " + ln for ln in out[:5]] + (["  ..."] if len(out) > 5 else [])
    return "\n".join(lines)[:4000]


def _record(item, st, node: str, chk: SiteCheck, outcome: str, message: str) -> None:
    """The item's report info (``report.nodegate``), JUnit properties and the node's result.
    ``message`` is the why alone (the reports add "could not evaluate" to an ERROR's)."""
    message = str(message)   # the report is serialized (xdist): plain strings only
    b = st.run.bundles.get(node)
    failing = outcome in ("fail", "error")
    res = Result(Outcome(outcome), expected=chk.title, observed=message if failing else "", message=message,
                 evidence=_evidence(st, node) if failing else "")
    info = item_record(node, res, check_id=chk.id, check_name=chk.name, title=chk.title, severity=chk.severity,
                       remediation=chk.remediation, driver_version=driver_version(st.run.facts.get(node)),
                       bundle_dir=str(getattr(b, "path", "") or ""),
                       spec_source=(getattr(st.run, "spec_source", None) or {}).get(node, ""))
    item.stash[INFO_KEY] = info
    props = [(k, info.get(k, "")) for k in PROP_KEYS]
    if not failing:
        props[PROP_KEYS.index("remediation")] = ("remediation", "")
    if not any(k == "check_id" for k, _ in item.user_properties):
        item.user_properties.extend(props)
    st.results.setdefault(node, {})[result_key(item, node, chk)] = {
        "check_id": chk.id, "outcome": outcome, "title": chk.title, "message": message[:500]}


def result_key(item, node: str, chk: SiteCheck) -> str:
    """The check id, plus the item's own parameters when it has any (``SITE-X[a]``); when another
    site file of the run recorded a check of the same id on the node first (two files with one
    test name), the file too (``site/test_b.py::SITE-X``), so neither outcome hides the other."""
    key = _key(item, node, chk)
    path = item.nodeid.split("::", 1)[0]
    owners = item.config.stash.setdefault(KEY_FILES_KEY, {})
    if owners.setdefault((node, key), path) != path:
        return f"{path}::{key}"
    return key


def _key(item, node: str, chk: SiteCheck) -> str:
    cs = getattr(item, "callspec", None)
    pid = getattr(cs, "id", "") or ""
    if pid == node:
        return chk.id
    for rest in (pid[len(node) + 1:] if pid.startswith(node + "-") else None,
                 pid[:-len(node) - 1] if pid.endswith("-" + node) else None):
        if rest:
            return f"{chk.id}[{rest}]"
    return f"{chk.id}[{pid.replace(node, '', 1).strip('-')}]" if pid else chk.id


def present(item, rep, call):
    """A site item's presenter (``PRESENT_KEY``): its phase report gets ``report.nodegate``
    (``report_info``) and, on a FAIL, one readable line for pytest to print, node text escaped (a
    FAIL's assertion message quotes node output: docs/security.md "Control characters")."""
    info = report_info(item, rep, call)
    if info is not None:
        from ..reports.records import attach_nodegate
        attach_nodegate(rep, info)
    return rep


def report_info(item, rep, call) -> dict | None:
    """The report.nodegate dict of a site item's phase report: what setup recorded, or, when a
    fixture failed before (node not gathered, site connection refused), an ERROR built here."""
    info = item.stash.get(INFO_KEY, None)
    if info is None and rep.when == "setup" and rep.failed:
        st = item.config.stash.get(SITE_KEY, None)
        node = site_node(item)
        if st is None or node is None:
            return None
        try:
            chk = check_of(item)
        except ValueError:
            return None
        exc = call.excinfo.value if call.excinfo is not None else None
        if isinstance(exc, pytest.fail.Exception):     # the site fixtures' own refusal (nodegate.site.fixtures)
            why = _exc_line(exc)
        elif isinstance(exc, (NodegateError, SiteCommandError)):
            why = str(exc)
        else:
            why = f"fixture error: {type(exc).__name__}: {_exc_line(exc)}" if exc is not None else "setup failed"
        _record(item, st, node, chk, "error", why)   # the reports say "could not evaluate"
        info = item.stash[INFO_KEY]
        if isinstance(exc, pytest.fail.Exception):
            rep.longrepr = f"[{chk.id}] could not evaluate: {why}"
    return info

