"""Parser for the probe's InfiniBand port listing (sysfs, no OFED tool needed).

Usage (evidence key ``ib.ports``)::

    for d in /sys/class/infiniband/*: '== <device>', 'fw_ver: ..', 'hca_type: ..',
        then for each ports/<n>: '== <device> port <n>' + 'state|phys_state|rate|link_layer: <value>'

Values are the kernel's (drivers/infiniband/core/sysfs.c): ``state`` ``4: ACTIVE`` (1 DOWN,
2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER), ``phys_state`` ``5: LinkUp`` (2 Polling, 3 Disabled,
...), ``rate`` ``400 Gb/sec (4X NDR)`` (``100 Gb/sec (4X EDR)``, ``40 Gb/sec (4X QDR)``),
``link_layer`` ``InfiniBand`` or ``Ethernet`` (RoCE). No devices (no /sys/class/infiniband) is
empty output. States are returned as words (``ACTIVE``, ``LinkUp``).

Schema::

    parse_ib_ports(text) -> [IbPort(device, port, state, phys_state, rate_gbps, link_layer, fw_ver, hca_type,
                                    source="sysfs")]

Example::

    == mlx5_0
    fw_ver: 28.39.1002
    == mlx5_0 port 1
    state: 4: ACTIVE
    phys_state: 5: LinkUp
    rate: 400 Gb/sec (4X NDR)
    link_layer: InfiniBand
    -> [IbPort("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand", "28.39.1002", None)]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import IbPort
from . import _values as V
from ._limits import number

MAX_CHARS = 1024 * 1024
_DEV = re.compile(r"^== (?P<d>[A-Za-z0-9_.:-]+)$")
_PORT = re.compile(r"^== (?P<d>[A-Za-z0-9_.:-]+) port (?P<p>\d+)$")
_KV = re.compile(r"^(?P<k>[a-z_]+): ?(?P<v>.*)$")
_RATE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*Gb/se?c?\b")


def state_word(raw: str | None) -> str | None:
    """``4: ACTIVE`` -> ``ACTIVE``; ``5: LinkUp`` -> ``LinkUp``; ``Active`` (ibstat) -> ``ACTIVE``."""
    if raw is None or not raw.strip():
        return None
    s = raw.strip()
    if ":" in s and s.split(":", 1)[0].strip().isdigit():
        s = s.split(":", 1)[1].strip()
    return s


def rate_gbps(raw: str | None) -> float | None:
    """``400 Gb/sec (4X NDR)`` / ``400`` (ibstat) -> 400.0; None when absent; ParseError otherwise."""
    if raw is None or not raw.strip():
        return None
    s = raw.strip()
    m = _RATE.match(s) or re.fullmatch(r"(?P<n>\d+(?:\.\d+)?)", s)
    if not m:
        raise ParseError(f"InfiniBand rate: not a rate: {s[:60]!r}")
    return float(m.group("n"))


def parse_ib_ports(text: str | bytes) -> list[IbPort]:
    """Ports in listing order. Empty -> []. ParseError for an attribute line before any header
    or an unreadable rate."""
    text = V.check_text(text, cap=MAX_CHARS, what="ib.ports")
    out: list[IbPort] = []
    devs: dict[str, dict[str, str]] = {}
    cur_dev: str | None = None
    cur: IbPort | None = None
    for raw in text.splitlines():
        ln = raw.rstrip()
        if not ln.strip():
            continue
        m = _PORT.match(ln)
        if m:
            cur_dev = m.group("d")
            d = devs.setdefault(cur_dev, {})
            cur = IbPort(device=cur_dev, port=number(m.group("p")), fw_ver=d.get("fw_ver"),
                         hca_type=d.get("hca_type"), source="sysfs")
            out.append(cur)
            continue
        m = _DEV.match(ln)
        if m:
            cur_dev, cur = m.group("d"), None
            devs.setdefault(cur_dev, {})
            continue
        m = _KV.match(ln)
        if not m or cur_dev is None:
            raise ParseError(f"ib.ports: unexpected line: {ln[:80]!r}")
        k, v = m.group("k"), m.group("v").strip()
        if cur is None:
            devs[cur_dev][k] = v or None
        elif k == "state":
            cur.state = (state_word(v) or "").upper() or None
        elif k == "phys_state":
            cur.phys_state = state_word(v)
        elif k == "rate":
            cur.rate_gbps = rate_gbps(v)
        elif k == "link_layer":
            cur.link_layer = v or None
    return out
