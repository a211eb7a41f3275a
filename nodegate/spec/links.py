"""Effective fabric expectations (issue 19): spec override > SKU profile > architecture fallback.

``nvlink_expectation(spec, gpu)`` -> NvlinkExpectation(links, gbps, source);
``nvswitch_expectation(spec, gpus)`` -> (count | None, source);
``driver_minimum(gpu, spec)`` -> (minimum | None, source). ``gpu`` is a GpuFacts (or None when
the GPU could not be read); sources name where each value came from, for Expected columns.
"""

from __future__ import annotations

from ..errors import EvidenceError

from collections import Counter
from dataclasses import dataclass

from .skus import arch_profile, sku_profile


@dataclass(frozen=True)
class NvlinkExpectation:
    links: int | None          # active links per GPU; 0 = no NVLink; None = unknown
    gbps: float | None         # minimum per-link speed, GB/s (None: not enforced / unknown)
    source: str


def _device_id(spec, gpu) -> str | None:
    """spec gpu.sku, else the GPU's PCI device id; a masked or unreadable id (``[REDACTED]``) is a
    missing value here, as for a board not in the SKU profiles (issue 39.6)."""
    if spec is not None and spec.gpu.sku:
        return spec.gpu.sku
    return _readable_id(gpu)


def _readable_id(gpu) -> str | None:
    try:
        return getattr(gpu, "pci_device_id", None) if gpu is not None else None
    except EvidenceError:
        return None


def _label(sku) -> str:
    return f"SKU profile {sku.device_id} ({sku.name})"


def nvlink_expectation(spec, gpu) -> NvlinkExpectation:
    """NVLinks per GPU and per-link speed: ``nvlink.links``/``nvlink.speed_gbps``, else the SKU
    profile's ``nvlink_links``/``nvlink_gbps`` (nodegate/data/skus.yaml, each with its source)."""
    dev = _device_id(spec, gpu)
    sku = sku_profile(dev)
    links = spec.nvlink.links if spec.nvlink.links is not None else (sku.nvlink_links if sku else None)
    gbps = spec.nvlink.speed_gbps if spec.nvlink.speed_gbps is not None else (sku.nvlink_gbps if sku else None)
    if spec.nvlink.links is not None or spec.nvlink.speed_gbps is not None:
        src = "spec nvlink.links/speed_gbps" + (f" + {_label(sku)}" if sku else "")
    elif sku:
        src = _label(sku)
    else:
        src = f"no SKU profile for device id {dev or 'unknown'}"
    return NvlinkExpectation(links, gbps, src)


#: nvswitch_expectation's answer for a SKU whose NVLink switches are outside the node (skus.yaml)
EXTERNAL = "external"


def nvswitch_expectation(spec, gpus) -> tuple[int | str | None, str]:
    """NVSwitch PCI functions expected: ``nvswitch.count``, else the SKU profile's ``nvswitches``
    for the node's GPU count (spec ``gpu.count`` when set: the board as designed, else the GPUs
    seen), of the node's most common SKU; ``EXTERNAL`` when the SKU's NVLink switches are not this
    node's PCI functions (GB200 NVL72 compute trays). ``gpus``: list of GpuFacts or None (unreadable)."""
    if spec.nvswitch.count is not None:
        return spec.nvswitch.count, "spec nvswitch.count"
    ids = Counter(_device_id(spec, g) for g in (gpus or []))
    ids.pop(None, None)
    dev = spec.gpu.sku or (ids.most_common(1)[0][0] if ids else None)
    sku = sku_profile(dev)
    n = spec.gpu.count if spec.gpu.count is not None else (len(gpus) if gpus is not None else None)
    if sku is None:
        return None, f"no SKU profile for device id {dev or 'unknown'}: set nvswitch.count"
    if not sku.nvswitches:
        return None, f"{_label(sku)} gives no NVSwitch count: set nvswitch.count"
    if sku.nvswitches == EXTERNAL:
        return EXTERNAL, f"{_label(sku)} nvswitches: external"
    if "*" in sku.nvswitches:
        return sku.nvswitches["*"], f"{_label(sku)} (any GPU count)"
    if n is None or str(n) not in sku.nvswitches:
        known = ", ".join(f"{k} GPUs: {v}" for k, v in sorted(sku.nvswitches.items(), key=lambda kv: int(kv[0])))
        return None, f"{_label(sku)} knows {known}, not {n if n is not None else 'an unknown number of'} GPUs: set nvswitch.count"
    return sku.nvswitches[str(n)], f"{_label(sku)} for {n} GPU(s)"


def driver_minimum(gpu, spec=None) -> tuple[str | None, str]:
    """First driver (branch ``550`` or version ``520.61.05``) supporting the GPU: SKU profile
    ``min_driver``, else its architecture's (skus.yaml ``architectures``, [first] source)."""
    dev = _device_id(spec, gpu)
    sku = sku_profile(dev)
    if sku and sku.min_driver:
        return sku.min_driver, _label(sku)
    arch = (getattr(gpu, "architecture", None) if gpu is not None else None) or (sku.architecture if sku else None)
    ap = arch_profile(arch)
    if ap and ap.min_driver:
        return ap.min_driver, f"architecture {ap.architecture}"
    return None, f"no minimum driver known for {arch or 'an unknown architecture'} (device id {dev or 'unknown'})"
