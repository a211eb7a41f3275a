"""An nvidia-bug-report log read line by line, with bounded memory (pure but for ``log_lines``).

``log_lines(path, cap)`` yields the lines of a log (plain or gzip, a regular file only) without
ever holding the whole text: the old reader decoded the whole text and split it into one Python
string per line, and a 254 KB gzip of short lines (256 MB of text) peaked at 7.8 GB (31x the
text). A line longer than ``MAX_LINE_CHARS`` is cut there (no evidence line is that long; the
rest of it is dropped, never held).

``SectionReader`` consumes those lines once, in order, and keeps only what convert.py turns into
evidence: the bodies of the sections it names (``want``), each up to ``MAX_SECTION_CHARS`` (beyond
it the item is marked truncated: its checks ERROR, as for a probe item over its cap), and of the
kernel-log sections only the lines the probe's own filter keeps. Every other line is looked at
once and dropped. Peak memory is a fixed multiple of the largest kept section (measured:
tests/bugreport/test_stream_bounds.py, bench/bench_bugreport.py).
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .sections import _LS, _SCAN_PART, _SMI_CMD, SEPARATOR, _classify, command_name

#: longest line kept, characters (the rest of a longer line is dropped as it is read)
MAX_LINE_CHARS = 1024 * 1024
#: largest section body kept, characters: the probe's per-item cap (nodegate.probe.DEFAULT_ITEM_CAP)
MAX_SECTION_CHARS = 8 * 1024 * 1024


class BugReportError(Exception):
    """A log that cannot be read (not a regular file, too large, corrupt gzip)."""


class _Capped(io.RawIOBase):
    """A binary stream that raises BugReportError once more than ``cap`` bytes were read."""

    def __init__(self, inner, cap: int, path):
        self.inner, self.left, self.cap, self.path = inner, cap, cap, path

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            n = self.inner.readinto(b)
        except (OSError, EOFError, zlib.error) as e:
            raise BugReportError(f"{self.path}: unreadable gzip: {e}") from None
        self.left -= n or 0
        if self.left < 0:
            raise BugReportError(f"{self.path}: more than {self.cap} bytes of log text (cap MAX_LOG_BYTES)")
        return n


def log_lines(path: Path, cap: int) -> Iterator[str]:
    """The lines of the log at ``path`` (without their ``\\n``; a trailing ``\\r`` removed), read
    as they are needed. gzip is detected by its magic bytes. Raises BugReportError (when opening,
    or while iterating) for a non-regular file, a corrupt gzip or text beyond ``cap`` bytes."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BugReportError(f"{path}: cannot open: {e.strerror}") from None
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise BugReportError(f"{path}: not a regular file")
    return _lines(fh, cap, path)


def _lines(fh, cap: int, path) -> Iterator[str]:
    with fh:
        head = fh.read(2)
        fh.seek(0)
        raw = gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh
        text = io.TextIOWrapper(io.BufferedReader(_Capped(raw, cap, path), 1 << 16), encoding="utf-8",
                                errors="replace", newline="\n")
        yield from cut_lines(iter(lambda: text.readline(MAX_LINE_CHARS), ""))


def cut_lines(pieces: Iterable[str]) -> Iterator[str]:
    """Lines from ``readline(limit)`` pieces: a piece without ``\\n`` is the start of an over-long
    line, whose further pieces are dropped; ``\\n`` and one ``\\r`` before it removed."""
    dropping = False
    for p in pieces:
        ends = p.endswith("\n")
        if not dropping:
            yield p[:-1].rstrip("\r") if ends else p
        dropping = not ends


