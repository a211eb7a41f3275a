"""Where a run writes, checked before anything is contacted; and the reports written as far as
the disk allows.

``check_outputs(config)`` (pytest_configure): the reports directory, a live run's bundles
directory, ``--save-bundles`` and the JUnit and HTML files' directories must be directories
this process can create files in (tried for real: root ignores permission bits but not a
read-only mount).
Otherwise the run stops with exit 2 naming the path and the reason, before any node is
contacted (the evidence of a run that cannot be kept is worth no SSH session).

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
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .exitcodes import usage_error
from .state import REPORT_PATHS_KEY

_PLUGIN_NAME = "nodegate-report-guard"


# ------------------------------------------------------------------ before anything is contacted
def unusable_dir(path: Path, anchor: Path | None = None) -> str | None:
    """Why files cannot be created in directory ``path`` (created if absent), or None.
    ``anchor``: the operator's directory ``path`` lies in (the reports directory of the default
    ``reports/bundles``): every directory below it is opened without following a link
    (nodegate.safeio.open_dir), and a link there is the reason."""
    p = Path(path)
    if anchor is not None:
        from ..safeio import LinkRefused, makedirs
        try:
            makedirs(p, anchor)
        except LinkRefused as e:
            return str(e)
        except (OSError, ValueError):
            pass   # said below, in the words of the ordinary checks
    if p.exists() and not p.is_dir():
        return f"{p} exists and is not a directory"
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is not a directory"
            break
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {p}: {e.strerror or e}"
    try:
        fd, name = tempfile.mkstemp(dir=p, prefix=".nodegate-write-test-")
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        return f"cannot create files in {p}: {e.strerror or e}"
    return None


def _output_dirs(config) -> list[tuple[str, Path]]:
    o = config.option
    reports = Path(o.reports_dir)
    out = [("--reports-dir", reports)]
    if not getattr(o, "replay", None):
        out.append(("--bundles-dir", Path(o.bundles_dir) if getattr(o, "bundles_dir", None) else reports / "bundles"))
    # every node directory below the bundles directory is opened without following a link
    # (Bundle.write); the default one below --reports-dir likewise (nodegate.safeio)
    if getattr(o, "save_bundles", None):
        out.append(("--save-bundles", Path(o.save_bundles)))
    taken = config.stash.get(REPORT_PATHS_KEY, None) or {}   # nodegate writes them (start.take_over_outputs)
    for opt, attr, key in (("--junitxml", "xmlpath", "junit"), ("--html", "htmlpath", "html")):
        f = taken.get(key) or getattr(o, attr, None)
        if f:
            p = Path(os.path.expandvars(str(f))).expanduser()
            if p.is_dir():
                out.append((opt, p / "is a directory, not a file"))
            out.append((opt, p.parent))
    return out


def check_outputs(config) -> None:
    """Exit 2 (``usage_error``) when an output location is unusable (see the module docstring)."""
    for opt, d in _output_dirs(config):
        if d.name == "is a directory, not a file":
            usage_error(config, f"nodegate: {opt} {d.parent}: is a directory, not a file (nothing was contacted)")
        anchor = Path(config.option.reports_dir) if (
            opt == "--bundles-dir" and not getattr(config.option, "bundles_dir", None)) else None
        why = unusable_dir(d, anchor)
        if why:
            usage_error(config, f"nodegate: {opt}: {why} (nothing was contacted)")


def check_live_options(config) -> None:
    """Exit 2 before any node is contacted when a live run's option cannot work: a
    ``--known-hosts FILE`` that does not exist (every host key would be "unknown", with no word
    of the file), ``--forks`` below 1."""
    o = config.option
    if getattr(o, "replay", None):
        return
    for f in getattr(o, "known_hosts", None) or []:
        p = Path(f).expanduser()
        if not p.is_file():
            usage_error(config, f"nodegate: --known-hosts {f}: {'not a file' if p.exists() else 'no such file'} "
                                "(nothing was contacted)")
    if getattr(o, "forks", 1) < 1:
        usage_error(config, f"nodegate: --forks {o.forks}: at least 1 (nothing was contacted)")


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
