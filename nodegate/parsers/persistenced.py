"""Parsers for the running nvidia-persistenced and its configured user.

Usage::

    probe persistenced.process    # parse_persistenced_process
    getent passwd <user>          # parse_passwd (key persistenced.passwd)

persistenced.process format (nodegate/probe/probe.sh ng_f_persistenced_proc)::

    == pid 1234
    Uid:    1001    1001    1001    1001        (/proc/<pid>/status: real, effective, saved, fs)
    Gid:    1001    1001    1001    1001
    cmdline: /usr/bin/nvidia-persistenced --user nvpd
    processes: 1
    rundir: drwxr-xr-x 2 1001 1001 60 Nov 29 18:47 /run/nvidia-persistenced    (ls -ldn)

The daemon drops privileges itself (``--user``), so ``uid`` is the effective uid.

Schema::

    parse_persistenced_process(text) -> PersistencedFacts(processes=[DaemonProcess(pid, uid, argv)],
                                                          rundir_owner_uid, rundir_present)
    parse_passwd(text) -> [PasswdEntry(name, uid, gid, home, shell)]

Example::

    processes: 0
    -> PersistencedFacts(processes=[], rundir_owner_uid=None, rundir_present=False)
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import DaemonProcess, PasswdEntry, PersistencedFacts
from . import _values as V
from ._limits import number

_PID = re.compile(r"^== pid (\d+)\s*$")
_UID = re.compile(r"^Uid:\s+(\d+)\s+(\d+)")
_RUNDIR = re.compile(r"^rundir:\s+\S+\s+\d+\s+(\d+)\s+\d+\s")
_COUNT = re.compile(r"^processes:\s*(\d+)\s*$")


def parse_persistenced_process(text: str | bytes) -> PersistencedFacts:
    """Empty -> no process. ParseError on an unknown line or a count that disagrees."""
    text = V.check_text(text, cap=1024 * 1024, what="persistenced.process")
    pf = PersistencedFacts()
    count = None
    for ln in text.splitlines():
        if not ln.strip():
            continue
        if m := _PID.match(ln):
            pf.processes.append(DaemonProcess(pid=number(m.group(1))))
        elif m := _UID.match(ln):
            if pf.processes:
                pf.processes[-1].uid = number(m.group(2))
        elif ln.startswith("Gid:"):
            continue
        elif ln.startswith("cmdline:"):
            if pf.processes:
                pf.processes[-1].argv = ln[len("cmdline:"):].split()
        elif m := _COUNT.match(ln):
            count = number(m.group(1))
        elif ln.startswith("rundir:"):
            pf.rundir_present = True
            if m := _RUNDIR.match(ln):
                pf.rundir_owner_uid = number(m.group(1))
        else:
            raise ParseError(f"persistenced.process: unrecognised line {ln[:80]!r}")
    if count is not None and count != len(pf.processes):
        raise ParseError(f"persistenced.process: 'processes: {count}' but {len(pf.processes)} listed")
    return pf


def parse_passwd(text: str | bytes) -> list[PasswdEntry]:
    """passwd(5) lines ``name:x:uid:gid:gecos:home:shell``. Empty -> []."""
    text = V.check_text(text, cap=1024 * 1024, what="passwd")
    out = []
    for ln in text.splitlines():
        if not ln.strip():
            continue
        parts = ln.strip().split(":")
        if len(parts) != 7 or not parts[2].isdigit() or not parts[3].isdigit():
            raise ParseError(f"passwd: not a passwd line: {ln[:80]!r}")
        out.append(PasswdEntry(name=parts[0], uid=number(parts[2]), gid=number(parts[3]), home=parts[5],
                               shell=parts[6]))
    return out


def user_from_argv(argv: list[str]) -> str | None:
    """The user nvidia-persistenced drops privileges to: ``--user X``, ``--user=X`` or ``-u X``
    (nvidia-persistenced --help); None when none is given (it then runs as root)."""
    for i, a in enumerate(argv):
        if a in ("--user", "-u") and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--user="):
            return a.split("=", 1)[1]
    return None


# nvidia-persistenced's options (NVIDIA/nvidia-persistenced option-table.h): --user/-u and
# --group/-g take a value; --persistence-mode is a boolean option whose negation is
# --no-persistence-mode (the default, without either, is persistence mode enabled); --verbose/-V;
# --uvm-persistence-mode / --no-uvm-persistence-mode; --nvidia-cfg-path takes a value; --foreground/-f.
_VALUE_OPTS = {"--user": "user", "-u": "user", "--group": "group", "-g": "group",
               "--nvidia-cfg-path": "nvidia-cfg-path"}
_BOOL_OPTS = {"--persistence-mode": ("persistence-mode", True), "--no-persistence-mode": ("persistence-mode", False),
              "--uvm-persistence-mode": ("uvm-persistence-mode", True),
              "--no-uvm-persistence-mode": ("uvm-persistence-mode", False),
              "--verbose": ("verbose", True), "-V": ("verbose", True),
              "--foreground": ("foreground", True), "-f": ("foreground", True)}


def parse_daemon_argv(argv: list[str]) -> dict[str, object]:
    """One nvidia-persistenced command line as ``{option: value}``: ``path`` (argv[0] without
    systemd's ``-@:+!`` prefixes, systemd.service(5) ExecStart=), ``user``, ``group``,
    ``nvidia-cfg-path`` (strings), ``persistence-mode``, ``uvm-persistence-mode``, ``verbose``,
    ``foreground`` (booleans, the last occurrence wins as in nvgetopt), and ``unknown`` (a list of
    tokens nvidia-persistenced does not know). Options absent from argv are absent from the dict."""
    out: dict[str, object] = {}
    if not argv:
        return out
    out["path"] = argv[0].lstrip("-@:+!")
    unknown: list[str] = []
    i = 1
    while i < len(argv):
        a = argv[i]
        opt, _, val = a.partition("=")
        if opt in _VALUE_OPTS:
            if val:
                out[_VALUE_OPTS[opt]] = val
            elif i + 1 < len(argv):
                out[_VALUE_OPTS[opt]] = argv[i + 1]
                i += 1
            else:
                unknown.append(a)
        elif a in _BOOL_OPTS:
            name, v = _BOOL_OPTS[a]
            out[name] = v
        else:
            unknown.append(a)
        i += 1
    if unknown:
        out["unknown"] = unknown
    return out


def option_spellings(key: str) -> set[str]:
    """Every way the option ``key`` of parse_daemon_argv is written (``foreground`` ->
    ``{'--foreground', '-f'}``)."""
    out = {o for o, k in _VALUE_OPTS.items() if k == key}
    out |= {o for o, (k, _) in _BOOL_OPTS.items() if k == key}
    return out
