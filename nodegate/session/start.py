"""pytest_sessionstart's work: the FleetRun of this session.

Live runs start gathering in the background (``FleetRun.start_gather``) and, unless something
needs every node first (``why_gather_first``), let the tests run while nodes arrive. ``--replay``
and xdist workers load bundles from disk instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .. import replay as loader
from ..cmdline import gather_options, narrows_nodes, streaming, why_gather_first, why_nothing
from ..errors import SpecError, UsageError, error_label
from ..inventory import sources_label
from ..jobs import SpecCache
from ..run import RUN_KEY, FleetRun
from ..textsafe import shown
from . import granularity, memory, shards
from .exitcodes import exit_nothing, install_signals, reason, usage_error
from .jobs import live_source, spec_file
from .preselect import COLLECTION_ERRORS, preselect
from .selection import pending_jobs
from .state import GATHER_FAILED_KEY, JOBS_KEY, PENDING_JOBS_KEY, spec_get, uses_xdist
from .terminal import limit_warnings, progress_line, terminal_writer


def start_session(session) -> None:
    """Build the FleetRun (``config.stash[RUN_KEY]``): replay bundles, or start gathering."""
    config = session.config
    o = config.option
    reports = Path(o.reports_dir)
    run = FleetRun(reports_dir=reports, inventory_path=sources_label(o.inventory) or None)
    run.streaming = streaming(o)
    wi = getattr(config, "workerinput", None)
    if wi is not None:
        run.mode = "replay"
        run.bundles_dir = Path(wi["nodegate_bundles"]) if wi.get("nodegate_bundles") else Path(o.replay)
        replay(run, run.bundles_dir, config, jobs=None, only=wi.get("nodegate_nodes"))
        # the identities of the nodes other workers judge: NG-INV-003 compares the whole run
        run.peer_ids = {n: tuple(v) for n, v in (wi.get("nodegate_peer_ids") or {}).items() if n not in run.bundles}
        config.stash[RUN_KEY] = run
        return
    jobs = config.stash.get(JOBS_KEY, [])
    install_signals(config)
    if o.replay:
        run.mode = "replay"
        run.bundles_dir = Path(o.replay)
        replay(run, run.bundles_dir, config, jobs=jobs if o.inventory else None)
        shards.start(config, run)
        if run.streaming and not uses_xdist(config) and not o.collectonly:
            run.enable_prefetch()   # the next node parsed in a second process (fleetrun.prefetch)
    else:
        config.stash[RUN_KEY] = run
        _prepare_live(session, run, jobs)
    config.stash[RUN_KEY] = run
    memory.freeze_long_lived(config)


def replay(run: FleetRun, root: Path, config, jobs, only=None) -> None:
    """``--replay`` (and an xdist worker: the controller's bundles, ``only`` its nodes): every
    PATH's bundles loaded into ``run`` (nodegate.fleetrun.replay), ``--spec FILE`` or the
    inventory's spec (``jobs``) or the bundle's own; a command line that cannot be honoured: exit
    2 (``usage_error``). Then the terminal says what the operator must know before trusting the
    verdicts: directories not followed, nodes judged by their own bundle's spec."""
    o = config.option
    wi = getattr(config, "workerinput", None)
    try:
        forced = spec_file(config)
    except SpecError as e:
        usage_error(config, f"nodegate: {error_label(e)}: {e}")
    try:
        loaded = loader.replay(
            run, [Path(r) for r in (getattr(o, "replay_all", None) or [root])], jobs=jobs, only=only, limit=o.limit,
            forced=forced, inventory_label=f"inventory {sources_label(o.inventory)}" if jobs else None,
            given=(wi["nodegate_specs"], wi.get("nodegate_spec_source") or {}) if wi and wi.get("nodegate_specs") is not None else None,
            # the controller saves the converted logs; xdist workers convert them again but write nothing
            save=Path(o.save_bundles) if getattr(o, "save_bundles", None) and wi is None else None,
            keep_absent=not getattr(o, "baseline", None), warn=lambda lines: limit_warnings(config, lines))
    except UsageError as e:
        usage_error(config, f"nodegate: {e}")
    tw = terminal_writer(config) if wi is None else None
    if tw is not None and loaded.links:
        tw.line("nodegate: --replay: not followed (symbolic links, never read): "
                + ", ".join(shown(p, newlines=False) for p in loaded.links[:10])
                + (" ..." if len(loaded.links) > 10 else ""), yellow=True)
    if tw is not None and loaded.own_spec:
        tw.line(f"nodegate: {len(loaded.own_spec)} node(s) judged by the spec stored in their own bundle (meta.json): a "
                "bundle's spec is only as trusted as the bundle; give --spec FILE or --inventory to judge by yours",
                yellow=True)


def _prepare_live(session, run: FleetRun, jobs) -> None:
    """A live run: every node's spec now; the gathering starts once the selection is known
    (nodegate.session.selection): after collection when the items need only the specs, else
    right here, for the nodes a collection in a forked child selected."""
    config = session.config
    o = config.option
    run.mode = "local" if all(j.url.startswith("local") for j in jobs) else "ssh"
    run.bundles_dir = Path(o.bundles_dir) if o.bundles_dir else Path(o.reports_dir) / "bundles"
    specs = SpecCache()
    for j in jobs:
        run.spec[j.name] = specs.get(j.spec_raw, f"host {j.name}")
    run.targets = [j.name for j in jobs]
    run.order = list(run.targets)
    shards.start(config, run)
    if o.list_hosts:
        _list_selected_hosts(session)   # exits: contacts nobody
    if o.collectonly:
        return   # --collect-only contacts nobody: the items need only the specs (items.parametrize)
    why_not = why_gather_first(config.option)
    gran = granularity.of(config)
    # per-GPU items of a node without gpu.count follow what it reports: such a run gathers
    # every node first (documented in README "Large fleets"; gpu.count in the spec avoids it)
    needs_gpus = [j.name for j in jobs if not spec_get(run.spec[j.name], "gpu.count") and gran.may_split_node(j.name)]
    if needs_gpus:
        start_gathering(config, run, list(jobs), why=f"per-GPU items of {needs_gpus[0]}"
                        f"{f' and {len(needs_gpus) - 1} more node(s)' if len(needs_gpus) > 1 else ''} without gpu.count")
        return
    # a sharded run collects one shard at a time: the selection of every shard is known before
    # gathering only from preselect's collection (it collects the shards in turn); without -k/-m/
    # --deselect/--lf every node is selected and gathering starts after the first shard's collection
    sharded_narrowed = shards.active(config) and narrows_nodes(config.option)
    if why_not in (None, "--gather-first") and not sharded_narrowed:
        # the items need only the specs: collected first, then the selected nodes are gathered
        # (--gather-first: all of them before the first item runs)
        run.overlapped = why_not is None
        config.stash[PENDING_JOBS_KEY] = list(jobs)   # selection.after_collection starts them
        return
    counts = preselect(session)
    if counts is COLLECTION_ERRORS:
        run.order = []   # pytest's collection reports the errors and stops the run: contact nobody
        return
    tw = terminal_writer(config)
    nodes = None if counts is None else list(counts)
    if counts is not None:
        # what collection will select (xdist's controller never collects: this is its record)
        # every target's count, 0 included: a node the selection leaves out is known to be
        # deselected even when a sharded run stops before its shard (FleetRun.not_collected)
        run.items_selected = {n: counts.get(n, 0) for n in (run.targets or list(counts))}
        run.selected = list(counts)
    if nodes is None:
        nodes = run.targets
        if tw is not None:
            tw.line("nodegate: the selection could not be learned before gathering: every node is gathered",
                    yellow=True)
    elif not nodes:
        if not (getattr(o, "baseline", None) or getattr(o, "burn_in", None) or getattr(o, "perf", False)
                or getattr(o, "crossnode", None)):
            exit_nothing(config, why_nothing(config.option, None))
        nodes = run.targets   # baseline/burn-in/perf/crossnode items are collected from gathered nodes only
    chosen = set(nodes)
    start_gathering(config, run, [j for j in jobs if j.name in chosen])


def gather_pending(session) -> None:
    """pytest_collection_finish, after ``selection.after_collection``: a live run whose gathering
    waited for the selection gathers the selected nodes now (``selection.pending_jobs``)."""
    jobs = pending_jobs(session)
    if jobs is not None:
        start_gathering(session.config, session.config.stash[RUN_KEY], jobs)


def _list_selected_hosts(session) -> None:
    """``--list-hosts`` narrowed by -k/-m/--deselect/--lf: the nodes the run would contact are
    those with a selected item (``preselect``, the run's own collection); none: exit 2 as the run
    would ("no nodegate check selected")."""
    from .jobs import list_hosts
    config = session.config
    counts = preselect(session)
    if counts is COLLECTION_ERRORS:
        usage_error(config, "nodegate: --list-hosts: the collection has errors (run without --list-hosts to see "
                            "them); no node was contacted")
    if counts is not None and not counts:
        exit_nothing(config, why_nothing(config.option, None))
    if counts is None:
        sys.stderr.write("nodegate: warning: the selection could not be learned: every host is listed\n")
    # stdout holds the listing alone (--list-hosts=json | jq): pytest's terminal reporter would
    # add its "Exit" banner to it (the message goes to stderr as at configure time)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        config.pluginmanager.unregister(tr)
    list_hosts(config, None if counts is None else list(counts))


def start_gathering(config, run: FleetRun, jobs, why: str | None = None) -> None:
    """Gather ``jobs`` (the selected nodes) in the background; the tests run while they arrive
    unless ``why_gather_first`` says every node is needed first (then wait for all)."""
    o = config.option
    run.bundles_dir = Path(o.bundles_dir) if o.bundles_dir else Path(o.reports_dir) / "bundles"
    from ..safeio import makedirs
    # the default reports/bundles: below --reports-dir, never through a link planted there
    makedirs(run.bundles_dir, anchor=None if o.bundles_dir else Path(o.reports_dir))
    opts = gather_options(config.option)
    source = live_source(config)
    specs = SpecCache()
    for j in jobs:
        if j.name not in run.spec:
            run.spec[j.name] = specs.get(j.spec_raw, f"host {j.name}")
        run.spec_raw[j.name] = j.spec_raw
        run.spec_source[j.name] = source
    if not jobs:
        run.order = []
        return
    run.start_gather(jobs, opts)
    tw = terminal_writer(config)
    why_not = why or why_gather_first(config.option)
    if why_not is None:
        # tests run while the nodes are gathered: per-GPU items come from gpu.count, items are
        # ordered node by node, and each node's first item waits for that node only
        run.overlapped = True
        if tw is not None:
            tw.line(f"nodegate: gathering {len(jobs)} node(s), {opts.forks} at a time, while the tests run")
        return

    line = progress_line(tw)   # \r on a terminal only (a CI log gets whole lines)

    def progress(final: bool = False):
        if tw is not None:
            done, total, errors, dt = run.progress()
            line(f"nodegate: gathered {done}/{total} nodes, {errors} unreachable/errors, {dt:.1f}s ", final)
    try:
        run.wait_all(tick=progress)
    except KeyboardInterrupt:
        # Ctrl-C/SIGTERM before any item: pytest skips its session finish, so the gather is
        # stopped here, and what it gathered is written before pytest exits
        run.abort(reason(config))
        try:
            run.wait_all()
        except Exception:  # noqa: BLE001
            pass
        raise
    except Exception as e:  # noqa: BLE001 - its nodes are ERROR bundles; the run goes on to report
        config.stash[GATHER_FAILED_KEY] = f"{type(e).__name__}: {e}"
    if run.streaming:
        # every node's (boot id, machine id) now: an item's identity clash compares the whole run
        # (nodes are merged one at a time as their items run: nothing else reads them all)
        run.ids_of_every_node()
    if tw is not None:
        progress(final=True)
        if line.tty:
            tw.line("")
