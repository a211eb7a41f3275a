"""pytest plugin: the post-upgrade regression gate (``--baseline DIR``), docs/baseline.md.

Registered next to plugins/nodegate_plugin.py (root conftest ``pytest_plugins``) or with
``-p nodegate.plugins.nodegate_baseline``. Inactive without ``--baseline``: suites/test_regressions.py
items are then deselected.

Flow: pytest_configure checks ``--baseline`` is a bundles directory (else exit 2, nothing
contacted) -> pytest_sessionstart (after the suite plugin built the FleetRun) loads the
baseline bundles in scope (inventory after --limit, or --limit alone) into a BaselineRun ->
pytest_generate_tests parametrizes each ``test_regression_<kind>`` by node (and baseline GPU:
``[<node>-gpu<i>]``) -> the ``regression`` fixture returns the item's Result (ERROR fails in
setup, SKIP skips) with ``report.nodegate`` and user_properties as the suite contract says ->
pytest_sessionfinish (controller only) writes ``<reports-dir>/changes.json`` and sets exit code
3 when every failure is a regression FAIL -> pytest-html gets the change tables.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nodegate.baseline import render
from nodegate.baseline.exitcodes import EXIT_REGRESSIONS_ONLY, final_exit_status
from nodegate.baseline.model import GPU_KINDS, KIND_INFO, check_id
from nodegate.baseline.run import BaselineError, BaselineRun
from nodegate.bundle import discover
from nodegate.engine import item_record
from nodegate.engine.evaluate import driver_version
from nodegate.errors import SpecError
from nodegate.reports.records import attach_nodegate
from nodegate.run import RUN_KEY
from nodegate.session.exitcodes import usage_error, writes_no_report
from nodegate.session.phase import record_verdict
from nodegate.textsafe import shown  # node text pytest prints: control characters escaped

BASELINE_KEY = pytest.StashKey[BaselineRun]()
_INFO_KEY = pytest.StashKey[dict]()
_PLUGIN_NAME = "nodegate-baseline"
_FIXTURE = "regression"
_PREFIX = "test_regression_"
_PROPS = ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "expected",
          "observed", "remediation")


def pytest_addoption(parser):
    g = parser.getgroup("nodegate", "nodegate GPU node acceptance")
    g.addoption("--baseline", metavar="DIR",
                help="bundles of the last accepted run (e.g. before an upgrade): every node in both is compared; "
                     "regressions are test_regression_* items, changes go to <reports-dir>/changes.json "
                     "(exit 3 when regressions are the only failures)")


def pytest_configure(config):
    config.addinivalue_line("markers", "nodegate_regression: a baseline regression item (test_regression_*)")
    d = getattr(config.option, "baseline", None)
    if d and not hasattr(config, "workerinput"):
        p = Path(d)
        if not p.is_dir() or not discover(p):
            usage_error(config, f"nodegate: --baseline {d}: not a directory of bundles (<dir>/<node>/meta.json)")
    config.pluginmanager.register((ComparingSession if d else BaselineSession)(config), _PLUGIN_NAME)
    if d and not hasattr(config, "workerinput") and _active(config):
        # read now, before any node is contacted: an unusable baseline is exit 2 with no
        # evidence gathered and no report written (README "Exit codes", issue 30)
        try:
            keep, inventory = _scope(config)
            config.stash[BASELINE_KEY] = BaselineRun.load(d, keep=keep, inventory=inventory)
        except (BaselineError, SpecError) as e:
            usage_error(config, f"nodegate: {e}")


def _active(config) -> bool:
    from nodegate.session.state import ACTIVE_KEY
    return bool(config.stash.get(ACTIVE_KEY, False))


def pytest_unconfigure(config):
    p = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if p is not None:
        config.pluginmanager.unregister(p)


def _scope(config):
    """(keep(node) filter for baseline nodes, inventory host names after --limit or None)."""
    from nodegate.inventory import load_inventory, select_names
    from nodegate.session.state import INVENTORY_KEY
    o = config.option
    limit = getattr(o, "limit", None)
    # the baseline's node names matched against --limit once (ansible-core's patterns)
    allowed = set(select_names(limit, [d.name for d in discover(Path(o.baseline))])) if limit else None

    def by_limit(n: str) -> bool:
        return allowed is None or n in allowed
    if getattr(o, "inventory", None):
        inv = config.stash.get(INVENTORY_KEY, None) or load_inventory(o.inventory)
        selected = set(inv.select_names(limit))
        everyone = set(inv.names)
        return (lambda n: n in selected or (n not in everyone and by_limit(n))), selected
    return by_limit, None


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


class BaselineSession:
    """Per-session state: the BaselineRun, failure counts for the exit code, outputs."""

    def __init__(self, config):
        self.config = config
        self.regression_failures = 0
        self.other_failures = 0
        self.written: Path | None = None
        self.summary: dict | None = None

    def run(self) -> BaselineRun | None:
        return self.config.stash.get(BASELINE_KEY, None)

    @staticmethod
    def fleet(config):
        return config.stash.get(RUN_KEY, None)

    # -------------------------------------------------------------- start
    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        o = self.config.option
        if not getattr(o, "baseline", None) or self.fleet(self.config) is None \
                or self.config.stash.get(BASELINE_KEY, None) is not None:
            return
        try:
            keep, inventory = _scope(self.config)
            self.config.stash[BASELINE_KEY] = BaselineRun.load(o.baseline, keep=keep, inventory=inventory)
        except BaselineError as e:
            usage_error(self.config, f"nodegate: {e}")

    # -------------------------------------------------------------- items
    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector, name, obj):  # noqa: ARG002
        """Without --baseline the ``test_regression_*`` functions make no item at all (nothing to
        compare): never run, never "deselected", never part of a node's suite."""
        if name.startswith(_PREFIX) and callable(obj) and not getattr(self.config.option, "baseline", None):
            return []
        return None

    def pytest_generate_tests(self, metafunc):
        if _FIXTURE not in metafunc.fixturenames:
            return
        kind = metafunc.function.__name__.removeprefix(_PREFIX)
        br, fleet = self.run(), self.fleet(metafunc.config)
        params, ids = [], []
        if br is not None and fleet is not None:
            for node, label in br.items(kind, fleet, _standin_slots(metafunc.config, fleet)):
                params.append((kind, node, label))
                ids.append(f"{node}-{label}" if label else node)
        metafunc.parametrize(_FIXTURE, params, ids=ids, indirect=True)

    def pytest_collection_modifyitems(self, config, items):
        mine = [i for i in items if _FIXTURE in getattr(i, "fixturenames", ())]
        if not mine:
            return
        if self.run() is None:   # no --baseline: regression items do not exist for this run
            keep = [i for i in items if _FIXTURE not in getattr(i, "fixturenames", ())]
            config.hook.pytest_deselected(items=mine)
            items[:] = keep
            return
        # a kind none of these nodes has (a shard of new nodes only: nodegate.session.shards)
        # makes no item, not pytest's "got empty parameter set" skip: the items of a sharded run
        # are those of the unsharded one
        empty = {id(i) for i in mine if not isinstance(_param(i), tuple)}
        if empty:
            items[:] = [i for i in items if id(i) not in empty]
        for item in mine:
            cs = getattr(item, "callspec", None)
            if id(item) not in empty and cs is not None and _FIXTURE in cs.params:
                item.add_marker(pytest.mark.nodegate_regression)
                item.add_marker(pytest.mark.xdist_group(cs.params[_FIXTURE][1]))

    @pytest.hookimpl(optionalhook=True)
    def pytest_nodegate_report_sections(self, config):  # noqa: ARG002
        """The change tables in nodegate's HTML report (nodegate.session.api)."""
        br, fleet = self.run(), self.fleet(self.config)
        if br is None or fleet is None:
            return None
        return [("Changes since the baseline", render.html_section(br.all_comparisons(fleet), str(br.dir)))]

    def pytest_sessionfinish(self, session, exitstatus):
        if _is_worker(self.config) or writes_no_report(self.config, exitstatus):
            return   # exit 2 (a usage error after collection: nothing selected): no changes.json either
        br, fleet = self.run(), self.fleet(self.config)
        if br is not None and fleet is not None:
            doc = render.changes_document(br.all_comparisons(fleet), baseline_dir=str(br.dir),
                                          current=str(getattr(fleet, "inventory_path", None) or fleet.bundles_dir or ""),
                                          generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            self.summary = doc["summary"]
            try:
                self.written = render.write_changes_json(Path(fleet.reports_dir or "reports"), doc)
            except OSError as e:
                self.summary["not_written"] = str(e)
        session.exitstatus = final_exit_status(session.exitstatus, self.regression_failures, self.other_failures)
        if session.exitstatus == EXIT_REGRESSIONS_ONLY:
            from nodegate.session.exitcodes import REGRESSIONS_ONLY_KEY
            self.config.stash[REGRESSIONS_ONLY_KEY] = True   # 3 is not pytest's INTERNAL_ERROR here

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):  # noqa: ARG002
        if _is_worker(config) or self.summary is None:
            return
        s = self.summary
        terminalreporter.write_sep("-", "nodegate baseline")
        terminalreporter.write_line(f"compared with {self.run().dir}: {s['nodes']} node(s), {s['regressions']} "
                                    f"regression(s) on {s['nodes_with_regressions']} node(s), {s['changes']} change(s)")
        if s["new_nodes"] or s["missing_nodes"]:
            terminalreporter.write_line(shown(f"new: {', '.join(s['new_nodes']) or '-'}; missing: "
                                              f"{', '.join(s['missing_nodes']) or '-'}", newlines=False))
        terminalreporter.write_line(f"changes: {self.written or s.get('not_written')}")
        if self.regression_failures and not self.other_failures:
            terminalreporter.write_line("only regression items failed: exit code 3")


