"""InfiniBand ports, per node and per GPU rail, and HCA firmware (issue 19 item 5).

Evidence: ``/sys/class/infiniband/*/ports/*`` (``ib.ports``, no OFED tool needed), cross-checked
with ``ibstat`` where it is installed (``ib.ibstat``). Ethernet-layer (RoCE) functions are not
judged unless ``ib.devices`` names them (corpus 115: three Ethernet functions Down next to eight
Active NDR ports is a healthy node).
"""

from __future__ import annotations

from ..errors import EvidenceError
from ..outcomes import Result
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, optional, spec_or_default

_KEYS = ("ib.ports", "ib.ibstat")
#: reasons of an ibstat item that was never gathered (an older probe, a bug report): sysfs alone decides
_ABSENT = ("evidence not collected", "evidence not in the bug report", "not collected")


def _ports(facts) -> list:
    """sysfs ports; ibstat's when sysfs lists none. Raises EvidenceError when the two disagree on a
    port's state (contradictory evidence is ERROR, never a choice)."""
    ports = facts.ib_ports
    ibs, ierr = optional(facts, "ibstat_ports")
    if ierr is not None and not ierr.reason.startswith(_ABSENT):
        # ibstat ran and failed (corpus 116: ibpanic after 8 complete CAs, exit 255): the cross-check
        # was not made and a device vanished while it enumerated: ERROR, never the sysfs PASS alone
        raise ierr
    if ibs:
        by = {(p.device, p.port): p for p in ports}
        clash = [f"{q.device} port {q.port}: sysfs {fmt(by[(q.device, q.port)].state)}, ibstat {fmt(q.state)}"
                 for q in ibs if (q.device, q.port) in by and by[(q.device, q.port)].state and q.state
                 and by[(q.device, q.port)].state != q.state]
        if clash:
            raise EvidenceError("ib.ibstat", "sysfs and ibstat disagree: " + "; ".join(clash[:4]))
        if not ports:
            return ibs
    return ports


def _judged(ports, spec) -> tuple[list, list]:
    """(ports judged, ports ignored): ib.devices names them, else the InfiniBand link layer."""
    if spec.ib.devices is not None:
        names = set(spec.ib.devices)
        return [p for p in ports if p.device in names], [p for p in ports if p.device not in names]
    return [p for p in ports if p.link_layer != "Ethernet"], [p for p in ports if p.link_layer == "Ethernet"]


def _desc(p) -> str:
    rate = f" {p.rate_gbps:g} Gb/s" if p.rate_gbps is not None else ""
    return f"{p.device}/{p.port} {fmt(p.state)}/{fmt(p.phys_state)}{rate} {fmt(p.link_layer)}"


def _port_problems(ports, spec) -> tuple[list[str], list[str]]:
    """(failures, unreadable) for ports that must be Active/LinkUp at ib.rate_gbps."""
    bad, unknown = [], []
    for p in ports:
        if p.state is None or p.phys_state is None or (spec.ib.rate_gbps and p.rate_gbps is None):
            unknown.append(f"{p.device}/{p.port}")
        elif p.state != "ACTIVE" or p.phys_state != "LinkUp":
            bad.append(f"{p.device} port {p.port} {p.state}/{p.phys_state}")
        elif spec.ib.rate_gbps and p.rate_gbps + 1e-9 < spec.ib.rate_gbps:
            bad.append(f"{p.device} port {p.port} at {p.rate_gbps:g} Gb/s below {spec.ib.rate_gbps:g}")
    return bad, unknown


def _expected(spec) -> str:
    n = f"{spec.ib.ports} " if spec.ib.ports is not None else "every "
    return (f"{n}InfiniBand port(s) Active/LinkUp" + (f" at >= {spec.ib.rate_gbps:g} Gb/s" if spec.ib.rate_gbps else "")
            + (f" (ib.devices: {', '.join(spec.ib.devices)})" if spec.ib.devices is not None else ""))


@check(id="NG-IB-001", name="infiniband_ports", title="InfiniBand ports Active/LinkUp at the expected rate",
       scope="node", severity="critical", evidence=_KEYS,
       # cables, transceivers and switch ports are the site's fabric work (actions.csv), not the
       # node vendor's: the remediation's "reseat" would otherwise rank it as a riser reseat
       action="fix configuration",
       remediation="Check the cable/transceiver and the switch port of each failing HCA port (ibstat, "
                   "mlxlink -d <dev> -m), reseat or replace; a port at a lower rate: check the cable type and the "
                   "switch's speed configuration.",
       rule="Every InfiniBand-layer port (or every port of the devices ib.devices names, any link layer) is "
            "state ACTIVE, phys_state LinkUp, at least ib.rate_gbps (e.g. 400 for NDR), and at least ib.ports of "
            "them are. Ethernet-layer (RoCE) functions are ignored unless named. Read from "
            "/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}; ibstat cross-checks where "
            "installed (a disagreement is ERROR; ibstat that failed or stopped part-way, e.g. 'ibpanic' exit 255, is "
            "ERROR naming it). No InfiniBand port and ib.ports unset -> SKIP naming ib.ports.",
       gpu_less=True)
