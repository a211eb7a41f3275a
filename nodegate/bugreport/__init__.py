"""nvidia-bug-report logs as bundles: ``pytest suites --replay nvidia-bug-report.log.gz``.

Vendors and NVIDIA support ask for ``nvidia-bug-report.log.gz`` in every RMA and users attach it to
tickets. ``load_bug_report(path)`` reads one (plain or gzip; a regular file, size-capped), splits
it into its sections (nodegate/bugreport/sections.py, every bug-report version's header forms),
turns them into evidence keys (convert.py: ``SOURCES``) and returns a Bundle the usual checks
judge. The node is named after the log's ``uname -a`` host, else the file name; what the log does
not contain is ERROR "evidence not in the bug report: KEY", never PASS.

Untrusted input: only regular files are read (``O_NOFOLLOW``, no device or FIFO), at most
``MAX_LOG_BYTES`` of log text after decompression (a gzip bomb stops there); an unreadable log is a
Bundle with ``status`` unreadable whose checks ERROR with the reason, the other logs go on.
"""

from __future__ import annotations

import gzip
import os
import stat
import zlib
from pathlib import Path

from ..bundle import Bundle
from .convert import SOURCES, convert
from .sections import VERSIONS, split_sections

__all__ = ["MAX_LOG_BYTES", "SOURCES", "VERSIONS", "bug_report_paths", "is_bug_report", "load_bug_report",
           "read_log", "split_sections", "convert"]

#: largest log text read, bytes after decompression (a full log with nvidia-debugdump output is
#: 5-60 MB; the base64 dumps are not evidence nodegate reads)
MAX_LOG_BYTES = 256 * 1024 * 1024
_SUFFIXES = (".log", ".log.gz", ".txt", ".txt.gz")


class BugReportError(Exception):
    """A log that cannot be read (not a regular file, too large, corrupt gzip)."""


def is_bug_report(path: Path) -> bool:
    """``path`` names a bug-report log by its suffix (``.log``, ``.log.gz``)."""
    n = Path(path).name.lower()
    return n.endswith((".log", ".log.gz"))


def bug_report_paths(root: Path) -> list[Path]:
    """The ``*.log`` / ``*.log.gz`` regular files directly in directory ``root``, sorted (symlinks
    are not followed)."""
    out = []
    for p in sorted(Path(root).iterdir()):
        if is_bug_report(p) and p.is_file() and not p.is_symlink():
            out.append(p)
    return out


def read_log(path: Path, cap: int = MAX_LOG_BYTES) -> str:
    """The text of a bug report (gzip detected by its magic bytes, not the name). Raises
    BugReportError for a non-regular file, a corrupt gzip or text beyond ``cap`` bytes."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BugReportError(f"{path}: cannot open: {e.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise BugReportError(f"{path}: not a regular file")
        head = fh.read(2)
        fh.seek(0)
        try:
            if head == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read(cap + 1)
            else:
                data = fh.read(cap + 1)
        except (OSError, EOFError, zlib.error) as e:
            raise BugReportError(f"{path}: unreadable gzip: {e}") from None
    if len(data) > cap:
        raise BugReportError(f"{path}: more than {cap} bytes of log text (cap MAX_LOG_BYTES)")
    return data.decode("utf-8", errors="replace")


def _stem(path: Path) -> str:
    n = Path(path).name
    for suf in (".log.gz", ".txt.gz", ".gz", ".log", ".txt"):
        if n.lower().endswith(suf):
            return n[: -len(suf)]
    return n


def load_bug_report(path: Path, taken: set[str] | None = None) -> Bundle:
    """The Bundle of the log at ``path``. ``taken``: node names already used in this run; a second
    log of the same host gets ``<host>--<file stem>`` (before/after logs of one node)."""
    path = Path(path)
    try:
        b = convert(read_log(path), _stem(path), str(path))
    except BugReportError as e:
        from .convert import _node_name
        name = _node_name(None, _stem(path))
        b = Bundle(name, {}, {"node": name, "status": "unreadable", "error": str(e), "origin": "nvidia-bug-report",
                              "source_file": str(path), "spec": {}})
    if taken is not None:
        if b.node in taken:
            from .convert import _node_name
            b.node = _node_name(f"{b.node}--{_stem(path)}", _stem(path))
            b.meta["node"] = b.node
        taken.add(b.node)
    return b
