"""Parser for ``ibnetdiscover`` topology files (infiniband-diags): every node and every link.

Usage (the fabric's discovered topology, and the site's expected one: the same format,
``ibnetdiscover > fabric.topo`` on a known-good fabric or written from the cabling plan)::

    ibnetdiscover

Shape (rdma-core infiniband-diags/man/common/sec_topology-file.rst): blocks separated by blank
lines; ``vendid=``/``devid=``/``sysimgguid=``/``switchguid=0x..(..)``/``caguid=0x..`` lines, then
the node line and one line per connected port::

    Switch  36 "S-0008f10500200b50"   # "Voltaire 4036 - 36 QDR ports switch" enhanced port 0 lid 9 lmc 0
    [1]     "S-0008f10500108c5c"[15]                  # "Voltaire 4036 # 4036-8C5C" lid 16 4xQDR
    [4]     "H-003048c749cd0000"[1](3048c749cd0001)   # "MT25408 ConnectX Mellanox Technologies" lid 72 4xDDR
    Ca      2 "H-0008f10403960984"  # "MT23108 InfiniHost Mellanox Technologies"
    [1](8f10403960985)     "S-0008f10400410015"[6]    # lid 16 lmc 1 "SW-6IB4 Voltaire" lid 3 4xSDR

Node GUIDs are the ``S-``/``H-``/``R-`` names; a CA's port GUID is in parentheses; ``[n][ext m]``
is a chassis port. The last token of a port line is the active width and speed (``4xEDR``,
``4xNDR``, ``2xHDR``). Each link is listed from both ends; ``links`` holds it once. Sources:
ltaulell/HPC_toolset@be176026 infiniband/X5.topofile (a 2020 QDR/DDR cluster, real), the man
page's example (rdma-core@691953d8).

Schema::

    parse_ibnetdiscover(text) -> Topology(nodes={guid: IbNode(guid, type ("Switch"|"Ca"|"Rt"), nports,
                                                desc, lid)},
                                         ports={(guid, port): PortLink(guid, port, peer_guid, peer_port,
                                                port_guid, width, speed)},
                                         links=[((guid_a, port_a), (guid_b, port_b), width, speed)])

GUIDs are ``0x`` + 16 lower-case hex digits. ParseError (its message starts ``line N:``, the
1-based line of the text) for a port line outside a node block, a line that starts like a node
(``Switch``/``Ca``/``Rt`` and a port count) or a port (``[N]``) but is not one, a peer named twice
for one port with different ends, text with content but no node line at all (not a topology:
``ibnetdiscover --ports`` or another tool's output), or more than MAX_NODES nodes. A topology
that lost a link in a line nodegate cannot read is refused, never compared without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V
from ._limits import number

MAX_CHARS = 64 * 1024 * 1024
MAX_NODES = 200_000

_NODE = re.compile(r'^(?P<type>Switch|Ca|Rt)\s+(?P<n>\d{1,4})\s+"(?P<kind>[SHR])-(?P<guid>[0-9a-fA-F]{1,16})"'
                   r'\s*(?:#\s*"(?P<desc>[^"]*)"(?P<rest>.*))?$')
_PORT = re.compile(r'^\[(?P<port>\d{1,4})\](?:\[ext \d{1,4}\])?(?:\((?P<pguid>[0-9a-fA-F]{1,16})\))?\s+'
                   r'"(?P<pkind>[SHR])-(?P<peer>[0-9a-fA-F]{1,16})"\[(?P<pport>\d{1,4})\](?:\[ext \d{1,4}\])?'
                   r'(?:\((?P<ppguid>[0-9a-fA-F]{1,16})\))?\s*(?:#\s*(?P<comment>.*))?$')
_LID = re.compile(r"\blid (\d{1,5})\b")
_SPEED = re.compile(r"\b(?P<w>\d{1,2})x(?P<s>SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|GDR)\s*$", re.I)
_DESC = re.compile(r'"([^"]*)"')
#: what starts like a node or a port line: it must then parse as one
_NODE_LIKE = re.compile(r"^(?:Switch|Ca|Rt)\s+\d")
_PORT_LIKE = re.compile(r"^\[\d")

#: nominal per-lane data rate by the IBTA speed name, Gb/s
SPEED_LANE = {"SDR": 2.5, "DDR": 5.0, "QDR": 10.0, "FDR10": 10.0, "FDR": 14.0, "EDR": 25.0, "HDR": 50.0,
              "NDR": 100.0, "XDR": 200.0, "GDR": 400.0}


def guid(s: str) -> str:
    """``8f10403960985`` / ``0x0008F10403960985`` -> ``0x0008f10403960985``."""
    return "0x" + s.lower().removeprefix("0x").rjust(16, "0")


@dataclass
class IbNode:
    guid: str
    type: str
    nports: int
    desc: str = ""
    lid: int | None = None


@dataclass
class PortLink:
    guid: str
    port: int
    peer_guid: str
    peer_port: int
    port_guid: str | None = None
    width: str | None = None      # "4x"
    speed: str | None = None      # "EDR"
    peer_desc: str = ""
    peer_type: str = ""

    @property
    def rate_gbps(self) -> float | None:
        if not self.width or not self.speed:
            return None
        return int(self.width[:-1]) * SPEED_LANE.get(self.speed.upper(), 0.0) or None


@dataclass
class Topology:
    nodes: dict[str, IbNode] = field(default_factory=dict)
    ports: dict[tuple[str, int], PortLink] = field(default_factory=dict)

    @property
    def links(self) -> list[tuple[tuple[str, int], tuple[str, int], str | None, str | None]]:
        """Each link once, its lower (guid, port) end first, sorted."""
        seen = {}
        for (g, p), pl in self.ports.items():
            a, b = (g, p), (pl.peer_guid, pl.peer_port)
            key = (a, b) if a <= b else (b, a)
            seen.setdefault(key, (pl.width, pl.speed))
        return sorted((k[0], k[1], w, s) for k, (w, s) in seen.items())

    def name(self, g: str) -> str:
        n = self.nodes.get(g)
        return n.desc if n is not None and n.desc else g

    def peer(self, g: str, port: int) -> PortLink | None:
        return self.ports.get((g, port))


def parse_ibnetdiscover(text: str | bytes) -> Topology:
    """The topology in ``text``. Empty -> Topology() with no nodes."""
    text = V.check_text(text, cap=MAX_CHARS, what="ibnetdiscover")
    topo = Topology()
    cur: IbNode | None = None
    first = 0   # the first line with content
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        first = first or no
        if "=" in line and not line.startswith("[") and not line.startswith(("Switch", "Ca", "Rt")):
            continue   # vendid= devid= sysimgguid= switchguid= caguid=
        m = _NODE.match(line)
        if m:
            g = guid(m.group("guid"))
            rest = m.group("rest") or ""
            lid = _LID.search(rest)
            cur = IbNode(g, m.group("type"), number(m.group("n"), "ports"), m.group("desc") or "",
                         number(lid.group(1), "lid") if lid else None)
            topo.nodes[g] = cur
            if len(topo.nodes) > MAX_NODES:
                raise ParseError(f"line {no}: ibnetdiscover: more than {MAX_NODES} nodes")
            continue
        m = _PORT.match(line)
        if m:
            if cur is None:
                raise ParseError(f"line {no}: ibnetdiscover: port line outside a node block: {line[:100]!r}")
            port = number(m.group("port"), "port")
            comment = m.group("comment") or ""
            sp = _SPEED.search(comment)
            descs = _DESC.findall(comment)
            pl = PortLink(cur.guid, port, guid(m.group("peer")), number(m.group("pport"), "peer port"),
                          guid(m.group("pguid")) if m.group("pguid") else None,
                          (sp.group("w") + "x") if sp else None, sp.group("s").upper() if sp else None,
                          descs[-1] if descs else "", {"S": "Switch", "H": "Ca", "R": "Rt"}[m.group("pkind")])
            old = topo.ports.get((cur.guid, port))
            if old is not None and (old.peer_guid, old.peer_port) != (pl.peer_guid, pl.peer_port):
                raise ParseError(f"line {no}: ibnetdiscover: port {port} of {cur.guid} listed with two peers")
            topo.ports[(cur.guid, port)] = pl
            continue
        if _NODE_LIKE.match(line) or _PORT_LIKE.match(line):
            what = "port" if line.startswith("[") else "node"
            raise ParseError(f"line {no}: ibnetdiscover: not a {what} line of the topology format: {line[:100]!r}")
        # anything else (a chassis header, a "Non-Chassis Nodes" line): not a node or a port
    if first and not topo.nodes:
        raise ParseError(f"line {first}: ibnetdiscover: no node line (Switch/Ca/Rt) in the text: not an "
                         "ibnetdiscover topology (its default format, not --ports or --list output)")
    # peers seen only from the other end (a truncated file or a filtered one) get their node
    for (g, p), pl in list(topo.ports.items()):
        if pl.peer_guid not in topo.nodes:
            topo.nodes[pl.peer_guid] = IbNode(pl.peer_guid, pl.peer_type, 0, pl.peer_desc)
    return topo
