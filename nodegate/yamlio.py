"""YAML loading for nodegate's data files, inventories and specs.

``safe_load`` is PyYAML's safe loader, libyaml's (``CSafeLoader``) where PyYAML was built with
it (its wheels are): the same documents, ~8x faster than the pure-Python loader (a 256-node
inventory: 0.27 -> 0.03 s at the start of every run; docs/performance.md). Errors are
``yaml.YAMLError`` either way.
"""

from __future__ import annotations

import yaml

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(stream) -> object:
    """``yaml.safe_load`` with the fastest safe loader available. ``stream``: str, bytes or a file."""
    return yaml.load(stream, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader (CSafeLoader or SafeLoader)
