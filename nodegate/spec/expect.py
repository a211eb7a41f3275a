"""Effective per-GPU expectations: spec override > SKU profile > architecture/catalog default.

``expectations(spec, gpu)`` takes a ``Spec`` and a ``GpuFacts`` (or None when the GPU could
not be read) and returns a ``GpuExpectation`` whose ``*_source`` fields say where each value
came from (for Expected columns and messages).
"""

from __future__ import annotations

from ..errors import EvidenceError

from dataclasses import dataclass

from .skus import SkuProfile, arch_profile, sku_profile

# Ampere and later can remap rows, earlier boards can retire pages (skus.yaml [remap]/[retire]); whether a
# board has either is its SKU profile's (issue 21: GDDR6X GeForce Ampere has no row remapper).
_ROW_REMAP_ARCHS = ("ampere", "ada", "hopper", "blackwell")
_RETIRE_ARCHS = ("kepler", "maxwell", "pascal", "volta", "turing")


@dataclass(frozen=True)
class GpuExpectation:
    device_id: str | None
    sku: SkuProfile | None
    architecture: str | None
    pcie_gen: int | None
    pcie_width: int | None
    pcie_source: str
    gsp_firmware: str | None          # None: this GPU needs no GSP firmware (or unknown, see gsp_source)
    gsp_source: str
    flavor: str                       # the flavor this GPU requires: open | proprietary | any
    flavor_source: str
    ecc_capable: bool | None
    memory_repair: str | None         # row_remap | page_retirement | none | None (unknown board)
    memory_repair_source: str
    persistenced_root: bool
    row_remapping: bool | None = None     # the board has a row remapper (None: unknown board)
    page_retirement: bool | None = None   # the board retires pages (None: unknown board)
    c2c: bool = False                     # attached to a Grace CPU by NVLink-C2C (SKU profile attach: c2c)

    @property
    def pre_turing(self) -> bool:
        return (self.architecture or "").lower() in ("maxwell", "pascal", "volta", "kepler")


def _device_id(spec, gpu) -> str | None:
    """spec gpu.sku, else the GPU's PCI device id. An unreadable device id (checks._util.CheckedGpu
    raises EvidenceError for it) propagates unless gpu.sku names the profile (``expectations``
    turns it into a missing value; gpu.sku is the way to name the board when the id is masked)."""
    if spec.gpu.sku:
        return spec.gpu.sku
    return getattr(gpu, "pci_device_id", None) if gpu is not None else None


def expectations(spec, gpu) -> GpuExpectation:
    """Effective expectations for one GPU (``gpu`` may be None). A masked or unreadable PCI device
    id (``[REDACTED]``: checks._util.CheckedGpu raises EvidenceError for it) is a missing value,
    as for a board not in the SKU profiles (issue 39.6): only what needs the profile is then
    unknown (spec values and the architecture still decide), and each source names why."""
    try:
        dev = _device_id(spec, gpu)
    except EvidenceError as e:
        dev = f"unreadable ({e.reason})"
    sku = sku_profile(dev) if dev and not dev.startswith("unreadable") else None
    arch = (getattr(gpu, "architecture", None) if gpu is not None else None) or (sku.architecture if sku else None)
    ap = arch_profile(arch)
    skulabel = f"SKU profile {sku.device_id} ({sku.name})" if sku else None

    # PCIe: spec > SKU; no architecture fallback (boards of one architecture differ).
    gen = spec.pcie.gen if spec.pcie.gen is not None else (sku.pcie_gen if sku else None)
    width = spec.pcie.width if spec.pcie.width is not None else (sku.pcie_width if sku else None)
    if spec.pcie.gen is not None or spec.pcie.width is not None:
        psrc = "spec pcie.gen/pcie.width" + (f" + {skulabel}" if sku else "")
    elif sku:
        psrc = skulabel
    else:
        psrc = f"no SKU profile for device id {dev or 'unknown'}: set pcie.gen/pcie.width"

    if sku:
        gsp, gsrc = sku.gsp_firmware, skulabel
        flavor, fsrc = sku.flavor, skulabel
    elif ap:
        gsp, gsrc = ap.gsp_firmware, f"architecture {ap.architecture}"
        flavor, fsrc = ap.flavor, f"architecture {ap.architecture}"
    else:
        gsp, gsrc = None, f"unknown GPU (device id {dev or 'unknown'}, architecture {arch or 'unknown'})"
        flavor, fsrc = "any", gsrc

    rep, rsrc, remap, retire = _memory_repair(spec, sku, skulabel, arch, dev)
    c2c = bool(sku and sku.attach == "c2c")

    return GpuExpectation(
        device_id=dev, sku=sku, architecture=arch, pcie_gen=gen, pcie_width=width, pcie_source=psrc,
        gsp_firmware=gsp, gsp_source=gsrc, flavor=flavor, flavor_source=fsrc,
        ecc_capable=sku.ecc if sku else None, memory_repair=rep, memory_repair_source=rsrc,
        persistenced_root=bool(sku and sku.persistenced_root), row_remapping=remap, page_retirement=retire,
        c2c=c2c)


def _memory_repair(spec, sku, skulabel, arch, dev):
    """(memory_repair, source, has row remapper, retires pages): spec > SKU profile; for a board
    not in the profiles the architecture only rules out what it cannot have (None = unknown)."""
    if spec.memory.repair != "auto":
        rep = spec.memory.repair
        return rep, "spec memory.repair", rep == "row_remap", rep == "page_retirement"
    if sku:
        rep = sku.memory_repair
        return rep, skulabel, rep == "row_remap", rep == "page_retirement"
    a = (arch or "").lower()
    where = f"device id {dev or 'unknown'}, architecture {arch or 'unknown'}"
    if any(a.startswith(x) for x in _ROW_REMAP_ARCHS):
        return None, f"unknown board ({where})", None, False
    if any(a.startswith(x) for x in _RETIRE_ARCHS):
        return None, f"unknown board ({where})", False, None
    return None, f"unknown board ({where})", None, None
