"""Parser for ``ibstat`` (infiniband-diags): per CA, its firmware and each port's state.

Usage (evidence key ``ib.ibstat``)::

    ibstat

Shape (tab-indented): ``CA 'mlx5_0'``, then ``\\tCA type: MT4129``, ``\\tFirmware version:
28.39.1002``, ``\\tPort 1:`` and per port ``\\t\\tState: Active``, ``\\t\\tPhysical state: LinkUp``,
``\\t\\tRate: 400``, ``\\t\\tLink layer: InfiniBand``. CAs are listed in lexical order (``mlx5_10``
before ``mlx5_2``): order carries no meaning. Source: corpus 115 (8 NDR InfiniBand ports Active,
Ethernet-layer functions Down/Disabled).

ibstat can stop part-way: libibmad's ``IBPANIC`` prints ``ibpanic: [<pid>] <function>: <message>``
and exits -1 (exit status 255), e.g. ``ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed:
No such file or directory`` when a device vanished during enumeration (corpus 116: eight complete
CA stanzas, then the panic). Such lines (also ``iberror:``, prefixed or not with the tool's name;
``ibwarn:`` warnings are skipped too) are not CA stanzas: ``parse_ibstat`` skips them and
``ibstat_failures`` returns the panics and errors,
so the caller reports the run as failed while the ports read before it stay visible (the
indentation is 8 spaces in that build, tabs in corpus 115's: both are read).

Schema::

    parse_ibstat(text) -> [IbPort(device, port, state (upper case), phys_state, rate_gbps, link_layer,
                                  fw_ver, hca_type, source="ibstat")]
    ibstat_failures(text) -> ["ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: ...", ...]
    describe_ports(ports) -> "8 CA(s), 8 port(s): 8 Active/LinkUp at 200 Gb/s"

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
#: libibmad/infiniband-diags error lines (IBPANIC, IBERROR), optionally after the tool's name: the run
#: failed; warnings (IBWARN) are not stanza lines either, but do not fail a run that exited 0
_FAILURE = re.compile(r"^(?:[\w.-]{1,40}: )?(?:ibpanic|iberror): ")
_WARNING = re.compile(r"^(?:[\w.-]{1,40}: )?ibwarn: ")
_MAX_FAILURES = 8


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
        if not ln.strip() or _FAILURE.match(ln) or _WARNING.match(ln):   # ibstat_failures reports failures
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


def ibstat_failures(text: str | bytes) -> list[str]:
    """The tool's own error lines (``ibpanic:``, ``iberror:``) in stdout or stderr text,
    at most the first eight, each cut to 300 characters. [] when there is none."""
    text = V.check_text(text, cap=2 * MAX_CHARS, what="ibstat")
    out = []
    for raw in text.splitlines():
        ln = raw.strip()
        if _FAILURE.match(ln):
            out.append(ln[:300])
            if len(out) >= _MAX_FAILURES:
                break
    return out


def describe_ports(ports: list[IbPort]) -> str:
    """``8 CA(s), 8 port(s): 8 Active/LinkUp at 200 Gb/s`` (what a partial output did show)."""
    cas = {p.device for p in ports}
    up = [p for p in ports if p.state == "ACTIVE" and p.phys_state == "LinkUp"]
    rates = sorted({p.rate_gbps for p in up if p.rate_gbps is not None})
    at = f" at {', '.join(f'{r:g}' for r in rates)} Gb/s" if rates else ""
    return f"{len(cas)} CA(s), {len(ports)} port(s): {len(up)} Active/LinkUp{at}"
