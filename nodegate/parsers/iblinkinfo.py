"""Parser for ``iblinkinfo`` (infiniband-diags): each port's link and the port at its other end.

Usage (evidence key ``ib.iblinkinfo``: per local HCA port, ``== <ca> port <n>`` then the
output of ``iblinkinfo -C <ca> -P <n> -D 0 -n 1 -l``; or a whole-fabric ``iblinkinfo``)::

    iblinkinfo                 # default: a header per node, one line per port
    iblinkinfo -l              # line mode: the node on every line

Shapes (rdma-core infiniband-diags/iblinkinfo.c ``print_port``/``print_node_header``)::

    CA: n02 HCA-1:
          0xec0d9a03003d62be      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] "MF0;SB7700:MSB7700/U1" ( )
    Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:
               2    1[  ] ==(                Down/ Polling)==>             [  ] "" ( )
    0xf452140300f55051 "              ib-test-7 mlx4_0"     37    1[  ] ==( 4X       14.0625 Gbps Active/  LinkUp)==>  0xf45214030067c630      5   16[  ] "MF0;switch-e1be74:SX6036/U1" ( )

The link field is ``( <width> <lane speed> <state>/<phys state>)``: the lane speed is per lane
(``106.25 Gbps`` on an NDR 4X link is a 400 Gb/s port, the trap of reading it as the link
rate), so ``rate_gbps`` = lanes x the nominal lane rate (2.5, 5, 10, 14, 25, 50, 100, 200;
FDR10 10). A down port has no width or speed and no remote end (``[  ] ""``); ``"Port not
available"`` means the remote end was not discovered. The trailing ``( )`` may hold
``Could be 4X`` / ``Could be 25.78125 Gbps``: the link runs below what both ends support
(``could_be``). Sources: 824380210/Linpack@77f28235 edr76_linpack_WI.md (default mode, EDR);
rdma-core@691953d8 iblinkinfo.c (line mode).

Schema::

    parse_iblinkinfo(text) -> [IbLink(node_type, node_desc, node_guid, port_guid, lid, port, width,
                                      lane_gbps, rate_gbps, state, phys_state, remote_guid, remote_lid,
                                      remote_port, remote_desc, could_be, section)]

``section``: the ``== <ca> port <n>`` header the line was under (the probe item), else "".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import ParseError
from . import _values as V
from ._limits import number

MAX_CHARS = 8 * 1024 * 1024
MAX_LINKS = 200_000

#: nominal per-lane data rate (Gb/s) by the lane speed iblinkinfo prints (libibmad dump.c)
LANE_RATE = {"2.5": 2.5, "5.0": 5.0, "10.0": 10.0, "14.0625": 14.0, "25.78125": 25.0, "53.125": 50.0,
             "106.25": 100.0, "212.5": 200.0}

_HDR = re.compile(r"^(?P<type>CA|Switch|Router): (?:(?P<guid>0x[0-9a-fA-F]{1,16}) )?(?P<desc>.*):\s*$")
_SECTION = re.compile(r"^== (?P<ca>[A-Za-z0-9_.:-]{1,64}) port (?P<port>\d{1,3})\s*$")
_LINK = re.compile(
    r"==\(\s*(?:(?P<width>\d{1,2}X)\s+(?P<speed>\d{1,3}(?:\.\d{1,6})?) Gbps(?: \((?P<fdr10>FDR10)\))?\s+)?"
    r"(?P<state>[A-Za-z]+)/\s*(?P<phys>[A-Za-z]+)(?:\s*\((?P<extra>[^)]*)\))?\)==>")
_LEFT_LINE = re.compile(r"^\s*(?P<pguid>0x[0-9a-fA-F]{1,16}) \"(?P<desc>[^\"]*)\"\s+(?P<lid>\d{1,5})\s+(?P<port>\d{1,3})\[[^\]]*\]\s*$")
_LEFT_CA = re.compile(r"^\s*(?P<pguid>0x[0-9a-fA-F]{1,16})\s+(?P<lid>\d{1,5})\s+(?P<port>\d{1,3})\[[^\]]*\]\s*$")
_LEFT_SW = re.compile(r"^\s*(?P<lid>\d{1,5})\s+(?P<port>\d{1,3})\[[^\]]*\]\s*$")
_RIGHT = re.compile(
    r"^\s*(?:(?P<rguid>0x[0-9a-fA-F]{1,16})\s+)?(?P<rlid>\d{1,5})\s+(?P<rport>\d{1,3})\[[^\]]*\]\s+"
    r"\"(?P<rdesc>[^\"]*)\"\s*\((?P<could>[^)]*)\)\s*$")
_DOWN_RIGHT = re.compile(r"^\s*\[\s*\]\s+\"\"\s*\(\s*\)\s*$")


@dataclass
class IbLink:
    node_type: str
    node_desc: str
    node_guid: str | None
    port_guid: str | None
    lid: int | None
    port: int
    width: str | None
    lane_gbps: float | None
    rate_gbps: float | None
    state: str
    phys_state: str
    remote_guid: str | None = None
    remote_lid: int | None = None
    remote_port: int | None = None
    remote_desc: str | None = None
    could_be: str = ""
    section: str = ""

    @property
    def up(self) -> bool:
        return self.state.lower() == "active" and self.phys_state.lower() == "linkup"


def _guid(s: str | None) -> str | None:
    return None if not s else "0x" + s.lower().removeprefix("0x").rjust(16, "0")


def _rate(width: str | None, speed: str | None, fdr10: str | None) -> tuple[float | None, float | None]:
    if not width or not speed:
        return None, None
    lanes = number(width[:-1], "iblinkinfo width")
    lane = 10.0 if fdr10 else LANE_RATE.get(speed)
    if lane is None:
        try:
            lane = float(speed)
        except ValueError:
            raise ParseError(f"iblinkinfo: unknown lane speed {speed!r}") from None
    return float(speed), lanes * lane


def parse_iblinkinfo(text: str | bytes) -> list[IbLink]:
    """Links in output order. Empty -> []. Lines that are not a port line or a header (tool
    warnings, an ``ibwarn`` line, a ``== <ca> port <n>`` section of a CA whose scan failed) are
    skipped; a port line that does not parse raises ParseError."""
    text = V.check_text(text, cap=MAX_CHARS, what="iblinkinfo")
    out: list[IbLink] = []
    node_type, node_desc, node_guid = "", "", None
    section = ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _SECTION.match(line)
        if m:
            section = f"{m.group('ca')}:{m.group('port')}"
            node_type, node_desc, node_guid = "", "", None
            continue
        if "==(" not in line:
            m = _HDR.match(line)
            if m:
                node_type, node_desc, node_guid = m.group("type"), m.group("desc"), _guid(m.group("guid"))
            continue
        lm = _LINK.search(line)
        if not lm:
            raise ParseError(f"iblinkinfo: unreadable link field: {line.strip()[:120]!r}")
        left, right = line[:lm.start()], line[lm.end():]
        ntype, desc, nguid, pguid = node_type, node_desc, node_guid, None
        m = _LEFT_LINE.match(left)
        if m:
            # line mode: the node's port GUID and description on every line; a switch's port
            # GUID is its port 0 GUID (= its node GUID on Mellanox switches)
            pguid, desc = _guid(m.group("pguid")), m.group("desc").strip()
            ntype, nguid = ("CA" if section else "?"), None
        else:
            m = _LEFT_CA.match(left) or _LEFT_SW.match(left)
            if not m:
                raise ParseError(f"iblinkinfo: unreadable port: {left.strip()[:120]!r}")
            pguid = _guid(m.groupdict().get("pguid"))
        if ntype == "Switch" and pguid is None:
            pguid = nguid
        lane, rate = _rate(lm.group("width"), lm.group("speed"), lm.group("fdr10"))
        if not ntype:
            ntype = "CA" if section else ("Switch" if pguid is None else "?")
        link = IbLink(ntype, desc, nguid, pguid,
                      number(m.group("lid"), "lid"), number(m.group("port"), "port"), lm.group("width"),
                      lane, rate, lm.group("state"), lm.group("phys"), section=section)
        r = _RIGHT.match(right)
        if r:
            link.remote_guid = _guid(r.group("rguid"))
            link.remote_lid = number(r.group("rlid"), "remote lid")
            link.remote_port = number(r.group("rport"), "remote port")
            link.remote_desc = r.group("rdesc")
            link.could_be = " ".join(r.group("could").split())
        elif not (_DOWN_RIGHT.match(right) or "Port not available" in right):
            raise ParseError(f"iblinkinfo: unreadable remote end: {right.strip()[:120]!r}")
        out.append(link)
        if len(out) > MAX_LINKS:
            raise ParseError("iblinkinfo: too many links")
    return out
