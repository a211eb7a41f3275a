"""SKU profiles (nodegate/data/skus.yaml): per PCI device id, what a healthy board looks like.

``sku_profile(device_id)`` -> SkuProfile | None; ``arch_profile(architecture)`` -> the
architecture fallback (GSP file, flavor, memory repair) for device ids not listed.
Each yaml entry carries a ``source`` naming where its values come from.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict

from .. import yamlio


class SkuProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    device_id: str
    name: str
    architecture: str
    pcie_gen: Optional[int] = None
    pcie_width: Optional[int] = None
    gsp_firmware: Optional[str] = None
    flavor: Literal["open", "proprietary", "any"] = "any"
    ecc: bool = True
    memory_repair: Literal["row_remap", "page_retirement", "none"] = "row_remap"
    persistenced_root: bool = False
    # issue 19 (fabric): NVLinks per GPU and the per-link speed nvidia-smi nvlink -s prints (GB/s);
    # NVSwitch PCI functions by the node's GPU count of this SKU ("*" = any count); the minimum
    # driver (a branch "550" or a version) the SKU needs. None = not known: set it in the spec.
    nvlink_links: Optional[int] = None
    nvlink_gbps: Optional[float] = None
    # "external": the system's NVLink switches are not PCI functions of this node at all (GB200 NVL72
    # compute trays: the switch chips sit in separate NVLink switch trays, corpus 121)
    nvswitches: Optional[Union[dict[str, int], Literal["external"]]] = None
    min_driver: Optional[str] = None
    # issue 39.5: how the GPU reaches its CPU. "c2c": NVLink-C2C to a Grace CPU (GH200, GB200,
    # GB300, GB10): no PCIe slot link to judge (NVIDIA Grace Hopper / GB200 NVL72 docs)
    attach: Literal["pcie", "c2c"] = "pcie"
    source: str


class ArchProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    architecture: str
    gsp_firmware: Optional[str] = None
    flavor: Literal["open", "proprietary", "any"] = "any"
    memory_repair: Literal["row_remap", "page_retirement"] = "row_remap"
    min_driver: Optional[str] = None
    source: str


def _read() -> dict:
    text = resources.files("nodegate").joinpath("data/skus.yaml").read_text()
    return yamlio.safe_load(text)


@lru_cache(maxsize=1)
def load_skus() -> dict[str, SkuProfile]:
    """All SKU profiles keyed by device id (4 lower-case hex digits). Validated on load."""
    raw = _read()
    return {str(k).lower(): SkuProfile(device_id=str(k).lower(), **v) for k, v in raw["skus"].items()}


@lru_cache(maxsize=1)
def load_arch_profiles() -> dict[str, ArchProfile]:
    raw = _read()
    return {k.lower(): ArchProfile(architecture=k, **v) for k, v in raw["architectures"].items()}


class GspSupport(BaseModel):
    """Which drivers and boards can run GSP firmware (skus.yaml ``gsp:``, each value cited there)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_driver_branch: int
    per_architecture_files_branch: int
    ga10x_name_branch: int
    default_on_all_branch: int
    architectures: list[str]

    def file_for_driver(self, name: str, version: str | None) -> str:
        """The GSP file a SKU profile names (the 530+ ``gsp_tu10x.bin``/``gsp_ga10x.bin``) as the
        driver ``version`` ships it: ``gsp.bin`` before 525, ``gsp_ad10x.bin`` for ga10x in 525-529."""
        major = (version or "").split(".")[0]
        if not major.isdigit():
            return name
        b = int(major)
        if b < self.per_architecture_files_branch:
            return "gsp.bin"
        if b < self.ga10x_name_branch and name == "gsp_ga10x.bin":
            return "gsp_ad10x.bin"
        return name

    def driver_predates_gsp(self, version: str | None) -> bool:
        """True when ``version`` ('440.31') is a branch older than the first with GSP firmware."""
        major = (version or "").split(".")[0]
        return major.isdigit() and int(major) < self.first_driver_branch

    def architecture_can_run(self, architecture: str | None) -> bool | None:
        """True/False for a known architecture name, None when unknown."""
        if not architecture:
            return None
        known = {a.lower() for a in self.architectures}
        old = {"kepler", "maxwell", "pascal", "volta"}
        a = architecture.strip().lower()
        return True if a in known else False if a in old else None


@lru_cache(maxsize=1)
def gsp_support() -> GspSupport:
    return GspSupport(**_read()["gsp"])


def sku_profile(device_id: str | None) -> SkuProfile | None:
    """Profile for ``device_id`` ('2335', '0x2335', '0x233510DE'), or None when unknown."""
    if not device_id:
        return None
    d = device_id.lower().removeprefix("0x")
    if len(d) == 8 and d.endswith("10de"):   # nvidia-smi "Device Id : 0x233510DE"
        d = d[:4]
    return load_skus().get(d)


def arch_profile(architecture: str | None) -> ArchProfile | None:
    if not architecture:
        return None
    return load_arch_profiles().get(architecture.strip().lower())
