"""Where each node's spec came from, in words every report shows (``FleetRun.spec_source``),
and ``--spec FILE``: one spec for every node of the run.

A replayed bundle carries the spec it was gathered with (``meta.json`` ``spec``): without
``--inventory`` or ``--spec`` it would be judged by that spec, which is only as trusted as the
bundle (a vendor's bundle with raised ECC thresholds passes its own spec; docs/security.md).
``--spec FILE`` is the spec of every node of the run, replacing the inventory's ``nodegate:``
variable (like Ansible's ``-e @file``, the command line wins) and a bundle's own.

The origins (``inventory <file>``, ``--spec <file>``, ``bundle meta.json``, built-in defaults) and
their one-line summary. Below the session (nodegate.session.jobs and nodegate.fleetrun.replay set
them) and the reports (reports/terminal.py prints them), so the reports import no session module
(issue 40).
"""

from __future__ import annotations

from pathlib import Path

from . import yamlio
from .errors import SpecError

BUNDLE = "bundle meta.json"
BUNDLE_EMPTY = "bundle meta.json (no spec in it: built-in defaults)"
TARGET = "built-in defaults (--target has no spec; give --spec FILE)"
BUGREPORT = "built-in defaults (an nvidia-bug-report log has no spec; give --spec FILE)"


def summary(sources: dict[str, str], nodes: list[str] | None = None, max_names: int = 5) -> list[str]:
    """One line per distinct origin: ``inventory inv.yml: 12 node(s)``, or the node names when
    few (``bundle meta.json: a, b``), in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for n in nodes if nodes is not None else list(sources):
        if n in sources:
            groups.setdefault(sources[n], []).append(n)
    out = []
    for src, ns in groups.items():
        names = ", ".join(ns[:max_names]) + (f" and {len(ns) - max_names} more" if len(ns) > max_names else "")
        out.append(f"{src}: {len(ns)} node(s)" + (f" ({names})" if len(groups) > 1 else ""))
    return out


def from_bundle(sources: dict[str, str]) -> list[str]:
    """Nodes judged by the spec their own bundle carries."""
    return [n for n, s in sources.items() if s in (BUNDLE, BUNDLE_EMPTY)]


def load_file(path: str | Path) -> dict:
    """The spec mapping of a ``--spec`` file: the YAML document itself (the keys of the
    ``nodegate:`` variable: ``driver``, ``gpu``, ...), or a vars file (``group_vars/all.yml``)
    holding a ``nodegate:`` key. Raises SpecError naming the file for an unreadable file, bad
    YAML, a non-mapping or an invalid spec (checked here: exit 2 before any node is contacted)."""
    from .spec import load_spec
    p = Path(path)
    try:
        doc = yamlio.safe_load(p.read_bytes())
    except OSError as e:
        raise SpecError(f"--spec {p}: cannot read: {e.strerror or e}") from None
    except Exception as e:  # noqa: BLE001 - yaml.YAMLError and friends
        raise SpecError(f"--spec {p}: not valid YAML: {e}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise SpecError(f"--spec {p}: expected a mapping (the nodegate: spec), got {type(doc).__name__}")
    raw = doc["nodegate"] if "nodegate" in doc else doc
    if not isinstance(raw, dict):
        raise SpecError(f"--spec {p}: nodegate: expected a mapping, got {type(raw).__name__}")
    load_spec(raw, f"--spec {p}")
    return raw
