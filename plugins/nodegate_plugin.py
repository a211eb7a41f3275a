"""pytest plugin: options, one gather per node before the first test, per-node/per-GPU items.

Flow: pytest_configure validates the inventory and every node's spec (nothing contacted; a bad
spec exits 2 naming file, key and reason) -> pytest_sessionstart gathers all nodes in parallel
(or loads bundles with --replay; xdist workers load the controller's bundles) ->
pytest_generate_tests parametrizes each suite test by node (and GPU) -> the ``verdict`` fixture
evaluates the check (ERROR raises in setup, SKIP skips) and the test asserts PASS.
"""

from __future__ import annotations

import gc
from dataclasses import replace
import os
import re
import time
from pathlib import Path

import pytest

from nodegate import checks as ng_checks
from nodegate.bundle import Bundle, discover
from nodegate.errors import SpecError
from nodegate.inventory import Host, load_inventory, redact_url
from nodegate.outcomes import Outcome, Result
from nodegate.reports.records import attach_nodegate
from nodegate.run import RUN_KEY, FleetRun, GatherOptions, NodeJob
from nodegate.transport import HostKeyPolicy

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"
_JOBS_KEY = pytest.StashKey[list]()
_ACTIVE_KEY = pytest.StashKey[bool]()
_RESULT_KEY = pytest.StashKey[dict]()
_GATHER_FAILED_KEY = pytest.StashKey[str]()

#: Exit codes documented for CI (README "Exit codes").
EXIT_SPEC_ERROR = 2


def pytest_addoption(parser):
    g = parser.getgroup("nodegate", "nodegate GPU node acceptance")
    g.addoption("--inventory", help="Ansible YAML inventory (hosts, groups, group_vars/, host_vars/)")
    g.addoption("--limit", help="limit to hosts/groups (Ansible --limit pattern)")
    g.addoption("--target", help="single target URL when no inventory (default local://)")
    g.addoption("--replay", help="evaluate the bundles under DIR; no network")
    g.addoption("--bundles-dir", help="where raw evidence is written (default <reports-dir>/bundles)")
    g.addoption("--reports-dir", default="reports", help="output directory (default reports/)")
    g.addoption("--known-hosts", action="append", default=None,
                help="known_hosts file(s) for host-key verification (default ~/.ssh/known_hosts)")
    g.addoption("--accept-new-host-keys", action="store_true",
                help="accept unknown host keys and record them in the first --known-hosts file "
                     "(a CHANGED key is always refused)")
    g.addoption("--connect-timeout", type=float, default=10.0, help="SSH connect deadline, seconds")
    g.addoption("--command-timeout", type=float, default=30.0, help="per probe command deadline, seconds")
    g.addoption("--probe-timeout", type=float, default=180.0, help="whole-probe deadline per node, seconds")
    g.addoption("--forks", type=int, default=32, help="nodes gathered in parallel (default 32)")
    g.addoption("--gather-first", action="store_true",
                help="gather every node before collecting (per-GPU items from what each node reports) "
                     "instead of running the tests while the nodes are gathered (needs gpu.count)")
    g.addoption("--gpu-source", choices=("auto", "nvml", "smi"), default="auto",
                help="GPU facts from NVML (when python3+pynvml exist on the node) or nvidia-smi XML")


def _is_active(config) -> bool:
    o = config.option
    if getattr(o, "inventory", None) or getattr(o, "replay", None) or getattr(o, "target", None):
        return True
    args = [a.split("::")[0] for a in (config.args or [])]
    for a in args:
        p = Path(a)
        p = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        try:
            p.resolve().relative_to(SUITES)
            return True
        except ValueError:
            continue
    return False


def _load_spec(raw: dict, source: str):
    from nodegate.spec import load_spec
    return load_spec(raw, source)


def _spec_get(spec, dotted: str, default=None):
    cur = spec
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else getattr(cur, part, None)
        if cur is None:
            return default
    return cur


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line("markers", "nodegate: a nodegate suite test")
    # pytest-xdist registers it too; declared here so runs without xdist print no warning
    config.addinivalue_line("markers", "xdist_group(name): keep a node's items on one xdist worker")
    active = _is_active(config)
    config.stash[_ACTIVE_KEY] = active
    _CONFIG[0] = config if active else None
    if not active:
        return
    o = config.option
    reports = Path(o.reports_dir)
    if hasattr(o, "htmlpath") and not o.htmlpath:
        o.htmlpath = str(reports / "report.html")
        o.self_contained_html = True
    if not getattr(o, "xmlpath", None):
        o.xmlpath = str(reports / "junit.xml")
    if hasattr(config, "workerinput"):
        return
    try:
        config.stash[_JOBS_KEY] = _build_jobs(config)
    except SpecError as e:
        pytest.exit(f"nodegate: spec error: {e}", returncode=EXIT_SPEC_ERROR)