def infiniband_ports(facts, spec) -> Result:
    spec = spec_or_default(spec)
    ports = _ports(facts)
    judged, ignored = _judged(ports, spec)
    expected = _expected(spec)
    ev = lines(*(_desc(p) for p in ports))
    kw = dict(evidence=ev or "no RDMA device under /sys/class/infiniband", evidence_keys=_KEYS)
    ign = f"; {len(ignored)} Ethernet-layer ignored" if ignored and spec.ib.devices is None else (
        f"; {len(ignored)} not named in ib.devices ignored" if ignored else "")
    if spec.ib.devices is not None:
        missing = sorted(set(spec.ib.devices) - {p.device for p in ports})
        if missing:
            return Result.failed(expected, f"{len(judged)} port(s) of the named devices{ign}",
                                 f"device(s) named in ib.devices not present: {', '.join(missing)}", **kw)
    if not judged and spec.ib.ports is None:
        return Result.skipped(f"ib.ports not set and no InfiniBand-layer port on this node ({len(ports)} RDMA port(s))",
                              expected="ib.ports", observed=f"{len(ports)} RDMA port(s){ign}", **kw)
    bad, unknown = _port_problems(judged, spec)
    active = len(judged) - len(bad) - len(unknown)
    rates = sorted({p.rate_gbps for p in judged if p.rate_gbps is not None})
    obs = f"{active}/{len(judged)} port(s) Active/LinkUp" + (
        f" at {', '.join(f'{r:g}' for r in rates)} Gb/s" if rates else "") + ign
    if bad:
        return Result.failed(expected, obs, "InfiniBand: " + "; ".join(bad), **kw)
    if unknown:
        return Result.errored(f"InfiniBand port state or rate unreadable: {', '.join(unknown)}", expected, obs, **kw)
    if spec.ib.ports is not None and active < spec.ib.ports:
        return Result.failed(expected, obs, f"only {active} of {spec.ib.ports} InfiniBand ports present and Active", **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-IB-002", name="infiniband_gpu_rail", title="The GPU's InfiniBand rail is Active at the expected rate",
       scope="gpu", severity="major", evidence=_KEYS,
       remediation="Check the cable/transceiver and the switch port of the GPU's HCA (its rail); a wrong "
                   "ib.gpu_hca mapping: fix the spec from `nvidia-smi topo -m`.",
       rule="Where the spec maps HCAs to GPUs (ib.gpu_hca: {GPU index: device}), the GPU's device has its ports "
            "Active/LinkUp at >= ib.rate_gbps. No mapping (or none for this GPU) -> SKIP naming ib.gpu_hca; the "
            "mapped device absent -> FAIL.")
def infiniband_gpu_rail(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    if not spec.ib.gpu_hca:
        return Result.skipped("ib.gpu_hca not set: no HCA mapped to this GPU", expected="ib.gpu_hca")
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    idx = g.index if g.index is not None else gpu.index
    dev = spec.ib.gpu_hca.get(idx)
    if dev is None:
        return Result.skipped(f"ib.gpu_hca has no entry for GPU {idx}", expected="ib.gpu_hca")
    ports = [p for p in _ports(facts) if p.device == dev]
    expected = f"{dev} Active/LinkUp" + (f" at >= {spec.ib.rate_gbps:g} Gb/s" if spec.ib.rate_gbps else "")
    kw = dict(evidence=lines(*(_desc(p) for p in ports)), evidence_keys=_KEYS)
    if not ports:
        return Result.failed(expected, f"{dev} absent", f"{name}: its HCA {dev} (ib.gpu_hca) is not present", **kw)
    bad, unknown = _port_problems(ports, spec)
    obs = "; ".join(_desc(p) for p in ports)
    if bad:
        return Result.failed(expected, obs, f"{name}: rail {'; '.join(bad)}", **kw)
    if unknown:
        return Result.errored(f"{name}: rail {dev} state or rate unreadable", expected, obs, **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-IB-003", name="infiniband_firmware", title="HCA firmware as specified",
       scope="node", severity="minor", evidence=_KEYS,
       remediation="Update the HCA firmware (mlxfwmanager / the vendor's bundle) to the specified version and "
                   "reboot (or mlxfwreset).",
       rule="When ib.firmware is set (a version or a list), every judged RDMA device (InfiniBand-layer, or those "
            "ib.devices names) reports one of them in sysfs fw_ver (ibstat 'Firmware version'). Unset -> SKIP "
            "naming ib.firmware; a device without fw_ver -> ERROR.",
       gpu_less=True)
def infiniband_firmware(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.ib.firmware
    if want is None:
        return Result.skipped("ib.firmware not set: HCA firmware not checked", expected="ib.firmware")
    allowed = [want] if isinstance(want, str) else list(want)
    judged, _ = _judged(_ports(facts), spec)
    devs: dict[str, str | None] = {}
    for p in judged:
        devs.setdefault(p.device, p.fw_ver)
    expected = "HCA firmware " + " or ".join(allowed)
    obs = ", ".join(f"{d} {fmt(v)}" for d, v in sorted(devs.items())) or "no judged RDMA device"
    kw = dict(evidence=obs, evidence_keys=_KEYS)
    if not devs:
        return Result.errored("no InfiniBand device to check the firmware of", expected, obs, **kw)
    bad = [f"{d} {v}" for d, v in sorted(devs.items()) if v is not None and v not in allowed]
    if bad:
        return Result.failed(expected, obs, "HCA firmware not as specified: " + ", ".join(bad), **kw)
    unknown = [d for d, v in devs.items() if v is None]
    if unknown:
        return Result.errored(f"fw_ver not readable for {', '.join(sorted(unknown))}", expected, obs, **kw)
    return Result.passed(expected, obs, **kw)
