"""An nvidia-bug-report log read as a stream, in time linear in its text and memory bounded by
what it keeps (pure but for ``log_chunks``).

``log_chunks(path, cap)`` yields the text of a log (plain or gzip, a regular file only) in pieces,
never the whole: the old reader decoded the whole text and split it into one Python string per
line, and a 254 KB gzip of short lines (256 MB of text) peaked at 7.8 GB (31x the text).
``complete_lines`` turns the pieces into runs of whole lines; a line longer than
``MAX_LINE_CHARS`` is cut there (no evidence line is that long; the rest is dropped as it arrives).

``SectionReader`` reads those runs once, in order, and keeps only what convert.py turns into
evidence: the bodies of the sections it names (``want``), each up to ``MAX_SECTION_CHARS`` (beyond
it the item is marked truncated: its checks ERROR, as for a probe item over its cap), and of the
kernel-log sections only the lines the probe's own filter keeps. What it drops is skipped by C-level
searches, not one Python step per line. Peak memory is a fixed multiple of the largest kept section
(measured <= 14x: bench/bugreport_bounds.py; tests/bugreport/test_stream_bounds.py).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .sections import _LS, SEPARATOR, _classify, command_name

_VERSION_LINE = re.compile(r"^[^\S\n]*nvidia-bug-report\.sh Version:[^\n]*$", re.M)

#: longest line kept, characters (the rest of a longer line is dropped as it is read)
MAX_LINE_CHARS = 1024 * 1024
#: characters read at once (the reader works on runs of whole lines, never one Python call per line
#: of text it drops: 256 MB of newlines took 65 s per 32 MB line by line)
CHUNK_CHARS = 1 << 16
#: kernel lines kept per source (dmesg, each journal boot, each syslog file): the probe keeps at most
#: 25,000 (20,000 deciding lines and the last 5,000); each kept line costs the de-duplication a
#: fixed amount, so this bounds the conversion's memory whatever the lines' length
MAX_KERNEL_LINES = 100_000
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


def log_chunks(path: Path, cap: int) -> Iterator[str]:
    """The text of the log at ``path`` in pieces of CHUNK_CHARS characters (cut anywhere), read as
    they are needed. gzip is detected by its magic bytes. Raises BugReportError (when opening, or
    while iterating) for a non-regular file, a corrupt gzip or text beyond ``cap`` bytes."""
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise BugReportError(f"{path}: cannot open: {e.strerror}") from None
    fh = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise BugReportError(f"{path}: not a regular file")
    return _chunks(fh, cap, path)


def _chunks(fh, cap: int, path) -> Iterator[str]:
    with fh:
        head = fh.read(2)
        fh.seek(0)
        raw = gzip.GzipFile(fileobj=fh) if head == b"\x1f\x8b" else fh
        text = io.TextIOWrapper(io.BufferedReader(_Capped(raw, cap, path), CHUNK_CHARS), encoding="utf-8",
                                errors="replace", newline="\n")
        yield from iter(lambda: text.read(CHUNK_CHARS), "")


def complete_lines(chunks: Iterable[str]) -> Iterator[str]:
    """Runs of whole lines (``"l1\\nl2"``, no final ``\\n``) from text pieces cut anywhere. A line
    longer than MAX_LINE_CHARS is cut there and the rest of it dropped as it arrives (never held)."""
    tail = ""
    dropping = False
    for chunk in chunks:
        if dropping:
            i = chunk.find("\n")
            if i < 0:
                continue
            chunk, dropping = chunk[i + 1:], False
        data = tail + chunk if tail else chunk
        cut = data.rfind("\n")
        if cut < 0:
            tail = data
        else:
            yield data[:cut]
            tail = data[cut + 1:]
        if len(tail) > MAX_LINE_CHARS:
            yield tail[:MAX_LINE_CHARS]
            tail, dropping = "", True
    if tail and not dropping:
        yield tail


def text_chunks(text: str) -> Iterator[str]:
    """``text`` in CHUNK_CHARS pieces (a log already in memory, read as ``log_chunks`` reads a file)."""
    return (text[i:i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS))


def text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (a trailing ``\\r`` removed), one at a time."""
    for ln in io.StringIO(text, newline="\n"):
        yield ln[:-1].rstrip("\r") if ln.endswith("\n") else ln.rstrip("\r")


