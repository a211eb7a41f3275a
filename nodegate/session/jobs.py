"""What a nodegate run is, for this pytest session: which pytest runs are nodegate runs and the
test paths they collect, the run's node jobs and their spec (``nodegate.jobs`` and
``nodegate.specsource`` do the work, pytest-free), and ``--list-hosts`` (the option values' own
checks and listings: nodegate.cmdline).

Runs at pytest_configure, before any node is contacted: a bad inventory, host or spec raises
``SpecError`` (the plugin exits 2 naming file, host, key and reason).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from .. import jobs as inputs
from .. import specsource
from ..cmdline import installed_suites, render_hosts
from ..errors import SpecError, error_label
from ..inventory import sources_label
from ..run import NodeJob
from .exitcodes import usage_error
from .state import INVENTORY_KEY


def _suites_dir() -> Path:
    """The installed ``nodegate.suites`` package (site-packages/nodegate/suites, or the checkout's
    suites/ in an editable install or on PYTHONPATH), found without importing its test modules."""
    import importlib.util
    spec = importlib.util.find_spec("nodegate.suites")
    if spec is not None and spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0]).resolve()
    return Path(__file__).resolve().parents[2] / "suites"


#: the suites nodegate ships: a run naming a path under it is a nodegate run
SUITES = _suites_dir()


def is_nodegate_run(config) -> bool:
    """A nodegate run: --inventory, --replay or --target given, or a path under the suites
    named. Otherwise (the project's own tests) the plugins stay passive."""
    o = config.option
    if getattr(o, "inventory", None) or getattr(o, "replay", None) or getattr(o, "target", None):
        return True
    return any(under_suites(config, a) for a in (config.args or []))


def under_suites(config, arg: str) -> bool:
    """A test path argument (``path[::name]``, relative to the invocation directory) names
    something under nodegate's suites."""
    p = Path(arg.split("::")[0])
    p = p if p.is_absolute() else Path(config.invocation_params.dir) / p
    try:
        p.resolve().relative_to(SUITES)
        return True
    except ValueError:
        return False


def build_jobs(config) -> list[NodeJob]:
    """``nodegate.jobs.build_jobs`` for this run's options: the inventory kept for the other
    plugins (``INVENTORY_KEY``), ansible-core's "matches nothing" warnings for ``--limit`` on the
    terminal (said once), the others as pytest's configure-time warnings. Raises SpecError."""
    from .terminal import limit_warnings

    def keep(inv, warnings) -> None:
        config.stash[INVENTORY_KEY] = inv
        for w in limit_warnings(config, warnings):   # a --limit part matching nothing: on the terminal
            config.issue_config_time_warning(UserWarning(f"nodegate: {w}"), stacklevel=2)

    return inputs.build_jobs(config.option, Path(config.invocation_params.dir), on_inventory=keep).jobs


def selected_hosts(config):
    """(hosts, warnings) of ``--inventory`` + ``--limit`` (``nodegate.jobs.selected_hosts``), the
    inventory kept (``INVENTORY_KEY``)."""
    inv, hosts, warnings = inputs.selected_hosts(config.option)
    config.stash[INVENTORY_KEY] = inv
    return hosts, warnings


#: (raw spec dict, its source string) of ``--spec`` once loaded
_SPEC_FILE_KEY = pytest.StashKey[tuple]()


def spec_file(config) -> tuple[dict, str] | None:
    """``(raw spec, "--spec FILE")`` when ``--spec`` was given (``specsource.load_file``, read
    once a run), else None. Raises SpecError for a bad file."""
    path = getattr(config.option, "spec", None)
    if not path:
        return None
    got = config.stash.get(_SPEC_FILE_KEY, None)
    if got is None:
        got = config.stash[_SPEC_FILE_KEY] = (specsource.load_file(path), f"--spec {path}")
    return got


def run_jobs(config) -> list[NodeJob]:
    """The run's jobs (``build_jobs``), with ``--spec``'s spec in place of their own when given:
    the spec gathered with (recorded in each bundle) and judged by. Raises SpecError."""
    jobs = build_jobs(config)
    got = spec_file(config)
    return jobs if got is None else inputs.with_spec(jobs, *got)


def live_source(config) -> str:
    """Where the nodes' spec of a live run comes from (``FleetRun.spec_source``)."""
    got = spec_file(config)
    if got is not None:
        return got[1]
    inv = getattr(config.option, "inventory", None)
    return f"inventory {sources_label(inv)}" if inv else specsource.TARGET


# ------------------------------------------------------------------ paths and --list-hosts
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
        ns.file_or_dir = installed_suites(ns.file_or_dir, early_config.invocation_params.dir, SUITES)


def installed_suites_args(config) -> None:
    """pytest_cmdline_main of the ``nodegate`` command, after pytest parsed the command line and
    before any plugin is configured: ``config.args`` (pytest's test paths) with ``suites`` naming
    the installed suites. Rewritten here, not in the raw arguments, so an option's value (``--reports-dir
    suites/out``, ``--deselect suites/...``: a test id, relative to the rootdir already) is never
    touched: pytest's own parser tells the two apart."""
    if not os.environ.get("NODEGATE_CLI"):
        return
    here = config.invocation_params.dir
    config.args = installed_suites(config.args, here, SUITES)
    if getattr(config.option, "file_or_dir", None):
        config.option.file_or_dir = installed_suites(config.option.file_or_dir, here, SUITES)


def anchor_conftests(early_config) -> None:
    """pytest_load_initial_conftests: a nodegate run that names no test path loads its initial
    conftest.py files from the installed suites, not from the working directory (pytest anchors
    them at the working directory when no path is given: a site's unrelated conftest.py would
    run, or fail, before anything of ours)."""
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
    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.INVOCATION_DIR:
        return
    config.args = [str(SUITES)]
    if config.inipath is None:
        config.issue_config_time_warning(UserWarning(
            f"nodegate: pytest found no ini file (rootdir {config.rootpath}): it read an option's value as a path; "
            f"collecting the installed suites {SUITES}. Use `nodegate`, or --inventory=PATH"), stacklevel=2)
