"""Loading saved evidence into the FleetRun: ``--replay PATH`` (bundle directories, or
nvidia-bug-report logs converted on the way) and xdist workers (the controller's bundles).

Called by ``start.start_session``; imports ``specfile``, ``jobs``, ``terminal`` and ``state``
only (one direction: nothing here imports ``start``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..bundle import Bundle, discover
from ..errors import SpecError, error_label
from ..inventory import sources_label
from ..run import ID_KEYS, FleetRun, bundle_ids
from ..textsafe import shown
from . import specfile
from .exitcodes import usage_error
from .jobs import SpecCache
from .terminal import limit_warnings, terminal_writer


class ReplayAction(argparse.Action):
    """``--replay PATH`` (repeatable): ``replay`` keeps the first PATH (a string, as before),
    ``replay_all`` every one in order."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is None:
            setattr(namespace, self.dest, values)
        setattr(namespace, "replay_all", [*(getattr(namespace, "replay_all", None) or []), values])


class _DirLoader:
    """Loads one bundle directory from its --replay root (``Bundle.load``); ``loader(keys)`` reads
    only meta.json and those items (a streaming run reads the rest when the node's items run)."""

    lazy = True

    def __init__(self, d: Path, root: Path):
        self.d, self.root = d, root

    def __call__(self, only=None) -> Bundle:
        return Bundle.load(self.d, root=self.root, only=only)


def _replay_sources(config, roots: list[Path], save: Path | None,
                    links: list[Path] | None = None) -> list[tuple[str, object, Path]]:
    """Every bundle to replay as (node name, loader, where it came from): bundle directories under
    a root (loaded when wanted), and nvidia-bug-report logs (a root that is a .log/.log.gz file, or
    such files directly in a root directory) converted by nodegate.bugreport now (written to
    ``save`` when given). A bundle directory is read as untrusted from its root (``Bundle.load``:
    no link followed below it); symbolic links not followed are appended to ``links``. Exits 2
    for a root that is neither."""
    from ..bugreport import bug_report_paths, is_bug_report, load_bug_report
    out: list[tuple[str, object, Path]] = []
    taken: set[str] = set()
    for root in roots:
        if root.is_file() and is_bug_report(root):
            logs, dirs = [root], []
        elif root.is_dir():
            logs, dirs = bug_report_paths(root), discover(root, skipped=links)
        else:
            usage_error(config, f"nodegate: --replay {shown(root)}: neither a bundle directory nor an "
                                "nvidia-bug-report log (.log, .log.gz)")
        out += [(d.name, _DirLoader(d, root), d) for d in dirs]
        for p in logs:
            b = load_bug_report(p, taken)
            if save is not None:
                b.write(save)
            out.append((b.node, lambda b=b: b, p))
    return out


