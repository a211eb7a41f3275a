"""Which nodes a run targets and with what spec: inventory (or ``--target``) -> ``NodeJob``s.

Everything here runs at pytest_configure, before any node is contacted: a bad inventory, host
or spec raises ``SpecError`` (the plugin exits 2 naming file, host, key and reason).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..errors import SpecError
from ..inventory import Host, load_inventory, redact_url
from ..run import NodeJob
from .state import spec_get

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


def load_spec(raw: dict, source: str):
    """The validated Spec of one node (``nodegate.spec.load_spec``); SpecError names ``source``."""
    from ..spec import load_spec as _load
    return _load(raw, source)


def selected_hosts(config) -> tuple[list[Host], list[str]]:
    """The inventory hosts of the run (``--inventory`` + ``--limit``), resolved by ansible-core
    (nodegate.inventory), and the warnings to show: Ansible's own, two hosts on one address and
    port, host key checking turned off in the inventory (nodegate verifies host keys anyway)."""
    from .state import INVENTORY_KEY
    o = config.option
    inv = load_inventory(o.inventory)
    config.stash[INVENTORY_KEY] = inv
    hosts = inv.select(o.limit)
    return hosts, [f"ansible-core: {w}" for w in inv.warnings] + duplicate_addresses(hosts) + \
        [f"{h.name}: the inventory turns host key checking off; nodegate verifies host keys all the same "
         "(--known-hosts, --accept-new-host-keys)" for h in hosts if h.host_key_checking is False]


def duplicate_addresses(hosts: list[Host]) -> list[str]:
    """One warning per host that resolves to the address and port of an earlier one."""
    seen: dict[tuple, str] = {}
    out = []
    for h in hosts:
        if h.connection == "local":
            continue
        key = (h.address, h.port or 22)
        if key in seen:
            out.append(f"inventory hosts {seen[key]} and {h.name} resolve to the same address and port "
                       f"({h.address}:{h.port or 22}): one machine gathered twice is judged twice")
        else:
            seen[key] = h.name
    return out


def build_jobs(config) -> list[NodeJob]:
    """One NodeJob per selected inventory host, or one for ``--target`` (default
    ``local://``). Raises SpecError for a bad inventory, host or spec. Two hosts that resolve
    to one address and port are a warning naming both (they are probably one machine)."""
    o = config.option
    if not o.inventory:
        url = o.target or "local://"
        name = local_name(url)
        spec = load_spec({}, "--target (no inventory: defaults)")
        return [_job(name, url, redact_url(url), {}, spec)]
    refuse_reports_in_inventory(config)
    jobs: list[NodeJob] = []
    hosts, warnings = selected_hosts(config)
    from .terminal import limit_warnings
    for w in limit_warnings(config, warnings):   # a --limit part matching nothing: on the terminal
        config.issue_config_time_warning(UserWarning(f"nodegate: {w}"), stacklevel=2)
    for h in hosts:
        raw = h.spec_raw
        merged_from = f"host {h.name}'s nodegate variable, merged from " + ", ".join(h.sources)
        try:
            spec = load_spec(raw, merged_from)
        except SpecError as merged:
            raise _in_its_file(config, h.name, merged, merged_from) from None
        jobs.append(_job(h.name, h.url(), h.redacted_url(), raw, spec, h.groups))
    return jobs


def _in_its_file(config, name: str, merged: SpecError, merged_from: str) -> SpecError:
    """The merged spec of ``name`` is invalid: the error of the file (group_vars/, host_vars/ or
    the inventory itself) whose own ``nodegate:`` fragment is invalid, else the merged one."""
    from ..specorigin import locate_spec_error
    from .state import INVENTORY_KEY
    inv = config.stash.get(INVENTORY_KEY, None)
    if inv is None:
        return merged
    mine = locate_spec_error(inv, name, load_spec, str(merged).removeprefix(merged_from + ": "))
    if mine:
        return type(merged)(mine)
    # no single file's fragment is invalid on its own (the merge made the bad value): name every
    # file that sets each failing key instead
    return type(merged)(f"{merged}{spec_origin_note(config, name, str(merged))}")


def spec_origin_note(config, name: str, message: str) -> str:
    """``" (nodegate.gpu.count is set in /site/group_vars/h100.yml)"``: the files of the inventory
    that set each failing key of a spec error (README: the error names the file), the last being
    the value the merge kept; "" when none is found (e.g. a key made by Jinja)."""
    from .state import INVENTORY_KEY
    inv = config.stash.get(INVENTORY_KEY, None)
    if inv is None:
        return ""
    notes = []
    for key in dict.fromkeys(re.findall(r"nodegate\.([^:;\s]+):", message)):
        files = inv.spec_origins(name, key)
        if files:
            notes.append(f"nodegate.{key} is set in " + ", ".join(files))
    return f" ({'; '.join(notes)})" if notes else ""


def refuse_reports_in_inventory(config) -> None:
    """SpecError when ``--reports-dir`` (or ``--bundles-dir``) lies inside an inventory directory:
    ansible-core reads every file of an inventory directory as an inventory source, so the next
    run would parse ``actions.csv``, ``junit.xml`` or a bundle's files as inventory ("failed to
    parse .../actions.csv"; ansible's inventory directory walk skips only its ignore patterns).
    A file inventory beside the reports is fine."""
    o = config.option
    sources = o.inventory if isinstance(o.inventory, (list, tuple)) else [o.inventory]
    base = Path(config.invocation_params.dir)
    outs = [(flag, v) for flag, v in (("--reports-dir", getattr(o, "reports_dir", None) or "reports"),
                                      ("--bundles-dir", getattr(o, "bundles_dir", None))) if v]
    for src in sources:
        if not src or "," in str(src):
            continue
        inv = (base / Path(str(src)).expanduser()).resolve()
        if not inv.is_dir():
            continue
        for flag, v in outs:
            out = (base / Path(str(v)).expanduser()).resolve()
            if out == inv or inv in out.parents:
                raise SpecError(f"{flag} {v} is inside the inventory directory {src}: ansible-core reads every "
                                f"file there as inventory (the next run would parse {out.name}/actions.csv); write "
                                f"the reports outside it, e.g. --reports-dir {inv.parent / 'nodegate-reports'}")


def _job(name: str, url: str, shown: str, raw: dict, spec, groups: tuple[str, ...] = ()) -> NodeJob:
    return NodeJob(name=name, url=url, shown_url=shown, spec_raw=raw, groups=tuple(groups),
                   persistence_user=str(spec_get(spec, "persistence.user", "") or ""),
                   clocks_samples=int(spec_get(spec, "clocks.samples", 3) or 3))


def local_name(url: str) -> str:
    """Node name for a ``--target`` URL: the controller's short hostname for local://, else the
    URL's host part."""
    if url.startswith("local"):
        return os.uname().nodename.split(".")[0] or "localhost"
    host = url.split("://", 1)[-1].split("@")[-1].split("?")[0]
    return host.split(":")[0].strip("[]") or "node"


class SpecCache:
    """``load_spec`` once per distinct raw spec: the nodes of a fleet mostly share a few (one
    validated Spec object each instead of one per node: time and memory at 4,096 nodes)."""

    def __init__(self) -> None:
        self._by_raw: dict[str, object] = {}

    def get(self, raw: dict, source: str):
        import json
        try:
            key = json.dumps(raw, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return load_spec(raw, source)
        spec = self._by_raw.get(key)
        if spec is None:
            spec = self._by_raw[key] = load_spec(raw, source)
        return spec


__all__ = ["SUITES", "SpecCache", "SpecError", "build_jobs", "duplicate_addresses", "is_nodegate_run", "load_spec", "local_name", "under_suites",
           "selected_hosts"]
