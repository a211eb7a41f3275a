"""Files and directories nodegate writes, created so that nothing planted at their path is followed.

A reports or bundles directory can be shared (a CI workspace, an extracted tarball, a Slurm
``--out`` folder every node writes into): a symbolic link planted at ``reports/.rma.csv.tmp`` or
``bundles/<node>/x.out`` would make an ordinary open write node output into the link's target,
and ``os.replace`` would then leave the final name a link too. Every such file is opened here:
whatever is at the path (a link, a file) is removed first, then the file is created with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (a link re-planted in between makes the open fail instead of
being followed).

Directories likewise (docs/security.md, "Links planted where nodegate writes"): a directory a
link was planted at (``<out>/gpu007 -> /etc``, ``reports/nodes -> ~``) is never written into
and nothing in it is removed. ``open_dir`` opens every component below an *anchor* (the
directory the operator named: ``--reports-dir``, ``--bundles-dir``, ``nodegate-collect --out``;
it is followed as given, like the ``--replay`` root) relative to its parent with
``O_DIRECTORY | O_NOFOLLOW``, creating it with ``mkdir(dir_fd=...)`` when absent, and the file
operations then work relative to that descriptor: a link anywhere below the anchor raises
``LinkRefused`` naming the path, instead of being followed.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
              | getattr(os, "O_CLOEXEC", 0))
_ANCHOR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class LinkRefused(OSError):
    """A directory nodegate would write into (or below) is a symbolic link or no directory:
    nothing is written through it. ``str()`` names the path and what is there; ``os_errno`` is
    the kernel's own error for the refused open (Linux: ENOTDIR for a link opened with
    ``O_DIRECTORY | O_NOFOLLOW``), for a reader that words it (nodegate.bundle's ``_os_why``)."""

    def __init__(self, path: str, what: str, *, os_errno: int = errno.ELOOP):
        super().__init__(errno.ELOOP, f"{path} {what}; nodegate never writes through a link", path)
        self.what = what
        self.os_errno = os_errno

    def __str__(self) -> str:
        return self.strerror


def _parts(path, anchor) -> tuple[str, list[str]]:
    """(anchor, the components of ``path`` below it). ``anchor`` None: ``path``'s parent, so
    that ``path``'s own last component is the one opened without following."""
    p = os.path.abspath(os.fspath(path))
    a = os.path.abspath(os.fspath(anchor)) if anchor is not None else os.path.dirname(p)
    rel = os.path.relpath(p, a)
    if rel == os.curdir:
        return a, []
    parts = rel.split(os.sep)
    if parts[0] == os.pardir:
        raise ValueError(f"{p} is not under {a}")
    return a, parts


def open_dir(path, anchor=None, create: bool = True) -> int:
    """A descriptor (``O_DIRECTORY``) of directory ``path``; the caller closes it.

    ``anchor``: the operator's directory ``path`` lies in (followed as given, created with its
    parents when ``create``); None: ``path``'s parent. Every component from the anchor down is
    opened relative to its parent with ``O_NOFOLLOW`` and created with ``mkdir(dir_fd=...)``
    when absent (``create``). Raises ``LinkRefused`` when a component is a symbolic link or
    not a directory, ``ValueError`` when ``path`` is not under ``anchor``, OSError otherwise."""
    a, parts = _parts(path, anchor)
    if create:
        os.makedirs(a, exist_ok=True)
    fd = os.open(a, _ANCHOR_FLAGS)
    here = a
    try:
        for part in parts:
            here = os.path.join(here, part)
            try:
                nfd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass   # created meanwhile (another xdist worker): opened below, no-follow still
                nfd = _open_sub(fd, part, here)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    raise _refused(fd, part, here, e.errno) from None
                raise
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_sub(fd: int, part: str, here: str) -> int:
    try:
        return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise _refused(fd, part, here, e.errno) from None
        raise


def _refused(fd: int, part: str, here: str, os_errno: int) -> LinkRefused:
    try:
        st = os.stat(part, dir_fd=fd, follow_symlinks=False)
    except OSError:
        return LinkRefused(here, "is not a directory", os_errno=os_errno)
    if stat.S_ISLNK(st.st_mode):
        try:
            to = os.readlink(part, dir_fd=fd)
        except OSError:
            to = "?"
        return LinkRefused(here, f"is a symbolic link (to {to!r})", os_errno=os_errno)
    return LinkRefused(here, "exists and is not a directory", os_errno=os_errno)


def makedirs(path, anchor=None) -> None:
    """``path`` as a directory (created when absent) through ``open_dir``: a link at or below
    ``anchor`` raises ``LinkRefused``."""
    os.close(open_dir(path, anchor))


def create_at(dir_fd: int, name: str, mode: int = 0o666) -> int:
    """A new, empty regular file ``name`` in the directory ``dir_fd``; returns its descriptor.
    Whatever is at the name (a link, a file) is removed first. Raises OSError (a directory at the
    name: IsADirectoryError; a link planted again: FileExistsError)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", name)
        os.unlink(name, dir_fd=dir_fd)
    return os.open(name, _FLAGS, mode, dir_fd=dir_fd)


def create(path, mode: int = 0o666, anchor=None) -> int:
    """A new, empty regular file at ``path``; returns its descriptor. Its directory is opened
    through ``open_dir(path.parent, anchor)`` (``anchor`` None: the directory as given, not
    created). Raises OSError (``LinkRefused``; a directory at the path: IsADirectoryError; a link
    planted again: FileExistsError)."""
    p = os.fspath(path)
    parent, name = os.path.split(os.path.abspath(p))
    if anchor is None:
        dfd = os.open(parent, _ANCHOR_FLAGS)
    else:
        dfd = open_dir(parent, anchor)
    try:
        return create_at(dfd, name, mode)
    finally:
        os.close(dfd)


def put_at(dir_fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a new file ``name`` in ``dir_fd`` (``create_at``)."""
    _write_all(create_at(dir_fd, name), data)


def put(path, data: bytes, anchor=None) -> None:
    """Write ``data`` to a new file at ``path`` (``create``), without a file object: the bundle
    writers' one call per evidence file."""
    _write_all(create(path, anchor=anchor), data)


def _write_all(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def open_new(path, mode: str = "wb", buffering: int = -1, encoding: str | None = None, anchor=None):
    """``open(path, mode)`` for writing, through ``create`` (modes "w"/"wb")."""
    fd = create(path, anchor=anchor)
    try:
        return os.fdopen(fd, mode, buffering=buffering, encoding=encoding)
    except Exception:
        os.close(fd)
        raise


def write_text(path: Path, text: str, encoding: str = "utf-8", anchor=None) -> None:
    with open_new(path, "w", encoding=encoding, anchor=anchor) as fh:
        fh.write(text)


def write_bytes(path: Path, data: bytes, anchor=None) -> None:
    with open_new(path, "wb", anchor=anchor) as fh:
        fh.write(data)


def replace(src, dst, anchor=None) -> None:
    """``os.replace(src, dst)`` for two names in one directory, relative to that directory
    opened through ``open_dir`` (``anchor`` None: as given): a link planted in place of the
    directory meanwhile is refused, never renamed into."""
    sp, dp = os.path.abspath(os.fspath(src)), os.path.abspath(os.fspath(dst))
    parent = os.path.dirname(dp)
    if os.path.dirname(sp) != parent:
        raise ValueError(f"{sp} and {dp} are not in one directory")
    dfd = os.open(parent, _ANCHOR_FLAGS) if anchor is None else open_dir(parent, anchor, create=False)
    try:
        os.replace(os.path.basename(sp), os.path.basename(dp), src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)


def unlink(path, anchor=None) -> bool:
    """Remove the file (or link: never its target) at ``path``, its directory opened through
    ``open_dir`` without creating it; True when something was removed. A missing file or a
    directory path that is a link (``LinkRefused``) removes nothing and is not an error: what
    nodegate removes is only what it wrote, in directories it opened itself."""
    p = os.path.abspath(os.fspath(path))
    try:
        dfd = os.open(os.path.dirname(p), _ANCHOR_FLAGS) if anchor is None else \
            open_dir(os.path.dirname(p), anchor, create=False)
    except (OSError, ValueError):
        return False
    try:
        os.unlink(os.path.basename(p), dir_fd=dfd)
        return True
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        return False
    finally:
        os.close(dfd)
