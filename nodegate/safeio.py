"""Files nodegate writes, created so that nothing planted at their path is followed.

A reports or bundles directory can be shared (a CI workspace, an extracted tarball): a symbolic
link planted at ``reports/.rma.csv.tmp`` or ``bundles/<node>/x.out`` would make an ordinary open
write node output into the link's target, and ``os.replace`` would then leave the final name a
link too. Every such file is opened here: whatever is at the path (a link, a file) is removed
first, then the file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a link re-planted in
between makes the open fail instead of being followed).
"""

from __future__ import annotations

import os
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def create(path, mode: int = 0o666) -> int:
    """A new, empty regular file at ``path``; returns its descriptor. Raises OSError (a directory
    at the path: IsADirectoryError; a link planted again: FileExistsError)."""
    p = os.fspath(path)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        st = None
    if st is not None:
        import stat
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", p)
        os.unlink(p)
    return os.open(p, _FLAGS, mode)


def put(path, data: bytes) -> None:
    """Write ``data`` to a new file at ``path`` (``create``), without a file object: the bundle
    writers' one call per evidence file."""
    fd = create(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def open_new(path, mode: str = "wb", buffering: int = -1, encoding: str | None = None):
    """``open(path, mode)`` for writing, through ``create`` (modes "w"/"wb")."""
    fd = create(path)
    try:
        return os.fdopen(fd, mode, buffering=buffering, encoding=encoding)
    except Exception:
        os.close(fd)
        raise


def write_text(path: Path, text: str, encoding: str = "utf-8") -> None:
    with open_new(path, "w", encoding=encoding) as fh:
        fh.write(text)


def write_bytes(path: Path, data: bytes) -> None:
    with open_new(path, "wb") as fh:
        fh.write(data)
