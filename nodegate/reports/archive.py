"""Per-node evidence archive ``<reports>/bundles/<node>.tar.gz`` to attach to a ticket.

Contents, under one top directory ``<node>/``: the bundle's own files (``meta.json``,
``<key>.out``, ``<key>.err``, ``<key>.rc``; see nodegate/bundle.py) byte-exact, and
``results.json`` (``{"node", "results": [Record.to_dict(), ...]}``, every check of the node).
The bundle directory is untrusted (it may come from ``--replay``): only regular files with
bundle names are taken, symlinks and subdirectories are skipped, each file is capped at
``bundle.READ_CAP`` bytes.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import tarfile
import time
from pathlib import Path

from ..bundle import READ_CAP
from .text import safe_filename

_BUNDLE_FILE_RE = re.compile(r"^(?:meta\.json|[a-z0-9_]+(?:\.[a-z0-9_]+)*\.(?:out|err|rc))$")


def archive_path(archive_dir: Path, node: str) -> Path:
    """Where the archive of ``node`` goes (file name from ``text.safe_filename``)."""
    return Path(archive_dir) / f"{safe_filename(node)}.tar.gz"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), int(mtime), 0o644
    tar.addfile(ti, io.BytesIO(data))


def _bundle_files(bundle_dir: Path):
    """(name, bytes, mtime) of each regular bundle file, sorted by name."""
    try:
        names = sorted(os.listdir(bundle_dir))
    except OSError:
        return
    for name in names:
        if not _BUNDLE_FILE_RE.match(name):
            continue
        p = bundle_dir / name
        try:
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode):
                continue        # symlink, fifo, device: never followed
            fd = os.open(p, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                yield name, fh.read(READ_CAP), st.st_mtime
        except OSError:
            continue


def write_node_archive(archive_dir: Path, node: str, bundle_dir: Path | None,
                       results: list[dict]) -> Path:
    """Write the archive of one node (replacing an older one); returns its path."""
    out = archive_path(archive_dir, node)
    out.parent.mkdir(parents=True, exist_ok=True)
    top = safe_filename(node)
    tmp = out.with_name(f".{out.name}.tmp")
    now = time.time()
    try:
        with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            if bundle_dir is not None and Path(bundle_dir).is_dir():
                for name, data, mtime in _bundle_files(Path(bundle_dir)):
                    _add_bytes(tar, f"{top}/{name}", data, mtime)
            doc = {"node": node, "results": results}
            _add_bytes(tar, f"{top}/results.json",
                       (json.dumps(doc, indent=1, ensure_ascii=True) + "\n").encode(), now)
        os.replace(tmp, out)
    except OSError:   # disk full: no half-written temporary left behind
        tmp.unlink(missing_ok=True)
        raise
    return out