def replay(run: FleetRun, root: Path, config, jobs, only=None) -> None:
    """Load the bundles under ``root`` (every ``--replay`` PATH: bundle directories, or
    nvidia-bug-report logs converted on the way, saved with ``--save-bundles DIR``) into ``run``
    (``--replay``; xdist workers). Each node's spec: ``--spec FILE`` when given, else (with
    ``jobs``, an inventory: only its nodes) the inventory's, else the bundle's own meta.json spec
    (only as trusted as the bundle: the terminal says so); an xdist worker takes the
    controller's (``nodegate_specs``). ``--limit`` without an inventory is matched against the
    node names. Exits 2 when a PATH is neither, two bundles are of one node, or there are none."""
    o = config.option
    roots = [Path(r) for r in (getattr(o, "replay_all", None) or [root])]
    # the controller saves the converted logs; xdist workers convert them again but write nothing
    save = Path(o.save_bundles) if getattr(o, "save_bundles", None) and not hasattr(config, "workerinput") else None
    links: list[Path] = []
    sources = _replay_sources(config, roots, save, links)
    by_job = {j.name: j for j in jobs} if jobs else None
    limit = config.option.limit
    names = None
    if limit and by_job is None:
        from ..inventory import select_names
        warns: list[str] = []
        try:
            names = set(select_names(limit, [n for n, _, _ in sources], warnings=warns))
        except SpecError as e:
            usage_error(config, f"nodegate: {e}")
        limit_warnings(config, warns)   # a part matching no bundle: said as ansible says it
        if not names:
            usage_error(config, f"nodegate: --limit {limit!r} matches no bundle under {shown(root)}")
    try:
        forced = specfile.override(config)
    except SpecError as e:
        usage_error(config, f"nodegate: {error_label(e)}: {e}")
    wi = getattr(config, "workerinput", None) or {}
    given, given_src = wi.get("nodegate_specs"), wi.get("nodegate_spec_source") or {}
    inv_src = f"inventory {sources_label(config.option.inventory)}" if by_job is not None else None
    seen: dict[str, object] = {}
    specs = SpecCache()
    for _, load, d in sources:
        # streaming (bounded memory): meta.json and the node's identity now, the rest when its
        # items run (FleetRun.add_lazy)
        b = load(ID_KEYS) if run.streaming and getattr(load, "lazy", False) else load()
        if by_job is not None and b.node not in by_job:
            continue
        if names is not None and b.node not in names:
            continue
        if only is not None and b.node not in only:
            continue
        if b.node in seen:
            usage_error(config, f"nodegate: --replay {shown(root)}: two bundles for node {b.node}: "
                                f"{shown(seen[b.node])} and {shown(d)}")
        seen[b.node] = b.path or b.meta.get("source_file") or d
        if run.streaming and getattr(load, "lazy", False) and b.path is not None:
            run.add_lazy(b.node, b.path, root=getattr(load, "root", None), ids=bundle_ids(b))
        else:
            run.add(b)
        if given is not None and b.node in given:
            raw, src = given[b.node], given_src.get(b.node, "")
        elif forced is not None:
            raw, src = forced
        elif by_job is not None:
            raw, src = by_job[b.node].spec_raw, inv_src
        else:
            raw = b.meta.get("spec") or {}
            src = (specfile.BUNDLE if raw else specfile.BUGREPORT if b.path is None and b.meta.get("source_file")
                   else specfile.BUNDLE_EMPTY)
        raw = raw if isinstance(raw, dict) else {}
        run.spec_raw[b.node], run.spec_source[b.node] = raw, src
        try:
            run.spec[b.node] = specs.get(raw, f"{shown(d)}/meta.json spec" if src.startswith("bundle") else src)
        except SpecError as e:
            run.spec_errors[b.node] = str(e)
            run.spec[b.node] = specs.get({}, "defaults")
    if not seen:
        usage_error(config, f"nodegate: --replay {shown(root)}: no bundles found")
    if by_job is not None and only is None and not getattr(o, "baseline", None):
        # (with --baseline a node absent now is the baseline's own node_presence regression)
        # an inventory node without a bundle is missing evidence: ERROR for every item of it,
        # never left out of the reports (a deleted bundle must not make a fleet "accepted")
        for name, j in by_job.items():
            if name not in seen:
                run.add(Bundle(name, {}, {"node": name, "status": "error", "error": (
                    f"no bundle for this inventory node under --replay {shown(root)} (bundles are found "
                    "up to 4 directory levels deep)")}))
                run.spec_raw[name], run.spec_source[name] = j.spec_raw, inv_src
                run.spec[name] = specs.get(j.spec_raw, inv_src)
        have = set(run.all_nodes) | set(run.bundles)
        run.order = [n for n in by_job if n in have]   # inventory order
    if by_job is None and run.order and len(run.order) != len(seen):
        # bundle directories (read lazily, listed in run.order) and converted bug reports (in
        # memory) in one --replay: every one of them, in the order found (the reports were left out)
        run.order = list(seen)
    run.targets = run.all_nodes   # lazily loaded nodes too (streaming)
    _say_replay(config, run, links)


def _say_replay(config, run: FleetRun, links: list[Path]) -> None:
    """What the operator must know before trusting a replay's verdicts: directories not followed
    (symbolic links) and nodes judged by the spec of their own bundle."""
    if hasattr(config, "workerinput"):
        return
    tw = terminal_writer(config)
    if tw is None:
        return
    if links:
        tw.line("nodegate: --replay: not followed (symbolic links, never read): "
                + ", ".join(shown(p, newlines=False) for p in links[:10]) + (" ..." if len(links) > 10 else ""),
                yellow=True)
    own = specfile.from_bundle(run.spec_source)
    if own:
        tw.line(f"nodegate: {len(own)} node(s) judged by the spec stored in their own bundle (meta.json): a bundle's "
                "spec is only as trusted as the bundle; give --spec FILE or --inventory to judge by yours", yellow=True)
