"""The reports' side of a running session: records streamed to results.jsonl as the tests run,
node summaries kept as nodes are released, every report rendered at the end.

Used by plugins/nodegate_reports.py (hook wiring only). Works on pytest's report objects by
their public attributes (``nodeid``, ``when``, ``outcome``, ``user_properties``, ``nodegate``,
``extras``); it never holds the run's reports: a record lives from a test's setup to its
teardown, then becomes one results line.
"""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from ..engine.verdict import NO_SELECTED_ITEM
from . import html as ng_html
from . import metadata as ng_metadata
from .actions import OBTAIN_EVIDENCE, action_for
from .records import NodeInfo, NodeInfoStore, Record, RecordBook, node_info
from .remedy import error_remediation
from .render import RenderContext, render_all
from .results import FILENAME, ResultsWriter
from .text import clean, esc, one_line

#: JUnit property values are capped (a testcase's properties stay short whatever a node says)
PROPERTY_CAP = 1000
_EMPTY = types.MappingProxyType({})


def sanitize_properties(report) -> None:
    """Clean ``report.user_properties`` in place: str values, no control characters, capped."""
    props = getattr(report, "user_properties", None)
    if not props:
        return
    report.user_properties = [(one_line(k, 100), clean(v, PROPERTY_CAP)) for k, v in props]


def finalize(rec: Record) -> Record:
    """The record as results.jsonl keeps it: a FAIL's action resolved (nodegate.reports.actions),
    an ERROR's action ``obtain evidence`` and its remediation how to obtain it (never the FAIL
    text), nothing to do for PASS and SKIP."""
    if rec.outcome == "fail":
        rec.action = action_for(rec.remediation, rec.action, rec.observed, rec.message)
    elif rec.outcome == "error":
        rec.action = OBTAIN_EVIDENCE
        rec.remediation = error_remediation(rec.message)
    else:
        rec.action = ""
        rec.remediation = ""
    return rec


def compact(report) -> None:
    """After every plugin has seen the report (``pytest_runtest_logreport`` trylast): drop what
    pytest would keep of it until the session ends (its terminal reporter holds every report) and
    nothing reads afterwards: the keywords dict, the properties, nodegate's dict and extras. The
    outcome, location, longrepr, sections and durations stay (failure summaries, ``--durations``)."""
    if getattr(report, "nodegate", None) is None:
        return
    report.keywords = _EMPTY
    report.user_properties = ()
    report.nodegate = None
    if getattr(report, "extras", None):
        report.extras = ()
    if not report.sections:
        report.sections = ()


def forget_passed_phase(config, report) -> None:
    """A nodegate item's passed reports, once every plugin saw them. The call report stays
    counted in ``stats["passed"]`` as a shared stand-in (below). Setup and teardown: pytest's
    terminal reporter files it under ``stats[""]`` and keeps it to the session's end, where only
    ``--durations`` and the ``-rP``/``-rA`` passes summary read that list; without those options
    it is taken out again (two of every item's three reports: ~0.6 GB at 4,096 nodes,
    docs/performance.md). tests/reports/test_memory.py fails the day pytest files them elsewhere.
    A skip report stays in ``stats["skipped"]`` as a ``SkippedStandIn`` (``_slim_skipped``);
    with ``--durations`` every report stays as it is."""
    when = getattr(report, "when", None)
    if when == "call":
        _forget_subtest_count(config, report)
    outcome = getattr(report, "outcome", "")
    if when not in ("setup", "call", "teardown") or outcome not in ("passed", "skipped"):
        return
    o = config.option
    if getattr(o, "durations", None) is not None:
        return
    tr = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(tr, "stats", {}) if tr is not None else {}
    if outcome == "skipped":
        _slim_skipped(stats, report)
        return
    if set(getattr(o, "reportchars", "") or "") & {"P", "A", "p"}:
        return
    if when == "call":
        # a passed call report is only counted at the end (the summary line: len() of the list
        # and each entry's count_towards_summary): one shared stand-in takes its place (~1 KB an
        # item, 0.8 GB at 4,096 x 8-GPU nodes of 198 items: docs/performance.md)
        lst = stats.get("passed")
        if lst and lst[-1] is report:
            lst[-1] = PASSED_STANDIN
        return
    lst = stats.get("")
    if lst and lst[-1] is report:
        lst.pop()


