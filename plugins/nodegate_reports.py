"""pytest plugin: nodegate's reports (registered next to plugins/nodegate_plugin.py).

What it does (docs/reports.md):
- every phase report: cleans ``report.user_properties`` (JUnit ``<properties>``) of control
  characters and caps them (once per test: setup, call and teardown carry the same list); on
  the controller it records the verdict (``report.nodegate``) and adds the failure extra
  (evidence excerpt + archive link) for pytest-html;
- pytest-html: title (inventory, run start), results columns Node / GPU / Serial / Check id
  / Severity / Expected / Observed, per-node, per-check and drift tables, escaped environment;
  with more passed rows than ``--html-passed-rows`` (default 2000) the passed rows are folded
  into the per-node and per-check counts (a note in the report says so; junit.xml lists all);
- pytest-metadata: secrets redacted from the environment metadata;
- session finish (controller only, not on xdist workers): ``<reports>/rma.csv``,
  ``<reports>/rma.json`` and ``<reports>/bundles/<node>.tar.gz`` for every node with a
  failure, error or gather problem;
- terminal: a per-node summary and the paths written.

It stays passive unless the run has a FleetRun (``nodegate.run.RUN_KEY``, set by the suite
plugin) or reports carrying ``report.nodegate``: the project's own tests write nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodegate.reports import archive, html, rma, terminal
from nodegate.reports import metadata as ng_metadata
from nodegate.reports.records import Record, RecordBook, node_info
from nodegate.reports.text import clean, one_line

try:
    from nodegate.run import RUN_KEY
except Exception:  # pragma: no cover - the reports still work from report.nodegate alone
    RUN_KEY = None

#: JUnit property values are capped (GitLab rejects JUnit files over 30 MB: 6000 testcases x
#: 10 properties must stay far below it).
PROPERTY_CAP = 1000
_PLUGIN_NAME = "nodegate-reports"

#: Passed rows listed one by one in the HTML results table, at most (``--html-passed-rows``).
#: Above it every passed row is folded into the Nodes/Checks counts: pytest-html builds each row
#: from its JSON blob in the browser, and 30 000 rows (256 nodes x 8 GPUs) took chromium over a
#: minute to render (docs/performance.md).
DEFAULT_HTML_PASSED_ROWS = 2000


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _fleet(config):
    if RUN_KEY is None:
        return None
    try:
        return config.stash.get(RUN_KEY, None)
    except Exception:  # noqa: BLE001 - a broken run object must not break the reports
        return None


# ------------------------------------------------------------------ module-level hooks
def pytest_addoption(parser):
    parser.getgroup("nodegate").addoption(
        "--html-passed-rows", type=int, default=DEFAULT_HTML_PASSED_ROWS, metavar="N",
        help="HTML report: list passed tests one row each while there are at most N of them; above N "
             "they are folded into the per-node and per-check counts (junit.xml still lists every test). "
             f"0: never list passed rows, -1: always (default {DEFAULT_HTML_PASSED_ROWS})")


@pytest.hookimpl(optionalhook=True)
def pytest_metadata(metadata, config):  # noqa: ARG001 - pytest-metadata's hook signature
    """pytest-metadata copies CI variables: drop secrets before anything shows them."""
    ng_metadata.redact(metadata)


def pytest_configure(config):
    config.pluginmanager.register(NodegateReports(config), _PLUGIN_NAME)


def pytest_unconfigure(config):
    p = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if p is not None:
        config.pluginmanager.unregister(p)


def _shared_gpus(run) -> list:
    try:
        return run.shared_gpus()
    except Exception:  # noqa: BLE001 - untrusted facts: the summary line is best effort
        return []


def sanitize_properties(report) -> None:
    """Clean ``report.user_properties`` in place: str values, no control characters, capped."""
    props = getattr(report, "user_properties", None)
    if not props:
        return
    report.user_properties = [(one_line(k, 100), clean(v, PROPERTY_CAP)) for k, v in props]


class NodegateReports:
    """Per-session state: the records of every test and the outputs written."""

    def __init__(self, config):
        self.config = config
        self.book = RecordBook()
        self.outputs: list[tuple[str, str]] = []
        self.archives: dict[str, Path] = {}
        self.html_report = None          # pytest-html's ReportData (title is set late)
        self.columns_replaced = False
        self._infos = None
        self._props: dict[str, tuple[list, list]] = {}   # nodeid -> (raw, cleaned) user_properties
        limit = getattr(config.option, "html_passed_rows", DEFAULT_HTML_PASSED_ROWS)
        self.passed_rows_limit = DEFAULT_HTML_PASSED_ROWS if limit is None else int(limit)
        self.passed_rows_built: list[str] = []   # nodeids of passed rows handed to pytest-html
        self.passed_rows_folded = 0               # passed rows never built (limit reached)
        self._folded_last = ""                    # nodeid of the last folded call row

    # -------------------------------------------------------------- paths
    def reports_dir(self) -> Path:
        run = _fleet(self.config)
        d = getattr(run, "reports_dir", None) if run is not None else None
        return Path(d or getattr(self.config.option, "reports_dir", None) or "reports")

    def archive_dir(self) -> Path:
        return self.reports_dir() / "bundles"

    def archive_href(self, node: str) -> str | None:
        """Link from the HTML file to the node's archive (relative, so the report directory
        can be moved or downloaded as one CI artefact)."""
        if not node:
            return None
        target = archive.archive_path(self.archive_dir(), node)
        htmlpath = getattr(self.config.option, "htmlpath", None)
        base = Path(os.path.expandvars(htmlpath)).expanduser().parent if htmlpath else Path(".")
        rel = os.path.relpath(Path.cwd() / target, Path.cwd() / base)
        return Path(rel).as_posix()

    def active(self) -> bool:
        return _fleet(self.config) is not None or any(r.has_nodegate for r in self.book)

    # -------------------------------------------------------------- per test
    def _sanitize_once(self, report) -> None:
        """``sanitize_properties``, once per test: setup, call and teardown reports copy the same
        ``item.user_properties`` (equal values, usually the same objects), so the cleaned list of
        the first phase is reused while the raw list is unchanged."""
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

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        """Runs before junitxml and pytest-html read the report (they are not tryfirst)."""
        self._sanitize_once(report)
        if _is_worker(self.config):
            return      # the controller records (xdist sends it every report)
        rec = self.book.update(report)
        if rec is None or not rec.has_nodegate:
            return
        failing = (report.when == "call" and rec.outcome == "fail") or \
                  (report.failed and report.when in ("setup", "teardown"))
        if failing and not getattr(report, "_nodegate_extra", False):
            extra = {"name": None, "format_type": "html", "mime_type": None, "extension": None,
                     "content": html.failure_extra(rec, self.archive_href(rec.node))}
            report.extras = list(getattr(report, "extras", []) or []) + [extra]
            report._nodegate_extra = True

    # -------------------------------------------------------------- pytest-html
    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report):
        self.html_report = report
        report.title = self._title()
        env = report.data.get("environment")
        if isinstance(env, dict):
            env = dict(env)
            run = _fleet(self.config)
            if run is not None and getattr(run, "spec_source", None):
                from nodegate.session.specfile import summary
                env["nodegate spec source"] = "; ".join(summary(run.spec_source, list(run.nodes)))
            shared = _shared_gpus(run) if run is not None else []
            if shared:   # one board cannot be in two nodes (docs/security.md "Contradictory evidence")
                env["nodegate GPUs on more than one node"] = "; ".join(
                    f"{what} {v}: " + ", ".join(f"{n} (gpu{i})" for n, i in where[:8]) for what, v, where in shared[:20])
            report.set_data("environment", html.escape_environment(ng_metadata.redact(env)))

    def _title(self) -> str:
        run = _fleet(self.config)
        inv = getattr(run, "inventory_path", None) if run is not None else None
        if inv is None and run is not None and getattr(run, "mode", "") == "replay":
            inv = f"replay {run.bundles_dir}"
        started = getattr(run, "started_at", "") if run is not None else ""
        return one_line(f"nodegate acceptance: {inv or 'no inventory'}"
                        + (f", run started {started}" if started else ""), 500)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells):
        if _fleet(self.config) is None:
            return
        cells[:] = html.header_cells()
        self.columns_replaced = True

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report, cells):
        if not self.columns_replaced:
            return
        rec = self.book.records.get(getattr(report, "nodeid", ""))
        rec = rec if rec is not None and rec.has_nodegate else None
        when, passed = getattr(report, "when", "call"), getattr(report, "outcome", "") == "passed"
        if passed and when == "setup":
            cells[:] = []   # pytest-html never shows a passed setup: skip building it
            return
        if passed and when == "teardown":
            if report.nodeid == self._folded_last:
                cells[:] = []   # its call row was folded: no row to append teardown logs to
            return          # else pytest-html only appends its logs to the call row
        if passed and when == "call" and rec is not None and rec.outcome == "pass" and self._fold_passed(report):
            cells[:] = []
            return
        test_id = report.nodeid + ("" if report.when == "call" else f"::{report.when}")
        href = None
        if rec is not None and (rec.outcome in ("fail", "error") or report.failed):
            href = self.archive_href(rec.node)
        result_cell = cells[0] if cells else '<td class="col-result"></td>'
        cells[:] = html.row_cells(result_cell, rec, test_id, href)

    # -------------------------------------------------------------- passed rows folded
    def _fold_passed(self, report) -> bool:
        """Called for each passed call row: False = pytest-html builds it (while within the
        limit), True = folded (not built; pytest-html's Passed count is kept right here)."""
        lim = self.passed_rows_limit
        if lim < 0 or (not self.passed_rows_folded and len(self.passed_rows_built) < lim):
            self.passed_rows_built.append(report.nodeid)
            return False
        self.passed_rows_folded += 1
        self._folded_last = report.nodeid
        if self.html_report is not None:
            self.html_report.outcomes = "passed"   # pytest-html's counter (+1), as if the row was added
        return True

    def _drop_built_passed_rows(self) -> int:
        """Above the limit, the passed rows built before it was reached go too: none is listed."""
        if not self.passed_rows_folded or self.html_report is None:
            return 0
        tests = self.html_report.data.get("tests", {})
        n = 0
        for nodeid in self.passed_rows_built:
            rows = tests.get(nodeid)
            if not rows:
                continue
            keep = [r for r in rows if r.get("result") != "Passed"]
            n += len(rows) - len(keep)
            if keep:
                tests[nodeid] = keep
            else:
                del tests[nodeid]
        self.passed_rows_built = []
        return n

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix, summary, postfix, session):  # noqa: ARG002
        if not self.active():
            return
        if self.html_report is not None:
            self.html_report.title = self._title()
        folded = self.passed_rows_folded + self._drop_built_passed_rows()
        self.passed_rows_folded = folded
        prefix.append(html.summary_html(self.node_infos(), {
            n: self.archive_href(n) for n in self.archives}, records=list(self.book),
            folded_passed=folded, passed_rows_limit=self.passed_rows_limit))

    # -------------------------------------------------------------- node summaries
    def node_infos(self):
        if self._infos is not None:
            return self._infos
        run = _fleet(self.config)
        by_node = self.book.by_node()
        by_node.pop("", None)
        bundles = dict(getattr(run, "bundles", {}) or {}) if run is not None else {}
        facts = dict(getattr(run, "facts", {}) or {}) if run is not None else {}
        nodes = list(bundles) + [n for n in by_node if n not in bundles]
        self._infos = [node_info(n, bundles.get(n), facts.get(n), by_node.get(n, [])) for n in nodes]
        # NOT EVALUATED (nodegate.session.selection): deselected, or selected items not run
        ne = run.not_evaluated() if run is not None and hasattr(run, "not_evaluated") else {}
        for i in self._infos:
            if i.node in ne and i.gather_status == "ok":
                i.gather_status = ne[i.node]
        self._infos += [node_info(n) for n in ne if n not in bundles and n not in by_node]
        for i in self._infos[len(nodes):]:
            i.gather_status = ne[i.node]
        return self._infos

    # -------------------------------------------------------------- outputs
    def pytest_sessionfinish(self, session, exitstatus):  # noqa: ARG002
        if _is_worker(self.config) or not self.active():
            return
        self._infos = None
        out = self.reports_dir()
        run = _fleet(self.config)
        inv = str(getattr(run, "inventory_path", "") or "") if run is not None else ""
        started = str(getattr(run, "started_at", "") or "") if run is not None else ""
        if self.config.option.collectonly:
            return   # --collect-only: nothing was evaluated, no report is written
        ne = run.not_evaluated() if run is not None and hasattr(run, "not_evaluated") else {}
        try:
            csv_p, json_p = rma.write(out, self.book, inventory=inv, generated_at=started, not_evaluated=ne)
            self.outputs += [("RMA (CSV)", str(csv_p)), ("RMA (JSON)", str(json_p))]
        except OSError as e:
            self.outputs.append(("RMA", f"not written: {e}"))
        self._write_archives(run)
        self._note_other_outputs()

    def _write_archives(self, run) -> None:
        by_node = self.book.by_node()
        bundles = dict(getattr(run, "bundles", {}) or {}) if run is not None else {}
        ne = run.not_evaluated() if run is not None and hasattr(run, "not_evaluated") else {}
        for info in self.node_infos():
            deselected = info.node in ne and not getattr(run, "items_selected", {}).get(info.node)
            if not info.has_problem or (deselected and not by_node.get(info.node)):
                continue   # healthy, or deselected (-k/-m): nothing of it was asked for
            recs: list[Record] = by_node.get(info.node, [])
            b = bundles.get(info.node)
            bdir = getattr(b, "path", None) or next((r.bundle_dir for r in recs if r.bundle_dir), None)
            try:
                self.archives[info.node] = archive.write_node_archive(
                    self.archive_dir(), info.node, Path(bdir) if bdir else None,
                    [r.to_dict() for r in recs],
                    spec_source=(getattr(run, "spec_source", {}) or {}).get(info.node, "") if run is not None else "")
            except OSError as e:
                self.outputs.append((f"archive of {info.node}", f"not written: {e}"))
        if self.archives:
            self.outputs.append(("Evidence archives", f"{self.archive_dir()}/ "
                                 f"({len(self.archives)} node(s) with problems)"))

    def _note_other_outputs(self) -> None:
        o = self.config.option
        if getattr(o, "htmlpath", None):
            self.outputs.insert(0, ("HTML report", str(o.htmlpath)))
        if getattr(o, "xmlpath", None):
            self.outputs.insert(1 if getattr(o, "htmlpath", None) else 0, ("JUnit XML", str(o.xmlpath)))

    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):  # noqa: ARG002
        if _is_worker(config) or not self.active() or config.option.collectonly:
            return
        terminalreporter.write_sep("=", "nodegate summary")
        for line in terminal.lines(self.node_infos(), self.outputs):
            terminalreporter.write_line(line)
        run = _fleet(config)
        if run is not None:
            for line in terminal.run_lines(getattr(run, "spec_source", {}) or {}, list(run.nodes),
                                           _shared_gpus(run)):
                terminalreporter.write_line(line, yellow=not line.startswith("spec: ") or "trusted" in line)
