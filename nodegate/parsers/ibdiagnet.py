"""Parser for the ``ibdiagnet`` log (ibutils2): its errors and warnings, link ones keyed by both ends.

Usage (evidence: ``ibdiagnet2.log`` or ibdiagnet's stdout, from one node that reaches the
subnet manager; the phase reads it where present)::

    ibdiagnet --ls 100 --lw 4x -t <plan.topo> --rail_validation

Shape: one message per line, ``-I-`` (information), ``-W-`` (warning) or ``-E-`` (error); a
link message names both ends, ``<system>/<unit>/P<port>`` or ``S<sysimg guid>/N<node guid>/P<port>``
(a split port adds ``/<n>``), joined by ``<-->``::

    -E- Link: Sec0d9a0300246e30/Nec0d9a0300246e30/P19<-->switch-004/U1/P20 - Unexpected actual link speed 25
    -E- Link: S0002c90300688830/N0002c90300688830/P20<-->S0002c90300165e63/N0002c90300165e60/P1 - Unexpected actual link speed 2.5 (enable_speed1="2.5 or 5 or 10", ...)
    -I- Discovering ... 4 nodes (1 Switches & 3 CA-s) discovered.

Sources: NVIDIA ibdiagnet User Manual v2.23.0, "Fabric Links Validation" (the --ls/--lw
errors); a public ibdiagnet 2.1.1 run log (pastebin cY8nDJyD, the discovery lines).

Schema::

    parse_ibdiagnet(text) -> IbdiagReport(messages=[IbdiagMessage(level ("E"|"W"|"I"), text, end_a, end_b,
                                                                   problem)],
                                          nodes, switches, cas)
    IbdiagEnd(text, node, port, guid)      # node: the system/description part, guid: 0x... or None
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V
from ._limits import number

MAX_CHARS = 64 * 1024 * 1024
MAX_MESSAGES = 500_000

_MSG = re.compile(r"^-(?P<lvl>[EWI])-\s+(?P<text>.*)$")
_LINK = re.compile(r"^Link: (?P<a>\S+?)\s*<-->\s*(?P<b>\S+?)\s+-\s+(?P<problem>.+)$")
_END = re.compile(r"^(?P<node>.+?)/P(?P<port>\d{1,4})(?:/\d{1,3}){0,2}$")
_GUIDS = re.compile(r"^S(?P<sys>[0-9a-fA-F]{16})/N(?P<node>[0-9a-fA-F]{16})$")
_DISC = re.compile(r"(?P<n>\d+) nodes \((?P<sw>\d+) Switch(?:es)? & (?P<ca>\d+) CA-s\) discovered")


@dataclass
class IbdiagEnd:
    text: str
    node: str
    port: int
    guid: str | None = None


@dataclass
class IbdiagMessage:
    level: str
    text: str
    end_a: IbdiagEnd | None = None
    end_b: IbdiagEnd | None = None
    problem: str = ""


@dataclass
class IbdiagReport:
    messages: list[IbdiagMessage] = field(default_factory=list)
    nodes: int | None = None
    switches: int | None = None
    cas: int | None = None

    @property
    def link_errors(self) -> list[IbdiagMessage]:
        return [m for m in self.messages if m.level == "E" and m.end_a is not None]


def _end(s: str) -> IbdiagEnd:
    m = _END.match(s)
    if not m:
        raise ParseError(f"ibdiagnet: unreadable link end {s[:80]!r}")
    node = m.group("node")
    g = _GUIDS.match(node)
    return IbdiagEnd(s, node, number(m.group("port"), "port"), "0x" + g.group("node").lower() if g else None)


def parse_ibdiagnet(text: str | bytes) -> IbdiagReport:
    """Messages in log order (markdown-escaped ``\\<\\--\\>`` of a pasted log is read as ``<-->``).
    Empty -> IbdiagReport(). ParseError for a link message whose ends do not parse."""
    text = V.check_text(text, cap=MAX_CHARS, what="ibdiagnet")
    rep = IbdiagReport()
    for raw in text.splitlines():
        line = raw.strip().replace("\\<\\--\\>", "<-->")
        m = _MSG.match(line)
        if not m:
            continue
        body = m.group("text").strip()
        msg = IbdiagMessage(m.group("lvl"), body)
        lk = _LINK.match(body)
        if lk:
            msg.end_a, msg.end_b, msg.problem = _end(lk.group("a")), _end(lk.group("b")), lk.group("problem").strip()
        d = _DISC.search(body)
        if d:
            rep.nodes, rep.switches, rep.cas = (number(d.group(k), k) for k in ("n", "sw", "ca"))
        rep.messages.append(msg)
        if len(rep.messages) > MAX_MESSAGES:
            raise ParseError("ibdiagnet: too many messages")
    return rep