class Lines:
    """A kept body: text plus a line iterator over it (re-iterable; no list of lines is held)."""

    __slots__ = ("_buf", "size", "truncated", "lines", "max_lines")

    def __init__(self, max_lines: int | None = None):
        self._buf = io.StringIO()
        self.size = 0
        self.truncated = False
        self.lines = 0
        self.max_lines = max_lines

    def add(self, text: str) -> None:
        """Append one line, or a run of lines (``"l1\\nl2"``); a trailing ``\\r`` of each is removed.
        Past MAX_SECTION_CHARS the rest is dropped (at a line boundary) and ``truncated`` set."""
        if self.truncated:
            return
        if "\r" in text:
            text = _CR_EOL.sub("", text)
        room = MAX_SECTION_CHARS - self.size - 1
        if len(text) > room:
            self.truncated = True
            cut = text.rfind("\n", 0, max(room, 0))
            if cut <= 0:
                return
            text = text[:cut]
        if self.max_lines is not None:
            n = text.count("\n") + 1
            if self.lines + n > self.max_lines:
                self.truncated = True
                cut = -1
                for _ in range(self.max_lines - self.lines):
                    cut = text.find("\n", cut + 1)
                if cut <= 0:
                    return
                text, n = text[:cut], self.max_lines - self.lines
            self.lines += n
        self._buf.write(text)
        self._buf.write("\n")
        self.size += len(text) + 1

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


_SEP_LINE = re.compile(r"^_{44}\r*$", re.M)
_NONBLANK_LINE = re.compile(r"^[^\n]*\S[^\n]*$", re.M)
_CR_EOL = re.compile(r"\r+$", re.M)
#: a line of report_command's next nvidia-smi command (sections._split_commands)
_SMI_LINE = re.compile(r"^(?:/\S*/)?nvidia-smi(?: [^\n]*)?$", re.M)
#: the probe's kernel-log filter (kernel.keep) as whole lines
_KEEP = "(?i:nvrm|nvidia|xid|nouveau|fallen off|gsp)"
_KEEP_LINE = re.compile(rf"^[^\n]*{_KEEP}[^\n]*$", re.M)
#: a scan part's header (sections._SCAN_PART) or a kernel line to keep
_SCAN_LINE = re.compile(rf"^(?:  (?P<src>/\S+|journalctl -b -?\d{{1,6}}):[^\S\n]*|(?P<line>[^\n]*{_KEEP}[^\n]*))$", re.M)
_UNAME = re.compile(r"^uname:([^\n]*)$", re.M)
_FM = ("nv-fabricmanager", "nvidia-fabricmanager")