def _slim_skipped(stats: dict, report) -> None:
    """A nodegate item's skip report in ``stats["skipped"]`` becomes a ``SkippedStandIn``. A skip
    is not only counted like a pass: ``-rs`` lists each one (``--no-fold-skipped``: by test id),
    so the stand-in keeps the id, the phase, the location and the skip's (path, line, reason); the
    rest of the report (its dict, timings, the path string of each) goes. The bench's sample has 8
    skips a node: what a node leaves in memory to the session's end went from 13.7 to 12.5 KB
    (tracemalloc between two shards of a 256-node replay; docs/performance.md "Round 8"), and with
    the stand-in's fields in one string and NodeInfoStore from 306 to 182 allocated blocks and 37 to
    19 GC-tracked objects a node (192- against 64-node replay, "Round 10"). A report whose
    location or longrepr holds anything but str, int and None stays as it is."""
    lst = stats.get("skipped")
    if not lst or lst[-1] is not report:
        return
    longrepr = getattr(report, "longrepr", None)
    if type(report) is not pytest.TestReport or not isinstance(longrepr, tuple) or len(longrepr) != 3:
        return    # pytest's own skip reports only: (path, line, reason)
    loc = getattr(report, "location", None)
    if not (isinstance(loc, tuple) and len(loc) == 3 and all(_plain(v) for v in (*longrepr, *loc))):
        return
    lst[-1] = SkippedStandIn(report, longrepr)


def _plain(v) -> bool:
    """What JSON gives back as it was (a report's path, line, reason, domain)."""
    return v is None or type(v) in (str, int)


try:   # pytest >= 9: a report's test id is a NodeId (``TestReport._id``) behind ``nodeid``
    from _pytest.nodeid import coerce_node_id as _node_id
except ImportError:   # pytest 8: the id is the ``nodeid`` string itself
    def _node_id(nodeid: str):
        return nodeid


class SkippedStandIn(pytest.TestReport):
    """What pytest's terminal reporter reads of a kept skip report at the session's end: the
    summary line counts it (``count_towards_summary``), ``-rs`` folds it by ``longrepr`` (path,
    line, reason), ``when`` and ``keywords``, or lists it by test id with its verbose word from
    ``pytest_report_teststatus`` (``--no-fold-skipped``). A TestReport, so those hooks and
    ``isinstance`` checks see what they saw; what ``compact()`` already dropped stays empty, and
    the timings are 0 (with ``--durations`` the reports are kept as they are).

    The id, phase, location and (path, line, reason) are kept as one JSON string (a slot; no
    instance dict, no NodeId, no tuples until they are read): a report kept to the end of a
    4,096-node run is made in the middle of its shard, and what it holds stays scattered over
    the heap among that shard's freed objects (docs/performance.md "Round 10"). Each attribute is
    decoded when read (``-rs``: three times a skip, at the end). tests/reports/test_memory.py
    compares ``-rs`` output with and without the stand-ins."""

    __slots__ = ("_packed",)
    outcome = "skipped"
    keywords = _EMPTY
    user_properties = ()
    sections = ()
    duration = start = stop = 0.0
    nodegate = None
    extras = ()

    def __init__(self, report, longrepr: tuple):   # not TestReport.__init__: only these are kept
        path, line, domain = report.location
        self._packed = json.dumps([report.nodeid, report.when, path, line, domain, *longrepr],
                                  separators=(",", ":"))

    def _fields(self) -> list:
        return json.loads(self._packed)

    @property
    def nodeid(self) -> str:
        return self._fields()[0]

    @property
    def _id(self):
        return _node_id(self._fields()[0])

    @property
    def when(self) -> str:
        return self._fields()[1]

    @property
    def location(self) -> tuple:
        return tuple(self._fields()[2:5])

    @property
    def longrepr(self) -> tuple:
        return tuple(self._fields()[5:8])


def _failed_subtests_key():
    """pytest's own subtests plugin (pytest >= 9) counts failed subtests per test id in
    ``config.stash[_pytest.subtests.failed_subtests_key]``, a defaultdict it indexes with every call
    report's id: one entry (0) per test, kept to the session's end. None before pytest 9."""
    try:
        from _pytest.subtests import failed_subtests_key
    except ImportError:
        return None
    return failed_subtests_key


_SUBTESTS_KEY = _failed_subtests_key()