def _build_jobs(config) -> list[NodeJob]:
    o = config.option
    jobs: list[NodeJob] = []
    if o.inventory:
        inv = load_inventory(o.inventory)
        hosts = inv.select(o.limit)
    else:
        url = o.target or "local://"
        h = Host(name=_local_name(url), vars={})
        hosts = [h]
        h.url = lambda u=url: u  # type: ignore[method-assign]
        h.redacted_url = lambda u=url: redact_url(u)  # type: ignore[method-assign]
        h.sources = ["--target"]
    for h in hosts:
        raw = h.spec_raw
        spec = _load_spec(raw, f"host {h.name}'s nodegate variable, merged from " + ", ".join(h.sources))
        jobs.append(NodeJob(name=h.name, url=h.url(), shown_url=h.redacted_url(), spec_raw=raw,
                            persistence_user=str(_spec_get(spec, "persistence.user", "") or ""),
                            clocks_samples=int(_spec_get(spec, "clocks.samples", 3) or 3)))
    return jobs


def _local_name(url: str) -> str:
    if url.startswith("local"):
        return os.uname().nodename.split(".")[0] or "localhost"
    host = url.split("://", 1)[-1].split("@")[-1].split("?")[0]
    return host.split(":")[0].strip("[]") or "node"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist controller -> worker (hook exists only with pytest-xdist)
    run = node.config.stash.get(RUN_KEY, None)
    if run is not None and run.bundles_dir is not None:
        node.workerinput["nodegate_bundles"] = str(run.bundles_dir)
        node.workerinput["nodegate_nodes"] = list(run.bundles)


def _tw(config):
    tr = config.pluginmanager.get_plugin("terminalreporter")
    return tr._tw if tr is not None else None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    if not config.stash.get(_ACTIVE_KEY, False):
        return
    o = config.option
    reports = Path(o.reports_dir)
    run = FleetRun(reports_dir=reports, inventory_path=Path(o.inventory) if o.inventory else None)
    wi = getattr(config, "workerinput", None)
    if wi is not None:
        run.mode = "replay"
        run.bundles_dir = Path(wi["nodegate_bundles"]) if wi.get("nodegate_bundles") else Path(o.replay)
        _replay(run, run.bundles_dir, config, jobs=None, only=wi.get("nodegate_nodes"))
        config.stash[RUN_KEY] = run
        return
    jobs = config.stash.get(_JOBS_KEY, [])
    if o.replay:
        run.mode = "replay"
        run.bundles_dir = Path(o.replay)
        _replay(run, run.bundles_dir, config, jobs=jobs if o.inventory else None)
    else:
        run.mode = "local" if all(j.url.startswith("local") for j in jobs) else "ssh"
        run.bundles_dir = Path(o.bundles_dir) if o.bundles_dir else reports / "bundles"
        run.bundles_dir.mkdir(parents=True, exist_ok=True)
        files = [Path(f) for f in (o.known_hosts or [])] or [Path("~/.ssh/known_hosts").expanduser()]
        opts = GatherOptions(connect_timeout=o.connect_timeout, command_timeout=o.command_timeout,
                             probe_timeout=o.probe_timeout, forks=max(1, o.forks), sudo=bool(getattr(o, "sudo", False)),  # testinfra's --sudo
                             hostkeys=HostKeyPolicy(files=files, accept_new=o.accept_new_host_keys),
                             gpu_source=o.gpu_source)
        for j in jobs:
            run.spec[j.name] = _load_spec(j.spec_raw, f"host {j.name}")
        run.start_gather(jobs, opts)
        tw = _tw(config)
        why_not = _why_gather_first(config, run)
        if why_not is None:
            # tests run while the nodes are gathered: per-GPU items come from gpu.count, items are
            # ordered node by node, and each node's first item waits for that node only
            run.overlapped = True
            if tw is not None:
                tw.line(f"nodegate: gathering {len(jobs)} node(s), {opts.forks} at a time, while the tests run")
        else:
            def progress():
                if tw is not None:
                    done, total, errors, dt = run.progress()
                    tw.write(f"\rnodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, {dt:.1f}s ")
            try:
                run.wait_all(tick=progress)
            except Exception as e:  # noqa: BLE001 - its nodes are ERROR bundles; the run goes on to report
                config.stash[_GATHER_FAILED_KEY] = f"{type(e).__name__}: {e}"
            if tw is not None:
                progress()
                tw.line("")
    config.stash[RUN_KEY] = run
    _freeze_long_lived(config)


