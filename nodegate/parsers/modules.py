"""Parsers for the kernel's module list.

Usage::

    cat /proc/modules          # parse_proc_modules  (key modules.proc)
    lsmod [| grep nvidia]      # parse_lsmod         (grep'd, partial output is fine)
    probe modules.sys          # parse_sys_modules   ('<name> loadable <initstate>' | '<name> builtin')

/proc/modules columns: name, size, refcount, users ("a,b," or ``-``), state (Live, Loading,
Unloading), address, [taint]. Columns 3-4 are ``- -`` on kernels without module unloading
(checks.md "Kernel modules"): refcount None, never parsed unconditionally. The first line is
the most recently loaded module (``position`` 0). lsmod prints name, size, "Used by" count and
list; its "Module Size Used by" header and non-module lines from a grep are skipped.

Schema::

    parse_proc_modules(text) -> [ModuleEntry(name, size, refcount, used_by, state, position)]
    parse_lsmod(text)        -> [ModuleEntry(...)]                # state None
    parse_sys_modules(text)  -> (builtin: set[str], loadable: {name: initstate})
    module_state(proc_text, sys_text=None) -> ModuleState

Example::

    nvidia_uvm 1830912 - - Live 0xffffffffc080c000 (O)
    -> ModuleEntry("nvidia_uvm", 1830912, None, [], "Live", 0)
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import ModuleEntry, ModuleState
from . import _values as V
from ._limits import number

_NAME = r"[A-Za-z0-9_]+"
_PROC = re.compile(rf"^(?P<name>{_NAME}) (?P<size>\d+) (?P<ref>-|\d+) (?P<users>\S+) "
                   r"(?P<state>Live|Loading|Unloading)(?: .*)?$")
_LSMOD = re.compile(rf"^(?P<name>{_NAME})\s+(?P<size>\d+)\s+(?P<ref>-|\d+)(?:\s+(?P<users>\S+))?\s*$")
_SYS = re.compile(rf"^(?P<name>{_NAME}) (?:(?P<builtin>builtin)|loadable(?: (?P<state>\S+))?)\s*$")


def _users(raw: str | None) -> list[str]:
    if not raw or raw == "-":
        return []
    return [u for u in raw.split(",") if u and u != "[permanent]"]


def parse_proc_modules(text: str | bytes) -> list[ModuleEntry]:
    """Every line must be a /proc/modules line (ParseError otherwise). Empty -> []."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="/proc/modules")
    out = []
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _PROC.match(ln.strip())
        if not m:
            raise ParseError(f"/proc/modules: unrecognised line {ln[:100]!r}")
        ref = m.group("ref")
        out.append(ModuleEntry(name=m.group("name"), size=number(m.group("size")),
                               refcount=None if ref == "-" else number(ref), used_by=_users(m.group("users")),
                               state=m.group("state"), position=len(out)))
    return out


def parse_lsmod(text: str | bytes) -> list[ModuleEntry]:
    """lsmod lines in order; the header and lines that are not module lines (shell prompts,
    grep noise) are skipped, so empty grep output -> []. ParseError when non-empty text holds
    neither a module line nor the header (e.g. "lsmod: command not found")."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="lsmod")
    out = []
    header = False
    for ln in text.splitlines():
        m = _LSMOD.match(ln.strip())
        if ln.strip().startswith("Module ") and "Used by" in ln:
            header = True
            continue
        if not m:
            continue
        ref = m.group("ref")
        out.append(ModuleEntry(name=m.group("name"), size=number(m.group("size")),
                               refcount=None if ref == "-" else number(ref), used_by=_users(m.group("users")),
                               position=len(out)))
    if text.strip() and not out and not header:
        raise ParseError(f"lsmod: no module line in {text.strip()[:80]!r}")
    return out


def parse_sys_modules(text: str | bytes) -> tuple[set[str], dict[str, str]]:
    """The probe's modules.sys listing: a module without ``initstate`` is built in."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="modules.sys")
    builtin: set[str] = set()
    loadable: dict[str, str] = {}
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _SYS.match(ln.strip())
        if not m:
            raise ParseError(f"modules.sys: unrecognised line {ln[:100]!r}")
        if m.group("builtin"):
            builtin.add(m.group("name"))
        else:
            loadable[m.group("name")] = m.group("state") or ""
    return builtin, loadable


def module_state(proc_text: str | bytes, sys_text: str | bytes | None = None) -> ModuleState:
    """ModuleState from /proc/modules and (optionally) the modules.sys listing."""
    st = ModuleState(loaded=parse_proc_modules(proc_text))
    if sys_text is not None:
        st.builtin, st.sys_loadable = parse_sys_modules(sys_text)
    return st
