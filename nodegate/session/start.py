"""pytest_sessionstart's work: the FleetRun of this session.

Live runs start gathering in the background (``FleetRun.start_gather``) and, unless something
needs every node first (``why_gather_first``), let the tests run while nodes arrive. ``--replay``
and xdist workers load bundles from disk instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..bundle import Bundle, discover
from ..errors import SpecError
from ..run import RUN_KEY, FleetRun, GatherOptions
from ..transport import HostKeyPolicy
from . import gcsched
from .jobs import load_spec
from .state import EXIT_SPEC_ERROR, GATHER_FAILED_KEY, JOBS_KEY
from .terminal import terminal_writer


def take_over_outputs(config) -> dict:
    """pytest_configure of a nodegate run: nodegate writes the JUnit and HTML reports itself, from
    results.jsonl at the end (pytest's junitxml and pytest-html keep every test's data in memory
    and outgrow a 4,096-node run: docs/performance.md). ``--junitxml PATH`` and ``--html PATH``
    keep their meaning (that file is written, by nodegate); without them the defaults are
    ``<reports-dir>/junit.xml`` and ``<reports-dir>/report.html``. Both options are cleared so
    pytest's junitxml and pytest-html stay inactive (this runs before their pytest_configure)."""
    o = config.option
    reports = Path(o.reports_dir)
    paths = {"junit": Path(os.path.expandvars(o.xmlpath)).expanduser() if getattr(o, "xmlpath", None)
             else reports / "junit.xml",
             "html": Path(os.path.expandvars(o.htmlpath)).expanduser() if getattr(o, "htmlpath", None)
             else reports / "report.html"}
    if hasattr(o, "xmlpath"):
        o.xmlpath = None
    if hasattr(o, "htmlpath"):
        o.htmlpath = None
    return paths


def gather_options(config) -> GatherOptions:
    """Deadlines, pool size, sudo, host-key policy and GPU source from the command line."""
    o = config.option
    files = [Path(f) for f in (o.known_hosts or [])] or [Path("~/.ssh/known_hosts").expanduser()]
    return GatherOptions(connect_timeout=o.connect_timeout, command_timeout=o.command_timeout,
                         probe_timeout=o.probe_timeout, forks=max(1, o.forks),
                         sudo=bool(getattr(o, "sudo", False)),  # testinfra's --sudo
                         hostkeys=HostKeyPolicy(files=files, accept_new=o.accept_new_host_keys),
                         gpu_source=o.gpu_source)


def start_session(session) -> None:
    """Build the FleetRun (``config.stash[RUN_KEY]``): replay bundles, or start gathering."""
    config = session.config
    o = config.option
    reports = Path(o.reports_dir)
    run = FleetRun(reports_dir=reports, inventory_path=Path(o.inventory) if o.inventory else None)
    run.streaming = streaming(config)
    wi = getattr(config, "workerinput", None)
    if wi is not None:
        run.mode = "replay"
        run.bundles_dir = Path(wi["nodegate_bundles"]) if wi.get("nodegate_bundles") else Path(o.replay)
        replay(run, run.bundles_dir, config, jobs=None, only=wi.get("nodegate_nodes"))
        config.stash[RUN_KEY] = run
        return
    jobs = config.stash.get(JOBS_KEY, [])
    if o.replay:
        run.mode = "replay"
        run.bundles_dir = Path(o.replay)
        replay(run, run.bundles_dir, config, jobs=jobs if o.inventory else None)
    else:
        _start_gather(config, run, jobs)
    config.stash[RUN_KEY] = run
    gcsched.freeze_long_lived(config)


def _start_gather(config, run: FleetRun, jobs) -> None:
    o = config.option
    run.mode = "local" if all(j.url.startswith("local") for j in jobs) else "ssh"
    run.bundles_dir = Path(o.bundles_dir) if o.bundles_dir else Path(o.reports_dir) / "bundles"
    run.bundles_dir.mkdir(parents=True, exist_ok=True)
    opts = gather_options(config)
    specs = SpecCache()
    for j in jobs:
        run.spec[j.name] = specs.get(j.spec_raw, f"host {j.name}")
    run.start_gather(jobs, opts)
    tw = terminal_writer(config)
    why_not = why_gather_first(config)
    if why_not is None:
        # tests run while the nodes are gathered: per-GPU items come from gpu.count, items are
        # ordered node by node, and each node's first item waits for that node only
        run.overlapped = True
        if tw is not None:
            tw.line(f"nodegate: gathering {len(jobs)} node(s), {opts.forks} at a time, while the tests run")
        return

    def progress():
        if tw is not None:
            done, total, errors, dt = run.progress()
            tw.write(f"\rnodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, {dt:.1f}s ")
    try:
        run.wait_all(tick=progress)
    except Exception as e:  # noqa: BLE001 - its nodes are ERROR bundles; the run goes on to report
        config.stash[GATHER_FAILED_KEY] = f"{type(e).__name__}: {e}"
    if tw is not None:
        progress()
        tw.line("")