def _why_gather_first(config, run: FleetRun) -> str | None:
    """None when the tests may run while the nodes are gathered, else why every node is gathered
    before collection: the per-GPU items then follow what each node reports. (While overlapping,
    a node without gpu.count is waited for during collection: its GPU items follow what it
    reports, the other nodes' items need only their spec.)"""
    o = config.option
    if o.gather_first:
        return "--gather-first"
    if getattr(o, "numprocesses", None) or getattr(o, "dist", "no") not in ("no", None):
        return "pytest-xdist (workers load the gathered bundles)"
    if getattr(o, "baseline", None):
        return "--baseline (regression items follow the gathered GPUs)"
    if getattr(o, "burn_in", None):
        return "--burn-in (runs on the gathered nodes)"
    return None


def _replay(run: FleetRun, root: Path, config, jobs, only=None):
    if not root.is_dir():
        pytest.exit(f"nodegate: --replay {root}: not a directory", returncode=EXIT_SPEC_ERROR)
    dirs = discover(root)
    by_job = {j.name: j for j in jobs} if jobs else None
    limit = config.option.limit
    names = None
    if limit and by_job is None:
        from nodegate.inventory import select_names
        names = select_names(limit, {d.name: None for d in dirs}, {})
    for d in dirs:
        b = Bundle.load(d)
        if by_job is not None and b.node not in by_job:
            continue
        if names is not None and b.node not in names:
            continue
        if only is not None and b.node not in only:
            continue
        if b.node in run.bundles:
            pytest.exit(f"nodegate: --replay {root}: two bundles for node {b.node}: "
                        f"{run.bundles[b.node].path} and {d}", returncode=EXIT_SPEC_ERROR)
        run.add(b)
        raw = by_job[b.node].spec_raw if by_job else (b.meta.get("spec") or {})
        try:
            run.spec[b.node] = _load_spec(raw if isinstance(raw, dict) else {}, f"{d}/meta.json spec")
        except SpecError as e:
            run.spec_errors[b.node] = str(e)
            run.spec[b.node] = _load_spec({}, "defaults")
    if not run.bundles:
        pytest.exit(f"nodegate: --replay {root}: no bundles found", returncode=EXIT_SPEC_ERROR)


def _slots(run: FleetRun, node: str):
    """The node's GPU items. gpu_slots never raises for node problems (unreadable GPUs give the
    spec's count of slots); should it fail internally, one slot keeps the node's GPU checks in
    the report as ERROR instead of letting them vanish."""
    try:
        return ng_checks.gpu_slots(run.facts[node], run.spec[node])
    except Exception:  # noqa: BLE001
        return [ng_checks.GpuSlot(0, None)]


def pytest_generate_tests(metafunc):
    if "verdict" not in metafunc.fixturenames:
        return
    run = metafunc.config.stash.get(RUN_KEY, None)
    name = metafunc.function.__name__.removeprefix("test_")
    cdef = ng_checks.by_name(name)
    params, ids = [], []
    if run is not None:
        for node in run.nodes:
            if cdef.scope == "node":
                params.append(VerdictParam(cdef.id, node))
                ids.append(node)
            elif run.overlapped and _spec_get(run.spec[node], "gpu.count"):
                # not gathered yet: the spec's slots (gpu.count), resolved to the GPU the node
                # reports at that index when the item runs (_resolve_slot)
                for i in range(int(_spec_get(run.spec[node], "gpu.count"))):
                    params.append(VerdictParam(cdef.id, node, ng_checks.GpuSlot(i, None), True))
                    ids.append(f"{node}-gpu{i}")
            else:
                if run.overlapped:   # no gpu.count: its GPU items follow what it reports
                    run.wait(node)
                for slot in _slots(run, node):
                    params.append(VerdictParam(cdef.id, node, slot))
                    ids.append(f"{node}-{slot.label}")
    metafunc.parametrize("verdict", params, ids=ids)


