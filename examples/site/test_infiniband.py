"""Site check: every InfiniBand port is Active, LinkUp, at the expected rate.

Declared evidence: the spec's ``site_evidence: {ib_ports: "ibstat"}`` runs ibstat (rdma-core /
MLNX_OFED infiniband-diags) inside nodegate's one probe exec: no SSH command of its own. The
expected rate (Gb/s as ibstat prints ``Rate:``: 400 NDR, 200 HDR, 100 EDR) and, optionally, the
number of InfiniBand ports come from ``site_vars: {ib_rate_gbps: 400, ib_ports: 8}``.

Only ports whose ``Link layer`` is InfiniBand count: a ConnectX function in Ethernet mode
(RoCE, or an unused port set to Ethernet and Down) is not an InfiniBand port.

What cannot be judged (no expected rate in the spec, output that is not ibstat's) raises nodegate's
``EvidenceError``: ERROR ("could not evaluate"), where any other exception would be the test's FAIL
(docs/site-checks.md "Outcomes").
"""

import re
from dataclasses import dataclass

import pytest

from nodegate.errors import EvidenceError


@dataclass
class IbPort:
    ca: str
    port: int
    state: str
    physical_state: str
    rate: float | None
    link_layer: str


_CA = re.compile(r"^CA '([^']+)'")
_PORT = re.compile(r"^\s+Port (\d+):")
_FIELD = re.compile(r"^\s+(State|Physical state|Rate|Link layer):\s*(.*?)\s*$")


def parse_ibstat(text: str) -> list[IbPort]:
    """ibstat's output -> one IbPort per "Port N:" block of each "CA '<name>'"; ValueError when a
    port block lacks State, Rate or Link layer (not ibstat's output)."""
    ports: list[IbPort] = []
    ca, cur = None, None
    for line in text.splitlines():
        if m := _CA.match(line):
            ca, cur = m.group(1), None
        elif (m := _PORT.match(line)) and ca is not None:
            cur = {"ca": ca, "port": int(m.group(1))}
            ports.append(cur)
        elif (m := _FIELD.match(line)) and cur is not None:
            cur[m.group(1)] = m.group(2)
    out = []
    for p in ports:
        missing = [k for k in ("State", "Rate", "Link layer") if k not in p]
        if missing:
            raise ValueError(f"{p['ca']} port {p['port']}: no {', '.join(missing)} line")
        try:
            rate = float(p["Rate"])
        except ValueError:
            rate = None
        out.append(IbPort(p["ca"], p["port"], p["State"], p.get("Physical state", ""), rate, p["Link layer"]))
    return out


@pytest.mark.nodegate_check(id="SITE-IB-001", severity="critical",
                            remediation="Check the named port's cable and transceiver (replace them if the link "
                                        "stays down or trains below the rate), its switch port and the subnet "
                                        "manager (ibstat, iblinkinfo).")
def test_infiniband_ports_active_at_rate(site_evidence, nodegate_node):
    """every InfiniBand port Active, LinkUp, at site_vars.ib_rate_gbps"""
    want = nodegate_node.vars.get("ib_rate_gbps")
    if want is None:
        raise EvidenceError("site_vars.ib_rate_gbps", "site_vars.ib_rate_gbps is not set in this node's spec")
    try:
        parsed = parse_ibstat(site_evidence["ib_ports"].text())
    except ValueError as e:
        raise EvidenceError("site_evidence.ib_ports", str(e)) from None
    ports = [p for p in parsed if p.link_layer == "InfiniBand"]
    assert ports, "no InfiniBand port (ibstat lists no port with Link layer InfiniBand)"
    bad = [f"{p.ca}/{p.port}: {p.state}, {p.physical_state or '?'}, {p.rate:g} Gb/s" if p.rate is not None else
           f"{p.ca}/{p.port}: {p.state}, {p.physical_state or '?'}, rate unknown"
           for p in ports if p.state != "Active" or p.physical_state not in ("LinkUp", "") or p.rate != float(want)]
    assert not bad, f"InfiniBand ports not Active at {want} Gb/s: " + "; ".join(bad)
    count = nodegate_node.vars.get("ib_ports")
    assert count is None or len(ports) == int(count), f"{len(ports)} InfiniBand ports, expected {count}"
