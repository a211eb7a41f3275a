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

from ..bundle import BUNDLE_BUDGET, READ_CAP, UnsafeFile, lstat_entry, read_regular
from .text import safe_filename

_BUNDLE_FILE_RE = re.compile(r"^(?:meta\.json|[a-z0-9_]+(?:\.[a-z0-9_]+)*\.(?:out|err|rc))$")


def archive_path(archive_dir: Path, node: str, stem: str | None = None) -> Path:
    """Where the archive of ``node`` goes (file name ``stem``, the run's ``text.FileNames``
    name, else ``text.safe_filename``)."""
    return Path(archive_dir) / f"{stem or safe_filename(node)}.tar.gz"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), int(mtime), 0o644
    tar.addfile(ti, io.BytesIO(data))


def _bundle_files(bundle_dir: Path):
    """(name, bytes, mtime) of each regular bundle file, sorted by name: read as ``Bundle.load``
    reads (``bundle.read_regular``: no symbolic link followed, the directory included, no FIFO or
    device opened, each file capped), at most ``bundle.BUNDLE_BUDGET`` bytes in all."""
    try:
        dfd = os.open(bundle_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                      | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        names = sorted(os.listdir(dfd))
        budget = BUNDLE_BUDGET
        for name in names:
            if not _BUNDLE_FILE_RE.match(name):
                continue
            try:
                st = lstat_entry(dfd, name)
                if not stat.S_ISREG(st.st_mode) or st.st_size > budget:
                    continue        # symlink, fifo, device: never followed; nor past the budget
                data = read_regular(dfd, name, READ_CAP, st)
            except (OSError, UnsafeFile):
                continue
            budget -= len(data)
            yield name, data, st.st_mtime
    finally:
        os.close(dfd)


def write_node_archive(archive_dir: Path, node: str, bundle_dir: Path | None,
                       results: list[dict], spec_source: str = "", anchor: Path | None = None,
                       stem: str | None = None) -> Path:
    """Write the archive of one node (replacing an older one); returns its path. ``spec_source``:
    where the node's spec came from (results.json ``spec_source``). ``anchor``: the operator's
    directory ``archive_dir`` lies in (default: its parent, the reports directory): below it no
    link is followed (nodegate.safeio; raises ``LinkRefused``, an OSError)."""
    from .. import safeio
    out = archive_path(archive_dir, node, stem)
    anchor = Path(archive_dir).parent if anchor is None else anchor
    safeio.makedirs(out.parent, anchor)
    top = stem or safe_filename(node)
    tmp = out.with_name(f".{out.name}.tmp")
    now = time.time()
    try:
        with safeio.open_new(tmp, "wb", anchor=anchor) as raw, tarfile.open(fileobj=raw, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            if bundle_dir is not None and Path(bundle_dir).is_dir():
                for name, data, mtime in _bundle_files(Path(bundle_dir)):
                    _add_bytes(tar, f"{top}/{name}", data, mtime)
            doc = {"node": node, "spec_source": spec_source, "results": results}
            _add_bytes(tar, f"{top}/results.json",
                       (json.dumps(doc, indent=1, ensure_ascii=True) + "\n").encode(), now)
        safeio.replace(tmp, out, anchor=anchor)
    except OSError:   # disk full: no half-written temporary left behind
        safeio.unlink(tmp, anchor=anchor)
        raise
    return out