_TEST_ID = re.compile(r"\[(?P<id>[^\[\]]*)\](?:@[^\[\]]*)?$")


def node_of_test_id(nodeid: str, nodes: list[str]) -> str | None:
    """The inventory node a test id belongs to (``...[<node>]`` or ``...[<node>-gpu<i>]``, possibly
    with xdist's ``@group`` suffix), or None. ``nodes`` longest first, so ``a-1`` wins over ``a``."""
    m = _TEST_ID.search(nodeid)
    if not m:
        return None
    pid = m.group("id")
    for n in nodes:
        if pid == n or (pid.startswith(n + "-gpu") and pid[len(n) + 4:].isdigit()):
            return n
    return None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: one work unit per inventory node, taken from the test id, so all of a
    node's items run on one worker. xdist's own loadgroup relies on an ``@group`` suffix its workers
    write into ``item._nodeid``; pytest 9 keeps node ids in ``Node._id``, the suffix never reaches the
    controller and loadgroup silently spreads every node over all workers (tests/bench)."""
    if config.getvalue("dist") != "loadgroup" or not config.stash.get(_ACTIVE_KEY, False):
        return None
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.bundles:
        return None
    from xdist.scheduler import LoadGroupScheduling

    nodes = sorted(run.bundles, key=len, reverse=True)

    class NodeGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            node = node_of_test_id(nodeid, nodes)
            return f"nodegate-node:{node}" if node is not None else super()._split_scope(nodeid)

    return NodeGroupScheduling(config, log)


def _freeze_long_lived(config) -> None:
    """``gc.freeze()``: what exists now (bundles, parsed facts, collected items) lives until the
    end of the run; frozen, every later cyclic-GC pass and the interpreter's final collection at
    exit skip it (at 64 nodes the GC traversed it for ~18 % of the run's CPU, 1.5 s of it after
    pytest_unconfigure; docs/performance.md). Reference counting still frees what is dropped."""
    if config.stash.get(_ACTIVE_KEY, False):
        gc.freeze()


#: tracked objects allocated (``gc.get_count()[0]``) between two young collections while the
#: items run; see ``_young_gc_only``
_GC_YOUNG_BUDGET = 200_000
_GC_PAUSED_KEY = pytest.StashKey[bool]()


def _young_gc_only(config) -> None:
    """From collection to the end of the run the automatic cyclic GC is off; every
    ``_GC_YOUNG_BUDGET`` new tracked objects the items' hooks collect the young generations
    (``gc.collect(1)``: what this run's items made since) and freeze the survivors.

    Each automatic full collection traverses every report, HTML row and JUnit node kept so far,
    and there are more of them after each: at 64 nodes (7 680 items) 16 full collections cost
    0.7-0.9 s, ~10 % of the pytest process's CPU, against ~0.2 s in the pytest floor (bare items
    keep less). Young collections still free the items' reference cycles, so memory stays what
    it was (docs/performance.md); automatic collection is back on at pytest_unconfigure."""
    if config.stash.get(_ACTIVE_KEY, False) and gc.isenabled() and not config.stash.get(_GC_PAUSED_KEY, False):
        gc.disable()
        config.stash[_GC_PAUSED_KEY] = True
        # pytest runs cleanups even when an unconfigure hook raises (pytest.main() callers keep GC)
        config.add_cleanup(lambda: _resume_gc(config))


def _resume_gc(config) -> None:
    if config.stash.get(_GC_PAUSED_KEY, False):
        config.stash[_GC_PAUSED_KEY] = False
        gc.enable()


@pytest.hookimpl(trylast=True)
def pytest_runtest_logfinish(nodeid, location):  # noqa: ARG001
    config = _CONFIG[0]
    if config is not None and gc.get_count()[0] > _GC_YOUNG_BUDGET and config.stash.get(_GC_PAUSED_KEY, False):
        gc.collect(1)
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if _CONFIG[0] is config:
        _CONFIG[0] = None
    _freeze_long_lived(config)   # the reports and records of every test: skip them at exit too
    _resume_gc(config)


#: fixtures whose parameter is ``(kind, node, ...)``: nodegate's items, one per node (and GPU)
_NODE_FIXTURES = ("verdict", "regression", "burnin_verdict")
_ITEM_NODE_KEY = pytest.StashKey[dict]()


def _item_node(item) -> str | None:
    cs = getattr(item, "callspec", None)
    if cs is None:
        return None
    for fx in _NODE_FIXTURES:
        p = cs.params.get(fx)
        if isinstance(p, VerdictParam):
            return p.node
        if isinstance(p, tuple) and len(p) > 1 and isinstance(p[1], str):
            return p[1]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook, which reads xdist_group (pytest < 9)
def pytest_collection_modifyitems(config, items):
    if not config.stash.get(_ACTIVE_KEY, False):
        return
    run = config.stash.get(RUN_KEY, None)
    rank = {n: i for i, n in enumerate(run.nodes)} if run is not None else {}
    node_of: dict[str, str] = {}
    keyed = []
    where: dict[object, tuple] = {}
    for pos, item in enumerate(items):
        node = _item_node(item)
        if node is not None:
            # one xdist group per node: with --dist loadgroup a node's items stay on one worker
            item.add_marker(pytest.mark.xdist_group(node))
            node_of[item.nodeid] = node
            _prefill_verdict_item(item, where)
        keyed.append((rank.get(node, -1), pos, item))
    # node by node (inventory order), each node's items in suite order: a node's items can run as
    # soon as that node is gathered, and the report lists each node's results together
    keyed.sort(key=lambda k: (k[0], k[1]))
    items[:] = [k[2] for k in keyed]
    config.stash[_ITEM_NODE_KEY] = node_of


def _prefill_verdict_item(item, where: dict[object, tuple]) -> None:
    """Give a suite test's item (``verdict`` parameter) what pytest would otherwise recompute for
    each of the fleet's items, once per test function instead (docs/performance.md):

    - ``item.funcargs["verdict"]``: the VerdictParam itself. pytest fills only the arguments not
      already in ``funcargs`` (``TopRequest._fillfixtures``, pytest 8 and 9), so the item runs
      without the direct parameter's pseudo-fixture: its FixtureDef, SubRequest, the ``request``
      fixture it asks for (a FixtureDef built, with an ``inspect.signature``, per item), the
      ``pytest_fixture_setup`` hook and the finalizer at teardown. 7 680 items at 64 nodes: 0.67
      CPU-s of the pytest process's ~7.3.
    - ``item.location``: ``(relative path, line, test name)``. pytest computes the file and line
      from the function's code object for every item (``getfslineno``: a ``Path`` built, made
      absolute and stat'ed); items of one test function share them. 0.38 CPU-s at 64 nodes.
      Written where ``functools.cached_property`` keeps it (the instance's ``__dict__``).

    tests/core/test_item_setup.py checks that no ``verdict`` fixture is set up and that every
    location equals pytest's own. Visible difference: ``--setup-show``/``--setup-plan`` list no
    ``SETUP F verdict[...]`` line for these items (nothing is set up). A re-run of an item
    (``_initrequest``) gets an empty ``funcargs`` and the ordinary pseudo-fixture."""
    p = _verdict_param(item)
    if p is None:
        return
    funcargs = getattr(item, "funcargs", None)
    if isinstance(funcargs, dict):
        funcargs["verdict"] = p
    fn = getattr(item, "obj", None)
    if fn is None or "location" in item.__dict__ or type(item).reportinfo is not pytest.Function.reportinfo:
        return   # an item class with its own reportinfo() keeps pytest's computation
    w = where.get(fn)
    if w is None:
        where[fn] = item.location[:2]   # pytest's own computation, once per test function
    else:
        item.__dict__["location"] = (*w, item.getmodpath())


def _terminal(config):
    return config.pluginmanager.get_plugin("terminalreporter")


def _group_terminal_by_node(config) -> None:
    """In pytest's default and -q output, one progress line per node (``node07 ....F... [ 12%]``)
    instead of a new line whenever the test file changes (items run node by node, so the file
    changes with nearly every item). Falls back to pytest's own output if its reporter differs."""
    tr = _terminal(config)
    orig = getattr(tr, "write_fspath_result", None)
    if tr is None or orig is None or tr.verbosity > 0 or not hasattr(tr, "currentfspath"):
        return

    def write_fspath_result(nodeid: str, res: str, **markup: bool) -> None:
        node = config.stash.get(_ITEM_NODE_KEY, {}).get(nodeid)
        if node is None:
            return orig(nodeid, res, **markup)
        try:
            key = ("nodegate-node", node)
            if tr.currentfspath != key:
                if tr.currentfspath is not None and tr._show_progress_info:
                    tr._write_progress_information_filling_space()
                tr.currentfspath = key
                tr._tw.line()
                tr._tw.write(node + " ")
            tr._tw.write(res, flush=True, **markup)
        except AttributeError:
            return orig(nodeid, res, **markup)
        return None

    tr.write_fspath_result = write_fspath_result


def pytest_collection_finish(session):
    _freeze_long_lived(session.config)
    _young_gc_only(session.config)
    if session.config.stash.get(_ACTIVE_KEY, False) and not hasattr(session.config, "workerinput"):
        _group_terminal_by_node(session.config)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid, location):  # noqa: ARG001
    """An item whose node is still being gathered waits here, before pytest writes anything for
    it (its line prefix included), so the progress line stands on a line of its own."""
    config = _CONFIG[0]
    if config is None:
        return
    run = config.stash.get(RUN_KEY, None)
    node = config.stash.get(_ITEM_NODE_KEY, {}).get(nodeid) if run is not None else None
    if node is not None and node not in run.bundles:
        run.wait(node, _wait_ticker(config, run))


