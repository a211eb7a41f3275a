"""pytest plugin: nodegate's reports (registered next to plugins/nodegate_plugin.py).

Hook wiring only; the work is in nodegate.reports (docs/reports.md):
- every phase report: ``report.user_properties`` cleaned of control characters and capped (once
  per test); on the controller the verdict (``report.nodegate``) recorded, and at the test's
  teardown its line written to ``<reports>/results.jsonl`` (nodegate.reports.live);
- after every plugin saw a report: what nothing reads any more dropped from it (pytest's
  terminal reporter keeps every report until the session ends: bounded memory);
- pytest-metadata: secrets redacted from the environment metadata;
- session finish (controller only): every report rendered from results.jsonl (JUnit, report.html
  and nodes/<node>.html, rma.csv/rma.json/actions.csv, evidence archives: nodegate.reports.render);
- terminal: the verdict line, a per-node summary and the paths written.

nodegate writes the JUnit and HTML reports itself (``--junitxml`` and ``--html`` keep their
meaning: nodegate.cmdline.report_paths). Passive unless the run has a FleetRun
(``nodegate.run.RUN_KEY``) or reports carrying ``report.nodegate``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.reports import junit, terminal
from nodegate.reports import metadata as ng_metadata
from nodegate.reports.status import JUDGED_ON_NOTHING
from nodegate.reports.live import RunReports, compact, forget_passed_phase, sanitize_properties  # noqa: F401
from nodegate.reports.text import one_line

try:
    from nodegate.run import RUN_KEY
    from nodegate.session.exitcodes import writes_no_report
    from nodegate.session.state import ACTIVE_KEY, COLLECTED_KEY, NO_RUN_KEY, REPORT_PATHS_KEY
except Exception:  # pragma: no cover - the reports still work from report.nodegate alone
    RUN_KEY = ACTIVE_KEY = COLLECTED_KEY = NO_RUN_KEY = REPORT_PATHS_KEY = None

_PLUGIN_NAME = "nodegate-reports"
_CONFIG: list = [None]   # the session's config (pytest_runtest_logreport is not given one)


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def _fleet(config):
    if RUN_KEY is None:
        return None
    try:
        return config.stash.get(RUN_KEY, None)
    except Exception:  # noqa: BLE001 - a broken run object must not break the reports
        return None


def pytest_addoption(parser):
    g = parser.getgroup("nodegate")
    g.addoption("--html-passed-rows", type=int, default=None, metavar="N",
                help="ignored (kept for old command lines): nodegate's HTML counts passed items per node and "
                     "check and lists them on the node's page")
    g.addoption("--junit-max-objects", type=int, default=junit.MAX_OBJECTS, metavar="N",
                help="XML elements per JUnit file at most; a larger run is split into junit/part-NNN.xml plus a "
                     f"summary (default {junit.MAX_OBJECTS}: GitLab refuses files over {junit.GITLAB_MAX_OBJECTS})")


@pytest.hookimpl(optionalhook=True)
def pytest_metadata(metadata, config):  # noqa: ARG001 - pytest-metadata's hook signature
    """pytest-metadata copies CI variables: drop secrets before anything shows them."""
    ng_metadata.redact(metadata)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``nodegate --help``: nodegate's option groups first, and testinfra's options that a
    nodegate run refuses marked so (nodegate.reports.terminal.help_first). Returns None: pytest
    prints the help as usual."""
    import os
    if getattr(config.option, "help", False) and os.environ.get("NODEGATE_CLI"):
        try:
            from .nodegate_site import _REFUSED
        except Exception:  # noqa: BLE001 - the site plugin not loaded: nothing to mark
            _REFUSED = ()
        terminal.help_first(config._parser, [flag for _, flag in _REFUSED])


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    """Local mode (no --inventory, --replay or remote --target) on a machine without an NVIDIA
    driver: said in the run's first line, before pytest's header (the checks would all fail)."""
    config = session.config
    if _is_worker(config) or ACTIVE_KEY is None or not config.stash.get(ACTIVE_KEY, False):
        return
    line = terminal.local_mode_line(config.option)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if line and tr is not None:
        tr.write_line(line, yellow=True, bold=True)


