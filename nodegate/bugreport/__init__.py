"""nvidia-bug-report logs as bundles: ``pytest suites --replay nvidia-bug-report.log.gz``.

Vendors and NVIDIA support ask for ``nvidia-bug-report.log.gz`` in every RMA and users attach it to
tickets. ``load_bug_report(path)`` reads one (plain or gzip; a regular file, size-capped), splits
it into its sections (nodegate/bugreport/sections.py, every bug-report version's header forms) line
by line as it reads (stream.py: only the sections that become evidence are kept), turns them into
evidence keys (convert.py: ``SOURCES``) and returns a Bundle the usual checks judge. The node is named after the log's ``uname -a`` host, else the file name; what the log does
not contain is ERROR "evidence not in the bug report: KEY", never PASS.

Untrusted input: only regular files are read (``O_NOFOLLOW``, no device or FIFO), at most
``MAX_LOG_BYTES`` of log text after decompression (a gzip bomb stops there); an unreadable log is a
Bundle with ``status`` unreadable whose checks ERROR with the reason, the other logs go on; so is a
log whose conversion raised anything at all (one log never stops the run).
"""

from __future__ import annotations

from pathlib import Path

from ..bundle import Bundle
from .convert import SOURCES, _node_name, convert, convert_stream
from .sections import VERSIONS, split_sections
from .stream import BugReportError, log_chunks

__all__ = ["MAX_LOG_BYTES", "SOURCES", "VERSIONS", "BugReportError", "bug_report_paths", "is_bug_report",
           "load_bug_report", "log_chunks", "read_log", "split_sections", "convert", "convert_stream"]

#: largest log text read, bytes after decompression (a full log with nvidia-debugdump output is
#: 5-60 MB; the base64 dumps are not evidence nodegate reads)
MAX_LOG_BYTES = 256 * 1024 * 1024
_SUFFIXES = (".log", ".log.gz", ".txt", ".txt.gz")


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
    """The whole text of a bug report (gzip detected by its magic bytes, not the name), for tools
    and tests; the run itself converts the pieces of ``stream.log_chunks`` without holding the text. Raises
    BugReportError for a non-regular file, a corrupt gzip or text beyond ``cap`` bytes."""
    return "".join(log_chunks(path, cap))


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
        b = convert_stream(log_chunks(path, MAX_LOG_BYTES), _stem(path), str(path))
    except BugReportError as e:
        b = _unreadable(path, str(e))
    except Exception as e:  # noqa: BLE001 - one log never stops the run: its node ERRORs, the others are judged
        b = _unreadable(path, f"{path}: {type(e).__name__}: {str(e)[:300]}")
    if taken is not None:
        if b.node in taken:
            b.node = _node_name(f"{b.node}--{_stem(path)}", _stem(path))
            b.meta["node"] = b.node
        taken.add(b.node)
    return b


def _unreadable(path: Path, why: str) -> Bundle:
    """The Bundle of a log that could not be converted: every check of its node ERRORs
    "unreadable: <why>" (Bundle.gather_error)."""
    name = _node_name(None, _stem(path))
    return Bundle(name, {}, {"node": name, "status": "unreadable", "error": why, "origin": "nvidia-bug-report",
                             "source_file": str(path), "spec": {}})
