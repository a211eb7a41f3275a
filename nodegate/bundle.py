"""Bundles: the raw evidence of one node, saved as a directory, replayable offline.

Layout (documented for people in docs/bundle.md)::

    <bundles>/<node>/meta.json     node, target, probe version, times, gather status, per-item status
    <bundles>/<node>/<key>.out     the item's stdout, byte-exact (capped, see probe.DEFAULT_ITEM_CAP)
    <bundles>/<node>/<key>.err     its stderr, when not empty
    <bundles>/<node>/<key>.rc      its exit code when not 0, or why it has none (absent: 0)

A bundle is never rewritten by evaluation; reports only read it.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EvidenceError
from .probe import PROBE_VERSION, RawItem

_KEY_RE = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
_NODE_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,253}$")

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
    when the item never finished; ``status`` is ok | timeout | truncated | malformed.
    """

    key: str
    stdout: bytes
    stderr: bytes
    rc: int | None
    status: str = "ok"
    duration_s: float | None = None

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
        if self.status == "truncated":
            return "output exceeded the per-item cap; not evaluated"
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
        """Write under ``root/<node>/`` (replacing files of the same keys); returns the directory."""
        d = Path(root) / safe_node_dirname(self.node)
        d.mkdir(parents=True, exist_ok=True)
        meta = dict(self.meta)
        meta.setdefault("node", self.node)
        meta.setdefault("probe_version", PROBE_VERSION)
        meta.setdefault("status", "ok")
        meta["items"] = {k: {"rc": e.rc, "status": e.status, "duration_s": e.duration_s,
                             "bytes": len(e.stdout)} for k, e in sorted(self.items.items())}
        ds = os.fspath(d) + os.sep
        # a directory reused from an earlier run (reports/bundles is the default) must not lend
        # this run items it did not gather: every item file not written below goes
        with os.scandir(d) as it:
            names = [de.name for de in it]
        for name in names:
            stem, _, suffix = name.rpartition(".")
            if suffix in ("out", "err", "rc") and _KEY_RE.match(stem) and (
                    stem not in self.items or (suffix == "err" and not self.items[stem].stderr)
                    or (suffix == "rc" and self.items[stem].rc == 0)):
                os.unlink(ds + name)
        # os.open/os.write: ~100 files a node, and pathlib's open() cost 2-3x the system calls'
        # own time (docs/performance.md)
        for k, e in self.items.items():
            if not _KEY_RE.match(k):
                continue
            _put(ds + k + ".out", e.stdout)
            if e.stderr:
                _put(ds + k + ".err", e.stderr)
            # exit code 0 is the absent .rc (meta.json has every item's): about half the files to
            # create per node; no exit code: why (the controller's deadline cut it, or the cap
            # cut its RC line away)
            if e.rc is None:
                why = e.status if e.status in ("truncated", "malformed") else "timeout"
                _put(ds + k + ".rc", f"{why}\n".encode())
            elif e.rc != 0:
                _put(ds + k + ".rc", b"%d\n" % e.rc)
        _put(ds + ".meta.json.tmp", (json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n").encode())
        os.replace(ds + ".meta.json.tmp", ds + "meta.json")
        self.path = d
        return d

    # ------------------------------------------------------------------ reading
    @classmethod
    def load(cls, d: Path) -> "Bundle":
        """Read a bundle directory (ours or hand-built). Unknown files are ignored."""
        d = Path(d)
        meta: dict = {}
        mp = d / "meta.json"
        if mp.is_file():
            try:
                meta = json.loads(mp.read_text(errors="replace"))
                if not isinstance(meta, dict):
                    meta = {"status": "malformed", "error": "meta.json is not an object"}
            except ValueError as e:
                meta = {"status": "malformed", "error": f"meta.json unreadable: {e}"}
        node = str(meta.get("node") or d.name)
        item_meta = meta.get("items") if isinstance(meta.get("items"), dict) else {}
        items: dict[str, Evidence] = {}
        listed = item_meta if meta.get("items") is not None and isinstance(meta.get("items"), dict) else None
        for f in sorted(d.glob("*.out")):
            key = f.name[:-4]
            if not _KEY_RE.match(key):
                continue
            if listed is not None and key not in listed:
                continue   # not this run's: meta.json lists every item the run gathered
            out = _read_capped(f)
            errp = d / f"{key}.err"
            err = _read_capped(errp) if errp.is_file() else b""
            rcp = d / f"{key}.rc"
            im = item_meta.get(key) if isinstance(item_meta.get(key), dict) else {}
            status = str(im.get("status", "ok"))
            rc: int | None = 0
            if rcp.is_file():
                t = rcp.read_text(errors="replace").strip()
                if t in ("timeout", "truncated", "malformed"):
                    rc, status = None, t
                else:
                    try:
                        rc = int(t)
                    except ValueError:
                        rc, status = None, "malformed"
            if len(out) >= READ_CAP:
                status = "truncated"
            items[key] = Evidence(key, out, err, rc, status, im.get("duration_s"))
        return cls(node=node, items=items, meta=meta, path=d)


def _put(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (created with 0o666 less the umask, or truncated), as
    ``Path.write_bytes`` does, without its file object."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _read_capped(p: Path) -> bytes:
    with open(p, "rb") as fh:
        return fh.read(READ_CAP)


def _is_bundle(p: Path) -> bool:
    return (p / "meta.json").is_file() or any(p.glob("*.out"))


def discover(root: Path, max_depth: int = 4) -> list[Path]:
    """Bundle directories under ``root`` (``root`` itself if it is one), searched up to
    ``max_depth`` levels deep so a tree of fleets (``samples/h200-vm``, ``samples/fleet/<node>``)
    replays as one. Symlinked directories are not followed. Sorted by path."""
    root = Path(root)
    if _is_bundle(root):
        return [root]
    found: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        if depth > max_depth:
            return
        try:
            children = sorted(c for c in d.iterdir() if c.is_dir() and not c.is_symlink())
        except OSError:
            return
        for c in children:
            if _is_bundle(c):
                found.append(c)
            else:
                walk(c, depth + 1)

    walk(root, 1)
    return found


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