class SectionReader:
    """One pass over a log's text (sections.py names the header forms), on runs of whole lines:
    what is dropped is skipped by C-level searches (the next separator line, the next kernel line
    to keep), never one Python step per line. ``want(kind, name)`` says whether a section's body is
    kept; ``version_of`` reads the start block's version line. Of dmesg and the kernel-log scan only
    the lines the probe's own filter keeps are held (nodegate/bugreport/kernel.py ``keep``)."""

    def __init__(self, want: Callable[[str, str], bool], version_of: Callable[[str], str | None]):
        self.want, self.version_of = want, version_of
        self.out = ReadOut()
        self.pending = True       # the next non-blank line is a block header
        self.kind = self.name = ""
        self.cur: Kept | None = None
        self.first = False
        self.scan: dict[str, Lines] = {}
        self.part: Lines | None = None

    def read(self, chunks: Iterable[str]) -> ReadOut:
        for run in complete_lines(chunks):
            self._run(run)
        self._close()
        return self.out

    def _run(self, run: str) -> None:
        pos, n = 0, len(run)
        while pos <= n:
            if self.pending:
                m = _NONBLANK_LINE.search(run, pos)
                if m is None:
                    return
                pos = m.end() + 1
                line = m.group(0).rstrip("\r")
                if line != SEPARATOR:
                    self._open(line)
                    self.pending = False
                continue
            m = _SEP_LINE.search(run, pos)
            if m is None:
                self._body(run[pos:])
                return
            if m.start() > pos:
                self._body(run[pos:m.start() - 1])
            self._close()
            self.pending = True
            pos = m.end() + 1

    def _open(self, header: str) -> None:
        self.kind, self.name = _classify(header)
        self.out.sections += 1
        self.first = True
        self.cur = self._keep(self.kind, self.name, header.strip())

    def _keep(self, kind: str, name: str, header: str) -> Kept | None:
        if kind == "file" and "fabricmanager" in name:
            self.out.fm_traces = True
        if kind == "command" and name == "dmesg":
            self.out.dmesg = Lines(MAX_KERNEL_LINES)   # the last dmesg block wins, as before
            return None
        if kind in ("file", "command") and self.want(kind, name):
            k = Kept(kind, name, header)
            self.out.kept.append(k)
            return k
        return None

    def _body(self, seg: str) -> None:
        """Body lines of the open section (a run of whole lines)."""
        if self.first:
            self.first = False
            if self.kind == "file":
                nl = seg.find("\n")
                if _LS.match(seg if nl < 0 else seg[:nl]):
                    if nl < 0:
                        return
                    seg = seg[nl + 1:]
        kind, out = self.kind, self.out
        if kind in ("command", "scan") and not out.fm_traces and any(w in seg for w in _FM):
            out.fm_traces = True
        if kind == "start":
            self._start(seg)
        elif kind == "command" and self.name.startswith("nvidia-smi"):
            pos = 0
            for m in _SMI_LINE.finditer(seg):   # report_command's next command starts a section
                if m.start() > pos:
                    self._command(seg[pos:m.start() - 1])
                self.name = command_name(m.group(0).strip())
                out.sections += 1
                self.cur = self._keep("command", self.name, m.group(0).strip())
                pos = m.end() + 1
            if pos <= len(seg):
                self._command(seg[pos:])
        elif kind == "command":
            self._command(seg)
        elif kind == "scan":
            for m in _SCAN_LINE.finditer(seg):
                if m.group("src") is not None:
                    self.part = self.scan.setdefault(m.group("src"), Lines(MAX_KERNEL_LINES))
                elif self.part is not None:
                    self.part.add(m.group("line"))
        elif self.cur is not None:
            self.cur.body.add(seg)

    def _command(self, seg: str) -> None:
        if self.name == "dmesg":
            dmesg = self.out.dmesg
            for m in _KEEP_LINE.finditer(seg):
                dmesg.add(m.group(0))
        elif self.cur is not None:
            self.cur.body.add(seg)

    def _start(self, seg: str) -> None:
        out = self.out
        if out.uname is None and (m := _UNAME.search(seg)) is not None:
            out.uname = m.group(1).strip()
        if out.version is None:
            for m in _VERSION_LINE.finditer(seg):
                if (v := self.version_of(m.group(0).strip())) is not None:
                    out.version = v
                    break

    def _close(self) -> None:
        if self.kind == "scan":
            for src, lines in self.scan.items():
                if src.startswith("journalctl -b"):
                    # _SCAN_PART bounds the boot number to 6 digits: int() never sees a long one
                    self.out.journal[abs(int(src.split()[-1]))] = lines
                else:
                    self.out.syslog_files[src] = lines
        self.kind, self.cur, self.scan, self.part = "", None, {}, None
