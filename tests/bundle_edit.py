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


def add_item(d: Path, key: str, data: str | bytes, rc: int = 0) -> None:
    """Add item ``key`` to bundle ``d`` (its ``.out``, and its record in meta.json when the
    bundle lists its items), as a probe run would have written it."""
    raw = data.encode() if isinstance(data, str) else data
    (Path(d) / f"{key}.out").write_bytes(raw)
    if rc:
        (Path(d) / f"{key}.rc").write_text(f"{rc}\n")
    mp = Path(d) / "meta.json"
    if mp.is_file():
        meta = json.loads(mp.read_text())
        if isinstance(meta.get("items"), dict):
            meta["items"][key] = {"rc": rc, "status": "ok", "duration_s": 0.0, "bytes": len(raw)}
            mp.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def give_identity(d: Path, name: str) -> None:
    """A boot id and machine id of its own for a bundle copied from another (the H200 capture
    has neither): NG-INV-003 tells the copies apart as it tells real nodes apart."""
    import hashlib
    h = hashlib.sha256(name.encode()).hexdigest()
    add_item(d, "meta.boot_id", f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}\n")
    add_item(d, "meta.machine_id", h[32:64] + "\n")
