"""Command-line behaviour of a nodegate run that is not gathering: ``--list-hosts`` and which
paths a run collects when none is named (the option values' own checks and listings:
nodegate.cmdline)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ..cmdline import installed_suites, render_hosts
from ..errors import SpecError, error_label
from .exitcodes import usage_error


def needs_inventory(config) -> None:
    """``--list-hosts`` without ``--inventory``: exit 2."""
    if not config.option.inventory:
        usage_error(config, "nodegate: --list-hosts needs --inventory")


def list_hosts(config, only: list[str] | None = None) -> None:
    """``--list-hosts[=json]``: exactly the hosts the same command line would contact (``only``:
    the nodes with a selected item, learned by ``preselect`` under -k/-m/--deselect/--lf; None:
    every host after --limit), with address, port, user, key file, connection, whether a password
    is set (never the password) and become; contacts nobody, exits 0. Called after every spec was
    validated as the run validates it (exit 2 the same way, same message)."""
    from .jobs import selected_hosts
    o = config.option
    needs_inventory(config)
    try:
        found, warnings = selected_hosts(config)
    except SpecError as e:
        usage_error(config, f"nodegate: {error_label(e)}: {e}")
    if only is not None:
        keep = set(only)
        found = [h for h in found if h.name in keep]
    hosts = [h.listing() for h in found]
    from .terminal import limit_warnings
    for w in limit_warnings(config, warnings, file=sys.stderr):
        sys.stderr.write(f"nodegate: warning: {w}\n")
    out = sys.stdout
    if o.list_hosts == "json":
        out.write(json.dumps(hosts, indent=1) + "\n")
    else:
        out.write(render_hosts(hosts))
    out.flush()
    pytest.exit("nodegate: --list-hosts: no node contacted", returncode=0)


def shows_only(config) -> bool:
    """``--help``, ``--version`` or ``--markers``: pytest prints and exits after pytest_configure,
    no session runs, so nothing is gathered or written."""
    o = config.option
    return bool(getattr(o, "help", False) or getattr(o, "version", False) or getattr(o, "markers", False))


def installed_suites_early(early_config) -> None:
    """pytest_load_initial_conftests of the ``nodegate`` command: the paths pytest anchors the
    initial conftest.py files at are the installed suites (a ``suites/...`` that does not exist
    here would anchor them at the working directory)."""
    if not os.environ.get("NODEGATE_CLI"):
        return
    ns = early_config.known_args_namespace
    if getattr(ns, "file_or_dir", None):
        from .jobs import SUITES
        ns.file_or_dir = installed_suites(ns.file_or_dir, early_config.invocation_params.dir, SUITES)


def installed_suites_args(config) -> None:
    """pytest_cmdline_main of the ``nodegate`` command, after pytest parsed the command line and
    before any plugin is configured: ``config.args`` (pytest's test paths) with ``suites`` naming
    the installed suites. Rewritten here, not in the raw arguments, so an option's value (``--reports-dir
    suites/out``, ``--deselect suites/...``: a test id, relative to the rootdir already) is never
    touched: pytest's own parser tells the two apart."""
    if not os.environ.get("NODEGATE_CLI"):
        return
    from .jobs import SUITES
    here = config.invocation_params.dir
    config.args = installed_suites(config.args, here, SUITES)
    if getattr(config.option, "file_or_dir", None):
        config.option.file_or_dir = installed_suites(config.option.file_or_dir, here, SUITES)


def anchor_conftests(early_config) -> None:
    """pytest_load_initial_conftests: a nodegate run that names no test path loads its initial
    conftest.py files from the installed suites, not from the working directory (pytest anchors
    them at the working directory when no path is given: a site's unrelated conftest.py would
    run, or fail, before anything of ours)."""
    from .jobs import SUITES
    ns = early_config.known_args_namespace
    if getattr(ns, "file_or_dir", None):
        return
    if any(getattr(ns, k, None) for k in ("inventory", "replay", "target")):
        ns.file_or_dir = [str(SUITES)]


def collect_the_suites(config) -> None:
    """A nodegate run that names no test path collects the installed suites, whatever the
    rootdir pytest chose. pytest chooses the rootdir and ini file before plugins add their
    options, so the value of ``--inventory /elsewhere/hosts.yml`` counts as a path there: the
    rootdir moves to the inventory's side, the project's ``testpaths`` is lost and pytest would
    collect the whole working directory (``config.args_source`` INVOCATION_DIR). ``nodegate``
    (nodegate/cli.py) avoids it with ``-c``/``--rootdir``; for plain pytest, ``--inventory=PATH``
    does, and this puts the suites back."""
    from .jobs import SUITES
    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.INVOCATION_DIR:
        return
    config.args = [str(SUITES)]
    if config.inipath is None:
        config.issue_config_time_warning(UserWarning(
            f"nodegate: pytest found no ini file (rootdir {config.rootpath}): it read an option's value as a path; "
            f"collecting the installed suites {SUITES}. Use `nodegate`, or --inventory=PATH"), stacklevel=2)


__all__ = ["collect_the_suites", "list_hosts", "render_hosts", "shows_only"]
