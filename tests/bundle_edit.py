"""Editing a copy of a real bundle in tests: write an item file and keep meta.json in step.

``Bundle.load`` checks each item's files against meta.json's record of it (exit code, status,
size): an item edited without its record is ERROR ("inconsistent", docs/security.md). Test data
made from a real bundle is edited the way its size would be written by a probe run.
"""

from __future__ import annotations

import json
from pathlib import Path


def write_item(path: Path, data: str | bytes) -> None:
    """Write ``path`` (``<bundle>/<key>.out``) and set meta.json's ``items[key].bytes`` to its
    size, when the bundle has a meta.json listing that key."""
    path = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    path.write_bytes(raw)
    if path.suffix != ".out":
        return
    mp = path.parent / "meta.json"
    if not mp.is_file():
        return
    meta = json.loads(mp.read_text())
    items = meta.get("items")
    key = path.name[:-4]
    if isinstance(items, dict) and isinstance(items.get(key), dict):
        items[key]["bytes"] = len(raw)
        mp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def resync(d: Path) -> None:
    """Every item meta.json lists gets the size of its ``.out`` as it is now."""
    mp = Path(d) / "meta.json"
    meta = json.loads(mp.read_text())
    for key, im in (meta.get("items") or {}).items():
        p = Path(d) / f"{key}.out"
        if isinstance(im, dict) and p.is_file():
            im["bytes"] = p.stat().st_size
    mp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
