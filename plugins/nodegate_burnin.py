"""pytest plugin: ``--burn-in DURATION``: run a load on every node and judge it while it runs.

Flow: the lead's plugin gathers every node at session start (tryfirst); this plugin's
sessionstart (trylast) then runs the burn-in on every gathered node at once (ONE exec per node,
nodegate.burnin.runner) and adds ``burnin.*`` evidence to each bundle. suites/test_burnin.py is
collected only with --burn-in, or with --replay when the bundles hold burn-in evidence. Ctrl-C
during the burn-in closes every channel; each node stops its load (docs/burnin.md).

Items: ``test_burnin_<rule>[<node>]`` / ``[<node>-gpu<i>]`` / ``test_burnin_dcgm[<node>-gpu<i>-<test>]``
with the same ``user_properties`` and ``report.nodegate`` as every nodegate item; the first
burn-in item of each node carries the node's SVG plot as a pytest-html extra.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from nodegate.burnin import rules as R
from nodegate.burnin.plot import svg_for_node
from nodegate.burnin.runner import BurninJob, burnin_fleet
from nodegate.burnin.series import BurninData, burnin_data
from nodegate.burnin.spec import burnin_spec, parse_duration
from nodegate.engine import item_record
from nodegate.errors import EvidenceError, SpecError
from nodegate.outcomes import Result, asserted
from nodegate.session.terminal import progress_line
from nodegate.run import RUN_KEY
from nodegate.session.exitcodes import usage_error
from nodegate.cmdline import gather_options, replay_holds
from nodegate.session.phase import (group_by_node, identity_clash, record_verdict,
                                    presenter, run_interruptibly)

SUITE = Path(__file__).resolve().parent.parent / "suites" / "test_burnin.py"
_DUR_KEY = pytest.StashKey[int]()
_CTX_KEY = pytest.StashKey[dict]()
_INFO_KEY = pytest.StashKey[dict]()
_PLOT_KEY = pytest.StashKey[bool]()


def pytest_addoption(parser):
    g = parser.getgroup("nodegate-burnin", "nodegate burn-in (checks under load)")
    g.addoption("--burn-in", dest="burn_in", metavar="DURATION",
                help="run the spec's load on every node for DURATION (90s, 10m, 2h) and check clocks, "
                     "PCIe link, ECC, remapped rows, Xid, GPU count and temperature while it runs")


def pytest_configure(config):
    v = config.getoption("burn_in", None)
    if v:
        try:
            config.stash[_DUR_KEY] = parse_duration(v)
        except ValueError as e:
            usage_error(config, f"nodegate: --burn-in: {e}")


def _replay_has_burnin(config) -> bool:
    return replay_holds(config.option, "burnin.run.out", "*/burnin.run.out")


def pytest_ignore_collect(collection_path, config):
    if Path(collection_path).resolve() == SUITE:
        if config.stash.get(_DUR_KEY, None) is None and not _replay_has_burnin(config):
            return True
    return None


def _jobs_from_lead(config) -> list:
    from nodegate.session.state import JOBS_KEY
    return list(config.stash.get(JOBS_KEY, []))


def _tw(config):
    tr = config.pluginmanager.get_plugin("terminalreporter")
    return tr._tw if tr is not None else None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    config = session.config
    dur = config.stash.get(_DUR_KEY, None)
    run = config.stash.get(RUN_KEY, None)
    if dur is None or run is None or hasattr(config, "workerinput") or run.mode == "replay":
        return
    jobs = []
    for j in _jobs_from_lead(config):
        b = run.bundles.get(j.name)
        if b is None or b.gather_error:
            continue  # its burn-in items ERROR with the gather error
        try:
            bs = burnin_spec(run.spec.get(j.name), j.spec_raw)
        except SpecError as e:
            usage_error(config, f"nodegate: spec error: {e}")
        jobs.append(BurninJob(j.name, j.url, bs))
    tw = _tw(config)
    t0 = time.monotonic()
    stop = threading.Event()

    line = progress_line(tw)   # \r on a terminal only (a CI log gets whole lines)

    def progress(done, total):
        if tw is not None:
            line(f"nodegate: burn-in {done}/{total} nodes done, {time.monotonic() - t0:.0f}s ")

    if tw is not None:
        tw.line(f"nodegate: burn-in of {len(jobs)} node(s) for {dur}s (Ctrl-C stops every load)")
    run_interruptibly(config, "burn-in", lambda: burnin_fleet(jobs, gather_options(config.option), dur, run.bundles,
                                                              run.bundles_dir, stop, progress))
    if tw is not None and line.tty:
        tw.line("")


# ---------------------------------------------------------------------------- evaluation context
def _node_context_unguarded(config, node: str) -> tuple[BurninData | EvidenceError, R.Context]:
    cache = config.stash.setdefault(_CTX_KEY, {})
    if node in cache:
        return cache[node]
    run = config.stash[RUN_KEY]
    # bundle_for, not run.bundles[...]: a replay reads bundles lazily (streaming), so at collection
    # run.bundles may hold none yet (issue 37.7: a burn-in replay collected nothing)
    b = run.bundle_for(node)
    spec = run.spec.get(node)
    ctx = R.Context()
    try:
        data: BurninData | EvidenceError = burnin_data(b)
    except EvidenceError as e:
        data = e
    try:
        ctx.bspec = burnin_spec(spec, (b.meta.get("spec") or {}) if isinstance(b.meta.get("spec"), dict) else {})
    except SpecError as e:
        data = EvidenceError("burnin.run", f"spec error: {e}")
    gpus_by_bus, gathered = {}, None
    try:
        gl = run.facts[node].gpus
        gathered = len(gl)
        gpus_by_bus = {g.pci_bus_id: g for g in gl}
    except Exception:  # noqa: BLE001 - the probe's GPU facts are optional context here
        pass
    ctx.gathered_gpus = gathered
    if spec is not None:
        ctx.ecc_required = bool(getattr(getattr(spec, "ecc", None), "required", True))
        ctx.repair = str(getattr(getattr(spec, "memory", None), "repair", "auto"))
    _xids(ctx, spec)
    if isinstance(data, BurninData):
        for i in data.gpu_indices():
            bus = next((g.bus_id for _, g in data.series(i)), None)
            gf = gpus_by_bus.get(bus)
            ctx.expected_link[i] = _expected_link(spec, gf)
            if gf is not None and getattr(gf, "architecture", None):
                ctx.architecture[i] = gf.architecture
        R.attach_evidence(ctx, b, data)
    cache[node] = (data, ctx)
    return cache[node]


def _node_context(config, node: str) -> tuple[BurninData | EvidenceError, R.Context]:
    """The node's burn-in data and rule context (cached), or an EvidenceError that makes every
    burn-in item of the node ERROR. Any exception raised while reading one node's burn-in
    evidence (a parser or rule bug reached by hostile output) is contained to that node: raised
    at collection it would be a collection error, exit 2 and no report for any node (issue 37.2)."""
    try:
        return _node_context_unguarded(config, node)
    except Exception as e:  # noqa: BLE001 - one node's evidence never stops the others
        err = EvidenceError("burnin.run", f"internal error reading this node's burn-in evidence: "
                            f"{type(e).__name__}: {str(e)[:300]}")
        ctx = R.Context()
        config.stash.setdefault(_CTX_KEY, {})[node] = (err, ctx)
        return err, ctx


def _xids(ctx: R.Context, spec) -> None:
    if ctx.bspec.xid_fail is not None:
        ctx.xid_fail, ctx.xid_source = frozenset(ctx.bspec.xid_fail), "burnin.xid_fail"
        return
    try:
        from nodegate.spec import xid_fail_set
        ctx.xid_fail, ctx.xid_source = xid_fail_set(spec), "nodegate/data/xid.yaml (or kernel_log.xid_fail)"
    except Exception:  # noqa: BLE001 - table absent: the catalog's default set
        pass


def _expected_link(spec, gf) -> tuple[int | None, int | None, str]:
    try:
        from nodegate.spec import expectations
        e = expectations(spec, gf)
        if e.pcie_gen is not None or e.pcie_width is not None:
            return e.pcie_gen, e.pcie_width, e.pcie_source
    except Exception:  # noqa: BLE001 - fall back to the spec section, then the GPU's own maximum
        pass
    p = getattr(spec, "pcie", None)
    gen, width = getattr(p, "gen", None), getattr(p, "width", None)
    if gen is not None or width is not None:
        return gen, width, "spec pcie"
    lk = getattr(gf, "link", None)
    mg, mw = getattr(lk, "max_gen", None), getattr(lk, "max_width", None)
    if isinstance(mg, int) or isinstance(mw, int):
        return (mg if isinstance(mg, int) else None, mw if isinstance(mw, int) else None,
                "the GPU's max link (nvidia-smi)")
    return None, None, ""


# ---------------------------------------------------------------------------- parametrization
def _gpu_labels(config, node: str) -> list[int]:
    data, _ = _node_context(config, node)
    if isinstance(data, BurninData) and data.gpu_indices():
        return data.gpu_indices()
    try:
        n = len(config.stash[RUN_KEY].facts[node].gpus)
        return list(range(n)) or [0]
    except Exception:  # noqa: BLE001 - one ERROR item per rule for a node we know nothing about
        return [0]


def pytest_generate_tests(metafunc):
    if "burnin_verdict" not in metafunc.fixturenames:
        return
    name = metafunc.function.__name__.removeprefix("test_")
    rd = R.RULES[name]
    run = metafunc.config.stash.get(RUN_KEY, None)
    params, ids = [], []
    for node in (run.nodes if run is not None else ()):
        if not run.has(node):
            # not gathered yet (preselect's collection contacts nobody and waits for nothing): one
            # stand-in item per rule; the real collection, after gathering, has the node's GPUs
            params.append((name, node, None if rd.scope == "node" or name == "burnin_dcgm" else 0, None))
            ids.append(node if rd.scope == "node" or name == "burnin_dcgm" else f"{node}-gpu0")
            continue
        if rd.scope == "node":
            params.append((name, node, None, None))
            ids.append(node)
            continue
        if name == "burnin_dcgm":
            data, ctx = _node_context(metafunc.config, node)
            if isinstance(ctx.dcgm, list) and ctx.dcgm:
                for r in ctx.dcgm:
                    params.append((name, node, r.gpu, r))
                    ids.append(f"{node}-gpu{r.gpu}-{r.slug}")
            else:
                params.append((name, node, None, None))
                ids.append(node)
            continue
        for i in _gpu_labels(metafunc.config, node):
            params.append((name, node, i, None))
            ids.append(f"{node}-gpu{i}")
    metafunc.parametrize("burnin_verdict", params, ids=ids, indirect=True)


def _dcgm_node_result(data, ctx) -> Result:
    if isinstance(data, EvidenceError):
        return Result.errored(str(data))
    if data.load.kind != "dcgmi":
        return Result.skipped(f"burnin.load={ctx.bspec.load} ran {data.load.kind}, not dcgmi: no DCGM diagnostics")
    if isinstance(ctx.dcgm, Exception):
        why = "stopped at the deadline before it finished" if data.load.stopped == "deadline" else str(ctx.dcgm)
        return Result.errored(f"dcgmi diag results unavailable: {why}", evidence_keys=("burnin.load",))
    return Result.errored("dcgmi diag reported no per-GPU result", evidence_keys=("burnin.load",))


def _evaluate(config, name: str, node: str, gpu, dres) -> Result:
    run = config.stash[RUN_KEY]
    b = run.bundle_for(node)
    if b is None:
        return Result.errored("no bundle for this node")
    if run.spec_errors.get(node):
        return Result.errored(f"spec error: {run.spec_errors[node]}")
    if b.gather_error:
        return Result.errored(f"node not gathered: {b.gather_error}")
    clash = identity_clash(run, node)
    if clash:   # issue 37.9: one machine answering for several nodes: its soak proves nothing of this one
        return Result.errored(clash, evidence_keys=("meta.boot_id", "meta.machine_id"))
    data, ctx = _node_context(config, node)
    if name == "burnin_dcgm":
        return R.rule_dcgm(dres, ctx) if dres is not None else _dcgm_node_result(data, ctx)
    if isinstance(data, EvidenceError):
        return Result.errored(str(data), evidence_keys=(data.key,))
    try:
        return R.RULES[name].func(data, ctx, gpu)
    except EvidenceError as e:
        return Result.errored(str(e), evidence_keys=(e.key,))
    except Exception as e:  # noqa: BLE001 - a rule bug reached by this node's evidence: this item ERRORs
        return Result.errored(f"internal error judging this node's burn-in evidence: {type(e).__name__}: "
                              f"{str(e)[:300]}")


@pytest.fixture
def burnin_verdict(request) -> Result:
    """The evaluated burn-in rule for this item: ERROR raises in setup, SKIP skips."""
    name, node, gpu, dres = request.param
    config = request.config
    rd = R.RULES[name]
    res = _evaluate(config, name, node, gpu, dres)
    run = config.stash[RUN_KEY]
    ident = {"gpu_index": "" if gpu is None else str(gpu), "pci_bus_id": "", "gpu_serial": "", "gpu_uuid": "",
             "board_part_number": "", "vbios_version": ""}
    data, _ = _node_context(config, node)
    if gpu is not None and isinstance(data, BurninData):
        ident["pci_bus_id"] = next((g.bus_id or "" for _, g in data.series(gpu)), "")
        try:
            for g in run.facts[node].gpus:
                if ident["pci_bus_id"] and g.pci_bus_id == ident["pci_bus_id"]:
                    ident.update(gpu_serial=str(g.serial or ""), gpu_uuid=str(g.uuid or ""),
                                 board_part_number=str(g.board_part_number or ""),
                                 vbios_version=str(g.vbios_version or ""))
        except Exception:  # noqa: BLE001 - identity is best effort
            pass
    b = run.bundle_for(node)
    info = item_record(node, res, check_id=rd.check_id, check_name=name,
                       title=rd.title + (f" ({dres.category}/{dres.test})" if dres is not None else ""),
                       severity=rd.severity, remediation=rd.remediation, ident=ident, driver_version="",
                       bundle_dir=str(b.path or ""))
    record_verdict(request, _INFO_KEY, info, ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial",
                                              "gpu_uuid", "expected", "observed", "remediation"), rd.check_id, res,
                   present=_PRESENT)
    return asserted(res, rd.remediation)


def pytest_collection_modifyitems(config, items):
    group_by_node(items, "burnin_verdict", _PLOT_KEY, lambda v: v[1])


def _plot(item, info) -> str | None:
    run = item.config.stash.get(RUN_KEY, None)
    b = run.bundle_for(info["node"]) if run is not None else None
    return svg_for_node(b) if b is not None else None


#: what a burn-in item's phase reports get (nodegate_plugin's one makereport wrapper calls it)
_PRESENT = presenter(_INFO_KEY, _PLOT_KEY, _plot)
