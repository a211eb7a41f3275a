"""Which nodes a run targets and with what spec: inventory (or ``--target``) -> ``NodeJob``s.

Everything here runs at pytest_configure, before any node is contacted: a bad inventory or spec
raises ``SpecError`` (the plugin exits 2 naming file, key and reason).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import SpecError  # noqa: F401 - raised through load_inventory/load_spec
from ..inventory import Host, load_inventory, redact_url
from ..run import NodeJob
from .state import spec_get

#: the project's suites directory (a run that names a path under it is a nodegate run)
SUITES = Path(__file__).resolve().parents[2] / "suites"


def is_nodegate_run(config) -> bool:
    """A nodegate run: --inventory, --replay or --target given, or a path under suites/ named.
    Otherwise (the project's own tests) the plugins stay passive."""
    o = config.option
    if getattr(o, "inventory", None) or getattr(o, "replay", None) or getattr(o, "target", None):
        return True
    args = [a.split("::")[0] for a in (config.args or [])]
    for a in args:
        p = Path(a)
        p = p if p.is_absolute() else Path(config.invocation_params.dir) / p
        try:
            p.resolve().relative_to(SUITES)
            return True
        except ValueError:
            continue
    return False


def load_spec(raw: dict, source: str):
    """The validated Spec of one node (``nodegate.spec.load_spec``); SpecError names ``source``."""
    from ..spec import load_spec as _load
    return _load(raw, source)


def build_jobs(config) -> list[NodeJob]:
    """One NodeJob per selected inventory host (``--inventory`` + ``--limit``), or one for
    ``--target`` (default ``local://``). Raises SpecError for a bad inventory or spec."""
    o = config.option
    jobs: list[NodeJob] = []
    if o.inventory:
        inv = load_inventory(o.inventory)
        hosts = inv.select(o.limit)
    else:
        url = o.target or "local://"
        h = Host(name=local_name(url), vars={})
        hosts = [h]
        h.url = lambda u=url: u  # type: ignore[method-assign]
        h.redacted_url = lambda u=url: redact_url(u)  # type: ignore[method-assign]
        h.sources = ["--target"]
    for h in hosts:
        raw = h.spec_raw
        spec = load_spec(raw, f"host {h.name}'s nodegate variable, merged from " + ", ".join(h.sources))
        jobs.append(NodeJob(name=h.name, url=h.url(), shown_url=h.redacted_url(), spec_raw=raw,
                            persistence_user=str(spec_get(spec, "persistence.user", "") or ""),
                            clocks_samples=int(spec_get(spec, "clocks.samples", 3) or 3)))
    return jobs


def local_name(url: str) -> str:
    """Node name for a ``--target`` URL: the controller's short hostname for local://, else the
    URL's host part."""
    if url.startswith("local"):
        return os.uname().nodename.split(".")[0] or "localhost"
    host = url.split("://", 1)[-1].split("@")[-1].split("?")[0]
    return host.split(":")[0].strip("[]") or "node"