def _forget_subtest_count(config, report) -> None:
    """The subtests plugin's 0 entry for a nodegate item's call report (nodegate's items have no
    subtests; an item with failed subtests keeps its count). tests/reports/test_memory.py fails
    the day pytest keeps the count elsewhere."""
    counts = config.stash.get(_SUBTESTS_KEY, None) if _SUBTESTS_KEY is not None else None
    key = getattr(report, "id", None)
    if counts is not None and key is not None and counts.get(key, None) == 0:
        del counts[key]


class ReportedProgress(set):
    """What pytest's terminal reporter keeps of the tests it reported, on a sharded run: their
    number, not their ids. The terminal reporter adds every report's id to a set
    (``TerminalReporter._progress_nodeids_reported``) only to count the tests reported so far
    (``reported_progress``: the progress percentage and its last line); that set held one
    ``NodeId`` (~0.3 KB with its strings) per item to the session's end, ~270 MB at 4,096 x 8-GPU
    nodes (docs/performance.md). A sharded run reports its items one after the other (no
    pytest-xdist: nodegate.session.shards), so an id other than the last one reported is a new
    test. Stays empty as a set; ``len()`` is the count."""

    __slots__ = ("count", "last")

    def __init__(self, ids=()):
        super().__init__()
        self.count, self.last = len(ids), None

    def add(self, nodeid) -> None:
        if nodeid != self.last:
            self.last = nodeid
            self.count += 1

    def __len__(self) -> int:
        return self.count

    def __contains__(self, nodeid) -> bool:
        return nodeid == self.last


