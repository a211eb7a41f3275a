"""``--spec FILE``: one spec for every node of the run, and where each node's spec came from.

A replayed bundle carries the spec it was gathered with (``meta.json`` ``spec``): without
``--inventory`` or ``--spec`` it would be judged by that spec, which is only as trusted as the
bundle (a vendor's bundle with raised ECC thresholds passes its own spec; docs/security.md).
``--spec FILE`` is the spec of every node of the run, replacing the inventory's ``nodegate:``
variable (like Ansible's ``-e @file``, the command line wins) and a bundle's own.

``FleetRun.spec_source[node]`` records the origin, shown in every report: ``inventory <file>``,
``--spec <file>``, ``bundle meta.json``, or ``built-in defaults (...)`` where there is no spec.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .. import yamlio
from ..errors import SpecError
from .state import spec_get

#: (raw spec dict, its source string) of ``--spec`` once loaded at configure
OVERRIDE_KEY = pytest.StashKey[tuple]()

from ..specsource import BUGREPORT, BUNDLE, BUNDLE_EMPTY, TARGET, from_bundle, summary  # noqa: F401  (re-exported)


def load_file(path: str | Path) -> dict:
    """The spec mapping of a ``--spec`` file: the YAML document itself (the keys of the
    ``nodegate:`` variable: ``driver``, ``gpu``, ...), or a vars file (``group_vars/all.yml``)
    holding a ``nodegate:`` key. Raises SpecError naming the file for an unreadable file, bad
    YAML, a non-mapping or an invalid spec (checked here: exit 2 before any node is contacted)."""
    from ..spec import load_spec
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


def override(config) -> tuple[dict, str] | None:
    """``(raw spec, "--spec FILE")`` when ``--spec`` was given (loaded once, then cached), else
    None. Raises SpecError for a bad file."""
    path = getattr(config.option, "spec", None)
    if not path:
        return None
    got = config.stash.get(OVERRIDE_KEY, None)
    if got is None:
        got = config.stash[OVERRIDE_KEY] = (load_file(path), f"--spec {path}")
    return got


def apply(config, jobs: list) -> list:
    """The inventory's (or ``--target``'s) jobs with ``--spec``'s spec in place of their own:
    the spec gathered with (recorded in each bundle) and judged by. Unchanged without ``--spec``."""
    got = override(config)
    if got is None:
        return jobs
    raw, _ = got
    from ..spec import load_spec
    spec = load_spec(raw, f"--spec {config.option.spec}")
    for j in jobs:
        j.spec_raw = raw
        j.persistence_user = str(spec_get(spec, "persistence.user", "") or "")
        j.clocks_samples = int(spec_get(spec, "clocks.samples", 3) or 3)
    return jobs


def live_source(config) -> str:
    """Where the nodes' spec of a live run comes from."""
    got = override(config)
    if got is not None:
        return got[1]
    inv = getattr(config.option, "inventory", None)
    from ..inventory import sources_label
    return f"inventory {sources_label(inv)}" if inv else TARGET
