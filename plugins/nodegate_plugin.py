"""pytest plugin: options, one gather per node before the first test, per-node/per-GPU items.

Flow: pytest_configure validates the inventory and every node's spec (nothing contacted; a bad
spec exits 2 naming file, key and reason) -> pytest_sessionstart gathers all nodes in parallel
(or loads bundles with --replay; xdist workers load the controller's bundles) ->
pytest_generate_tests parametrizes each suite test by node (and GPU) -> the ``verdict`` fixture
evaluates the check (ERROR raises in setup, SKIP skips) and the test asserts PASS.
"""

from __future__ import annotations

import gc
import os
import re
import time
from pathlib import Path

import pytest

from nodegate import checks as ng_checks
from nodegate.bundle import Bundle, discover
from nodegate.collect import NodeFacts
from nodegate.errors import SpecError
from nodegate.inventory import Host, load_inventory, redact_url
from nodegate.outcomes import Outcome, Result
from nodegate.run import RUN_KEY, FleetRun, GatherOptions, NodeJob, gather_fleet
from nodegate.transport import HostKeyPolicy

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "suites"
_JOBS_KEY = pytest.StashKey[list]()
_ACTIVE_KEY = pytest.StashKey[bool]()
_RESULT_KEY = pytest.StashKey[dict]()

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
        tw = _tw(config)
        t0 = time.monotonic()

        def progress(done, total, errors):
            if tw is not None:
                tw.write(f"\rnodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, "
                         f"{time.monotonic() - t0:.1f}s ")
        prepared: dict[str, NodeFacts] = {}

        def prepare(b: Bundle) -> None:
            # parse the GPU facts (nvidia-smi XML, the largest parse; collection needs them for
            # the per-GPU items) in the gathering thread, while other nodes are still probed
            f = NodeFacts(b)
            prepared[b.node] = f
            if not b.gather_error:
                f.gpus  # noqa: B018 - cached_property: evaluated for its cache
        for b in gather_fleet(jobs, opts, run.bundles_dir, progress, prepare=prepare):
            run.add(b, prepared.get(b.node))
        run.gather_s = round(time.monotonic() - t0, 3)
        if tw is not None:
            tw.line("")
        for j in jobs:
            run.spec[j.name] = _load_spec(j.spec_raw, f"host {j.name}")
    config.stash[RUN_KEY] = run
    _freeze_long_lived(config)


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
        for node in run.bundles:
            if cdef.scope == "node":
                params.append((cdef.id, node, None))
                ids.append(node)
            else:
                for slot in _slots(run, node):
                    params.append((cdef.id, node, slot))
                    ids.append(f"{node}-{slot.label}")
    metafunc.parametrize("verdict", params, ids=ids, indirect=True)


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


def pytest_collection_finish(session):
    _freeze_long_lived(session.config)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _freeze_long_lived(config)   # the reports and records of every test: skip them at exit too


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook, which reads xdist_group (pytest < 9)
def pytest_collection_modifyitems(config, items):
    if not config.stash.get(_ACTIVE_KEY, False):
        return
    for item in items:
        cs = getattr(item, "callspec", None)
        if cs is not None and "verdict" in cs.params:
            # one xdist group per node: with --dist loadgroup a node's items stay on one worker
            item.add_marker(pytest.mark.xdist_group(cs.params["verdict"][1]))


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


@pytest.fixture
def verdict(request) -> Result:
    """The evaluated check for this item: ERROR raises in setup, SKIP skips, else returned."""
    check_id, node, slot = request.param
    run: FleetRun = request.config.stash[RUN_KEY]
    cdef = ng_checks.load_all()[check_id]
    b = run.bundles[node]
    if run.spec_errors.get(node):
        res = Result.errored(f"spec error: {run.spec_errors[node]}")
    elif b.gather_error:
        res = Result.errored(f"node not gathered: {b.gather_error}", evidence_keys=())
    else:
        res = ng_checks.evaluate(check_id, run.facts[node], run.spec[node], slot)
    cache = _node_cache(request.config)
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
    request.node.stash[_RESULT_KEY] = info
    # JUnit <properties>: remediation only where it applies (FAIL, ERROR); "" on PASS and SKIP
    # (docs/reports.md; it was 21 % of junit.xml's bytes, most of them on passed tests)
    props = [(k, info[k]) for k in _PROP_KEYS]
    if res.outcome in (Outcome.PASS, Outcome.SKIP):
        props[-1] = ("remediation", "")
    request.node.user_properties.extend(props)
    if res.outcome is Outcome.ERROR:
        pytest.fail(f"[{cdef.id}] could not evaluate: {res.message}", pytrace=False)
    if res.outcome is Outcome.SKIP:
        pytest.skip(f"[{cdef.id}] {res.message}")
    return res


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    info = item.stash.get(_RESULT_KEY, None)
    if info is not None:
        rep.nodegate = info
        if rep.when == "call" and rep.failed and info["outcome"] == "fail":
            # one readable line instead of the assertion rewrite dump
            rep.longrepr = f"[{info['check_id']}] {info['message']}"
