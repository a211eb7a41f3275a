"""Dotted key paths in a node's spec: ``gpu.count``, ``kernel_log.enabled``.

One reading for the session, the inventory and the engine (a spec model or its raw dict).
"""

from __future__ import annotations


def spec_get(spec, dotted: str, default=None):
    """``spec`` (a Spec model or a raw dict) at the dotted path, or ``default`` when any part is
    absent or None."""
    cur = spec
    for part in dotted.split("."):
        cur = cur.get(part) if isinstance(cur, dict) else getattr(cur, part, None)
        if cur is None:
            return default
    return cur


def holds_path(value, path: list) -> bool:
    """Whether the nested mapping/list ``value`` holds the key path ``path``."""
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return False
    return True
