"""Parser for ``ibstat`` (infiniband-diags): per CA, its firmware and each port's state.

Usage (evidence key ``ib.ibstat``)::

    ibstat

Shape (tab-indented): ``CA 'mlx5_0'``, then ``\\tCA type: MT4129``, ``\\tFirmware version:
28.39.1002``, ``\\tPort 1:`` and per port ``\\t\\tState: Active``, ``\\t\\tPhysical state: LinkUp``,
``\\t\\tRate: 400``, ``\\t\\tLink layer: InfiniBand``. CAs are listed in lexical order (``mlx5_10``
before ``mlx5_2``): order carries no meaning. Source: corpus 115 (8 NDR InfiniBand ports Active,
Ethernet-layer functions Down/Disabled).

Schema::

    parse_ibstat(text) -> [IbPort(device, port, state (upper case), phys_state, rate_gbps, link_layer,
                                  fw_ver, hca_type, source="ibstat")]

Example::

    CA 'mlx5_2'
    	Firmware version: 22.38.1002
    	Port 1:
    		State: Down
    		Physical state: Disabled
    		Rate: 40
    		Link layer: Ethernet
    -> [IbPort("mlx5_2", 1, "DOWN", "Disabled", 40.0, "Ethernet", "22.38.1002", None, "ibstat")]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import IbPort
from . import _values as V
from ._limits import number
from .ib_ports import rate_gbps, state_word

MAX_CHARS = 1024 * 1024
_CA = re.compile(r"^CA '(?P<ca>[^']+)'\s*$")
_PORT = re.compile(r"^\s+Port (?P<p>\d{1,20}):\s*$")
# linear: the key cannot hold ':' and the value is stripped in code (the former lazy
# ``:\s*(?P<v>.*?)\s*$`` backtracked quadratically over a run of spaces)
_KV = re.compile(r"^\s+(?P<k>[A-Za-z][A-Za-z ]*):(?P<v>.*)$")


def parse_ibstat(text: str | bytes) -> list[IbPort]:
    """Ports in output order. Empty -> []. ParseError when non-empty text has no ``CA '...'``
    header before its first line."""
    text = V.check_text(text, cap=MAX_CHARS, what="ibstat")
    out: list[IbPort] = []
    ca: dict | None = None
    cur: IbPort | None = None
    seen: dict[str, str] = {}   # keys of the current block (a CA's header lines, or one port)
    for raw in text.splitlines():
        ln = raw.rstrip().expandtabs(8)
        if not ln.strip():
            continue
        m = _CA.match(ln)
        if m:
            ca, cur, seen = {"name": m.group("ca")}, None, {}
            continue
        if ca is None:
            raise ParseError(f"ibstat: line before any CA header: {ln.strip()[:80]!r}")
        m = _PORT.match(ln)
        if m:
            cur = IbPort(device=ca["name"], port=number(m.group("p")), fw_ver=ca.get("fw"),
                         hca_type=ca.get("type"), source="ibstat")
            out.append(cur)
            seen = {}
            continue
        m = _KV.match(ln)
        if not m:
            continue
        k, v = m.group("k").lower(), m.group("v").strip()
        if seen.setdefault(k, v) != v:   # a key twice in one block, two values: never "last one wins"
            raise ParseError(f"ibstat: {m.group('k').strip()!r} given twice in one block ({seen[k][:40]!r} and {v[:40]!r})")
        if cur is None:
            if k == "firmware version":
                ca["fw"] = v or None
            elif k == "ca type":
                ca["type"] = v or None
        elif k == "state":
            cur.state = (state_word(v) or "").upper() or None
        elif k == "physical state":
            cur.phys_state = state_word(v)
        elif k == "rate":
            cur.rate_gbps = rate_gbps(v)
        elif k == "link layer":
            cur.link_layer = v or None
    return out