#: the session's config for hooks that are not given one (pytest_runtest_logstart)
_CONFIG: list = [None]


def _wait_ticker(config, run: FleetRun):
    """While an item waits for its node to be gathered: a progress line of its own (default and
    -q output; -v lines already name each test)."""
    tr = _terminal(config)
    if tr is None or tr.verbosity > 0 or not hasattr(tr, "currentfspath"):
        return None
    state = {"started": False}
    tty = bool(getattr(tr._tw, "hasmarkup", False)) or getattr(getattr(tr._tw, "_file", None), "isatty", lambda: False)()

    def tick() -> None:
        try:
            done, total, errors, dt = run.progress()
            line = f"nodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, {dt:.1f}s "
            if not state["started"]:
                state["started"] = True
                if tr.currentfspath is not None and tr._show_progress_info:
                    tr._write_progress_information_filling_space()
                tr.currentfspath = None   # the next result starts a new line
                tr._tw.line()
                if not tty:   # a log file: one line per wait, not a line rewritten 4 times a second
                    tr._tw.write(line, flush=True)
            if tty:
                tr._tw.write("\r" + line, flush=True)
        except AttributeError:
            pass
    return tick


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Every node gathered and merged (inventory order) before any report is written, even when
    no item needed some node (deselected with -k) or the run was interrupted."""
    run = session.config.stash.get(RUN_KEY, None)
    if run is not None and session.config.stash.get(_ACTIVE_KEY, False):
        interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        if interrupted:
            run.abort()
        why = session.config.stash.get(_GATHER_FAILED_KEY, None)
        try:
            run.wait_all()
        except Exception as e:  # noqa: BLE001 - the affected nodes' items already ERRORed
            why = why or f"{type(e).__name__}: {e}"
        if why and not interrupted:   # Ctrl-C stopped it: the exit status stays INTERRUPTED
            tw = _tw(session.config)
            if tw is not None:
                tw.line(f"nodegate: gathering stopped: {why}", red=True)
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001
    run = config.stash.get(RUN_KEY, None)
    if run is None or not run.overlapped or hasattr(config, "workerinput"):
        return
    done, total, errors, dt = run.progress()
    terminalreporter.write_line(f"nodegate: gathered {done}/{total} nodes, {errors} unreachable/errors in "
                                f"{dt:.1f}s, while the tests ran")
    extra = []
    for node in run.nodes:
        want = _spec_get(run.spec.get(node), "gpu.count")
        try:
            n = len(run.facts[node].gpus)
        except Exception:  # noqa: BLE001 - unreadable GPUs are the checks' to report
            continue
        if want and n > int(want):
            extra.append(f"{node} ({n} GPUs)")
    if extra:
        terminalreporter.write_line(
            "nodegate: GPUs beyond gpu.count have no per-GPU items (gpu_count FAILs for them; --gather-first "
            "collects from what the nodes report): " + ", ".join(extra[:20]) + (" ..." if len(extra) > 20 else ""),
            yellow=True)


_IDENT_KEY = pytest.StashKey[dict]()
_PROP_KEYS = ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid",
              "expected", "observed", "remediation")


def _node_cache(config) -> dict:
    """Per-run cache of what every item of a node (or GPU) shares: GPU identity per (node,
    slot), driver version per node. Facts are immutable once parsed, so one lookup serves the
    ~30 items of a node instead of one per item."""
    c = config.stash.get(_IDENT_KEY, None)
    if c is None:
        c = config.stash[_IDENT_KEY] = {}
    return c


def _surplus_gpus(run: FleetRun, node: str, res: Result) -> Result:
    """gpu_count while the tests ran alongside gathering: per-GPU items were collected from
    gpu.count, so a GPU beyond it has none. Never silent: a FAIL says so, and a SKIP (gpu_count
    turned off in checks.skip) becomes ERROR naming the GPUs whose checks did not run."""
    want = _spec_get(run.spec.get(node), "gpu.count")
    try:
        extra = [g for g in run.facts[node].gpus if g.index is not None and want and g.index >= int(want)]
    except Exception:  # noqa: BLE001 - unreadable GPUs: gpu_count's own result says so
        return res
    if not extra:
        return res
    names = ", ".join(f"gpu{g.index} ({g.pci_bus_id or 'bus id unknown'})" for g in extra)
    why = (f"the node reports {len(extra)} GPU(s) beyond gpu.count {want}: {names}; their per-GPU "
           "checks were not collected (run with --gather-first, or correct gpu.count)")
    if res.outcome is Outcome.FAIL:
        return replace(res, message=f"{res.message}; {why}")
    return Result.errored(why, expected=res.expected or f"{want} GPU(s)", evidence_keys=("smi.qx",))


def _resolve_slot(run: FleetRun, node: str, slot, cache: dict):
    """A per-GPU item collected from gpu.count before its node was gathered -> (the slot
    ``gpu_slots`` gives for that index now that the node is in, None), or (slot, why) when the
    node reports no GPU at that index (indices that skip one: the item ERRORs, naming them)."""
    key = ("slots", node)
    by_index = cache.get(key)
    if by_index is None:
        by_index = cache[key] = {s.index: s for s in _slots(run, node)}
    got = by_index.get(slot.index)
    if got is not None:
        return got, None
    return slot, (f"gpu{slot.index}: the node reports no GPU at index {slot.index} "
                  f"(indices {sorted(by_index)}; gpu.count {_spec_get(run.spec.get(node), 'gpu.count')})")


def _gpu_identity(run: FleetRun, node: str, slot) -> dict:
    ident = {"gpu_index": "", "pci_bus_id": "", "gpu_serial": "", "gpu_uuid": "",
             "board_part_number": "", "vbios_version": ""}
    if slot is None:
        return ident
    ident["gpu_index"] = str(slot.index)
    ident["pci_bus_id"] = slot.pci_bus_id or ""
    try:
        for g in run.facts[node].gpus:
            if (slot.pci_bus_id and g.pci_bus_id == slot.pci_bus_id) or (not slot.pci_bus_id and g.index == slot.index):
                ident.update(pci_bus_id=g.pci_bus_id or "", gpu_serial=_s(g.serial), gpu_uuid=_s(g.uuid),
                             board_part_number=_s(g.board_part_number), vbios_version=_s(g.vbios_version))
                break
    except Exception:  # noqa: BLE001 - identity is best effort; the check reports the error
        pass
    return ident


def _s(v) -> str:
    return "" if v is None else str(v)


def _driver_version(run: FleetRun, node: str) -> str:
    f = run.facts[node]
    for attr in ("nvidia_module_version",):
        try:
            v = getattr(f, attr)
            if v:
                return str(v)
        except Exception:  # noqa: BLE001
            continue
    return ""


class VerdictParam:
    """The ``verdict`` argument of a suite test: one check on one node (and GPU slot).

    Collected as a direct parameter (``check_id``, ``node``, ``slot``, ``provisional``: the slot
    came from gpu.count before the node was gathered). The check is evaluated in setup
    (``pytest_runtest_setup`` below: ERROR fails the setup, SKIP skips); the test then reads the
    Result through this object (``verdict.ok``, ``verdict.message``, any Result attribute). A
    direct parameter instead of an indirect fixture: pytest's fixture machinery was ~14 % of the
    controller's CPU per item; and the item gets it in ``funcargs`` at collection, so pytest sets
    up no fixture for it at all (``_prefill_verdict_item``; docs/performance.md)."""

    __slots__ = ("check_id", "node", "slot", "provisional", "result")

    def __init__(self, check_id: str, node: str, slot=None, provisional: bool = False):
        self.check_id, self.node, self.slot, self.provisional = check_id, node, slot, provisional
        self.result: Result | None = None

    def __getattr__(self, name):   # only for names that are not slots: the Result's
        r = self.result
        if r is None:
            raise AttributeError(f"{name}: the check {self.check_id} on {self.node} was not evaluated (setup)")
        return getattr(r, name)

    def __repr__(self) -> str:
        where = self.node if self.slot is None else f"{self.node}-gpu{self.slot.index}"
        return f"VerdictParam({self.check_id} on {where})"


def _verdict_param(item) -> VerdictParam | None:
    cs = getattr(item, "callspec", None)
    p = cs.params.get("verdict") if cs is not None else None
    return p if isinstance(p, VerdictParam) else None


@pytest.hookimpl(trylast=True)
def pytest_runtest_setup(item):
    p = _verdict_param(item)
    if p is not None:
        _evaluate(item, p)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    p = _verdict_param(item)
    if p is not None:
        p.result = None   # the report keeps what it needs (item stash, user_properties)


def _evaluate(item, p: VerdictParam) -> None:
    """Evaluate the item's check (waiting for its node when it is still being gathered), record
    what the reports need, and fail (ERROR) or skip (SKIP) the setup; PASS/FAIL go to the test."""
    check_id, node, slot, provisional = p.check_id, p.node, p.slot, p.provisional
    run: FleetRun = item.config.stash[RUN_KEY]
    cdef = ng_checks.load_all()[check_id]
    b = run.bundles.get(node)
    if b is None:   # tests run while gathering: this node's first item waits for it
        b = run.wait(node, _wait_ticker(item.config, run))
    cache = _node_cache(item.config)
    unresolved = None
    if provisional:
        slot, unresolved = _resolve_slot(run, node, slot, cache)
    if run.spec_errors.get(node):
        res = Result.errored(f"spec error: {run.spec_errors[node]}")
    elif b.gather_error:
        res = Result.errored(f"node not gathered: {b.gather_error}", evidence_keys=())
    elif unresolved:
        res = Result.errored(unresolved, evidence_keys=("smi.qx",))
    else:
        res = ng_checks.evaluate(check_id, run.facts[node], run.spec[node], slot)
        if run.overlapped and cdef.name == "gpu_count":
            res = _surplus_gpus(run, node, res)
    key = (node, None if slot is None else (slot.index, slot.pci_bus_id))
    ident = cache.get(key)
    if ident is None:
        ident = cache[key] = _gpu_identity(run, node, slot)
        ident["driver_version"] = cache.setdefault(("driver", node), _driver_version(run, node))
    info = {"node": node, **ident, "check_id": cdef.id,
            "check_name": cdef.name, "title": cdef.title, "severity": cdef.severity,
            "expected": res.expected, "observed": res.observed, "message": res.message,
            "evidence": res.evidence, "remediation": cdef.remediation, "outcome": res.outcome.value,
            "action": (res.details.get("action") or cdef.action) if res.outcome is Outcome.FAIL else "",
            "bundle_dir": str(b.path or "")}
    item.stash[_RESULT_KEY] = info
    # JUnit <properties>: remediation only where it applies (FAIL, ERROR); "" on PASS and SKIP
    # (docs/reports.md; it was 21 % of junit.xml's bytes, most of them on passed tests)
    props = [(k, info[k]) for k in _PROP_KEYS]
    if res.outcome in (Outcome.PASS, Outcome.SKIP):
        props[-1] = ("remediation", "")
    item.user_properties.extend(props)
    p.result = res
    if res.outcome is Outcome.ERROR:
        pytest.fail(f"[{cdef.id}] could not evaluate: {res.message}", pytrace=False)
    if res.outcome is Outcome.SKIP:
        pytest.skip(f"[{cdef.id}] {res.message}")


@pytest.hookimpl(wrapper=True)   # pluggy's current wrapper form (no difference measured: docs/performance.md)
def pytest_runtest_makereport(item, call):  # noqa: ARG001
    rep = yield
    info = item.stash.get(_RESULT_KEY, None)
    if info is not None:
        attach_nodegate(rep, info)
    return rep