def count_progress_only(config) -> None:
    """On a sharded run: the terminal reporter counts reported tests with ``ReportedProgress``
    instead of keeping every id. Nothing changes when its attribute is not the plain set it was
    (tests/reports/test_memory.py fails the day pytest changes it)."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    cur = getattr(tr, "_progress_nodeids_reported", None) if tr is not None else None
    if type(cur) is set:
        tr._progress_nodeids_reported = ReportedProgress(cur)


class _PassedStandIn:
    """What the terminal reporter's summary reads of a passed report it only counts (one shared
    instance; it has a __dict__, empty: plugins such as hypothesis read ``report.__dict__``)."""

    when = "call"
    outcome = "passed"
    passed, failed, skipped = True, False, False
    count_towards_summary = True
    nodeid = ""
    duration = 0.0
    keywords = _EMPTY          # what compact() leaves on a nodegate report
    user_properties = ()
    sections = ()
    longrepr = None


PASSED_STANDIN = _PassedStandIn()


class RunReports:
    """State of one session's reports (controller only)."""

    def __init__(self, reports_dir: Path, junit_path: Path | None, html_path: Path | None):
        self.reports_dir = Path(reports_dir)
        self.junit_path, self.html_path = junit_path, html_path
        self.book = RecordBook()
        self.writer: ResultsWriter | None = None
        self.infos = NodeInfoStore()   # one JSON string a released node (records.NodeInfoStore)
        self.extras: dict[str, list[str]] = {}
        self.outputs: list[tuple[str, str]] = []
        self.rendered = None
        self._props: dict[str, tuple[list, list]] = {}

    # ------------------------------------------------------------------ during the run
    def open(self) -> None:
        if self.writer is None:
            self.writer = ResultsWriter(self.reports_dir / FILENAME)

    def discard(self) -> None:
        """Exit 2, no report: the lines written so far are dropped, the previous results stay."""
        if self.writer is not None:
            self.writer.discard()
            self.writer = None

    def sanitize_once(self, report) -> None:
        """``sanitize_properties``, once per test: setup, call and teardown reports copy the same
        ``item.user_properties``, so the cleaned list of the first phase is reused."""
        props = getattr(report, "user_properties", None)
        nodeid = getattr(report, "nodeid", "")
        if not props:
            self._props.pop(nodeid, None)
            return
        cached = self._props.get(nodeid)
        if cached is not None and cached[0] == props:
            report.user_properties = list(cached[1])
        else:
            raw = list(props)
            sanitize_properties(report)
            self._props[nodeid] = (raw, list(report.user_properties))
        if getattr(report, "when", None) == "teardown":
            self._props.pop(nodeid, None)

    def record(self, report) -> Record | None:
        """Take a phase report; at teardown the finished record is written to results.jsonl."""
        rec = self.book.update(report)
        if rec is None:
            return None
        self._keep_extras(rec, report)
        if getattr(report, "when", None) == "teardown":
            for done in self.book.finish_test(report.nodeid):   # a folded GPU check: one per GPU
                if done.has_nodegate or done.node:
                    self.open()
                    self.writer.write(finalize(done))
        return rec

    def _keep_extras(self, rec: Record, report) -> None:
        """HTML attachments of a node's items (burn-in plots): pytest-html's ``extras`` entries
        of format html (nodegate's own markup) and links; shown on the node's page."""
        for e in getattr(report, "extras", None) or ():
            if not isinstance(e, dict) or not rec.node:
                continue
            kind, content = e.get("format_type"), e.get("content")
            if kind == "html" and isinstance(content, str):
                self.extras.setdefault(rec.node, []).append(content)
            elif kind == "url" and isinstance(content, str):
                self.extras.setdefault(rec.node, []).append(
                    f'<a href="{esc(content, 1000)}">{esc(e.get("name") or content, 300)}</a>')

    def on_release(self, node: str, bundle, facts, spec_source: str = "") -> None:
        """FleetRun.release listener: the node's summary before its evidence is dropped."""
        self.infos[node] = self.info(node, bundle, facts, spec_source)

    @staticmethod
    def info(node: str, bundle, facts, spec_source: str = "") -> NodeInfo:
        i = node_info(node, bundle, facts, [])
        i.spec_source = spec_source
        i.bundle_dir = str(getattr(bundle, "path", "") or "")
        return i

    # ------------------------------------------------------------------ end of the session
    def render(self, *, run, expected: dict, title: str, inventory: str, started: str, environment: dict,
               junit_max_objects: int, sections: list | None = None, run_order: bool = False) -> None:
        """Every report from results.jsonl (nodegate.reports.render); ``run`` (FleetRun) gives the
        node list, the nodes' facts and, from its selection, why nodes were not evaluated."""
        if self.writer is None:
            self.open()
        for nodeid in list(self.book.records):   # interrupted: a test without teardown report
            rec = self.book.finish(nodeid)
            if rec is not None and rec.outcome in ("fail", "error") and (rec.has_nodegate or rec.node):
                self.writer.write(finalize(rec))
        self.writer.close()
        # every node of the run: the inventory's after --limit (FleetRun.targets), gathered or not
        # (deselected nodes are never contacted: they are reported not evaluated)
        nodes = list(getattr(run, "targets", None) or getattr(run, "all_nodes", None) or []) if run is not None else []
        spec_source = dict(getattr(run, "spec_source", {}) or {}) if run is not None else {}
        reasons = run.not_evaluated() if run is not None and hasattr(run, "not_evaluated") else {}
        # the nodes the selection left out: the run's own reason says so (engine.verdict), never a
        # node of a shard the run stopped before
        deselected = {n for n, why in reasons.items() if why == NO_SELECTED_ITEM}

        def info_for(node: str) -> NodeInfo:
            got = run.peek(node) if run is not None and hasattr(run, "peek") else None
            if got is None:
                # never contacted: deselected, or the run stopped first (FleetRun.not_evaluated)
                i = NodeInfo(node=one_line(node, 300), gather_status=reasons.get(node, "not gathered"))
                i.spec_source = spec_source.get(node, "")
                return i
            return self.info(node, got[0], got[1], spec_source.get(node, ""))

        ctx = RenderContext(
            reports_dir=self.reports_dir, results_path=self.writer.path,
            # run_order (xdist): workers finish nodes in their own time; the reports follow the run's order
            interleaved=self.writer.interleaved or (run_order and not self.writer.in_order(nodes)),
            nodes=nodes, infos=self.infos, expected=expected, extras=self.extras, title=title,
            inventory=inventory, started_at=started, junit_path=self.junit_path, html_path=self.html_path,
            junit_max_objects=junit_max_objects, sections=list(sections or []),
            environment=ng_html.escape_environment(ng_metadata.redact(dict(environment))) if environment else {},
            info_for=info_for, reasons=reasons, deselected=deselected, run_order=run_order)
        self.rendered = render_all(ctx)
        self.outputs = self.rendered.outputs
        w = self.writer
        if w.error is not None:   # a full disk during the run: the reports lack these items
            e = w.error
            self.rendered.failures.insert(0, ("Results (JSON lines)", str(w.path),
                                              f"{e.strerror or e}" + (f" (errno {e.errno})" if e.errno else "")
                                              + f"; {w.lost} item(s) not written, missing from every report"))
