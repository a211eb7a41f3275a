"""Site test ids named by the path the user gave: ``site/test_fm.py::test_fm_active[gpu01]``.

pytest names a test file relative to its rootdir, and a file outside the rootdir relative to the
command-line argument that holds it (``_pytest.nodes._check_initialpaths_for_relpath``). The
``nodegate`` command's rootdir is the installed package's folder (nodegate/cli.py), so a site's
own ``nodegate site/`` got ids without their folder (``test_fm.py::...``): two folders' files of
one name collided, ``--deselect site/test_fm.py::test_x`` matched nothing, and the terminal
printed the file as if it were beside the package (``../nodegate/test_fm.py``).

Here every collected module that is not one of nodegate's suites, in a nodegate run, is named by
the argument that holds it as the user typed it (normalised: ``./site/`` -> ``site``), plus the
file's path below it: pytest's own id when it is run from its folder. Those ids are the ones in
results.jsonl, junit.xml (classname ``site.test_fm``), the HTML and ``--deselect``. pytest's
terminal reads every id as relative to the rootdir (``Config.cwd_relative_nodeid``,
``TerminalReporter.write_fspath_result``): ``install_terminal`` makes both show these ids as
they are (they already are relative to the working directory, or absolute as given), and
``--lf`` finds the files of the last failures by them too (pytest's cache looks each id's file up
below the rootdir: ``LFPlugin.get_last_failed_paths``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: the module id paths this run gave (config.stash): the terminal shows them as they are
PATHS_KEY = pytest.StashKey[set]()


def user_path(config, path: Path) -> str | None:
    """``path`` (a collected module) named as the command-line argument holding it was given, or
    None when no argument holds it."""
    here = config.invocation_params.dir
    full = os.path.abspath(path)
    best = None
    for arg in config.args or ():
        given = str(arg).split("::", 1)[0]
        if not given:
            continue
        base = os.path.abspath(given if os.path.isabs(given) else os.path.join(here, given))
        if full != base and not full.startswith(base.rstrip(os.sep) + os.sep):
            continue
        if best is not None and len(base) <= len(best[0]):
            continue   # the innermost argument names it (site/ and site/test_x.py both given)
        rest = os.path.relpath(full, base)
        name = os.path.normpath(given) if rest == "." else os.path.join(os.path.normpath(given), rest)
        best = (base, name.replace(os.sep, "/"))
    return best[1] if best else None


def make_module(config, module_path: Path, parent):
    """pytest_pycollect_makemodule: the site module with its id named as the user gave its path
    (None: pytest's own, for nodegate's suites and anything no argument holds)."""
    from ..session.api import SUITES
    try:
        Path(os.path.abspath(module_path)).relative_to(SUITES)
        return None
    except ValueError:
        pass
    name = user_path(config, module_path)
    if name is None:
        return None
    config.stash.setdefault(PATHS_KEY, set()).add(name)
    return pytest.Module.from_parent(parent, path=module_path, nodeid=name)


def install_terminal(config) -> None:
    """Make pytest's terminal show the site modules' ids as they are (module docstring)."""
    paths = config.stash.setdefault(PATHS_KEY, set())
    orig = config.cwd_relative_nodeid

    def cwd_relative_nodeid(nodeid):
        p = getattr(nodeid, "path", None)
        if p is None:
            p = str(nodeid).split("::", 1)[0]
        return nodeid if p in paths else orig(nodeid)
    config.cwd_relative_nodeid = cwd_relative_nodeid
    _last_failed_files(config)
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None or not hasattr(tr, "write_fspath_result"):
        return
    write = tr.write_fspath_result

    def write_fspath_result(nodeid, res, **markup):
        p, sep, rest = str(nodeid).partition("::")
        if p in paths and not os.path.isabs(p):
            # pytest joins the id to the rootdir: give it the file's absolute path instead
            nodeid = str(config.invocation_params.dir / p) + sep + rest
        return write(nodeid, res, **markup)
    tr.write_fspath_result = write_fspath_result


def _last_failed_files(config) -> None:
    """``--lf``: the files of the last failures named by these ids (relative to the working
    directory, or absolute) count as files with failures, else pytest skips them unread."""
    lf = config.pluginmanager.get_plugin("lfplugin")
    paths = getattr(lf, "_last_failed_paths", None)
    if not isinstance(paths, set):
        return
    here = config.invocation_params.dir
    for nodeid in getattr(lf, "lastfailed", {}) or {}:
        p = getattr(nodeid, "path", None) or str(nodeid).split("::", 1)[0]
        full = Path(os.path.abspath(here / p))
        if full.is_file():
            paths.add(full)
            paths.update(full.parents)