def pytest_configure(config):
    _CONFIG[0] = config
    config.pluginmanager.register(NodegateReports(config), _PLUGIN_NAME)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    """After every plugin saw the report (terminal, xdist, site plugins): compacted, and a passed
    setup/teardown report not kept by the terminal reporter (only nodegate's items: those
    carrying ``report.nodegate``; nodegate.reports.live)."""
    if getattr(report, "nodegate", None) is None:
        return
    compact(report)
    config = _CONFIG[0]
    if config is not None and config.stash.get(ACTIVE_KEY, False):
        forget_passed_phase(config, report)


def pytest_unconfigure(config):
    if _CONFIG[0] is config:
        _CONFIG[0] = None
    p = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if p is not None:
        config.pluginmanager.unregister(p)


def _shared_gpus(run) -> list:
    try:
        return run.shared_gpus()
    except Exception:  # noqa: BLE001 - untrusted facts: the summary line is best effort
        return []


def report_failures(session, config, failures, junit_path) -> None:
    """Outputs a full disk kept from being written: listed with the reason (nodegate's report
    guard prints them: "nodegate: reports NOT written"), a small valid junit.xml naming the
    error in place of the one that did not fit, and the exit status at least 1."""
    from nodegate.session import outputs
    guard = config.pluginmanager.get_plugin(outputs._PLUGIN_NAME)
    for what, path, err in failures:
        if what == "JUnit XML" and junit_path:
            tr = config.pluginmanager.get_plugin("terminalreporter")
            counts = {k: len(v) for k, v in (getattr(tr, "stats", {}) or {}).items() if k and isinstance(v, list)}
            try:
                outputs.minimal_junit(Path(junit_path), what, err, counts)
                err += "; a minimal junit.xml naming this error was written instead"
            except OSError:
                pass
        if guard is not None:
            guard.failures.append((what, path, err))
    if not session.exitstatus:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def run_environment(run, env: dict) -> dict:
    """The environment table of the HTML report: pytest-metadata's, plus where the nodes' specs
    came from and GPUs that two nodes report (docs/security.md "Contradictory evidence")."""
    env = dict(env)
    if run is not None and getattr(run, "spec_source", None):
        from nodegate.specsource import summary
        env["nodegate spec source"] = "; ".join(summary(run.spec_source, list(run.all_nodes)))
    shared = _shared_gpus(run) if run is not None else []
    if shared:   # one board cannot be in two nodes
        env["nodegate GPUs on more than one node"] = "; ".join(
            f"{what} {v}: " + ", ".join(f"{n} (gpu{i})" for n, i in where[:8]) for what, v, where in shared[:20])
    return env


