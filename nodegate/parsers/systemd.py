"""Parsers for systemd evidence about a unit (nvidia-persistenced, nvidia-fabricmanager).

Usage::

    systemctl show <unit> --no-pager -p LoadState,ActiveState,...,ExecStart,...  # parse_systemctl_show
    systemctl status <unit> --no-pager                                         # parse_systemctl_status
    probe persistenced.unit_files ('== <path>' then the file text, per file)    # parse_unit_files

``systemctl show`` prints ``Key=value`` lines; ``ExecStart`` is printed as
``{ path=... ; argv[]=... ; ignore_errors=no ; ... }`` (one per command, on one or several
lines). A missing unit is rc 0 with ``LoadState=not-found``; a unit systemd refuses is
``LoadState=bad-setting`` (e.g. two non-empty ``ExecStart=`` in a Type=forking service).
``systemctl status`` text: ``Loaded: loaded (<path>; enabled; vendor preset: enabled)`` (old)
or ``...; preset: enabled)`` (systemd >= 252), ``Active: inactive (dead)``, ``Main PID: N``.
Unit files: every ``ExecStart=`` assignment in order, an empty one (a reset, systemd.service(5))
kept as ``""``; duplicated lines (the classic ``tee -a`` twice) stay visible.

Schema::

    parse_systemctl_show(text)   -> SystemdUnit(load_state, active_state, sub_state, unit_file_state,
                                    exec_start=[[argv...]], main_pid, fragment_path, drop_in_paths,
                                    n_restarts, result, user, raw={Key: value})
    parse_systemctl_status(text) -> SystemdUnit (states, fragment_path, main_pid only)
    parse_unit_text(path, text)  -> UnitFile(path, exec_start=[str], user, type, text)
    parse_unit_files(text)       -> [UnitFile, ...]
    effective_exec_start(files)  -> (["/usr/bin/nvidia-persistenced --verbose"], type)  # what systemd runs

Example::

    ExecStart={ path=/usr/bin/nvidia-persistenced ; argv[]=/usr/bin/nvidia-persistenced --user nvpd ; ... }
    -> SystemdUnit(exec_start=[["/usr/bin/nvidia-persistenced", "--user", "nvpd"]])
"""

from __future__ import annotations

import re
import shlex

from ..errors import ParseError
from ..facts import SystemdUnit, UnitFile
from . import _values as V
from ._limits import number

_KV = re.compile(r"^([A-Za-z][A-Za-z0-9]*)=(.*)$")
#: a ``; name=`` field start inside an ExecStart block (the end of the argv[] value); matched at the
#: start of each ``;``-separated segment, so the scan is linear (the former single pattern
#: ``argv\[\]=(.*?)\s*(?:;\s*\w+=|\}|$)`` backtracked quadratically over a long run of spaces)
_FIELD_START = re.compile(r"\s*\w+=")
_SIMPLE = {"LoadState": "load_state", "ActiveState": "active_state", "SubState": "sub_state",
           "UnitFileState": "unit_file_state", "FragmentPath": "fragment_path", "Result": "result",
           "User": "user"}


