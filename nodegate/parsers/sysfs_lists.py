"""Parsers for the probe's small listings (one line per entry).

Usage (nodegate/probe/probe.sh)::

    kernels.installed      '<kver> build=yes|no' per /lib/modules/* directory   -> parse_kernels_installed
    modules.load_d         '== <file>' + content of modules-load.d/*.conf, /etc/modules -> parse_modules_load_d
    ib.devices             ls -1 /sys/class/infiniband                           -> parse_name_list
    dev.nvidia             ls -1 /dev                                            -> parse_name_list
    peermem.registration   '<path>: <content>' of /sys/kernel/mm/memory_peers/*/version -> parse_peermem_registration
    driver.gpus_information '== <file>' + /proc/driver/nvidia/gpus/*/information -> parse_gpus_information
    fabricmanager.version  nv-fabricmanager --version                            -> parse_fabricmanager_version

modules-load.d(5): one module name per line, ``#`` and ``;`` start comments.

Schema::

    parse_kernels_installed(text) -> {kver: has_build(bool)}
    parse_modules_load_d(text)    -> {file: [module, ...]}
    parse_name_list(text)         -> [name, ...]
    parse_peermem_registration(text) -> {client name (e.g. "nv_mem"): version}
    parse_gpus_information(text)  -> [{"Model": ..., "Bus Location": ..., ...}, ...]
    parse_fabricmanager_version(text) -> version str | None

Example::

    6.8.0-45-generic build=yes
    -> {"6.8.0-45-generic": True}
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import _values as V
from ._limits import check_gpu_count

_KVER = re.compile(r"^(?P<k>\S+) build=(?P<b>yes|no)\s*$")
_PEER = re.compile(r"^/sys/kernel/mm/memory_peers/(?P<name>[^/]+)/version:\s*(?P<v>.*)$")
_FM = re.compile(r"version(?: is)?\s*:?\s*(\d+(?:\.\d+)+)", re.I)


def parse_kernels_installed(text: str | bytes) -> dict[str, bool]:
    text = V.check_text(text, cap=1024 * 1024, what="kernels.installed")
    out: dict[str, bool] = {}
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _KVER.match(ln.strip())
        if not m:
            raise ParseError(f"kernels.installed: unrecognised line {ln[:80]!r}")
        out[m.group("k")] = m.group("b") == "yes"
    return out


def _sections(text: str, what: str) -> list[tuple[str, list[str]]]:
    secs: list[tuple[str, list[str]]] = []
    for ln in text.splitlines():
        if ln.startswith("== /"):
            secs.append((ln[3:].strip(), []))
        elif secs:
            secs[-1][1].append(ln)
        elif ln.strip():
            raise ParseError(f"{what}: text before the first '== <file>' header: {ln[:80]!r}")
    return secs


def parse_modules_load_d(text: str | bytes) -> dict[str, list[str]]:
    text = V.check_text(text, cap=1024 * 1024, what="modules.load_d")
    out: dict[str, list[str]] = {}
    for path, body in _sections(text, "modules.load_d"):
        mods = []
        for ln in body:
            s = ln.strip()
            if not s or s[0] in "#;":
                continue
            mods.append(s.split()[0])
        out[path] = mods
    return out


def parse_name_list(text: str | bytes) -> list[str]:
    text = V.check_text(text, cap=4 * 1024 * 1024, what="listing")
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def parse_peermem_registration(text: str | bytes) -> dict[str, str]:
    text = V.check_text(text, cap=1024 * 1024, what="peermem.registration")
    out: dict[str, str] = {}
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _PEER.match(ln.strip())
        if not m:
            raise ParseError(f"peermem.registration: unrecognised line {ln[:80]!r}")
        out[m.group("name")] = m.group("v").strip()
    return out


def parse_gpus_information(text: str | bytes) -> list[dict[str, str]]:
    """One dict per /proc/driver/nvidia/gpus/<bdf>/information file (``Key: value`` lines;
    ``Bus Location`` normalised)."""
    text = V.check_text(text, cap=1024 * 1024, what="driver.gpus_information")
    out = []
    for path, body in _sections(text, "driver.gpus_information"):
        info: dict[str, str] = {"file": path}
        for ln in body:
            if ":" in ln:
                k, v = ln.split(":", 1)
                if info.setdefault(k.strip(), v.strip()) != v.strip():   # never "last one wins"
                    raise ParseError(f"driver.gpus_information: {k.strip()!r} given twice in {path}")
        if "Bus Location" in info:
            info["Bus Location"] = V.bus_id(info["Bus Location"]) or ""
        out.append(info)
        check_gpu_count(len(out), "driver.gpus_information", running=True)
    return out


def parse_fabricmanager_version(text: str | bytes) -> str | None:
    """``Fabric Manager version is : 535.161.08`` -> ``535.161.08``; empty -> None."""
    text = V.check_text(text, cap=1024 * 1024, what="fabricmanager.version")
    m = _FM.search(text)
    if m:
        return m.group(1)
    if text.strip():
        raise ParseError(f"nv-fabricmanager --version: no version in {text.strip()[:80]!r}")
    return None
