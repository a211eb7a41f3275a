"""pytest plugin: ``--crossnode FILE``: the cross-node phase (issue 38) in the nodegate run.

Passive unless the nodegate session is active and ``--crossnode`` is given (installing nodegate
changes no other pytest run). Flow: the lead's plugin gathers every node first (or loads the
``--replay`` bundles); this plugin's sessionstart then runs the phase once over the run's nodes
(``--inventory``/``--limit``: their names, addresses, users, keys; a node whose per-node
prerequisites failed, NG-DRV-001, NG-MOD-001, NG-IB-001, or that was not gathered, is not used as
a partner and its item says why), records every launch under ``<bundles>/crossnode/<run id>/``
and keeps the PhaseResult. ``--replay DIR --crossnode FILE`` re-judges the run recorded under
``DIR/crossnode/`` (the newest, or ``--crossnode-run-id``) and launches nothing; with
``--crossnode-live`` it launches the phase over the replayed nodes (the Slurm fan-out:
nodegate-collect's bundles, srun inside the allocation) and records it under ``DIR/crossnode/``.
``--crossnode-plan`` prints the jobs and rounds after the gather and exits 0, launching nothing.

Items (suites/test_crossnode.py, records through ``nodegate.engine.item_record``; the rows as
items: nodegate.crossnode.present): ``test_crossnode_node[<node>]`` per node (joins its verdict),
``test_crossnode_fault[<node>-F001]`` and ``test_crossnode_cable[<node:hca/port>]`` of a node,
``test_crossnode_job[<job id>]``, ``test_crossnode_link[...]`` (faults and cables of no node),
``test_crossnode_phase[<run id>]``. HTML: the cable table and the localisation tree (SVG).
Ctrl-C: the phase runs in a thread; the interrupt sets its stop event, which ends every launched
process, and the session judges what was measured (nodegate.session.phase.run_interruptibly).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from nodegate.engine import item_record
from nodegate.outcomes import Outcome
from nodegate.run import RUN_KEY
from nodegate.cmdline import gather_options
from nodegate.session.phase import identity_clash, presenter, record_verdict, run_interruptibly
from nodegate.session.exitcodes import usage_error
from nodegate.session.state import ACTIVE_KEY, JOBS_KEY, NO_RUN_KEY

SUITE = Path(__file__).resolve().parent.parent / "suites" / "test_crossnode.py"
#: {"config": PhaseConfig, "result": PhaseResult | None, "why_not": str, "items": {(scope, key): XnItem}}
XN_KEY = pytest.StashKey[dict]()
_INFO_KEY = pytest.StashKey[dict]()
_FIRST_KEY = pytest.StashKey[bool]()
#: per-node prerequisites of the phase: a node failing one is not used as a partner
PREREQUISITES = ("NG-DRV-001", "NG-MOD-001", "NG-IB-001")
PROPS = ("node", "check_id", "severity", "expected", "observed", "value", "unit", "threshold", "rule")


def pytest_addoption(parser):
    g = parser.getgroup("nodegate-crossnode", "nodegate cross-node acceptance (issue 38)")
    g.addoption("--crossnode", metavar="FILE", default=None,
                help="run the cross-node phase over the run's nodes: FILE holds the crossnode: section (launcher, "
                     "fabric, floors, cable plan ...; docs/crossnode.md); each node's own spec adds its domain and "
                     "cables. With --replay: re-judge the recorded phase, launching nothing")
    g.addoption("--crossnode-plan", action="store_true", default=False,
                help="with --crossnode: print the cross-node jobs and rounds (after the per-node gather) and exit; "
                     "nothing is launched")
    g.addoption("--crossnode-live", action="store_true", default=False,
                help="with --replay: launch the phase now over the replayed nodes instead of re-judging a recorded "
                     "one (the Slurm fan-out: per-node bundles from nodegate-collect, srun inside the allocation); "
                     "its evidence goes under the replay directory's crossnode/")
    g.addoption("--crossnode-run-id", metavar="ID", default=None,
                help="the cross-node run's id (live: name it; --replay: which recorded run, default the newest)")
    g.addoption("--crossnode-ibnetdiscover", metavar="FILE", default=None,
                help="the fabric as discovered (ibnetdiscover output), compared with the spec's topology_file")
    g.addoption("--crossnode-ibdiagnet", metavar="FILE", default=None,
                help="an ibdiagnet log: its link errors become cable rows")


def _on(config) -> bool:
    return bool(config.getoption("crossnode", None)) and bool(config.stash.get(ACTIVE_KEY, False))


def _usage(config, msg: str):
    usage_error(config, f"nodegate: {msg}")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    o = config.option
    if getattr(o, "crossnode", None) is not None and not str(o.crossnode).strip() \
            and config.stash.get(ACTIVE_KEY, False):
        # `--crossnode "$XN_SPEC"` with the variable unset: the run went on without the phase
        _usage(config, "--crossnode: an empty file name (give the file holding the crossnode: section)")
    if not getattr(o, "crossnode", None):
        # an option of the phase without the phase: silently ignored, a --replay --crossnode-run-id ID would
        # judge the nodes on their per-node checks alone (a node the recorded phase confirmed faulty accepted)
        given = [f"--crossnode-{k}" for k in ("plan", "live", "run-id", "ibnetdiscover", "ibdiagnet")
                 if getattr(o, f"crossnode_{k.replace('-', '_')}", None) not in (None, False)]
        if given and config.stash.get(ACTIVE_KEY, False):
            _usage(config, f"{', '.join(given)} needs --crossnode FILE")
        return
    if not _on(config) or hasattr(config, "workerinput"):
        return
    if getattr(o, "numprocesses", None) or getattr(o, "dist", "no") not in ("no", None):
        # the phase runs once, over every node, in the controller: its items cannot be split
        _usage(config, "--crossnode does not run under pytest-xdist (-n/--dist): run it without -n")
    rid = getattr(o, "crossnode_run_id", None)
    if rid is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", rid):
        # the evidence directory's name under <bundles>/crossnode/: '../x' failed only after the gather,
        # as an internal error of the phase
        _usage(config, f"--crossnode-run-id {rid[:200]!r}: not a run id (letters, digits, '.', '_', "
               f"'-'; at most 128, not starting with '.' or '-')")
    from nodegate.crossnode.inputs import load_spec, phase_config
    from nodegate.crossnode.phase import PhaseError
    try:
        spec = load_spec(o.crossnode)
        cfg = phase_config(spec, o.crossnode_run_id or "", ibnetdiscover=o.crossnode_ibnetdiscover,
                           ibdiagnet=o.crossnode_ibdiagnet)
    except PhaseError as e:
        _usage(config, f"--crossnode: {e}")
    if getattr(o, "crossnode_live", False) and not o.replay:
        _usage(config, "--crossnode-live is for --replay (a live run launches anyway)")
    if spec.launcher == "mpijob" and (not o.replay or o.crossnode_live) and not o.crossnode_plan:
        _usage(config, "--crossnode: launcher mpijob: nodegate writes the MPIJob manifests (nodegate.crossnode.k8s) and "
               "never applies them; use mpirun or srun")
    config.stash[XN_KEY] = {"config": cfg, "result": None, "why_not": "the cross-node phase did not run",
                            "items": None}


def pytest_ignore_collect(collection_path, config):
    if Path(collection_path).resolve() == SUITE and not _on(config):
        return True
    return None


# ---------------------------------------------------------------------------- the run's nodes
def _address(url: str) -> tuple[str, str | None, int | None, str | None]:
    """(host, user, port, identity file) of a target URL (testinfra's grammar)."""
    from testinfra.backend import parse_hostspec
    from testinfra.backend.base import BaseBackend
    if not url or url.startswith(("local", "chroot")):
        return "", None, None, None
    host, kw = parse_hostspec(url)
    hs = BaseBackend.parse_hostspec(host)
    return hs.name, hs.user, (int(hs.port) if hs.port else None), kw.get("ssh_identity_file")


def _prerequisite(run, node: str) -> str:
    """Why ``node`` cannot take part, '' when it can (nodegate.engine on its per-node facts)."""
    from nodegate.engine.evaluate import NodeContext, evaluate_item
    b = run.bundles.get(node)
    if b is None:
        return "no per-node evidence (not gathered)"
    if b.gather_error:
        return f"not gathered: {b.gather_error}"
    if run.spec_errors.get(node):
        return f"spec error: {run.spec_errors[node]}"
    clash = identity_clash(run, node)
    if clash:
        return clash
    for cid in PREREQUISITES:
        try:
            it = evaluate_item(NodeContext(node), run.facts.get(node), run.spec.get(node), cid)
        except Exception as e:  # noqa: BLE001 - a node's evidence never stops the phase
            return f"per-node prerequisite {cid} could not be evaluated: {type(e).__name__}: {str(e)[:200]}"
        if it.result.outcome in (Outcome.FAIL, Outcome.ERROR):
            return (f"per-node prerequisite {cid} ({it.check.title}) is {it.result.outcome.value.upper()}: "
                    f"{it.result.message[:300]}")
    return ""


def phase_nodes(config, run, spec) -> list:
    """PhaseNodes of the run's nodes (inventory order): address and target from the inventory,
    GPU model and count from the facts (spec gpu.count first), domain and cables from the node's
    own ``crossnode:`` spec, ``excluded`` from the prerequisites."""
    from nodegate.crossnode.phase import PhaseNode
    from nodegate.dotted import spec_get
    jobs = {j.name: j for j in config.stash.get(JOBS_KEY, []) or []}
    out = []
    for name in run.all_nodes:
        j = jobs.get(name)
        url = j.url if j is not None else ""
        host = _address(url)[0] or name
        facts, nspec = run.facts.get(name), run.spec.get(name)
        try:
            gpus = facts.gpus if facts is not None else []
        except Exception:  # noqa: BLE001 - unreadable GPUs: the per-node items say so
            gpus = []
        model = next((g.name for g in gpus if getattr(g, "name", None)), "") or ""
        count = spec_get(nspec, "gpu.count")
        ncs = spec_get(nspec, "crossnode")
        out.append(PhaseNode(name, host if spec.launcher != "srun" else name, url, str(model),
                             int(count) if count is not None else len(gpus),
                             getattr(ncs, "domain", None) or None, _prerequisite(run, name),
                             run.bundles.get(name), list(getattr(ncs, "cables", None) or [])))
    return out


def _launchers(config, spec, nodes):
    from nodegate.crossnode.launchers import MpirunLauncher, SrunLauncher, SshPairLauncher
    opts = gather_options(config.option)
    if spec.launcher == "srun":
        return SrunLauncher(srun="srun", mpi=spec.mpi, partition=spec.partition), None
    usable = [n for n in nodes if n.target and not n.excluded] or [n for n in nodes if n.target]
    _, user, port, key = _address(usable[0].target) if usable else ("", None, None, None)
    kh = (getattr(config.option, "known_hosts", None) or [str(Path("~/.ssh/known_hosts").expanduser())])[0]
    m = MpirunLauncher(mpirun=spec.mpirun or "mpirun", ssh_user=user, identity_file=key, known_hosts=kh,
                       ssh_port=port if port and port != 22 else None, connect_timeout=opts.connect_timeout,
                       extra_args=spec.mpirun_args)
    targets = {n.name: n.target for n in nodes if n.target}
    # no target URL (a replay without --inventory): no perftest pairs, the per-HCA stage does not run
    pair = SshPairLauncher(targets, opts.hostkeys, connect_timeout=opts.connect_timeout,
                           ready_wait_s=max(10.0, opts.connect_timeout)) if targets else None
    return m, pair


# ---------------------------------------------------------------------------- the phase (once)
def _tw(config):
    tr = config.pluginmanager.get_plugin("terminalreporter")
    return tr._tw if tr is not None else None


def _run_phase(config) -> None:
    st = config.stash.get(XN_KEY, None)
    run = config.stash.get(RUN_KEY, None)
    if st is None or run is None or hasattr(config, "workerinput") or config.option.collectonly:
        return
    from nodegate.crossnode.phase import PhaseError, plan_text, replay_phase, run_phase
    cfg = st["config"]
    nodes = phase_nodes(config, run, cfg.spec)
    tw = _tw(config)
    if config.option.crossnode_plan:
        sys.stdout.write(plan_text(nodes, cfg))
        config.stash[NO_RUN_KEY] = "--crossnode-plan"
        pytest.exit("nodegate: --crossnode-plan: nothing launched", returncode=0)
    if run.mode == "replay" and not config.option.crossnode_live:
        from nodegate.crossnode.inputs import recorded_runs
        ids = recorded_runs(run.bundles_dir)
        cfg.run_id = config.option.crossnode_run_id or (ids[-1] if ids else "")
        if not cfg.run_id:
            st["why_not"] = f"no recorded cross-node run under {run.bundles_dir}/crossnode/ (nothing to re-judge)"
            return
        try:
            st["result"] = replay_phase(nodes, cfg, run.bundles_dir)
        except PhaseError as e:
            st["why_not"] = f"replay of {cfg.run_id}: {e}"
        except Exception as e:  # noqa: BLE001 - recorded evidence reaching a bug: every node ERROR naming it
            st["why_not"] = f"replay of {cfg.run_id}: internal error in the cross-node phase: {type(e).__name__}: {str(e)[:300]}"
        return
    if cfg.run_id and run.bundles_dir is not None and os.path.lexists(Path(run.bundles_dir) / "crossnode" / cfg.run_id):
        # a second launch into one run's evidence would mix its jobs with the first's, and a replay
        # could judge jobs this run never measured: refused, nothing launched
        st["why_not"] = (f"--crossnode-run-id {cfg.run_id}: {run.bundles_dir}/crossnode/{cfg.run_id} already holds "
                         "a recorded run (nothing launched; give a new run id, or none)")
        return
    launcher, pair = _launchers(config, cfg.spec, nodes)
    stop = threading.Event()
    box: dict = {}
    done = threading.Event()

    def work():
        try:
            box["result"] = run_phase(nodes, cfg, launcher=launcher, pair_launcher=pair,
                                      evidence_dir=run.bundles_dir, stop=stop)
        except PhaseError as e:
            box["why_not"] = str(e)
        except Exception as e:  # noqa: BLE001 - a bug in the phase: every node ERROR naming it
            box["why_not"] = f"internal error in the cross-node phase: {type(e).__name__}: {str(e)[:300]}"
        finally:
            done.set()

    def phase():
        # waited on through an Event, not Thread.join: a join that Ctrl-C interrupted can mark the
        # thread stopped while it runs (CPython's _wait_for_tstate_lock), and the result was lost
        threading.Thread(target=work, name="nodegate-crossnode", daemon=True).start()
        try:
            while not done.wait(0.2):
                pass
        except KeyboardInterrupt:
            stop.set()   # the library ends every launched process (process groups, scancel, pid files)
            while not done.wait(0.5):   # later signals are deferred (nodegate.interrupt.RunSignals)
                pass
            raise

    if tw is not None:
        tw.line(f"nodegate: cross-node phase over {len(nodes)} node(s) with {cfg.spec.launcher} "
                "(Ctrl-C stops every launched process)")
    run_interruptibly(config, "crossnode", phase)
    st["result"] = box.get("result")
    st["why_not"] = box.get("why_not") or st["why_not"]
    if tw is not None and st["result"] is not None:
        r = st["result"]
        tw.line(f"nodegate: cross-node {r.outcome.value.upper()}: {len(r.jobs)} jobs in {len(r.rounds)} rounds, "
                f"{len(r.faults)} faults; evidence {r.evidence}")


@pytest.hookimpl(wrapper=True)
def pytest_sessionstart(session):
    res = yield
    # after the lead's gather, the burn-in and the perf rounds
    _run_phase(session.config)
    return res


# ---------------------------------------------------------------------------- items
def _items(config) -> dict:
    st = config.stash.get(XN_KEY, None)
    if st is None:
        return {}
    # made again once the phase has run (a collection before it, e.g. learning the selection
    # without a fork, saw no result: its items must not stand for the phase's)
    if st["items"] is None or st.get("items_of") is not st["result"]:
        from nodegate.crossnode.present import items
        run = config.stash.get(RUN_KEY, None)
        nodes = run.all_nodes if run is not None else []
        by: dict = {}
        for it in items(st["result"], nodes, st["why_not"]):
            scope = it.kind if it.kind in ("node", "job", "phase") else (it.kind if it.node else "link")
            by[(scope, it.key)] = it
        st["items"], st["items_of"] = by, st["result"]
    return st["items"]


def pytest_generate_tests(metafunc):
    fx = next((f for f in ("crossnode_node", "crossnode_fabric") if f in metafunc.fixturenames), None)
    if fx is None:
        return
    from nodegate.crossnode.present import item_id
    scope = metafunc.function.__name__.removeprefix("test_crossnode_")
    params, ids = [], []
    for (sc, key), it in _items(metafunc.config).items():
        if sc != scope:
            continue
        # node-owned items: ("crossnode", node, ...) so nodegate.session.items.item_node knows the node
        params.append(("crossnode", it.node, sc, key) if fx == "crossnode_node" else [sc, key])
        ids.append(item_id(it))
    metafunc.parametrize(fx, params, ids=ids, indirect=True)


def _verdict(request, scope: str, key: str):
    from nodegate.crossnode.present import CHECKS
    config = request.config
    it = _items(config)[(scope, key)]
    cid, name, title, severity = CHECKS[it.kind]
    res = it.result
    run = config.stash.get(RUN_KEY, None)
    root = Path(run.bundles_dir) if run is not None and run.bundles_dir else None
    ev = str(root / it.evidence_dir) if root is not None and it.evidence_dir else ""
    b = run.bundles.get(it.node) if run is not None and it.node else None
    bundle_dir = ev or str(getattr(b, "path", "") or "")
    extra = {k: v for k, v in it.extra.items() if k in ("value", "unit", "threshold", "rule")}
    info = item_record(it.node, replace(res, evidence=""), check_id=cid, check_name=name, title=title,
                       severity=severity, remediation=it.remediation, action=it.action if res.outcome is Outcome.FAIL else "",
                       scope="node" if it.node else "", bundle_dir=bundle_dir,
                       spec_source=str(config.option.crossnode), extra={k: str(v) for k, v in extra.items()})
    for k in ("value", "unit", "threshold", "rule"):
        info.setdefault(k, "")
    record_verdict(request, _INFO_KEY, info, PROPS, cid, res, present=_PRESENT)
    return res


@pytest.fixture
def crossnode_node(request):
    """A node-owned cross-node item's Result (node roll-up, its faults, its cables): ERROR fails
    the setup, the test asserts PASS."""
    _, _, scope, key = request.param
    return _verdict(request, scope, key)


@pytest.fixture
def crossnode_fabric(request):
    """A fabric item's Result (a job, a fault or cable of no node, the phase)."""
    scope, key = request.param
    return _verdict(request, scope, key)


def pytest_collection_modifyitems(config, items):
    """A test function with no item in this run (no fault, no cable): pytest's empty-parameter
    placeholder (``[NOTSET]``, a skip) judges nothing and is deselected."""
    if config.stash.get(XN_KEY, None) is None:
        return
    empty = [i for i in items if i.name.endswith("[NOTSET]") and (i.originalname or "").startswith("test_crossnode_")]
    if empty:
        config.hook.pytest_deselected(items=empty)
        gone = {id(i) for i in empty}
        items[:] = [i for i in items if id(i) not in gone]


#: what a cross-node item's phase reports get (nodegate_plugin's one makereport wrapper calls it)
_PRESENT = presenter(_INFO_KEY, _FIRST_KEY, lambda i, inf: None)


@pytest.hookimpl(optionalhook=True)
def pytest_nodegate_report_sections(config):
    """report.html's cross-node section: the cable table and the localisation tree (escaped)."""
    st = config.stash.get(XN_KEY, None)
    if st is None:
        return []
    if st["result"] is None:
        from html import escape
        return [("Cross-node", f"<p>The cross-node phase did not run: {escape(st['why_not'][:1000])}</p>")]
    from nodegate.crossnode.report_html import section_html
    return [("Cross-node", section_html(st["result"]))]
