"""The run's node jobs and their spec for this pytest session (``nodegate.jobs`` and
``nodegate.specsource`` do the work, pytest-free), and which pytest runs are nodegate runs.

Runs at pytest_configure, before any node is contacted: a bad inventory, host or spec raises
``SpecError`` (the plugin exits 2 naming file, host, key and reason).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import jobs as inputs
from .. import specsource
from ..inventory import sources_label
from ..run import NodeJob
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
