"""The reports written as far as the disk allows (where a run writes is checked before anything
is contacted: nodegate.cmdline.check_outputs).

``ReportGuard`` (a pytest plugin): pytest's JUnit writer and pytest-html write their files in
``pytest_sessionfinish``; on a full disk (ENOSPC, EDQUOT) or a file system gone read-only one
raises, pytest prints an INTERNALERROR traceback, the session-finish hooks after it never run
(the HTML, rma.csv/json and the archives are not written) and a truncated or 0-byte junit.xml
is left (a CI then reports an XML parse error instead of the run). The guard is the innermost
wrapper of ``pytest_sessionfinish``: it catches the OSError, removes the truncated file, runs
the session-finish hooks that had not run yet (pluggy's public ``get_hookimpls``; each writer
on its own, its failure recorded), writes a minimal valid junit.xml naming the error when the
full one did not fit, prints what was not written and why, and makes the exit status 1 at
least. tests/hostile/test_outputs.py fails the day pytest or pluggy change that order.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest


_PLUGIN_NAME = "nodegate-report-guard"


# ------------------------------------------------------------------ the reports, as far as the disk allows
def _writer_output(plugin, config) -> tuple[str, Path | None]:
    """What a session-finish hook that failed was writing: ("JUnit XML", path) for pytest's
    LogXML, ("HTML report", path) for pytest-html, else (its name, None)."""
    cls = type(plugin)
    if cls.__name__ == "LogXML":
        return "JUnit XML", Path(getattr(plugin, "logfile", "") or config.option.xmlpath)
    if cls.__module__.startswith("pytest_html") and getattr(config.option, "htmlpath", None):
        return "HTML report", Path(os.path.expandvars(config.option.htmlpath)).expanduser()
    return getattr(cls, "__name__", str(plugin)), None


def _failing_impl(exc: BaseException, impls):
    """The hook implementation in whose frame ``exc`` was raised (matched by code object)."""
    codes = {}
    for impl in impls:
        code = getattr(getattr(impl.function, "__func__", impl.function), "__code__", None)
        if code is not None:
            codes[code] = impl
    tb = exc.__traceback__
    hit = None
    while tb is not None:
        hit = codes.get(tb.tb_frame.f_code, hit)
        tb = tb.tb_next
    return hit


def minimal_junit(path: Path, what: str, error: str, counts: dict[str, int]) -> None:
    """A small valid JUnit file in place of the one the disk could not hold: one testcase in
    error naming what was not written and why, and the run's totals."""
    summary = ", ".join(f"{v} {k}" for k, v in counts.items()) or "no results"
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="nodegate", tests="1", errors="1", failures="0", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="nodegate.reports", name="reports_written")
    err = ET.SubElement(case, "error", message=f"{what} not written: {error}")
    err.text = (f"nodegate could not write {path}: {error}.\nThe run's results: {summary}.\n"
                "The other reports written are listed in the terminal summary.")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        from ..safeio import write_bytes
        write_bytes(tmp, ET.tostring(suites, encoding="utf-8", xml_declaration=True))
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


class ReportGuard:
    """See the module docstring. ``failures``: (what, path, error) of every output not written."""

    def __init__(self, config):
        self.config = config
        self.failures: list[tuple[str, str, str]] = []

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        try:
            return (yield)
        except OSError as e:
            self._go_on(session, exitstatus, e)
            return None

    def _go_on(self, session, exitstatus, exc: OSError) -> None:
        impls = [i for i in reversed(session.config.pluginmanager.hook.pytest_sessionfinish.get_hookimpls())
                 if not (i.wrapper or i.hookwrapper)]
        failed = _failing_impl(exc, impls)
        if failed is None:   # not raised by a session-finish hook we can place: report it, run nothing twice
            self._record(f"session finish ({type(exc).__name__})", None, exc)
        else:
            self._record(*_writer_output(failed.plugin, self.config), exc)
            args = {"session": session, "exitstatus": exitstatus}
            for impl in impls[impls.index(failed) + 1:]:
                try:
                    impl.function(*[args[a] for a in impl.argnames])
                except OSError as e:
                    self._record(*_writer_output(impl.plugin, self.config), e)
        self._fallback_junit(session)
        if not session.exitstatus:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _record(self, what: str, path: Path | None, exc: OSError) -> None:
        err = f"{exc.strerror or exc}" + (f" (errno {exc.errno})" if exc.errno else "")
        if path is not None:
            try:   # a truncated file is worse than none: a CI parses it and reports garbage
                path.unlink()
            except OSError:
                pass
        self.failures.append((what, str(path) if path is not None else "", err))

    def _fallback_junit(self, session) -> None:
        junit = [(w, p, e) for w, p, e in self.failures if w == "JUnit XML" and p]
        if not junit:
            return
        what, path, err = junit[0]
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        counts = {k: len(v) for k, v in (getattr(tr, "stats", {}) or {}).items() if k and isinstance(v, list)}
        try:
            minimal_junit(Path(path), what, err, counts)
            self.failures[self.failures.index(junit[0])] = (what, path, err + "; a minimal junit.xml naming this "
                                                                       "error was written instead")
        except OSError:
            pass

    def pytest_terminal_summary(self, terminalreporter):
        if not self.failures:
            return
        terminalreporter.write_sep("=", "nodegate: reports NOT written", red=True)
        for what, path, err in self.failures:
            terminalreporter.write_line(f"{what}{' ' + path if path else ''}: NOT written: {err}", red=True)


def install(config) -> None:
    """Register the ReportGuard (nodegate runs, not xdist workers)."""
    if not config.pluginmanager.has_plugin(_PLUGIN_NAME):
        config.pluginmanager.register(ReportGuard(config), _PLUGIN_NAME)