class ComparingSession(BaselineSession):
    """A --baseline run's session: its regression items' reports (``report.nodegate``) and the
    failure counts of the exit code 3. Without --baseline neither exists, and these three hooks,
    called for every phase report of every item, are not registered (BaselineSession alone)."""

    # -------------------------------------------------------------- reports
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):  # noqa: ARG002
        rep = yield
        info = item.stash.get(_INFO_KEY, None)
        if info is not None:
            attach_nodegate(rep, info)
        return rep

    def pytest_runtest_logreport(self, report):
        if _is_worker(self.config) or not report.failed:
            return
        if report.when == "call" and _PREFIX in report.nodeid.rsplit("::", 1)[-1]:
            self.regression_failures += 1
        else:
            self.other_failures += 1

    def pytest_collectreport(self, report):
        if report.failed and not _is_worker(self.config):
            self.other_failures += 1


#: stand-in GPU items of a node without gpu.count while nothing is gathered (preselect's child, a
#: live --collect-only): enough for -k on a GPU id to select the node (an 8-GPU HGX board)
STANDIN_GPU_SLOTS = 8


def _standin_slots(config, fleet):
    """While the run's selection is learned before gathering (preselect's child) or on a live
    --collect-only, nothing is gathered to compare: a node's stand-in GPU items, gpu.count or
    STANDIN_GPU_SLOTS. Else None."""
    from nodegate.session.state import PRESELECT_KEY, spec_get
    if not (config.stash.get(PRESELECT_KEY, False)
            or (config.option.collectonly and getattr(fleet, "mode", "") in ("ssh", "local"))):
        return None
    return lambda node: int(spec_get(fleet.spec.get(node), "gpu.count") or STANDIN_GPU_SLOTS)