class NodegateReports:
    """Per-session hooks; the state is a nodegate.reports.live.RunReports."""

    def __init__(self, config):
        self.config = config
        paths = config.stash.get(REPORT_PATHS_KEY, None) if REPORT_PATHS_KEY is not None else None
        self.paths = paths or {}
        self.state = RunReports(self.reports_dir(), self.paths.get("junit"), self.paths.get("html"))
        self._listening = False
        self._seen_nodegate = False

    def reports_dir(self):
        from pathlib import Path
        run = _fleet(self.config)
        d = getattr(run, "reports_dir", None) if run is not None else None
        return Path(d or getattr(self.config.option, "reports_dir", None) or "reports")

    def active(self) -> bool:
        return _fleet(self.config) is not None or self._seen_nodegate

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):  # noqa: ARG002
        run = _fleet(self.config)
        if run is None or _is_worker(self.config) or self.config.option.collectonly:
            return   # --collect-only: nothing is evaluated, no report is written
        # results.jsonl is opened (truncated) by the first finished item, not here: a run that
        # stops before any check (exit 2, nothing selected) leaves the previous run's reports
        self.state.reports_dir = self.reports_dir()
        if hasattr(run, "on_release") and not self._listening:
            run.on_release.append(lambda n, b, f: self.state.on_release(
                n, b, f, str(getattr(run, "spec_source", {}).get(n, "") or "")))
            self._listening = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        """Before other plugins read the report: properties cleaned; the record taken."""
        self.state.sanitize_once(report)
        if _is_worker(self.config):
            return
        if getattr(report, "nodegate", None) is not None:
            self._seen_nodegate = True
        if self.active():
            self.state.record(report)

    def pytest_sessionfinish(self, session, exitstatus):  # noqa: ARG002
        if _is_worker(self.config) or not self.active() or self.config.option.collectonly:
            return
        if NO_RUN_KEY is not None and writes_no_report(self.config, exitstatus):
            # exit 2 (usage error, collection error, nothing selected): nothing to report, and the
            # previous run's reports stay as they were (nodegate.session.exitcodes), results.jsonl
            # too when items of an earlier shard had run (issue 40.8)
            self.state.discard()
            return
        run = _fleet(self.config)
        expected = dict(self.config.stash.get(COLLECTED_KEY, {}) or {}) if COLLECTED_KEY is not None else {}
        env = {}
        try:
            from pytest_metadata.plugin import metadata_key
            env = dict(self.config.stash.get(metadata_key, {}) or {})
        except Exception:  # noqa: BLE001 - pytest-metadata is optional here
            env = {}
        sections = []
        try:
            for got in self.config.hook.pytest_nodegate_report_sections(config=self.config) or ():
                sections.extend(got or ())
        except AttributeError:   # the suite plugin (and its hook specs) not loaded
            pass
        self.state.render(run=run, expected=expected, title=self._title(), inventory=self._inventory(),
                          sections=sections,
                          started=str(getattr(run, "started_at", "") or "") if run is not None else "",
                          environment=run_environment(run, env),
                          junit_max_objects=int(getattr(self.config.option, "junit_max_objects", None)
                                                or junit.MAX_OBJECTS),
                          run_order=bool(getattr(self.config.option, "numprocesses", None)))
        failures = self.state.rendered.failures if self.state.rendered is not None else []
        if failures:
            report_failures(session, self.config, failures, self.paths.get("junit"))
        if int(session.exitstatus) == 0 and self.state.rendered is not None and any(
                i.not_evaluated.startswith(JUDGED_ON_NOTHING) for i in self.state.rendered.infos):
            # issue 37.5: a node whose every item the spec skipped was judged on nothing; the run
            # is not a pass (exit 1, README "Exit codes"), whatever the items say
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _inventory(self) -> str:
        run = _fleet(self.config)
        return str(getattr(run, "inventory_path", "") or "") if run is not None else ""

    def _title(self) -> str:
        run = _fleet(self.config)
        inv = getattr(run, "inventory_path", None) if run is not None else None
        if inv is None and run is not None and getattr(run, "mode", "") == "replay":
            inv = f"replay {run.bundles_dir}"
        started = getattr(run, "started_at", "") if run is not None else ""
        return one_line(f"nodegate acceptance: {inv or 'no inventory'}"
                        + (f", run started {started}" if started else ""), 500)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):  # noqa: ARG002
        """The nodegate summary first (verdict, nodes, one line per node problem with its fix),
        then pytest's own sections, without the items of nodes that were never gathered (every
        item of such a node is the same ERROR: its one line above says it and how to fix it;
        they stay counted in pytest's last line)."""
        folded: dict = {}
        if not (_is_worker(config) or not self.active() or self.state.rendered is None):
            terminalreporter.write_sep("=", "nodegate summary")
            r = self.state.rendered
            for line in terminal.lines(r.infos, self.state.outputs, statuses=r.statuses):
                terminalreporter.write_line(line)
            if r.stale_removed:
                terminalreporter.write_line(terminal.stale_line(r.stale_removed), yellow=True)
            run = _fleet(config)
            if run is not None:
                for line in terminal.run_lines(getattr(run, "spec_source", {}) or {}, list(run.all_nodes),
                                               _shared_gpus(run)):
                    terminalreporter.write_line(line, yellow=not line.startswith("spec: ") or "trusted" in line)
            folded = terminal.fold_unreached(terminalreporter.stats, r.infos)
        try:
            return (yield)
        finally:
            for key, reports in folded.items():
                terminalreporter.stats.setdefault(key, []).extend(reports)
