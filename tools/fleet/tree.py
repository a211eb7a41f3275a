"""An in-memory file tree (what a node's root will contain) and its writer.

``Tree`` collects regular files, symlinks, directories, device nodes and hardlinks to shared
read-only files; ``write_tree`` materializes it under a root directory. Every path is absolute
*inside* the node (``/proc/modules``); symlinked parents (``/lib -> usr/lib``) are resolved by
the writer, never outside the root.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: mtime given to every file and directory the probe lists with ``ls -l`` (firmware, rundir):
#: fixed so that bundles built twice are byte-identical.
FIXED_MTIME = 1_700_000_000  # 2023-11-14T22:13:20Z


@dataclass
class Entry:
    kind: str                 # file | link | dir | dev | hardlink
    data: bytes = b""         # file content
    target: str = ""          # link target / hardlink source (host path)
    mode: int = 0o644
    uid: int = 0
    gid: int = 0
    dev: tuple[int, int] | None = None  # (major, minor) for char devices


@dataclass
class Tree:
    entries: dict[str, Entry] = field(default_factory=dict)

    @staticmethod
    def _norm(path: str) -> str:
        p = PurePosixPath(path)
        if not p.is_absolute() or ".." in p.parts:
            raise ValueError(f"tree paths must be absolute and without '..': {path!r}")
        return str(p)

    def file(self, path: str, content: str | bytes, mode: int = 0o644, uid: int = 0, gid: int = 0) -> None:
        data = content.encode() if isinstance(content, str) else bytes(content)
        self.entries[self._norm(path)] = Entry("file", data=data, mode=mode, uid=uid, gid=gid)

    def script(self, path: str, text: str) -> None:
        self.file(path, text, mode=0o755)

    def link(self, path: str, target: str) -> None:
        self.entries[self._norm(path)] = Entry("link", target=target)

    def dir(self, path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        self.entries[self._norm(path)] = Entry("dir", mode=mode, uid=uid, gid=gid)

    def dev(self, path: str, major: int, minor: int, mode: int = 0o666) -> None:
        self.entries[self._norm(path)] = Entry("dev", mode=mode, dev=(major, minor))

    def hardlink(self, path: str, host_source: Path) -> None:
        self.entries[self._norm(path)] = Entry("hardlink", target=str(host_source))

    def remove(self, path: str) -> None:
        self.entries.pop(self._norm(path), None)

    def has(self, path: str) -> bool:
        return self._norm(path) in self.entries

    def text(self, path: str) -> str:
        return self.entries[self._norm(path)].data.decode()


def _host_path(root: Path, path: str) -> Path:
    """Host path of node path ``path``, following symlinked parents created inside ``root``."""
    cur = root
    parts = PurePosixPath(path).parts[1:]
    for i, part in enumerate(parts):
        nxt = cur / part
        if i < len(parts) - 1 and nxt.is_symlink():
            tgt = os.readlink(nxt)
            if tgt.startswith("/"):
                nxt = root / tgt.lstrip("/")
            else:
                nxt = cur / tgt
            nxt = Path(os.path.normpath(nxt))
            if root not in nxt.parents and nxt != root:
                raise ValueError(f"symlink escapes the root: {path}")
        cur = nxt
    return cur


def write_tree(tree: Tree, root: Path) -> None:
    """Create ``tree`` under ``root`` (which must exist). Links first so parents resolve."""
    order = sorted(tree.entries.items(), key=lambda kv: (kv[1].kind != "link" or kv[0].count("/") > 1, kv[0]))
    for path, e in order:
        hp = _host_path(root, path)
        hp.parent.mkdir(parents=True, exist_ok=True)
        if e.kind == "dir":
            hp.mkdir(exist_ok=True)
            os.chmod(hp, e.mode)
            if e.uid or e.gid:
                os.chown(hp, e.uid, e.gid)
            os.utime(hp, (FIXED_MTIME, FIXED_MTIME))
        elif e.kind == "link":
            os.symlink(e.target, hp)
        elif e.kind == "hardlink":
            try:
                os.link(e.target, hp)
            except OSError:  # another filesystem: copy
                hp.write_bytes(Path(e.target).read_bytes())
                os.chmod(hp, 0o755)
        elif e.kind == "dev":
            try:
                os.mknod(hp, 0o020000 | e.mode, os.makedev(*e.dev))
            except PermissionError:
                hp.write_bytes(b"")  # no CAP_MKNOD: a plain file still lists under /dev
            os.chmod(hp, e.mode)
        else:
            hp.write_bytes(e.data)
            os.chmod(hp, e.mode)
            if e.uid or e.gid:
                os.chown(hp, e.uid, e.gid)
            os.utime(hp, (FIXED_MTIME, FIXED_MTIME))
    # directories listed with ls -l get their fixed mtime after their content is written
    for path, e in tree.entries.items():
        if e.kind == "dir":
            os.utime(_host_path(root, path), (FIXED_MTIME, FIXED_MTIME))