def parse_systemctl_show(text: str | bytes) -> SystemdUnit:
    """Empty input -> empty SystemdUnit. ParseError on a line that is not ``Key=value`` (or an
    ExecStart continuation)."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="systemctl show")
    u = SystemdUnit()
    last = None
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _KV.match(ln)
        if not m:
            if last == "ExecStart":
                u.exec_start.extend(_exec_blocks(ln))
                continue
            raise ParseError(f"systemctl show: not a Key=value line: {ln[:100]!r}")
        key, val = m.group(1), m.group(2)
        last = key
        if key != "ExecStart" and u.raw.get(key, val) != val:   # systemctl prints each property once
            raise ParseError(f"systemctl show: {key} given twice ({u.raw[key][:40]!r} and {val[:40]!r})")
        u.raw[key] = (u.raw[key] + "\n" + val) if key in u.raw and key == "ExecStart" else val
        if key in _SIMPLE:
            setattr(u, _SIMPLE[key], val or None)
        elif key == "ExecStart":
            u.exec_start.extend(_exec_blocks(val))
        elif key == "MainPID":
            u.main_pid = _int(val, key)
        elif key == "NRestarts":
            u.n_restarts = _int(val, key)
        elif key == "DropInPaths":
            u.drop_in_paths = val.split()
    return u


def _int(val: str, key: str) -> int | None:
    if not val.strip():
        return None
    if not val.strip().isdigit():
        raise ParseError(f"systemctl show: {key} is not a number: {val[:40]!r}")
    return number(val)


def _exec_blocks(val: str) -> list[list[str]]:
    out = []
    for blk in re.findall(r"\{([^{}]*)\}?", val):
        argv = _argv_value(blk)
        if argv is not None:
            out.append(_split_argv(argv))
    return out


def _argv_value(blk: str) -> str | None:
    """The ``argv[]=`` value of one ``{ path=... ; argv[]=... ; ignore_errors=... }`` block: up to
    the next ``; <name>=`` field, right-stripped; None when the block has no argv[]."""
    i = blk.find("argv[]=")
    if i < 0:
        return None
    segs = blk[i + len("argv[]="):].split(";")
    n = 1
    while n < len(segs) and not _FIELD_START.match(segs[n]):
        n += 1
    return ";".join(segs[:n]).rstrip()


def _split_argv(s: str) -> list[str]:
    try:
        return shlex.split(s)
    except ValueError:
        return s.split()


_LOADED = re.compile(r"^\s*Loaded:\s*(\S+)(?:\s*\((?P<inner>[^)]*)\))?")
_ACTIVE = re.compile(r"^\s*Active:\s*(\S+)(?:\s*\((?P<sub>[^)]*)\))?")
_MAINPID = re.compile(r"^\s*Main PID:\s*(\d+)")


def parse_systemctl_status(text: str | bytes) -> SystemdUnit:
    """States from the ``Loaded:``/``Active:`` lines. Empty -> empty SystemdUnit; ParseError
    when non-empty text has neither line."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="systemctl status")
    u = SystemdUnit()
    for ln in text.splitlines():
        m = _LOADED.match(ln)
        if m and u.load_state is None:
            u.load_state = m.group(1)
            parts = [p.strip() for p in (m.group("inner") or "").split(";")]
            if parts and parts[0].startswith("/"):
                u.fragment_path = parts[0]
            if len(parts) > 1 and parts[1] and ":" not in parts[1]:
                u.unit_file_state = parts[1]
            continue
        m = _ACTIVE.match(ln)
        if m and u.active_state is None:
            u.active_state = m.group(1)
            u.sub_state = m.group("sub")
            continue
        m = _MAINPID.match(ln)
        if m and u.main_pid is None:
            u.main_pid = number(m.group(1))
    if text.strip() and u.load_state is None and u.active_state is None:
        raise ParseError(f"systemctl status: no Loaded:/Active: line in {text.strip()[:80]!r}")
    return u


def parse_unit_text(path: str, text: str) -> UnitFile:
    """One unit file or drop-in (systemd.syntax(7): ``#``/``;`` comments, ``\\`` continuation)."""
    uf = UnitFile(path=path, text=text)
    for ln in _logical_lines(text):
        s = ln.strip()
        if not s or s[0] in "#;[" or "=" not in s:
            continue
        key, val = s.split("=", 1)
        key, val = key.strip(), val.strip()
        if key == "ExecStart":
            uf.exec_start.append(val)
        elif key == "User":
            uf.user = val or None
        elif key == "Type":
            uf.type = val or None
    return uf


def _logical_lines(text: str) -> list[str]:
    out: list[str] = []
    buf: list[str] = []   # a list, not str +=: a long run of continuations stays linear
    for ln in text.splitlines():
        if ln.rstrip().endswith("\\"):
            buf.append(ln.rstrip()[:-1] + " ")
            continue
        out.append("".join(buf) + ln)
        buf = []
    if buf:
        out.append("".join(buf))
    return out


def parse_unit_files(text: str | bytes) -> list[UnitFile]:
    """The probe's ``'== <path>'`` + content listing. Empty -> []. ParseError when text comes
    before the first ``== `` header."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="unit files")
    files: list[tuple[str, list[str]]] = []
    for ln in text.splitlines():
        if ln.startswith("== /"):
            files.append((ln[3:].strip(), []))
            continue
        if not files:
            if ln.strip():
                raise ParseError(f"unit files: text before the first '== <path>' header: {ln[:80]!r}")
            continue
        files[-1][1].append(ln)
    return [parse_unit_text(p, "\n".join(body).strip("\n") + "\n") for p, body in files]


def effective_exec_start(files: list[UnitFile]) -> tuple[list[str], str | None]:
    """The ``ExecStart=`` commands systemd builds from a unit file and its drop-ins, and the unit's
    ``Type=``: assignments accumulate in load order (the unit file, then the drop-ins sorted by
    file name whatever directory they are in; one name in several directories: the first listed
    wins, as /etc shadows /run and /usr/lib), and an empty ``ExecStart=`` resets the list
    (systemd.unit(5) "[Unit] Section Options", systemd.service(5) ``ExecStart=``). A reset is never
    a command: ``ExecStart=`` then one command is one command (corpus 036), the classic ``tee -a``
    twice is two. Files whose path has no ``.d/`` are unit files; the rest drop-ins."""
    units = [f for f in files if ".d/" not in f.path]
    seen: dict[str, UnitFile] = {}
    for f in files:
        if ".d/" in f.path:
            seen.setdefault(f.path.rsplit("/", 1)[-1], f)
    cmds: list[str] = []
    typ: str | None = None
    for f in units[:1] + [seen[k] for k in sorted(seen)]:
        for v in f.exec_start:
            if v.strip():
                cmds.append(v)
            else:
                cmds = []
        typ = f.type or typ
    return cmds, typ
