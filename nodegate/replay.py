"""Loading saved evidence into a FleetRun: ``--replay PATH`` (bundle directories, or
nvidia-bug-report logs converted on the way) and xdist workers (the controller's bundles).

Below the pytest session (no session, no reports: the inputs' import contract in pyproject.toml): a command line that cannot be honoured raises ``UsageError`` (the session
exits 2 with its message, no report); what the operator must know before trusting the verdicts
comes back in ``Loaded`` (the session prints it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .bundle import Bundle, discover
from .errors import SpecError, UsageError
from .jobs import SpecCache
from .run import ID_KEYS, FleetRun, bundle_ids
from . import specsource
from .textsafe import shown


@dataclass
class Loaded:
    """What ``replay`` tells the operator: ``links``, directories not followed (symbolic links,
    never read); ``own_spec``, nodes judged by the spec stored in their own bundle."""

    links: list[Path] = field(default_factory=list)
    own_spec: list[str] = field(default_factory=list)


class _DirLoader:
    """Loads one bundle directory from its --replay root (``Bundle.load``); ``loader(keys)`` reads
    only meta.json and those items (a streaming run reads the rest when the node's items run)."""

    lazy = True

    def __init__(self, d: Path, root: Path):
        self.d, self.root = d, root

    def __call__(self, only=None) -> Bundle:
        return Bundle.load(self.d, root=self.root, only=only)


def sources(roots: list[Path], save: Path | None,
            links: list[Path] | None = None) -> list[tuple[str, object, Path]]:
    """Every bundle to replay as (node name, loader, where it came from): bundle directories under
    a root (loaded when wanted), and nvidia-bug-report logs (a root that is a .log/.log.gz file, or
    such files directly in a root directory) converted by nodegate.bugreport now (written to
    ``save`` when given). A bundle directory is read as untrusted from its root (``Bundle.load``:
    no link followed below it); symbolic links not followed are appended to ``links``. Raises
    UsageError for a root that is neither."""
    from .bugreport import bug_report_paths, is_bug_report, load_bug_report
    out: list[tuple[str, object, Path]] = []
    taken: set[str] = set()
    for root in roots:
        if root.is_file() and is_bug_report(root):
            logs, dirs = [root], []
        elif root.is_dir():
            logs, dirs = bug_report_paths(root), discover(root, skipped=links)
        else:
            raise UsageError(f"--replay {shown(root)}: neither a bundle directory nor an "
                             "nvidia-bug-report log (.log, .log.gz)")
        out += [(d.name, _DirLoader(d, root), d) for d in dirs]
        for p in logs:
            b = load_bug_report(p, taken)
            if save is not None:
                b.write(save)
            out.append((b.node, lambda b=b: b, p))
    return out


def replay(run: FleetRun, roots: list[Path], *, jobs=None, only=None, limit: str | None = None,
           forced: tuple[dict, str] | None = None, given: tuple[dict, dict] | None = None,
           inventory_label: str | None = None, save: Path | None = None, keep_absent: bool = True,
           warn: Callable[[list[str]], None] = lambda lines: None) -> Loaded:
    """Load the bundles under ``roots`` (every ``--replay`` PATH, in order: bundle directories,
    or nvidia-bug-report logs converted on the way, saved to ``save``) into ``run``.

    Each node's spec: ``given`` (an xdist worker: the controller's ``(specs, their sources)``),
    else ``forced`` (``--spec FILE``: ``(raw, "--spec FILE")``), else (with ``jobs``, an
    inventory's NodeJobs: only its nodes, ``inventory_label`` the origin) the inventory's, else
    the bundle's own meta.json spec (only as trusted as the bundle: ``Loaded.own_spec``).
    ``only``: these nodes alone (an xdist worker's). ``limit`` without ``jobs``: an ansible host
    pattern matched against the node names (``warn(lines)``: its parts matching nothing, as
    ansible says them). ``keep_absent``: an inventory node with no bundle is added as an ERROR
    bundle (False with --baseline: a node absent now is the baseline's own regression).

    Raises UsageError when a root is neither, two bundles are of one node, ``limit`` matches
    none or there are no bundles."""
    root = roots[0]
    links: list[Path] = []
    found = sources(roots, save, links)
    by_job = {j.name: j for j in jobs} if jobs else None
    names = None
    if limit and by_job is None:
        from .inventory import select_names
        warns: list[str] = []
        try:
            names = set(select_names(limit, [n for n, _, _ in found], warnings=warns))
        except SpecError as e:
            raise UsageError(str(e)) from None
        warn(warns)
        if not names:
            raise UsageError(f"--limit {limit!r} matches no bundle under {shown(root)}")
    given_specs, given_src = given if given is not None else (None, {})
    seen: dict[str, object] = {}
    specs = SpecCache()
    for _, load, d in found:
        # streaming (bounded memory): meta.json and the node's identity now, the rest when its
        # items run (FleetRun.add_lazy)
        b = load(ID_KEYS) if run.streaming and getattr(load, "lazy", False) else load()
        if (by_job is not None and b.node not in by_job) or (names is not None and b.node not in names) \
                or (only is not None and b.node not in only):
            continue
        if b.node in seen:
            raise UsageError(f"--replay {shown(root)}: two bundles for node {b.node}: "
                             f"{shown(seen[b.node])} and {shown(d)}")
        seen[b.node] = b.path or b.meta.get("source_file") or d
        if run.streaming and getattr(load, "lazy", False) and b.path is not None:
            run.add_lazy(b.node, b.path, root=getattr(load, "root", None), ids=bundle_ids(b))
        else:
            run.add(b)
        if given_specs is not None and b.node in given_specs:
            raw, src = given_specs[b.node], given_src.get(b.node, "")
        elif forced is not None:
            raw, src = forced
        elif by_job is not None:
            raw, src = by_job[b.node].spec_raw, inventory_label
        else:
            raw = b.meta.get("spec") or {}
            src = (specsource.BUNDLE if raw else specsource.BUGREPORT
                   if b.path is None and b.meta.get("source_file") else specsource.BUNDLE_EMPTY)
        raw = raw if isinstance(raw, dict) else {}
        run.spec_raw[b.node], run.spec_source[b.node] = raw, src
        try:
            run.spec[b.node] = specs.get(raw, f"{shown(d)}/meta.json spec" if src.startswith("bundle") else src)
        except SpecError as e:
            run.spec_errors[b.node] = str(e)
            run.spec[b.node] = specs.get({}, "defaults")
    if not seen:
        raise UsageError(f"--replay {shown(root)}: no bundles found")
    if by_job is not None and only is None and keep_absent:
        # an inventory node without a bundle is missing evidence: ERROR for every item of it,
        # never left out of the reports (a deleted bundle must not make a fleet "accepted")
        for name, j in by_job.items():
            if name not in seen:
                run.add(Bundle(name, {}, {"node": name, "status": "error", "error": (
                    f"no bundle for this inventory node under --replay {shown(root)} (bundles are found "
                    "up to 4 directory levels deep)")}))
                run.spec_raw[name], run.spec_source[name] = j.spec_raw, inventory_label
                run.spec[name] = specs.get(j.spec_raw, inventory_label)
        have = set(run.all_nodes) | set(run.bundles)
        run.order = [n for n in by_job if n in have]   # inventory order
    if by_job is None and run.order and len(run.order) != len(seen):
        # bundle directories (read lazily, listed in run.order) and converted bug reports (in
        # memory) in one --replay: every one of them, in the order found (the reports were left out)
        run.order = list(seen)
    run.targets = run.all_nodes   # lazily loaded nodes too (streaming)
    return Loaded(links, specsource.from_bundle(run.spec_source))
