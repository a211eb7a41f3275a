"""Materialize a rendered node as a chroot root: userland (dash + busybox applets), shims, files.

Userland: dash is ``/bin/sh`` (Debian's busybox ``sh`` runs its own applets before PATH, so
shims would be ignored); busybox provides the plain utilities as symlinks, never under a shim's
name. ``/bin/bash`` is a two-line script (sshd runs root's login shell inside the chroot, see
../shared/spec/testbed-notes.md). Binaries are copied once per fleet into ``<workdir>/shared`` and
hardlinked into each root, so a node costs a few hundred small files.

Shims answer recorded invocations from ``/usr/lib/nodegate-fleet/<tool>/<n>.{out,err,rc,hang}``
by matching ``"$*"``: ``tools/fleet/shim.c`` compiled once per fleet where a C compiler exists
(one exec per call; the patterns in ``<tool>/cases``), else ``#!/bin/sh`` scripts (a dash and
one or two ``cat`` per call: on a 2-core benchmark machine that CPU is taken from the controller).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .render import NodeRender, ToolTable
from .tree import Tree, write_tree

SHIM_DATA = "/usr/lib/nodegate-fleet"
#: where a shim with a sequence of answers counts its calls (shim.c RUNS; world-writable, sticky)
RUNS = "/var/lib/nodegate-fleet-runs"

#: busybox applets every node gets (unless listed in ``tools_absent``); shim names never appear here.
APPLETS = ("[", "[[", "awk", "basename", "cat", "chmod", "cp", "cut", "date", "dirname", "echo", "egrep", "env",
           "expr", "false", "fgrep", "find", "grep", "head", "hostname", "id", "kill", "ln", "ls", "mkdir", "mktemp",
           "mv", "od", "printf", "ps", "pwd", "readlink", "realpath", "rm", "sed", "seq", "sleep", "sort", "stat",
           "tail", "tee", "test", "timeout", "touch", "tr", "true", "uniq", "wc", "which", "whoami", "xargs")

BASH_SCRIPT = '#!/bin/sh\nexec /bin/sh "$@"\n'


def host_binaries() -> dict[str, Path]:
    """Host files the userland needs: dash, busybox and dash's shared libraries (from ldd)."""
    dash = Path(shutil.which("dash") or "/usr/bin/dash")
    bb = Path(shutil.which("busybox") or "/usr/bin/busybox")
    files = {"/usr/bin/dash": dash, "/usr/bin/busybox": bb}
    out = subprocess.run(["ldd", str(dash)], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.search(r"(/\S+)", line.split("=>")[-1])
        if m:
            files[m.group(1)] = Path(m.group(1))
    return files


def prepare_shared(shared: Path) -> dict[str, Path]:
    """Copy userland binaries into ``shared`` once; returns node path -> shared host path."""
    shared.mkdir(parents=True, exist_ok=True)
    os.chmod(shared, 0o755)
    out = {}
    for node_path, src in host_binaries().items():
        dst = shared / node_path.lstrip("/").replace("/", "__")
        if not dst.exists():
            shutil.copy2(os.path.realpath(src), dst)
            os.chmod(dst, 0o755)
        out[node_path] = dst
    return out


SHIM_SOURCE = Path(__file__).with_name("shim.c")


def compile_shim(shared: Path) -> Path | None:
    """Build ``shim.c`` into ``shared/shim`` (once per fleet); None without a C compiler or when
    it fails (the shell shims are used then). Linked like dash, against the libraries already
    copied into every root."""
    out = shared / "shim"
    if out.exists():
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or os.environ.get("NODEGATE_FLEET_SH_SHIMS"):
        return None
    r = subprocess.run([cc, "-O2", "-o", str(out), str(SHIM_SOURCE)], capture_output=True)
    if r.returncode != 0 or not out.exists():
        return None
    os.chmod(out, 0o755)
    return out


def _pattern(key: str) -> str:
    if key.endswith("*"):
        return "'" + key[:-1].replace("'", "'\\''") + "'*"
    return "'" + key.replace("'", "'\\''") + "'"


def shim_script(name: str, table: ToolTable) -> str:
    arms = "".join(f"{_pattern(k)}) n={i} ;;\n" for i, k in enumerate(table.cases, start=1))
    return (f"#!/bin/sh\n# nodegate fleet shim for {name}: answers recorded invocations (tools/fleet/rootfs.py)\n"
            f"D={SHIM_DATA}/{name}\n"
            f'case "$*" in\n{arms}*) n=0 ;;\nesac\n'
            'if [ -e "$D/$n.hang" ]; then\n'
            "  # never returns by itself: ignores TERM, so only `timeout -k` (KILL) or the client deadline ends it\n"
            "  trap '' TERM INT\n"
            '  i=0; while [ "$i" -lt 900 ]; do sleep 1; i=$((i + 1)); done\n'
            "fi\n"
            "# a real tool's run time: N seconds, or \"arg\": its last argument's (gpu_burn SECONDS)\n"
            'if [ -e "$D/$n.sleep" ]; then\n'
            '  read -r s < "$D/$n.sleep"\n'
            '  if [ "$s" = arg ]; then eval "s=\\${$#}"; fi\n'
            '  sleep "$s"\n'
            "fi\n"
            '[ -s "$D/$n.err" ] && cat "$D/$n.err" >&2\n'
            "# a sequence (a node whose figures drift run after run): the k-th call answers out.<min(k, m-1)>\n"
            'if [ -e "$D/$n.seq" ]; then\n'
            f'  read -r m < "$D/$n.seq"; c={RUNS}/{name}.$n; k=0\n'
            '  [ -e "$c" ] && read -r k < "$c"\n'
            '  echo $((k + 1)) > "$c"\n'
            '  [ "$k" -lt "$m" ] || k=$((m - 1))\n'
            '  cat "$D/$n.out.$k"\n'
            'else\n'
            '  [ -s "$D/$n.out" ] && cat "$D/$n.out"\n'
            'fi\n'
            'read -r rc < "$D/$n.rc"\n'
            'exit "$rc"\n')


def add_userland(tree: Tree, shared: dict[str, Path], absent: set[str], shim_names: set[str]) -> None:
    for d in ("bin", "sbin", "lib", "lib64"):
        tree.link(f"/{d}", f"usr/{d}")
    for d in ("/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/local/bin", "/etc", "/var"):
        tree.dir(d)
    tree.link("/var/run", "../run")
    for node_path, host in shared.items():
        tree.hardlink(node_path, host)
    tree.link("/usr/bin/sh", "dash")
    tree.script("/usr/bin/bash", BASH_SCRIPT)
    for a in APPLETS:
        if a not in absent and a not in shim_names:
            tree.link(f"/usr/bin/{a}", "busybox")


def add_shims(tree: Tree, tools: dict[str, ToolTable], shim_bin: Path | None = None) -> None:
    for name, table in tools.items():
        binary_ok = shim_bin is not None and Path(table.path).name == name and \
            not any(c in k for k in table.cases for c in "\t\n")
        if binary_ok:
            tree.hardlink(table.path, shim_bin)
            tree.file(f"{SHIM_DATA}/{name}/cases", "".join(f"{i}\t{k}\n" for i, k in enumerate(table.cases, start=1)))
        else:
            tree.script(table.path, shim_script(name, table))
        for i, inv in [(0, table.default)] + list(enumerate(table.cases.values(), start=1)):
            base = f"{SHIM_DATA}/{name}/{i}"
            tree.file(base + ".rc", f"{inv.rc}\n")
            if inv.seq:
                tree.dir(RUNS, 0o1777)
                tree.file(base + ".seq", f"{len(inv.seq)}\n")
                for k, out in enumerate(inv.seq):
                    tree.file(f"{base}.out.{k}", out)
            elif inv.out:
                tree.file(base + ".out", inv.out)
            if inv.err:
                tree.file(base + ".err", inv.err)
            if inv.hang:
                tree.file(base + ".hang", "")
            if inv.sleep is not None:
                tree.file(base + ".sleep", f"{inv.sleep}\n")


def build_root(render: NodeRender, root: Path, shared: dict[str, Path], absent: list[str],
               shim_bin: Path | None = None) -> None:
    """Write a complete node root at ``root`` (created root-owned 0755)."""
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    tree = Tree(dict(render.tree.entries))
    add_userland(tree, shared, set(absent), set(render.tools) | set(absent))
    add_shims(tree, render.tools, shim_bin)
    write_tree(tree, root)
