"""pytest plugin: ``--perf``: measure each node's performance and judge it per GPU, link and HCA.

Flow: the lead's plugin gathers every node at session start (tryfirst); this plugin's
sessionstart then runs the spec's performance tests on every gathered node at once (ONE exec per
node, nodegate.perf.runner) and adds ``perf.*`` evidence to each bundle. With ``--burn-in`` too,
it runs before the soak (``perf.before.*``) and again after it (``perf.after.*``).
suites/test_perf.py is collected with --perf, or with --replay of bundles holding perf evidence;
``--baseline`` adds each node's own last accepted figures. All items of the run are judged once,
at collection (the fleet rule needs every node): nodegate.perf.judge.judge_run.

Items: ``test_perf_<gpu|link|hca|node>[<node>-<tool>-<metric>[-<engine>][-bidir]-<subject>]`` with
the same ``user_properties`` and ``report.nodegate`` as every nodegate item, plus value, unit,
threshold and rule; the first perf item of each node carries its performance table and charts.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from nodegate.engine import item_record
from nodegate.errors import SpecError
from nodegate.outcomes import Outcome
from nodegate.perf import judge as J
from nodegate.perf.present import CHECK_IDS, REMEDIATION, info_fields, scope_of, to_result
from nodegate.perf.runner import PerfJob, perf_fleet
from nodegate.perf.spec import perf_spec
from nodegate.run import RUN_KEY
from nodegate.session.exitcodes import usage_error
from nodegate.cmdline import gather_options, replay_holds
from nodegate.session.phase import (group_by_node, identity_clash, record_verdict,
                                    presenter, run_interruptibly)

SUITE = Path(__file__).resolve().parent.parent / "suites" / "test_perf.py"
_ITEMS_KEY = pytest.StashKey[dict]()
_INFO_KEY = pytest.StashKey[dict]()
_TABLE_KEY = pytest.StashKey[bool]()


def pytest_addoption(parser):
    g = parser.getgroup("nodegate-perf", "nodegate performance acceptance")
    g.addoption("--perf", dest="perf", action="store_true", default=False,
                help="run the spec's performance tests (nodegate: perf:) on every node and judge bandwidth and "
                     "FLOPS per GPU, link and HCA against the SKU floor, in-node peers, the fleet and --baseline")


def _replay_has_perf(config) -> bool:
    return replay_holds(config.option, "perf*.run.out", "*/perf*.run.out")


def pytest_ignore_collect(collection_path, config):
    if Path(collection_path).resolve() == SUITE and not config.getoption("perf", False) and not _replay_has_perf(config):
        return True
    return None


def _run_phase(config, label: str) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is None or hasattr(config, "workerinput") or run.mode == "replay" or not config.getoption("perf", False):
        return
    from nodegate.session.state import JOBS_KEY
    jobs = []
    for j in config.stash.get(JOBS_KEY, []):
        b = run.bundles.get(j.name)
        if b is None or b.gather_error:
            continue   # its perf items ERROR with the gather error
        try:
            jobs.append(PerfJob(j.name, j.url, perf_spec(run.spec.get(j.name), j.spec_raw), label))
        except SpecError as e:
            usage_error(config, f"nodegate: spec error: {e}")
    tr = config.pluginmanager.get_plugin("terminalreporter")
    tw = tr._tw if tr is not None else None
    t0 = time.monotonic()

    def progress(done, total):
        if tw is not None:
            tw.write(f"\rnodegate: perf{' ' + label if label else ''} {done}/{total} nodes done, "
                     f"{time.monotonic() - t0:.0f}s ")

    if tw is not None:
        tw.line(f"nodegate: performance tests{' (' + label + ' the burn-in)' if label else ''} on {len(jobs)} "
                "node(s) (Ctrl-C stops every tool)")
    run_interruptibly(config, f"perf{' ' + label if label else ''}",
                      lambda: perf_fleet(jobs, gather_options(config.option), run.bundles, run.bundles_dir, threading.Event(),
                                         progress))
    if tw is not None:
        tw.line("")


def pytest_sessionstart(session):
    # between the lead's gather (tryfirst) and the burn-in (trylast): alone, or "before" the soak
    _run_phase(session.config, "before" if session.config.getoption("burn_in", None) else "")


class _AfterBurnin:
    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session):
        res = yield
        if session.config.getoption("burn_in", None):
            _run_phase(session.config, "after")
        return res


def pytest_configure(config):
    if config.getoption("perf", False) and not config.pluginmanager.has_plugin("nodegate-perf-after"):
        config.pluginmanager.register(_AfterBurnin(), "nodegate-perf-after")


# ---------------------------------------------------------------------------- judging (once)
def _labels(b) -> list[str]:
    out = [lab for lab in ("before", "after") if b.has(f"perf.{lab}.run")]
    return out or [""]


def _judge_contained(inputs: list, baselines, th_by_node: dict, errors: dict) -> dict:
    """J.judge_run over every node (the fleet rule compares them); when it raises (a bug reached
    by one node's hostile figures), each node is judged again alone so that the exception stays
    with the node that raises it (its items ERROR naming it, in ``errors``) and every other node
    is judged (issue 37.2: one node's evidence never stops the others). Alone, a node has no
    fleet peers: its fleet rule says it does not apply, never PASS."""
    try:
        return J.judge_run(inputs, baselines, th_by_node=th_by_node)
    except Exception:  # noqa: BLE001 - isolated below, node by node
        pass
    out = {}
    for ni in inputs:
        try:
            out.update(J.judge_run([ni], baselines, th_by_node=th_by_node))
        except Exception as e:  # noqa: BLE001 - this node's items ERROR; the others are judged
            errors[ni.node] = (f"internal error judging this node's performance evidence: {type(e).__name__}: "
                               f"{str(e)[:300]}")
    return out


def _judged(config) -> dict:
    """{node: [(label, Item)]}, the whole run judged once (the fleet rule needs every node)."""
    if _ITEMS_KEY in config.stash:
        return config.stash[_ITEMS_KEY]
    run = config.stash.get(RUN_KEY, None)
    out: dict = {}
    if run is None:
        config.stash[_ITEMS_KEY] = out
        return out
    br = None
    try:
        from nodegate.plugins.nodegate_baseline import BASELINE_KEY
        br = config.stash.get(BASELINE_KEY, None)
    except ImportError:
        pass
    by_label: dict[str, list] = {}
    th_by_node, baselines, errors = {}, {}, {}
    for node, b in run.bundles.items():
        try:
            raw = b.meta.get("spec") if isinstance(b.meta.get("spec"), dict) else None
            ps = perf_spec(run.spec.get(node), raw)
        except SpecError as e:
            errors[node] = f"spec error: {e}"
            continue
        if run.spec_errors.get(node):
            errors[node] = f"spec error: {run.spec_errors[node]}"
            continue
        clash = identity_clash(run, node)
        if clash:
            # issue 37.9: N copies of one machine: their figures are one machine's, never N
            # nodes' (the fleet rule counted it N times and their perf items PASSed)
            errors[node] = clash
            continue
        try:
            ctx = J.node_context(run.facts.get(node))
            th_by_node[node] = J.thresholds(ps)
            if br is not None and node in br.bundles:
                # read now and dropped after (BaselineRun holds no bundle: bounded memory). Per label:
                # "after the soak" is compared with the baseline's own after-soak figures where it has
                # them (judge.baseline_label), never silently with nothing
                from nodegate.collect import NodeFacts
                bb = br.bundle(node)
                bctx = J.node_context(NodeFacts(bb))
                for lab in _labels(b):
                    blab = J.baseline_label(bb, lab)
                    baselines.setdefault(lab, {})[node] = {} if blab is None else J.baseline_figures(bb, bctx, ps, blab)
            inputs = [(lab, J.node_input(b, ctx, ps, lab)) for lab in _labels(b)]
        except Exception as e:  # noqa: BLE001 - one node's evidence never stops the others (issue 37 item 2)
            errors[node] = (f"internal error reading this node's performance evidence: {type(e).__name__}: "
                            f"{str(e)[:300]}")
            continue
        for lab, ni in inputs:
            by_label.setdefault(lab, []).append(ni)
    for lab, inputs in by_label.items():
        for node, items in _judge_contained(inputs, baselines.get(lab), th_by_node, errors).items():
            out.setdefault(node, []).extend((lab, it) for it in items)
    for node, why in errors.items():
        from nodegate.perf.rules import Item
        out[node] = [("", Item(node, "perf", "perf", "spec", "spec", "node", Outcome.ERROR, why))]
    config.stash[_ITEMS_KEY] = out
    return out


def pytest_generate_tests(metafunc):
    if "perf_verdict" not in metafunc.fixturenames:
        return
    scope = metafunc.function.__name__.removeprefix("test_perf_")
    params, ids = [], []
    for node, items in _judged(metafunc.config).items():
        for lab, it in items:
            if scope_of(it) == scope:
                params.append((f"perf_{scope}", node, lab, it))
                ids.append(f"{node}-{lab + '-' if lab else ''}{it.id}")
    metafunc.parametrize("perf_verdict", params, ids=ids, indirect=True)


@pytest.fixture
def perf_verdict(request):
    """The judged perf item: ERROR raises in setup, SKIP skips."""
    _, node, lab, it = request.param
    config = request.config
    res = to_result(it)
    run = config.stash[RUN_KEY]
    b = run.bundles.get(node)
    scope = scope_of(it)
    cid = CHECK_IDS[scope]
    if res.outcome is Outcome.FAIL:
        res.message = f"{res.message} Remediation: {REMEDIATION}"
    info = item_record(node, replace(res, evidence=""), check_id=cid, check_name=f"perf_{scope}",
                       title=f"performance{' (' + lab + ' burn-in)' if lab else ''}: {it.label}", severity="major",
                       remediation=REMEDIATION, driver_version="",
                       ident={"gpu_index": "" if it.gpu is None else str(it.gpu), "gpu_serial": it.serial},
                       bundle_dir=str(getattr(b, "path", "") or ""), extra=info_fields(it))
    record_verdict(request, _INFO_KEY, info, ("node", "check_id", "severity", "gpu_index", "gpu_serial", "expected",
                                              "observed", "value", "unit", "threshold", "rule"), cid, res,
                   present=_PRESENT)
    return res


def pytest_collection_modifyitems(config, items):
    # a scope with no subject in this run (no HCA, no P2P matrix): its empty parameter set is not an item
    empty = [i for i in items if getattr(getattr(i, "callspec", None), "params", {}).get("perf_verdict", 0) is None
             or (i.originalname or "").startswith("test_perf_") and "perf_verdict" in getattr(
                 getattr(i, "callspec", None), "params", {}) and not isinstance(i.callspec.params["perf_verdict"], tuple)]
    if empty:
        config.hook.pytest_deselected(items=empty)
        gone = set(empty)   # once, not per item (quadratic in the items otherwise)
        items[:] = [i for i in items if i not in gone]
    group_by_node(items, "perf_verdict", _TABLE_KEY, lambda v: v[1] if isinstance(v, tuple) else None)


def _table(item, info) -> str:
    from nodegate.perf.report import node_html
    node = info["node"]
    return node_html(node, [it for _, it in _judged(item.config).get(node, [])])


#: what a perf item's phase reports get (nodegate_plugin's one makereport wrapper calls it)
_PRESENT = presenter(_INFO_KEY, _TABLE_KEY, _table)
