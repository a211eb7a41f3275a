"""Which part a failed check is about: what a vendor's RMA desk replaces, and where it sits.

A vendor takes back a part, not a node: a GPU (its board serial), the baseboard / NVSwitch tray,
a riser or PCIe switch board (the upstream port the errors point to), an HCA. A check about
software or configuration (a unit, a module, a driver, a spec value) names no part: its row is
the site's work whatever its action.

Per check id (docs/checks.md; the source of each mapping is the check's own remediation text):

- GPU: memory repair (NG-MEM-001/002/003), ECC counters (NG-ECC-002), the GPU's kernel-log
  events (NG-LOG-002), a missing or wrong GPU (NG-INV-002), NVLink (NG-NVL-001/002: "reseat
  the GPU/baseboard ... then RMA");
- riser: upstream links (NG-PCIE-003), a link trained narrow or slow (NG-PCIE-002: "a slot,
  riser or bifurcation fault"), and PCIe/AER errors (NG-PCIERR-001) when the counters point
  at an upstream port (``upstream port <bus>`` in the message); at the GPU itself it is the GPU;
- baseboard/NVSwitch tray: NVSwitch count (NG-NVSW-001);
- HCA: InfiniBand ports and a GPU's rail (NG-IB-001/002; the HCA device names from the message);
  a cross-node HCA fault (NG-XN-003 ``hca``: the HCA and its switch port, its port GUID as serial);
- cable: a cross-node cable or path fault (NG-XN-003) and a cable not as planned (NG-XN-004),
  named by both ends (``node:hca/port <-> switch:port``).

nodegate's evidence carries a serial for GPUs (nvidia-smi) and an HCA's port GUID; for the other parts the row
gives the location and the system's DMI serial identifies the chassis.
"""

from __future__ import annotations

import re

from .records import Record, gpu_slot

GPU, BASEBOARD, RISER, HCA, CABLE = "GPU", "baseboard/NVSwitch tray", "riser", "HCA", "cable"
PARTS = (GPU, BASEBOARD, RISER, HCA, CABLE)

_BY_CHECK = {
    "NG-MEM-001": GPU, "NG-MEM-002": GPU, "NG-MEM-003": GPU, "NG-ECC-002": GPU, "NG-LOG-002": GPU,
    "NG-INV-002": GPU, "NG-NVL-001": GPU, "NG-NVL-002": GPU,
    "NG-PCIE-002": RISER, "NG-PCIE-003": RISER, "NG-PCIERR-001": GPU,
    "NG-NVSW-001": BASEBOARD,
    "NG-IB-001": HCA, "NG-IB-002": HCA,
    # the cross-node phase (nodegate.crossnode.present): a fault below the node is an HCA (its port
    # GUID is the serial) or a cable (both ends); a Stage A cable row is a cable
    "NG-XN-003": HCA, "NG-XN-004": CABLE,
}
#: a cross-node record's ends and port GUID (nodegate.crossnode.present writes them so)
_XN_ENDS = re.compile(r"^(?:hca|cable|path|boundary) (.+? <-> [^;]+)")
_XN_CABLE = re.compile(r"^(.+? <-> .+?): ")
_XN_KIND = re.compile(r"^F\d+ (hca|cable|path|boundary) at fault")
_GUID = re.compile(r"port GUID (0x[0-9a-fA-F]{1,16})")

_UPSTREAM = re.compile(r"upstream port ([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])")
#: RDMA device names as the kernel gives them (mlx5_3, bnxt_re0 ...) before " port N"
_HCA_DEV = re.compile(r"\b([a-z][a-z0-9_]*\d)(?= port \d)")


def part_of(rec: Record) -> tuple[str, str]:
    """(part, location) of one failed record; ("", "") for software or configuration.

    Location: a GPU's PCI bus id; a riser's upstream port (``upstream port 0000:4a:00.0``) or,
    without one, the GPU slot it feeds (``slot of GPU 3 (0000:5d:00.0)``); the NVSwitches the node
    shows (its count and bus ids); an HCA's device names (``mlx5_3``)."""
    part = _BY_CHECK.get(rec.check_id, "")
    if rec.check_id in ("NG-XN-003", "NG-XN-004"):
        return _crossnode_part(rec)
    msg = f"{rec.message} {rec.observed}" if rec.check_id != "NG-PCIERR-001" else rec.message
    slot = gpu_slot(rec)
    if rec.gpu_index == "" and slot != "":   # a GPU nvidia-smi does not list: its bus id, its item label
        gpu = f"GPU {rec.pci_bus_id} (gpu{slot})" if rec.pci_bus_id else f"GPU gpu{slot}"
    else:
        gpu = f"GPU {rec.gpu_index} ({rec.pci_bus_id})" if rec.pci_bus_id else (
            f"GPU {rec.gpu_index}" if rec.gpu_index != "" else "")
    if part in (GPU, RISER):
        up = _UPSTREAM.search(msg)
        if up:
            return RISER, f"upstream port {up.group(1)}" + (f" above {gpu}" if gpu else "")
        if part == RISER:
            return RISER, f"slot of {gpu}" if gpu else "slot"
        return GPU, rec.pci_bus_id or gpu
    if part == HCA:
        devs = sorted(set(_HCA_DEV.findall(rec.message)))
        return HCA, ", ".join(devs) if devs else (f"rail of {gpu}" if gpu else "")
    if part == BASEBOARD:   # the NVSwitches the node shows (NG-NVSW-001's observed: count, bus ids)
        return BASEBOARD, f"NVSwitch baseboard/tray; present: {rec.observed}"[:300]
    return "", ""


def _crossnode_part(rec: Record) -> tuple[str, str]:
    """A cross-node fault (NG-XN-003): an ``hca`` fault is the HCA (location: the HCA and its
    switch port), a ``cable``/``path`` fault a cable named by both ends, a ``boundary`` no part
    (the links between two groups: the site's inspection); a cable row (NG-XN-004): the cable."""
    if rec.check_id == "NG-XN-004":
        m = _XN_CABLE.match(rec.message)
        return CABLE, m.group(1) if m else rec.observed[:300]
    kind = _XN_KIND.match(rec.message)
    ends = _XN_ENDS.match(rec.observed)
    where = ends.group(1) if ends else rec.observed[:300]
    if kind is None or kind.group(1) == "boundary":
        return "", ""
    return (HCA if kind.group(1) == "hca" else CABLE), where


def part_serial(part: str, recs: list[Record]) -> str:
    """The part's serial where the evidence has one (a GPU's board serial; an HCA's port GUID
    from the cross-node phase), else ""."""
    if part == HCA:
        return next((m.group(1) for r in recs for m in [_GUID.search(r.message)] if m), "")
    if part != GPU:
        return ""
    return next((r.gpu_serial for r in recs if r.gpu_serial), "")