def _param(item):
    cs = getattr(item, "callspec", None)
    return cs.params.get(_FIXTURE) if cs is not None else None


def _identity(br: BaselineRun, fleet, node: str, label: str | None) -> dict:
    ident = {"gpu_index": "", "pci_bus_id": "", "gpu_serial": "", "gpu_uuid": "", "board_part_number": "",
             "vbios_version": ""}
    if not label:
        return ident
    c = br.comparison(node, fleet)
    ref = next((g for g in (c.gpus if c else []) if g.label == label), None)
    if ref is None:
        return ident
    ident.update(gpu_index=str(ref.index), pci_bus_id=ref.pci_bus_id or "", gpu_serial=ref.serial or "",
                 gpu_uuid=ref.uuid or "")
    bpn, vbios = br.gpu_extra(node, ref.uuid)   # kept from the comparison (the bundle is not held)
    ident.update(board_part_number=bpn, vbios_version=vbios)
    return ident


@pytest.fixture
def regression(request):
    """The Result of one regression item: ERROR fails in setup, SKIP skips, else returned."""
    kind, node, label = request.param
    config = request.config
    br: BaselineRun = config.stash[BASELINE_KEY]
    fleet = config.stash[RUN_KEY]
    res = br.verdict(kind, node, label, fleet)
    title, severity, remediation = KIND_INFO[kind]
    if node not in fleet.bundles and hasattr(fleet, "has") and fleet.has(node):
        # a streaming run (docs/performance.md): the node read now, released with its items
        fleet.bundle_for(node)
    b = fleet.bundles.get(node)
    info = item_record(node, res, check_id=check_id(kind), check_name=f"regression_{kind}", title=title,
                       severity=severity, remediation=remediation,
                       ident=_identity(br, fleet, node, label if kind in GPU_KINDS else None),
                       driver_version=driver_version(fleet.facts.get(node)),
                       bundle_dir=str(getattr(b, "path", "") or br.bundles.get(node) or ""))
    record_verdict(request, _INFO_KEY, info, _PROPS, info["check_id"], res)
    return res
