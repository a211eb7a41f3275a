"""Every report of a run, rendered from results.jsonl in one pass at the end of the session.

``render_all(ctx)`` reads the results one node at a time (nodegate.reports.results.node_groups)
and hands each node to the writers, so memory holds one node's records plus, per node, a
matrix row and a summary (``NodeInfo``), whatever the fleet's size:

- JUnit (nodegate.reports.junit): one file, or parts plus a summary, within GitLab's limits;
- HTML: ``nodes/<node>.html`` written per node (nodegate.reports.nodepage), ``report.html``
  (nodegate.reports.html) at the end from the rows and fleet findings;
- ``rma.csv``, ``rma.json``, ``actions.csv`` (nodegate.reports.rma);
- ``bundles/<node>.tar.gz`` for every node with a FAIL, an ERROR or a gather problem
  (nodegate.reports.archive).

Nodes of the run without any record (deselected, not run, not gathered) are rendered too, as
``not evaluated``.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import safeio
from . import archive, html, junit, nodepage, perf_fleet, rma, stale
from .findings import FleetFindings, node_findings, strongest_action
from .actions import highest_severity
from .records import NodeInfo, Record
from .results import node_groups
from .status import NOT_EVALUATED, catalog_ids, not_applicable_to, sort_key, verdict
from .text import FileNames, one_line


#: RenderContext.catalog's default: every check nodegate.checks declares
FULL_CATALOG = "full catalog"


@dataclass
class RenderContext:
    """What the renderers need from the session (all paths absolute or relative to cwd)."""

    reports_dir: Path
    results_path: Path
    interleaved: bool = False
    #: the nodes rendered in ``nodes``' order, not results.jsonl's (xdist: workers finish nodes in their own time)
    run_order: bool = False
    nodes: list[str] = field(default_factory=list)                 # every node of the run, run order
    infos: Mapping[str, NodeInfo] = field(default_factory=dict)    # node -> facts captured during the run (.get)
    expected: dict[str, int] = field(default_factory=dict)         # node -> items collected before deselection
    #: node -> why it was not evaluated (FleetRun.not_evaluated(): deselected, selected items not run)
    reasons: dict[str, str] = field(default_factory=dict)
    #: nodes without any selected item (-k/-m/--deselect): nothing of them was asked for, no archive
    deselected: set[str] = field(default_factory=set)
    bundle_dirs: dict[str, str] = field(default_factory=dict)      # node -> bundle directory (archives)
    extras: dict[str, list[str]] = field(default_factory=dict)     # node -> HTML attachments
    title: str = "nodegate acceptance"
    inventory: str = ""
    started_at: str = ""
    junit_path: Path | None = None
    junit_max_objects: int = junit.MAX_OBJECTS
    junit_max_testcases: int = junit.MAX_TESTCASES
    html_path: Path | None = None
    environment: dict = field(default_factory=dict)
    write_rma: bool = True
    sections: list = field(default_factory=list)   # (title, html) from pytest_nodegate_report_sections
    info_for: object = None    # callable(node) -> NodeInfo for a node without captured info
    #: the acceptance check ids every accepted node must have a record of (nodegate.reports.status:
    #: a run narrowed by test paths never accepts a node); FULL_CATALOG: nodegate.checks' every
    #: check; None: not required (unit tests of the renderer with made-up check ids)
    catalog: object = FULL_CATALOG


@dataclass
class Rendered:
    outputs: list[tuple[str, str]] = field(default_factory=list)
    failures: list[tuple[str, str, str]] = field(default_factory=list)   # (what, path, error): NOT written
    infos: list[NodeInfo] = field(default_factory=list)           # every node, run order, counts filled
    archives: dict[str, Path] = field(default_factory=dict)
    junit_files: list[tuple[str, str, int, int]] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    totals: Counter = field(default_factory=Counter)
    #: files an earlier run left and this run removed (nodegate.reports.stale)
    stale_removed: list[Path] = field(default_factory=list)


def problem_line(node: str, recs: list[Record]) -> str:
    """The node's worst finding (nodegate.reports.findings) in one line, what then the fix:
    ``[NG-PCIE-002] <message> -> reseat: <remediation> (+N more findings)``; a node never
    gathered: ``could not be evaluated: node not gathered: ... -> obtain evidence: <how>``."""
    found = node_findings(node, recs)
    if not found:
        return ""
    f = found[0]
    what = f"[{f.key}] {f.message}" if f.outcome == "fail" else f"could not be evaluated: {f.message}"
    more = f" (+{len(found) - 1} more finding(s))" if len(found) > 1 else ""
    return f"{one_line(what, 300)} -> {f.action or 'see the report'}: {one_line(f.remediation, 300)}{more}"


def _summarise(info: NodeInfo, recs: list[Record], expected: int | None, reason: str | None = None,
               catalog=None) -> None:
    info.counts = Counter()
    for r in recs:
        info.counts[r.outcome] += 1
        if r.outcome == "fail":
            info.counts[f"fail_{r.severity or 'unknown'}"] += 1
    info.expected_items = expected
    # nodegate.reports.status decides (every run mode comes through here)
    gpus = next((r.gpus_expected for r in recs if r.gpus_expected), "")
    info.status, why = verdict(info.counts, expected, run_reason=reason, catalog=catalog,
                               judged={r.check_id for r in recs if r.check_id},
                               not_applicable=not_applicable_to(gpus, catalog))
    if info.status == NOT_EVALUATED:
        info.not_evaluated = why
    bad = [r for r in recs if r.outcome in ("fail", "error")]
    info.worst_severity = highest_severity(r.severity for r in bad)
    from .findings import action_of
    info.action = strongest_action(action_of(r) for r in bad)
    info.problem = problem_line(info.node, recs) if bad else ""
    if info.driver_version is None:
        info.driver_version = next((r.driver_version for r in recs if r.driver_version), None)
    if info.vbios is None:
        vb = sorted({r.vbios_version for r in recs if r.vbios_version})
        info.vbios = ", ".join(vb) if vb else None
    if not info.spec_source:
        info.spec_source = next((r.spec_source for r in recs if r.spec_source), "")
    from .records import spec_off_of
    info.spec_off = spec_off_of(recs)


def _rel(target: Path, base_dir: Path) -> str:
    return Path(os.path.relpath(Path.cwd() / target, Path.cwd() / base_dir)).as_posix()


def render_all(ctx: RenderContext) -> Rendered:
    out = Rendered()
    catalog = catalog_ids() if isinstance(ctx.catalog, str) and ctx.catalog == FULL_CATALOG else ctx.catalog
    reports = Path(ctx.reports_dir)
    html_path = Path(ctx.html_path) if ctx.html_path else None
    html_dir = html_path.parent if html_path else reports
    pages_dir = html_dir / "nodes"
    archive_dir = reports / "bundles"
    start_errors: list[tuple[str, object, OSError]] = []
    try:
        jw = junit.JUnitWriter(ctx.junit_path, ctx.junit_max_objects, ctx.junit_max_testcases) if ctx.junit_path else None
    except OSError as e:
        jw, _ = None, start_errors.append(("JUnit XML", ctx.junit_path, e))
    try:
        rw = rma.RmaWriter(reports, inventory=ctx.inventory, generated_at=ctx.started_at) if ctx.write_rma else None
    except OSError as e:
        rw, _ = None, start_errors.append(("RMA", reports / "rma.csv", e))
    fleet = FleetFindings()
    rows: list[html.MatrixRow] = []
    checks: dict[str, str] = {}
    per_check: dict[str, list] = {}
    hrefs: dict[str, str] = {}
    other: list[Record] = []
    perf = perf_fleet.PerfFleet()   # report.html's per-SKU perf distributions (issue 29)
    written_pages: list[Path] = []

    def drop_pages() -> None:
        """A failed HTML report takes this run's node pages with it, and nothing else: what
        nodegate wrote, in the folder it opened itself (never through a link)."""
        for p in written_pages:
            safeio.unlink(p, anchor=html_dir)
        written_pages.clear()

    if html_path:
        try:
            # reports/nodes below the HTML file's folder, never through a link planted there
            safeio.makedirs(pages_dir, anchor=html_dir)
        except OSError as e:
            start_errors.append(("HTML report", html_path, e))

    dead: set[str] = set()

    def room_from_html() -> bool:
        """A full disk: the node pages go first (the HTML is the largest output and the others
        are what a CI and the vendor need): True when there were pages to remove."""
        if html_path is None or "HTML report" in dead:
            return False
        failed("HTML report", html_path, OSError(28, "No space left on device (room given to the JUnit, RMA "
                                                  "files and archives)"),
               drop_pages)
        return True

    def guarded(what: str, path, fn, cleanup=None):
        """``fn()``; on a full disk, once more after the node pages made room, else ``what``
        fails (disabled, cleaned up)."""
        try:
            return fn()
        except OSError as e:
            # a link refused (nodegate.safeio) is no full disk: the node pages stay
            if not isinstance(e, safeio.LinkRefused) and room_from_html():
                try:
                    return fn()
                except OSError as e2:
                    e = e2
            failed(what, path, e, cleanup)
        return None

    def failed(what: str, path, exc: OSError, cleanup=None) -> None:
        """A writer that hit a full disk: disabled, what it wrote removed, the reason kept."""
        dead.add(what)
        if cleanup is not None:
            try:
                cleanup()
            except OSError:
                pass
        out.failures.append((what, str(path or ""), f"{exc.strerror or exc}" + (f" (errno {exc.errno})"
                                                                                   if exc.errno else "")))

    for what, path, e in start_errors:
        failed(what, path, e)

    def one(node: str, recs: list[Record]) -> None:
        info = ctx.infos.get(node)
        if info is None:
            info = ctx.info_for(node) if callable(ctx.info_for) else NodeInfo(node=node, gather_status="not gathered")
        _summarise(info, recs, ctx.expected.get(node), ctx.reasons.get(node), catalog)
        out.infos.append(info)
        out.statuses[info.status] += 1
        out.totals.update({o: info.counts[o] for o in ("pass", "fail", "skip", "error")})
        arch_rel = ""
        if info.has_problem and "archives" not in dead and not (node in ctx.deselected and not recs):
            bdir = ctx.bundle_dirs.get(node) or info.bundle_dir or next((r.bundle_dir for r in recs if r.bundle_dir), "")
            p = guarded("archives", archive_dir, lambda: archive.write_node_archive(
                archive_dir, node, Path(bdir) if bdir else None, [r.to_dict() for r in recs],
                spec_source=info.spec_source, stem=archive_names.stem(node)))
            if p is not None:
                out.archives[node] = p
                arch_rel = _rel(p, reports)
        findings = node_findings(node, recs)
        fleet.add(findings)
        if jw is not None and "JUnit XML" not in dead:
            guarded("JUnit XML", ctx.junit_path, lambda: jw.add_node(info, recs), jw.abort)
        if rw is not None and "RMA" not in dead:
            rows_ = rma.node_rows(info, recs, archive=arch_rel, started=ctx.started_at)
            guarded("RMA", reports / "rma.csv", lambda: rw.add(rows_), rw.abort)
        if html_path is not None and "HTML report" in dead:
            return
        if html_path is not None:
            page = pages_dir / f"{page_names.stem(node)}.html"
            href = _rel(page, html_dir)
            hrefs[node] = href
            cells: dict[str, tuple[str, int]] = {}
            for r in recs:
                if not r.check_id:
                    continue
                checks.setdefault(r.check_id, r.title)
                o, n = cells.get(r.check_id, ("", 0))
                cells[r.check_id] = (html.worst_outcome([o, r.outcome]), n + 1)
                pc = per_check.setdefault(r.check_id, [r.title, r.severity, Counter()])
                pc[2][r.outcome] += 1
            rows.append(html.MatrixRow(node, info.status, info.worst_severity, info.action, href, cells,
                                       why=info.not_evaluated))
            perf.add(node, info.gpu_model, href, recs)
            back = _rel(html_path, pages_dir) + f"#n-{node}"
            arch_href = _rel(out.archives[node], pages_dir) if node in out.archives else None
            tmp = page.with_name(f".{page.name}.tmp")
            try:
                safeio.write_text(tmp, nodepage.node_page(info, recs, findings, back=back, archive_href=arch_href,
                                                  title=ctx.title, extras=ctx.extras.get(node, [])),
                                  anchor=html_dir)
                safeio.replace(tmp, page, anchor=html_dir)
                written_pages.append(page)
            except OSError as e:
                safeio.unlink(tmp, anchor=html_dir)
                failed("HTML report", html_path, e, drop_pages)

    seen: set[str] = set()
    # file names injective over the run (issue 31, item 10): one registry per folder; a live
    # run's bundles/<node>/ folders share the archives' folder (bundles/<node>.tar.gz)
    page_names = FileNames()
    archive_names = FileNames(reserved=[n[:-len(".tar.gz")] for n in ctx.nodes if n.endswith(".tar.gz")])
    for node, recs in node_groups(ctx.results_path, ctx.interleaved, ctx.nodes if ctx.run_order else ()):
        if not node:
            other.extend(recs)
            continue
        seen.add(node)
        one(node, recs)
    for node in ctx.nodes:
        if node not in seen:
            seen.add(node)
            one(node, [])
    if other and jw is not None and "JUnit XML" not in dead:
        # items of no node (the cross-node phase's jobs and fabric faults, a plain test): one suite,
        # "(no node)", one testcase each; they never join a node's verdict
        guarded("JUnit XML", ctx.junit_path, lambda: jw.add_node(NodeInfo(node="", status="accepted"), other),
                jw.abort)
    if jw is not None and "JUnit XML" not in dead:
        got = guarded("JUnit XML", ctx.junit_path, jw.finish, jw.abort)
        if got is not None:
            out.junit_files = got
            out.outputs += [(what, path) for what, path, _, _ in out.junit_files]
    if html_path is not None and "HTML report" not in dead:
        rows.sort(key=lambda r: sort_key(r.status, r.severity, r.action, r.node))
        other_html = _other_html(other)
        text = html.page(title=ctx.title, statuses=out.statuses, totals=out.totals, findings=fleet.sorted(),
                         rows=rows, checks=list(checks.items()), infos=out.infos, per_check=per_check,
                         hrefs=hrefs, env=ctx.environment, files=_files(ctx, html_dir, out), other=other_html,
                         sections=ctx.sections, perf=perf.html())
        tmp = html_path.with_name(f".{html_path.name}.tmp")
        try:
            html_path.parent.mkdir(parents=True, exist_ok=True)
            safeio.write_text(tmp, text)
            os.replace(tmp, html_path)
            out.outputs.insert(0, ("HTML report", str(html_path)))
            out.outputs.append(("Node pages", f"{pages_dir}/ ({len(hrefs)} node(s))"))
        except OSError as e:
            tmp.unlink(missing_ok=True)
            failed("HTML report", html_path, e, drop_pages)
    if rw is not None and "RMA" not in dead:
        ne = {i.node: i.not_evaluated for i in out.infos if i.status == NOT_EVALUATED}
        paths = guarded("RMA", reports / "rma.csv", lambda: rw.finish(ne), rw.abort)
        if paths is not None:
            out.outputs += [("RMA (CSV)", str(paths["rma.csv"])), ("RMA (JSON)", str(paths["rma.json"])),
                            ("Actions (CSV)", str(paths["actions.csv"]))]
    for what, names in (("node page", page_names), ("evidence archive", archive_names)):
        for node, want, got in names.clashes[:5]:   # detected, and said (bounded)
            out.outputs.append((f"File name clash ({what})", f"{node}: {want} is another node's, written as {got}"))
        if len(names.clashes) > 5:
            out.outputs.append((f"File name clash ({what})", f"... {len(names.clashes) - 5} more"))
    # what an earlier run left goes (nodegate.reports.stale): pages, archives, JUnit parts
    written = {Path(p) for p in out.archives.values()} | {Path(path) for _, path, _, _ in out.junit_files}
    written |= set(written_pages)
    folders = [("bundles", archive_dir, reports)]
    if html_path is not None and "HTML report" not in dead:
        folders.append(("nodes", pages_dir, html_dir))
    if ctx.junit_path is not None and "JUnit XML" not in dead:
        folders.append(("junit", Path(ctx.junit_path).parent / "junit", Path(ctx.junit_path).parent))
    out.stale_removed = stale.remove_stale(folders, written)
    if out.archives:
        out.outputs.append(("Evidence archives", f"{archive_dir}/ ({len(out.archives)} node(s) with problems)"))
    out.outputs.append(("Results (JSON lines)", str(ctx.results_path)))
    return out


def _files(ctx: RenderContext, html_dir: Path, out: Rendered) -> list[tuple[str, str]]:
    files = [("results.jsonl", _rel(ctx.results_path, html_dir))]
    for what, path, _, _ in out.junit_files:
        files.append((what, _rel(Path(path), html_dir)))
    if ctx.write_rma:
        for n in ("rma.csv", "rma.json", "actions.csv"):
            files.append((n, _rel(Path(ctx.reports_dir) / n, html_dir)))
    return files


def _other_html(recs: list[Record]) -> str:
    """Items that belong to no node (a crashed test, a plain test in the suites)."""
    if not recs:
        return ""
    from .text import esc
    rows = "".join(f'<tr class="{r.outcome}"><td>{esc(r.nodeid, 500)}</td><td>{esc(r.outcome.upper())}</td>'
                   f"<td>{esc(r.message, 1000)}</td></tr>" for r in recs)
    return f'<table class="ng" id="ng-other"><tbody>{rows}</tbody></table>'