def text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` as ``log_lines`` gives them (for a log already in memory)."""
    return cut_lines(io.StringIO(text, newline="\n"))


class Lines:
    """A kept body: text plus a line iterator over it (re-iterable; no list of lines is held)."""

    __slots__ = ("_buf", "size", "truncated", "lines")

    def __init__(self):
        self._buf = io.StringIO()
        self.size = 0
        self.truncated = False
        self.lines = 0

    def add(self, ln: str) -> None:
        if self.truncated:
            return
        if self.size + len(ln) + 1 > MAX_SECTION_CHARS:
            self.truncated = True
            return
        self._buf.write(ln)
        self._buf.write("\n")
        self.size += len(ln) + 1
        self.lines += 1

    @property
    def value(self) -> str:
        return self._buf.getvalue()

    @property
    def text(self) -> str:
        """As ``Section.text``: surrounding blank lines removed, one final newline (or "")."""
        v = self.value
        return v.strip("\n") + "\n" if v.strip() else ""

    def __iter__(self) -> Iterator[str]:
        return text_lines(self.value)


@dataclass
class Kept:
    """One kept section: kind, name, header and body (``Lines``)."""

    kind: str
    name: str
    header: str
    body: Lines = field(default_factory=Lines)


@dataclass
class ReadOut:
    """What one pass over a log leaves: the kept sections (in order), the kernel-log parts (only
    the lines ``keep_line`` accepts), the start block's values and counts."""

    kept: list[Kept] = field(default_factory=list)
    dmesg: Lines | None = None
    journal: dict[int, Lines] = field(default_factory=dict)
    syslog_files: dict[str, Lines] = field(default_factory=dict)
    uname: str | None = None
    version: str | None = None
    sections: int = 0
    fm_traces: bool = False


class SectionReader:
    """One pass over a log's lines (sections.py names the header forms). ``want(kind, name)``
    says whether a section's body is kept; ``keep_line`` filters the kernel-log lines (dmesg and
    the scan's parts); ``version_of`` reads the start block's version line."""

    def __init__(self, want: Callable[[str, str], bool], keep_line: Callable[[str], bool],
                 version_of: Callable[[str], str | None]):
        self.want, self.keep_line, self.version_of = want, keep_line, version_of
        self.out = ReadOut()

    def read(self, lines: Iterable[str]) -> ReadOut:
        out = self.out
        pending = True          # the next non-blank line is a block header
        cur: Kept | None = None
        kind = name = ""
        first = False
        scan: dict[str, Lines] = {}
        part: Lines | None = None
        for ln in lines:
            if ln == SEPARATOR:
                if kind == "scan":
                    self._scan_done(scan)
                pending, cur, kind, scan, part = True, None, "", {}, None
                continue
            if pending:
                if not ln.strip():
                    continue
                pending, first = False, True
                kind, name = _classify(ln)
                out.sections += 1
                cur = self._open(kind, name, ln.strip())
                continue
            if first:
                first = False
                if kind == "file" and _LS.match(ln):
                    continue
            if kind == "start":
                self._start_line(ln)
            elif kind == "command":
                if not out.fm_traces and ("nv-fabricmanager" in ln or "nvidia-fabricmanager" in ln):
                    out.fm_traces = True
                if name.startswith("nvidia-smi"):
                    s = ln.strip()
                    if s and not ln.startswith((" ", "\t")) and _SMI_CMD.match(s):
                        name = command_name(s)   # report_command's next command in one block
                        out.sections += 1
                        cur = self._open("command", name, s)
                        continue
                if name == "dmesg":
                    if self.keep_line(ln):
                        out.dmesg.add(ln)
                    continue
                if cur is not None:
                    cur.body.add(ln)
            elif kind == "scan":
                if not out.fm_traces and ("nv-fabricmanager" in ln or "nvidia-fabricmanager" in ln):
                    out.fm_traces = True
                m = _SCAN_PART.match(ln)
                if m:
                    part = scan.setdefault(m.group("src"), Lines())
                elif part is not None and ln.strip() and self.keep_line(ln):
                    part.add(ln)
            elif cur is not None:
                cur.body.add(ln)
        if kind == "scan":
            self._scan_done(scan)
        return out

    def _open(self, kind: str, name: str, header: str) -> Kept | None:
        if kind == "file" and "fabricmanager" in name:
            self.out.fm_traces = True
        if kind == "command" and name == "dmesg":
            self.out.dmesg = Lines()   # the last dmesg block wins, as before
            return None
        if kind in ("file", "command") and self.want(kind, name):
            k = Kept(kind, name, header)
            self.out.kept.append(k)
            return k
        return None

    def _start_line(self, ln: str) -> None:
        if self.out.uname is None and ln.startswith("uname:"):
            self.out.uname = ln.split(":", 1)[1].strip()
        if self.out.version is None:
            self.out.version = self.version_of(ln.strip())

    def _scan_done(self, scan: dict[str, Lines]) -> None:
        for src, lines in scan.items():
            if src.startswith("journalctl -b"):
                # _SCAN_PART bounds the boot number to 6 digits: int() never sees a long one
                self.out.journal[abs(int(src.split()[-1]))] = lines
            else:
                self.out.syslog_files[src] = lines
