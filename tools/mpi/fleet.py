"""An SSH fleet (tools/fleet) whose chroot nodes can run ``mpirun``'s remote daemons.

Open MPI starts one ``orted`` per node over SSH (no tree spawn); inside a chroot it needs its
binary, the shared libraries ``ldd`` names for it and for every MCA component it may dlopen
(openmpi/lib/openmpi3, pmix2/lib/pmix), the help files, /etc/openmpi, a writable /tmp for its
session directory, and an ``ssh`` on PATH (the rsh component checks that the agent exists even
when it launches nothing). Every file is copied once into ``<workdir>/shared/mpi`` and hard
linked into each root (tmpfs: a node costs links, not copies). The orteds connect back to
mpirun over loopback (the chroot changes only the file system): tests pass
``--mca oob_tcp_if_include lo --mca btl_tcp_if_include lo``.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

from tools.fleet import Fleet

from .build import NCCL_NAMES, PERFTEST_NAMES, build_shims

MCA_DIRS = ("/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3", "/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix")
DATA_DIRS = ("/usr/share/openmpi", "/etc/openmpi", "/usr/lib/x86_64-linux-gnu/pmix2/share")
SSH_STUB = "#!/bin/sh\necho 'ssh: no SSH from a simulated node' >&2\nexit 255\n"


@functools.lru_cache(maxsize=1)
def mpi_files() -> tuple[str, ...]:
    """orted, its libraries and every MCA component's, the data files (host paths)."""
    orted = shutil.which("orted") or "/usr/bin/orted"
    seeds = [orted] + [f for d in MCA_DIRS for f in glob.glob(f"{d}/*.so")]
    files: set[str] = set()
    todo = list(seeds)
    while todo:
        f = todo.pop()
        if f in files or not os.path.exists(f):
            continue
        files.add(f)
        files.add(os.path.realpath(f))
        r = subprocess.run(["ldd", f], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            m = re.search(r"=>\s*(/\S+)", line) or re.match(r"\s*(/\S+)", line)
            if m and m.group(1) not in files:
                todo.append(m.group(1))
    for d in DATA_DIRS:
        for p, _, fs in os.walk(d):
            files.update(os.path.join(p, f) for f in fs)
    return tuple(sorted(files))


def _in_root(path: str) -> str:
    for a in ("/lib/", "/bin/", "/sbin/", "/lib64/"):
        if path.startswith(a):
            return "/usr" + path   # node roots are merged-usr (tools/fleet/rootfs.py)
    return path


class MpiFleet(Fleet):
    """A Fleet of ``nodes`` (names) from one profile, MPI-capable. ``shims``: where the stand-ins
    are built (default ``<workdir>/shared/shims``)."""

    def __init__(self, nodes: list[str], profile: str = "h100-535-healthy", **kw):
        super().__init__(**kw)
        for n in nodes:
            self.add(profile, n)

    def build(self) -> None:
        super().build()
        shared = self.workdir / "shared" / "mpi"
        shared.mkdir(parents=True, exist_ok=True)
        shims = build_shims(self.workdir / "shared" / "shims")
        flat = {}
        for src in mpi_files():
            if os.path.islink(src):
                continue
            dst = shared / src.lstrip("/").replace("/", "__")
            if not dst.exists():
                shutil.copy2(src, dst)
            flat[src] = dst
        for n in self.nodes.values():
            if n.root is None:
                continue
            root = str(n.root)
            for src in mpi_files():
                tgt = root + _in_root(src)
                os.makedirs(os.path.dirname(tgt), exist_ok=True)
                if os.path.lexists(tgt):
                    continue
                if os.path.islink(src):
                    os.symlink(os.readlink(src), tgt)
                else:
                    os.link(flat[src], tgt)
            os.makedirs(root + "/usr/local/bin", exist_ok=True)
            for name in NCCL_NAMES + PERFTEST_NAMES:
                t = root + "/usr/local/bin/" + name
                if not os.path.lexists(t):
                    os.link(shims.path(name), t)
            for d, mode in (("/tmp", 0o1777), ("/dev/shm", 0o1777)):
                os.makedirs(root + d, exist_ok=True)
                os.chmod(root + d, mode)
            # coreutils' timeout (what real nodes have): busybox's leaves a watchdog process that
            # holds the session's stdout until its deadline
            tmo = shutil.which("timeout")
            if tmo and os.path.realpath(tmo) != os.path.realpath(shutil.which("busybox") or ""):
                t = root + "/usr/bin/timeout"
                if os.path.lexists(t):
                    os.unlink(t)
                shutil.copy2(os.path.realpath(tmo), t)
            Path(root + "/usr/bin/ssh").write_text(SSH_STUB)
            os.chmod(root + "/usr/bin/ssh", 0o755)
            Path(root + "/etc/nodegate-node").write_text(n.name + "\n")
            Path(root + "/etc/nodegate-faults").write_text("")

    def set_faults(self, text: str) -> None:
        """The fault file every node's stand-ins read (tools/mpi/nccl_tests_shim.c)."""
        for n in self.nodes.values():
            if n.root is not None:
                Path(str(n.root) + "/etc/nodegate-faults").write_text(text)

    def leftovers(self) -> list[str]:
        """Processes still running inside a node root, other than sshd ('<pid> <comm>')."""
        base = str(self.workdir.resolve()) + "/"
        out = []
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                r = os.readlink(p / "root")
                comm = (p / "comm").read_text().strip()
            except OSError:
                continue
            if (r + "/").startswith(base) and comm != "sshd":
                out.append(f"{p.name} {comm}")
        return out
