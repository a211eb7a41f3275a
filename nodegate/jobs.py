"""Which nodes a run targets and with what spec: inventory (or ``--target``) -> ``NodeJob``s.

The run's input layer, below the pytest session (no pytest, no session: the import contract
"the run's inputs import no pytest, session, reports or plugins" in pyproject.toml). Everything
here runs before any node is contacted: a bad inventory, host or spec raises ``SpecError``
naming file, host, key and reason (nodegate.session.jobs turns it into exit 2).

Inputs are the command line's values (``options``: an ``argparse.Namespace``-like object with
``inventory``, ``limit``, ``target``, ``reports_dir``, ``bundles_dir``) and the directory the
command ran in (``base``: relative paths are relative to it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .dotted import spec_get
from .errors import SpecError
from .inventory import Host, Inventory, load_inventory, redact_url
from .run import NodeJob


def load_spec(raw: dict, source: str):
    """The validated Spec of one node (``nodegate.spec.load_spec``); SpecError names ``source``."""
    from .spec import load_spec as _load
    return _load(raw, source)


@dataclass
class Targets:
    """What ``build_jobs`` resolved: one NodeJob per node (inventory order), the Inventory
    (None with ``--target``: the spec errors and the reports name its files)."""

    jobs: list[NodeJob]
    inventory: Inventory | None = None
    warnings: list[str] = field(default_factory=list)


def selected_hosts(options) -> tuple[Inventory, list[Host], list[str]]:
    """The inventory, its hosts of the run (``--inventory`` + ``--limit``, resolved by
    ansible-core: nodegate.inventory) and the warnings to show: Ansible's own, two hosts on one
    address and port, host key checking turned off in the inventory (nodegate verifies host
    keys anyway). Raises InventoryError for an inventory or ``--limit`` ansible-core refuses."""
    inv = load_inventory(options.inventory)
    hosts = inv.select(options.limit)
    return inv, hosts, [f"ansible-core: {w}" for w in inv.warnings] + duplicate_addresses(hosts) + \
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


def build_jobs(options, base: Path, *, on_inventory: Callable[[Inventory, list[str]], None] | None = None) -> Targets:
    """One NodeJob per selected inventory host, or one for ``--target`` (default ``local://``).
    ``on_inventory(inventory, warnings)`` is called once the inventory is resolved and before
    any spec is validated (the session shows the warnings and keeps the inventory even when a
    spec is then refused). Raises SpecError (InventoryError) for a bad inventory, host or spec;
    two hosts that resolve to one address and port are a warning naming both."""
    if not options.inventory:
        url = options.target or "local://"
        spec = load_spec({}, "--target (no inventory: defaults)")
        return Targets([_job(local_name(url), url, redact_url(url), {}, spec)])
    refuse_reports_in_inventory(options, base)
    inv, hosts, warnings = selected_hosts(options)
    if on_inventory is not None:
        on_inventory(inv, warnings)
    jobs: list[NodeJob] = []
    for h in hosts:
        raw = h.spec_raw
        merged_from = f"host {h.name}'s nodegate variable, merged from " + ", ".join(h.sources)
        try:
            spec = load_spec(raw, merged_from)
        except SpecError as merged:
            raise _in_its_file(inv, h.name, merged, merged_from) from None
        jobs.append(_job(h.name, h.url(), h.redacted_url(), raw, spec, h.groups))
    return Targets(jobs, inv, warnings)


def _in_its_file(inv: Inventory, name: str, merged: SpecError, merged_from: str) -> SpecError:
    """The merged spec of ``name`` is invalid: the error of the file (group_vars/, host_vars/ or
    the inventory itself) whose own ``nodegate:`` fragment is invalid, else the merged one."""
    from .specorigin import locate_spec_error
    mine = locate_spec_error(inv, name, load_spec, str(merged).removeprefix(merged_from + ": "))
    if mine:
        return type(merged)(mine)
    # no single file's fragment is invalid on its own (the merge made the bad value): name every
    # file that sets each failing key instead
    return type(merged)(f"{merged}{spec_origin_note(inv, name, str(merged))}")


def spec_origin_note(inv: Inventory | None, name: str, message: str) -> str:
    """``" (nodegate.gpu.count is set in /site/group_vars/h100.yml)"``: the files of the inventory
    that set each failing key of a spec error (README: the error names the file), the last being
    the value the merge kept; "" when none is found (e.g. a key made by Jinja)."""
    if inv is None:
        return ""
    notes = []
    for key in dict.fromkeys(re.findall(r"nodegate\.([^:;\s]+):", message)):
        files = inv.spec_origins(name, key)
        if files:
            notes.append(f"nodegate.{key} is set in " + ", ".join(files))
    return f" ({'; '.join(notes)})" if notes else ""


def refuse_reports_in_inventory(options, base: Path) -> None:
    """SpecError when ``--reports-dir`` (or ``--bundles-dir``) lies inside an inventory directory:
    ansible-core reads every file of an inventory directory as an inventory source, so the next
    run would parse ``actions.csv``, ``junit.xml`` or a bundle's files as inventory ("failed to
    parse .../actions.csv"; ansible's inventory directory walk skips only its ignore patterns).
    A file inventory beside the reports is fine."""
    o = options
    sources = o.inventory if isinstance(o.inventory, (list, tuple)) else [o.inventory]
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


def with_spec(jobs: list[NodeJob], raw: dict, source: str) -> list[NodeJob]:
    """``jobs`` gathered with and judged by ``raw`` (``--spec FILE``, validated: nodegate.spec.file)
    instead of their own spec: the spec recorded in each bundle."""
    spec = load_spec(raw, source)
    for j in jobs:
        j.spec_raw = raw
        j.persistence_user = str(spec_get(spec, "persistence.user", "") or "")
        j.clocks_samples = int(spec_get(spec, "clocks.samples", 3) or 3)
    return jobs


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
        try:
            key = json.dumps(raw, sort_keys=True, default=str)
        except (TypeError, ValueError):
            return load_spec(raw, source)
        spec = self._by_raw.get(key)
        if spec is None:
            spec = self._by_raw[key] = load_spec(raw, source)
        return spec
