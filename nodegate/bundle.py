"""Bundles: the raw evidence of one node, saved as a directory, replayable offline.

Layout (documented for people in docs/bundle.md)::

    <bundles>/<node>/meta.json     node, target, probe version, times, gather status, per-item status
    <bundles>/<node>/<key>.out     the item's stdout, byte-exact (capped, see probe.DEFAULT_ITEM_CAP)
    <bundles>/<node>/<key>.err     its stderr, when not empty
    <bundles>/<node>/<key>.rc      its exit code when not 0, or why it has none (absent: 0)

A bundle is never rewritten by evaluation; reports only read it.

One module because reading and writing a bundle share its layout, its caps and its refusals (a
bundle read back must be exactly what was written); file-level safety is nodegate.safeio.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EvidenceError
from .probe import PROBE_VERSION, RawItem
from .textsafe import shown

_KEY_RE = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
_NODE_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,253}$")
#: the names of a bundle's item files
_FILE_RE = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)*\.(?:out|err|rc)$")

#: Largest evidence file read back from a bundle, bytes (hand-built or hostile bundles).
READ_CAP = 64 * 1024 * 1024


def safe_node_dirname(node: str) -> str:
    """Node names become directory names: refuse anything that could escape the bundle root."""
    if not _NODE_RE.match(node) or node in (".", ".."):
        raise ValueError(f"node name not usable as a directory: {node!r}")
    return node


@dataclass
class Evidence:
    """One evidence item read from a bundle.

    ``text`` is stdout decoded as UTF-8 with invalid bytes replaced (U+FFFD); ``rc`` is None
    when the item never finished; ``status`` is ok | timeout | truncated | malformed, or, read
    back from a bundle (``Bundle.load``), refused (a file that is not a regular file inside the
    bundle directory: never read) | inconsistent (the files contradict meta.json); ``why`` says
    which file and how (then stdout and stderr are empty and rc is None).
    """

    key: str
    stdout: bytes
    stderr: bytes
    rc: int | None
    status: str = "ok"
    duration_s: float | None = None
    why: str = ""

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def err_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    def problem(self, ok_rcs: tuple[int, ...] = (0,)) -> str | None:
        """Why this item cannot be used, or None. Used to build ERROR messages."""
        if self.status == "timeout":
            return "command timed out (deadline reached before it finished)"
        if self.status in ("refused", "inconsistent"):
            return self.why or f"bundle item {self.status}"
        if self.status == "truncated":
            return "output exceeded the per-item cap; not evaluated" + (f" ({self.why})" if self.why else "")
        if self.status == "malformed":
            return "probe output for this item was malformed (framed twice or without exit code)"
        if self.rc == 127:
            first = self.err_text.strip().splitlines()[:1]
            return f"tool missing ({first[0] if first else 'command not found'})"
        if self.rc == 124:
            return "command timed out on the node (timeout exit 124)"
        if self.rc not in ok_rcs:
            first = self.err_text.strip().splitlines()[:1] or self.text.strip().splitlines()[:1]
            return f"exit code {self.rc}" + (f": {first[0][:300]}" if first else "")
        return None


@dataclass
class Bundle:
    """All evidence of one node plus its metadata.

    ``meta['status']`` is ``ok`` when the probe ran (items may still be missing or failed),
    otherwise the gather error kind (unreachable, hostkey, auth, timeout, ...) with
    ``meta['error']`` the message; then every check of the node is ERROR with that message.
    """

    node: str
    items: dict[str, Evidence] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    @property
    def gather_error(self) -> str | None:
        st = self.meta.get("status", "ok")
        if st == "ok":
            return None
        return f"{st}: {self.meta.get('error', '')}".strip()

    def get(self, key: str) -> Evidence:
        """The item, or EvidenceError("evidence not collected: KEY")."""
        ge = self.gather_error
        if ge and key not in self.items:
            raise EvidenceError(key, f"node not gathered ({ge})")
        try:
            return self.items[key]
        except KeyError:
            cut = self.meta.get("cut_at")
            why = f"evidence not collected: {key}"
            if self.meta.get("origin") == "nvidia-bug-report":   # nodegate/bugreport: the log lacks it
                absent = self.meta.get("absent") if isinstance(self.meta.get("absent"), dict) else {}
                why = f"evidence not in the bug report: {key}" + (f" ({absent[key]})" if key in absent else "")
            if cut:
                why += f" (probe stopped at {cut}: {self.meta.get('cut_reason') or 'deadline'})"
            raise EvidenceError(key, why) from None

    def has(self, key: str) -> bool:
        return key in self.items

    def text(self, key: str, ok_rcs: tuple[int, ...] = (0,)) -> str:
        """stdout text of a usable item; EvidenceError naming the key and the reason otherwise."""
        ev = self.get(key)
        prob = ev.problem(ok_rcs)
        if prob:
            raise EvidenceError(key, prob)
        return ev.text

    # ------------------------------------------------------------------ writing
    @classmethod
    def from_raw(cls, node: str, raw: dict[str, RawItem], meta: dict) -> "Bundle":
        items = {k: Evidence(k, r.stdout, r.stderr, r.rc, r.status, r.duration_s) for k, r in raw.items()}
        return cls(node=node, items=items, meta=meta)

    def write(self, root: Path) -> Path:
        """Write under ``root/<node>/`` (replacing files of the same keys); returns the directory.

        ``root`` is the operator's directory (``--bundles-dir``, ``nodegate-collect --out``);
        ``<node>`` is opened relative to it without following a link (nodegate.safeio.open_dir):
        a link planted there (``<out>/gpu007 -> /etc``) raises ``safeio.LinkRefused`` (an
        OSError) and nothing is written or removed through it. Raises OSError when the bundle
        cannot be written."""
        from . import safeio
        d = Path(root) / safe_node_dirname(self.node)
        meta = dict(self.meta)
        meta.setdefault("node", self.node)
        meta.setdefault("probe_version", PROBE_VERSION)
        meta.setdefault("status", "ok")
        meta["items"] = {k: {"rc": e.rc, "status": e.status, "duration_s": e.duration_s,
                             "bytes": len(e.stdout)} for k, e in sorted(self.items.items())}
        dfd = safeio.open_dir(d, anchor=root)
        try:
            # a directory reused from an earlier run (reports/bundles is the default) must not
            # lend this run items it did not gather: every item file not written below goes
            # (names in the directory opened above: a link's target is never listed nor touched)
            with os.scandir(dfd) as it:
                names = [de.name for de in it]
            for name in names:
                stem, _, suffix = name.rpartition(".")
                if suffix in ("out", "err", "rc") and _KEY_RE.match(stem) and (
                        stem not in self.items or (suffix == "err" and not self.items[stem].stderr)
                        or (suffix == "rc" and self.items[stem].rc == 0)):
                    try:
                        os.unlink(name, dir_fd=dfd)
                    except IsADirectoryError:
                        pass
            # os.open/os.write: ~100 files a node, and pathlib's open() cost 2-3x the system
            # calls' own time (docs/performance.md)
            put = safeio.put_at
            for k, e in self.items.items():
                if not _KEY_RE.match(k):
                    continue
                put(dfd, k + ".out", e.stdout)
                if e.stderr:
                    put(dfd, k + ".err", e.stderr)
                # exit code 0 is the absent .rc (meta.json has every item's): about half the
                # files to create per node; no exit code: why (the controller's deadline cut
                # it, or the cap cut its RC line away)
                if e.rc is None:
                    why = e.status if e.status in ("truncated", "malformed") else "timeout"
                    put(dfd, k + ".rc", f"{why}\n".encode())
                elif e.rc != 0:
                    put(dfd, k + ".rc", b"%d\n" % e.rc)
            put(dfd, ".meta.json.tmp",
                (json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n").encode())
            os.replace(".meta.json.tmp", "meta.json", src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            os.close(dfd)
        self.path = d
        return d

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, d: Path, root: Path | None = None, only=None) -> "Bundle":
        """Read a bundle directory (ours or hand-built, trusted or not). Never raises for what
        the directory holds; unknown files are ignored.

        The directory is untrusted (``--replay`` of a vendor's tarball, docs/security.md): it is
        opened without following a symbolic link, and so is every directory between ``root``
        (the ``--replay`` argument, the operator's own path) and it; every file is read through
        ``read_regular`` (regular files only, never a link, a FIFO, a device). A file of another
        type makes its item ERROR naming the key and the type. Files are sized before anything is
        read: an item over ``READ_CAP`` is ``truncated`` unread, and a bundle whose files hold
        more than ``BUNDLE_BUDGET`` bytes (hard links counted once) is not read at all (its
        node is ERROR). When meta.json lists the items, each item's files must agree with it
        (exit code, status, size) or the item is ERROR (``inconsistent``). ``only``: read meta.json
        and just these item keys (a bounded-memory ``--replay`` reads a node's identity first and
        the rest when its items run: FleetRun.add_lazy)."""
        d = Path(d)
        try:
            dfd = _open_dir(d, root)
        except OSError as e:
            return cls(node=_node_name(None, d), meta={
                "status": REFUSED, "error": f"bundle directory not opened: {_os_why(e)}"}, path=d)
        try:
            return _load_fd(cls, dfd, d, only)
        finally:
            os.close(dfd)


#: ``meta.json`` status of a bundle that is not read (its directory or meta.json is no regular
#: one, or its files are over BUNDLE_BUDGET): every check of its node is ERROR with ``error``
REFUSED = "bundle-refused"

#: Largest meta.json read back, bytes (ours: a few KiB plus the node's spec).
META_CAP = 4 * 1024 * 1024

#: Most bytes one bundle's evidence files may hold, hard links counted once: a live run writes
#: at most the controller's stream caps (transport.STREAM_CAP 64 MiB of stdout + STDERR_CAP
#: 4 MiB) plus meta.json. A larger bundle was not written by a probe run: its node is ERROR and
#: nothing of it is read (40 hard links to one sparse file made 2.7 GB of memory before).
BUNDLE_BUDGET = 96 * 1024 * 1024

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
_DIR_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
              | getattr(os, "O_CLOEXEC", 0))


class UnsafeFile(Exception):
    """A bundle file that is not read: ``why`` names its type or the problem."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why
        super().__init__(f"{name}: {why}")


def file_type(mode: int) -> str:
    """The file type of ``st_mode`` in words (``ls -l``'s first column, spelled out)."""
    for test, what in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"),
                       (stat.S_ISLNK, "symbolic link"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return what
    return f"file of type {stat.S_IFMT(mode):o}"


def _os_why(e: OSError) -> str:
    # safeio.LinkRefused (a directory on the way, from safeio.open_dir): the kernel's own
    # error, which these words have always named
    code = getattr(e, "os_errno", e.errno)
    if code in (errno.ELOOP, errno.EMLINK):
        return "a symbolic link (not followed)"
    if code == errno.ENOTDIR:
        return "not a directory (or a symbolic link to one)"
    return e.strerror or type(e).__name__


def _open_dir(d: Path, root: Path | None) -> int:
    """An fd of ``d``, opened component by component from ``root`` without following a
    symbolic link (``root`` itself is the operator's path and is followed: safeio.open_dir,
    nothing created); without ``root`` (or ``d`` outside it) only ``d``'s last component is
    refused as a link."""
    if root is not None:
        from . import safeio
        try:
            return safeio.open_dir(d, anchor=root, create=False)
        except ValueError:
            pass   # d is not under root
    return os.open(d, _DIR_FLAGS)


def lstat_entry(dir_fd: int, name: str) -> os.stat_result:
    """``lstat`` of ``name`` inside the directory ``dir_fd`` (a link is the link)."""
    return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


def read_regular(dir_fd: int, name: str, cap: int, st: os.stat_result | None = None) -> bytes:
    """The bytes of ``name`` in the directory ``dir_fd`` when it is a regular file of at most
    ``cap`` bytes; raises UnsafeFile naming the file type (or the size, or a change while
    reading) otherwise. Never follows a symbolic link (``O_NOFOLLOW``), never blocks on a FIFO
    (``O_NONBLOCK``; a FIFO or device is refused by its ``lstat`` before any open), checks with
    ``fstat`` that the file opened is the one sized (same device and inode, still regular), and
    reads at most its size: a file that grows while read is refused, not followed."""
    try:
        st = st or lstat_entry(dir_fd, name)
    except FileNotFoundError:
        raise UnsafeFile(name, "missing") from None
    except OSError as e:
        raise UnsafeFile(name, f"not readable: {_os_why(e)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeFile(name, f"is a {file_type(st.st_mode)}, not a regular file; not read")
    if st.st_size > cap:
        raise UnsafeFile(name, f"holds {st.st_size} bytes, over the cap of {cap}; not read")
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        raise UnsafeFile(name, f"not opened: {_os_why(e)}") from None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise UnsafeFile(name, f"replaced while being read (now a {file_type(fst.st_mode)}); not read")
        want = fst.st_size
        chunks, got = [], 0
        while got <= want:
            b = os.read(fd, want + 1 - got)
            if not b:
                break
            chunks.append(b)
            got += len(b)
        if got > want:
            raise UnsafeFile(name, f"grew while being read (more than its {want} bytes); not read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _node_name(meta_node, d: Path) -> str:
    """The node a bundle is of: meta.json's ``node``, else its directory name; a name with
    control characters is kept with them shown escaped (``\\x1b``), the one form every report
    and the terminal then print (a raw one split a node into two summary rows)."""
    name = meta_node if isinstance(meta_node, str) and meta_node else d.name
    return shown(name, newlines=False)


def _load_meta(dfd: int, entries: dict) -> dict:
    st = entries.get("meta.json")
    if st is None:
        return {}
    try:
        raw = read_regular(dfd, "meta.json", META_CAP, st)
    except UnsafeFile as e:
        return {"status": REFUSED, "error": f"meta.json {e.why}"}
    try:
        meta = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as e:
        # RecursionError: deeply nested arrays under the size cap (json's C decoder recurses)
        return {"status": "malformed", "error": f"meta.json unreadable: {type(e).__name__}: {str(e)[:200]}"}
    if not isinstance(meta, dict):
        return {"status": "malformed", "error": "meta.json is not an object"}
    return meta


def _load_fd(cls, dfd: int, d: Path, only=None) -> "Bundle":
    entries: dict[str, os.stat_result] = {}
    try:
        with os.scandir(dfd) as it:
            for de in it:
                if de.name == "meta.json" or _FILE_RE.match(de.name):
                    try:
                        entries[de.name] = lstat_entry(dfd, de.name)
                    except OSError:
                        continue   # vanished while listed
    except OSError as e:
        return cls(node=_node_name(None, d), meta={"status": REFUSED,
                                                   "error": f"bundle directory not listed: {_os_why(e)}"}, path=d)
    meta = _load_meta(dfd, entries)
    node = _node_name(meta.get("node"), d)
    listed = meta.get("items") if isinstance(meta.get("items"), dict) else None
    keys = sorted({n[:-4] for n in entries if n.endswith(".out") and _KEY_RE.match(n[:-4])}
                  | ({k for k in listed if isinstance(k, str) and _KEY_RE.match(k)} if listed is not None else set()))
    if listed is not None:
        keys = [k for k in keys if k in listed]   # not this run's: meta.json lists every item it gathered
    # the budget is the bundle's, whatever a reader wants of it: a bundle refused whole stays
    # refused when only its ids are read (a released node's node_identity item, run.bundle_for)
    over = _over_budget(entries, keys)
    if only is not None:
        keys = [k for k in keys if k in only]
    if over:
        meta = dict(meta, status=REFUSED, error=over)
        return cls(node=node, items={}, meta=meta, path=d)
    cache: dict = {}
    items = {k: _load_item(dfd, entries, k, listed, cache) for k in keys}
    return cls(node=node, items=items, meta=meta, path=d)


def _over_budget(entries: dict, keys: list[str]) -> str | None:
    """Why the bundle is not read (its files over BUNDLE_BUDGET), or None. Regular files only
    (the rest is never read), hard links once, an item over READ_CAP not at all (it stays
    unread and ``truncated``)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    names = ["meta.json"] + [f"{k}.{s}" for k in keys for s in ("out", "err", "rc")]
    for n in names:
        st = entries.get(n)
        if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > READ_CAP:
            continue
        ident = (st.st_dev, st.st_ino)
        if ident in seen:
            continue
        seen.add(ident)
        total += st.st_size
    if total > BUNDLE_BUDGET:
        return (f"bundle files hold {total} bytes, over the per-bundle budget of {BUNDLE_BUDGET} bytes "
                "(a probe run writes at most ~68 MiB): nothing of it read")
    return None


def _read_once(dfd: int, name: str, cap: int, st: os.stat_result, cache: dict) -> bytes:
    """``read_regular``, once per inode: hard links to one file share one bytes object (what
    the budget counted once is held once)."""
    ident = (st.st_dev, st.st_ino)
    got = cache.get(ident)
    if got is None:
        got = cache[ident] = read_regular(dfd, name, cap, st)
    return got


def _load_item(dfd: int, entries: dict, key: str, listed: dict | None, cache: dict) -> Evidence:
    """One item from its files, checked against meta.json's record of it when there is one."""
    im = listed.get(key) if listed is not None else None
    im = im if isinstance(im, dict) else None
    dur = im.get("duration_s") if im is not None else None
    dur = dur if isinstance(dur, (int, float)) and not isinstance(dur, bool) else None

    def unusable(status: str, why: str) -> Evidence:
        return Evidence(key, b"", b"", None, status, dur, why=why)

    outn = f"{key}.out"
    if outn not in entries:
        return unusable("inconsistent", f"meta.json lists {key} but {outn} is missing")
    try:
        out = _read_once(dfd, outn, READ_CAP, entries[outn], cache)
    except UnsafeFile as e:
        if e.why.startswith("holds ") and stat.S_ISREG(entries[outn].st_mode):
            return Evidence(key, b"", b"", None, "truncated", dur,
                            why=f"{outn} {e.why} (bundle.READ_CAP)")
        return unusable("refused", f"bundle file {outn} {e.why}")
    err = b""
    if f"{key}.err" in entries:
        try:
            err = _read_once(dfd, f"{key}.err", READ_CAP, entries[f"{key}.err"], cache)
        except UnsafeFile as e:
            return unusable("refused", f"bundle file {key}.err {e.why}")
    status = str(im.get("status", "ok")) if im is not None else "ok"
    rc: int | None = 0
    word = None
    if f"{key}.rc" in entries:
        try:
            t = read_regular(dfd, f"{key}.rc", 4096, entries[f"{key}.rc"]).decode("utf-8", "replace").strip()
        except UnsafeFile as e:
            return unusable("refused", f"bundle file {key}.rc {e.why}")
        if t in ("timeout", "truncated", "malformed"):
            rc, status, word = None, t, t
        else:
            try:
                rc = int(t)
            except ValueError:
                rc, status = None, "malformed"
    if im is not None:
        why = _disagreement(key, im, rc, word, len(out))
        if why:
            return unusable("inconsistent", why)
    if len(out) >= READ_CAP:
        status = "truncated"
    return Evidence(key, out, err, rc, status, dur)


def _disagreement(key: str, im: dict, rc: int | None, word: str | None, size: int) -> str | None:
    """How ``key``'s files contradict meta.json's record (``Bundle.write``: rc, status, bytes),
    or None. ``.rc`` absent is exit code 0; an item without exit code has its status there. A
    record without one of the fields makes no claim about it."""
    mrc = im.get("rc", rc)
    if "rc" in im and not (mrc is None or (isinstance(mrc, int) and not isinstance(mrc, bool))):
        return f"meta.json gives {key} the exit code {mrc!r}, not a number"
    if mrc != rc:
        have = (f"{key}.rc says {word or rc}" if rc != 0 or word else f"{key}.rc is absent (exit code 0)")
        return f"meta.json says {key} ended with exit code {mrc}, but {have}"
    mst = im.get("status", "ok")
    if rc is None and word is not None and "status" in im:
        want_word = mst if mst in ("truncated", "malformed") else "timeout"
        if word != want_word:
            return f"meta.json says {key} is {mst}, but {key}.rc says {word}"
    mb = im.get("bytes")
    if mb is not None and mb != size:
        return f"meta.json says {key}.out holds {mb!r} bytes, but it holds {size}"
    return None


def _is_bundle(p: Path) -> bool:
    return (p / "meta.json").is_file() or any(p.glob("*.out"))


#: the cross-node phase's evidence below a bundles directory (``crossnode/<run id>/jobs/<job>/``,
#: nodegate.crossnode.evidence): its job directories are bundles of jobs, never of nodes
CROSSNODE_DIR = "crossnode"


def discover(root: Path, max_depth: int = 4, skipped: list[Path] | None = None) -> list[Path]:
    """Bundle directories under ``root`` (``root`` itself if it is one), searched up to
    ``max_depth`` levels deep so a tree of fleets (``samples/h200-vm``, ``samples/fleet/<node>``)
    replays as one. A directory ``crossnode`` that is not itself a bundle (the cross-node
    phase's evidence) is not searched. Symlinked directories are not followed (each one is appended to
    ``skipped``, for the caller to name). Sorted by path."""
    root = Path(root)
    if _is_bundle(root):
        return [root]
    found: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        if depth > max_depth:
            return
        try:
            entries = sorted(d.iterdir())
        except OSError:
            return
        for c in entries:
            if c.is_symlink():
                if skipped is not None and c.is_dir():
                    skipped.append(c)
                continue
            if not c.is_dir():
                continue
            if _is_bundle(c):
                found.append(c)
            elif c.name != CROSSNODE_DIR:
                walk(c, depth + 1)

    walk(root, 1)
    return found


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
