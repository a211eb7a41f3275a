"""Parsers for PCIe link state outside nvidia-smi: sysfs (lspci -vvv: parsers/lspci.py).

Usage::

    probe pci.sysfs                        # parse_pci_sysfs ('== <bdf> gpu' / '== <bdf> upstream-of <gpu>')
    tail -v -n +1 /sys/bus/pci/devices/<bdf>/*_link_*   # parse_sysfs_tail

sysfs ``current_link_speed``/``max_link_speed`` read ``2.5 GT/s PCIe`` .. ``64.0 GT/s PCIe``
(kernels before 5.x omit ``.0`` and `` PCIe``; ``Unknown`` when the link is down) and map to
generations 1..6 (checks.md "PCIe link"); widths are lane counts.

Schema::

    parse_pci_sysfs(text) -> [SysfsLink(bdf, role "gpu"|"upstream", upstream_of, device,
                                        current_gen, current_width, max_gen, max_width)]
    parse_sysfs_tail(text) -> [SysfsLink(role="unknown", ...)]   # role is not in that output

Example::

    == 0000:00:06.0 gpu
    current_link_speed: 32.0 GT/s PCIe
    current_link_width: 16
    -> [SysfsLink("0000:00:06.0", "gpu", current_gen=5, current_width=16)]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import SysfsLink
from . import _values as V
from ._limits import check_gpu_count

# lspci -vvv moved to its own module (one parser per file); kept importable from here
from .lspci import parse_lspci_vvv  # noqa: E402,F401

_HDR = re.compile(r"^== (?P<bdf>\S+) (?:(?P<gpu>gpu)|upstream-of (?P<of>\S+))\s*$")
_ATTR = re.compile(r"^(?P<k>[a-z_]+): ?(?P<v>.*)$")


def parse_pci_sysfs(text: str | bytes) -> list[SysfsLink]:
    """The probe's pci.sysfs item. Empty -> []. ParseError on lines outside the format."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="pci.sysfs")
    out: list[SysfsLink] = []
    gpus = 0
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _HDR.match(ln)
        if m:
            out.append(SysfsLink(bdf=V.bus_id(m.group("bdf")), role="gpu" if m.group("gpu") else "upstream",
                                 upstream_of=V.bus_id(m.group("of")) if m.group("of") else None))
            gpus += out[-1].role == "gpu"
            check_gpu_count(gpus, "pci.sysfs", running=True)
            continue
        a = _ATTR.match(ln)
        if a and a.group("k") == "gpus":
            continue
        if not a or not out:
            raise ParseError(f"pci.sysfs: unrecognised line {ln[:80]!r}")
        _set_attr(out[-1], a.group("k"), a.group("v"))
    return out


def _set_attr(link: SysfsLink, key: str, val: str) -> None:
    if key == "current_link_speed":
        link.current_gen = V.speed_to_gen(val)
    elif key == "max_link_speed":
        link.max_gen = V.speed_to_gen(val)
    elif key == "current_link_width":
        link.current_width = V.width_value(val)
    elif key == "max_link_width":
        link.max_width = V.width_value(val)
    elif key == "device":
        link.device = val.strip().lower().removeprefix("0x") or None


_TAIL = re.compile(r"^==> .*/(?P<bdf>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/(?P<attr>[a-z_]+) <==\s*$")


def parse_sysfs_tail(text: str | bytes) -> list[SysfsLink]:
    """``tail -v`` of sysfs link files: '==> <path>/<attr> <==' then the value. One SysfsLink per
    function in first-seen order (role "unknown"). Empty -> []."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="sysfs tail")
    links: dict[str, SysfsLink] = {}
    attr: tuple[SysfsLink, str] | None = None
    for ln in text.splitlines():
        m = _TAIL.match(ln)
        if m:
            bdf = V.bus_id(m.group("bdf"))
            link = links.setdefault(bdf, SysfsLink(bdf=bdf, role="unknown"))
            attr = (link, m.group("attr"))
            continue
        if attr and ln.strip():
            _set_attr(attr[0], attr[1], ln.strip())
            attr = None
    if text.strip() and not links:
        raise ParseError("sysfs tail: no '==> <file> <==' header")
    return list(links.values())
