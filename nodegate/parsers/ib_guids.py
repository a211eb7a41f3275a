"""Parser for the probe's HCA identity listing (sysfs, no OFED tool needed).

Usage (evidence key ``ib.guids``)::

    for d in /sys/class/infiniband/*: '== <device>', node_guid, sys_image_guid, board_id,
        'device: <PCI function>', 'netdev: <name>'...; then for each ports/<n>: '== <device> port <n>'
        + lid, sm_lid, rate, gid0 (ports/<n>/gids/0)

Values are the kernel's (drivers/infiniband/core/sysfs.c): ``node_guid`` ``b859:9f03:0022:626e``
(four groups of four hex digits), ``lid`` ``0x2fa``, ``rate`` ``400 Gb/sec (4X NDR)``, ``gid0``
``fe80:0000:0000:0000:b859:9f03:0022:626e`` (the subnet prefix, then the port GUID). The port
GUID is the low 64 bits of GID 0 (IBTA: the default GID); on a RoCE port GID 0 is derived from
the MAC and is not a fabric GUID. Source of the value forms: the kernel ABI
(Documentation/ABI/stable/sysfs-class-infiniband) and ``ibv_devinfo`` as shown in
kaust-rccl/ksl-docs docs/source/systems/ibex/interconnect.rst (``node_guid: b859:9f03:0022:626e``).

Schema::

    parse_ib_guids(text) -> {device: HcaIdentity(device, node_guid, sys_image_guid, board_id, pci,
                                                 netdevs, ports={n: HcaPortIdentity(port, lid, sm_lid,
                                                 port_guid, rate_gbps, width, rate_text)})}

GUIDs are returned as ``0x`` + 16 lower-case hex digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V
from ._limits import number
from .ib_ports import rate_gbps

MAX_CHARS = 1024 * 1024
MAX_DEVICES = 256
_DEV = re.compile(r"^== (?P<d>[A-Za-z0-9_.:-]{1,64})$")
_PORT = re.compile(r"^== (?P<d>[A-Za-z0-9_.:-]{1,64}) port (?P<p>\d{1,3})$")
_KV = re.compile(r"^(?P<k>[a-z_0-9]{1,32}): ?(?P<v>.*)$")
_SYSFS_GUID = re.compile(r"^([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
_GID = re.compile(r"^(?:[0-9a-fA-F]{4}:){4}([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4}):([0-9a-fA-F]{4})$")
_WIDTH = re.compile(r"\((\d{1,2})X\b")


@dataclass
class HcaPortIdentity:
    port: int
    lid: int | None = None
    sm_lid: int | None = None
    port_guid: str | None = None
    rate_gbps: float | None = None
    width: str | None = None
    rate_text: str = ""


@dataclass
class HcaIdentity:
    device: str
    node_guid: str | None = None
    sys_image_guid: str | None = None
    board_id: str | None = None
    pci: str | None = None
    netdevs: list[str] = field(default_factory=list)
    ports: dict[int, HcaPortIdentity] = field(default_factory=dict)


def sysfs_guid(v: str) -> str:
    """``b859:9f03:0022:626e`` -> ``0xb8599f030022626e``; ParseError otherwise."""
    m = _SYSFS_GUID.match(v.strip())
    if not m:
        raise ParseError(f"ib.guids: not a GUID: {v[:60]!r}")
    return "0x" + "".join(m.groups()).lower()


def _lid(v: str, what: str) -> int | None:
    v = v.strip()
    if not v:
        return None
    return number(v, what, 16) if v.lower().startswith("0x") else number(v, what)


def parse_ib_guids(text: str | bytes) -> dict[str, HcaIdentity]:
    """Devices in listing order. Empty -> {}. ParseError for a line before any header, a GUID or
    LID that is not one, more than MAX_DEVICES devices."""
    text = V.check_text(text, cap=MAX_CHARS, what="ib.guids")
    out: dict[str, HcaIdentity] = {}
    dev: HcaIdentity | None = None
    port: HcaPortIdentity | None = None
    for raw in text.splitlines():
        ln = raw.rstrip()
        if not ln.strip():
            continue
        m = _PORT.match(ln)
        if m:
            dev = out.setdefault(m.group("d"), HcaIdentity(m.group("d")))
            port = dev.ports.setdefault(number(m.group("p"), "port"), HcaPortIdentity(number(m.group("p"), "port")))
            continue
        m = _DEV.match(ln)
        if m:
            dev, port = out.setdefault(m.group("d"), HcaIdentity(m.group("d"))), None
            if len(out) > MAX_DEVICES:
                raise ParseError("ib.guids: too many devices")
            continue
        m = _KV.match(ln)
        if not m or dev is None:
            raise ParseError(f"ib.guids: unexpected line: {ln[:80]!r}")
        k, v = m.group("k"), m.group("v").strip()
        if port is None:
            if k == "node_guid":
                dev.node_guid = sysfs_guid(v)
            elif k == "sys_image_guid":
                dev.sys_image_guid = sysfs_guid(v)
            elif k == "board_id":
                dev.board_id = v or None
            elif k == "device":
                dev.pci = v or None
            elif k == "netdev" and v and len(dev.netdevs) < 16:
                dev.netdevs.append(v)
        elif k == "lid":
            port.lid = _lid(v, "lid")
        elif k == "sm_lid":
            port.sm_lid = _lid(v, "sm_lid")
        elif k == "rate":
            port.rate_text = v
            port.rate_gbps = rate_gbps(v)
            w = _WIDTH.search(v)
            port.width = f"{w.group(1)}X" if w else None
        elif k == "gid0":
            g = _GID.match(v)
            if g is None:
                raise ParseError(f"ib.guids: not a GID: {v[:60]!r}")
            port.port_guid = "0x" + "".join(g.groups()).lower()
    return out