def streaming(config) -> bool:
    """Bounded memory (FleetRun.streaming): nodes loaded when their items run and released
    after. Not with pytest-xdist (the controller schedules from every bundle), --baseline or
    --burn-in (they compare or load every node first)."""
    o = config.option
    return not (hasattr(config, "workerinput") or getattr(o, "numprocesses", None)
                or getattr(o, "dist", "no") not in ("no", None) or getattr(o, "baseline", None)
                or getattr(o, "burn_in", None))


def why_gather_first(config) -> str | None:
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


def replay(run: FleetRun, root: Path, config, jobs, only=None) -> None:
    """Load the bundles under ``root`` into ``run`` (``--replay``; xdist workers). With ``jobs``
    (an inventory) only its nodes, judged by the inventory's spec; else each bundle's own
    meta.json spec, and ``--limit`` matched against the node names. Exits 2 when ``root`` is no
    directory, holds two bundles of one node, or none."""
    if not root.is_dir():
        pytest.exit(f"nodegate: --replay {root}: not a directory", returncode=EXIT_SPEC_ERROR)
    dirs = discover(root)
    by_job = {j.name: j for j in jobs} if jobs else None
    limit = config.option.limit
    names = None
    if limit and by_job is None:
        from ..inventory import select_names
        names = select_names(limit, {d.name: None for d in dirs}, {})
    seen: dict[str, Path] = {}
    specs = SpecCache()
    for d in dirs:
        # streaming (bounded memory): only meta.json now, the bundle when its items run
        b = _meta_only(d) if run.streaming else Bundle.load(d)
        if by_job is not None and b.node not in by_job:
            continue
        if names is not None and b.node not in names:
            continue
        if only is not None and b.node not in only:
            continue
        if b.node in seen:
            pytest.exit(f"nodegate: --replay {root}: two bundles for node {b.node}: "
                        f"{seen[b.node]} and {d}", returncode=EXIT_SPEC_ERROR)
        seen[b.node] = d
        if run.streaming:
            run.add_lazy(b.node, d)
        else:
            run.add(b)
        raw = by_job[b.node].spec_raw if by_job else (b.meta.get("spec") or {})
        try:
            run.spec[b.node] = specs.get(raw if isinstance(raw, dict) else {}, f"{d}/meta.json spec")
        except SpecError as e:
            run.spec_errors[b.node] = str(e)
            run.spec[b.node] = specs.get({}, "defaults")
    if not seen:
        pytest.exit(f"nodegate: --replay {root}: no bundles found", returncode=EXIT_SPEC_ERROR)


def _meta_only(d: Path) -> Bundle:
    """A Bundle holding only ``d``'s meta.json (node name and spec; the same tolerance as
    ``Bundle.load``): the evidence is read when the node's items need it."""
    import json
    meta: dict = {}
    try:
        meta = json.loads((d / "meta.json").read_text(errors="replace"))
    except (OSError, ValueError):
        meta = {}
    if not isinstance(meta, dict):
        meta = {}
    return Bundle(str(meta.get("node") or d.name), {}, meta, path=d)


class SpecCache:
    """``load_spec`` once per distinct raw spec: the nodes of a fleet mostly share a few (one
    validated Spec object each instead of one per node: time and memory at 4,096 nodes)."""

    def __init__(self) -> None:
        self._by_raw: dict[str, object] = {}

    def get(self, raw: dict, source: str):
        import json
        try:
            key = json.dumps(raw, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return load_spec(raw, source)
        spec = self._by_raw.get(key)
        if spec is None:
            spec = self._by_raw[key] = load_spec(raw, source)
        return spec
