"""Render ``nvidia-smi -q -x`` for a simulated node from the real H200 capture.

The template is ../shared/captures/h200-vm-580.159.04/smi_qx.out (580.159.04, nvsmi_device_v13.dtd).
Each GPU is a copy of its ``<gpu>`` element edited with ElementTree. Older branches are rendered
by the element changes NVIDIA made (see ../shared/spec/checks.md "ECC and memory health" and
"Clocks event reasons"): < 580 drops the 580 memory-repair elements, < 570 uses
``sram_uncorrectable`` instead of the parity/SECDED split and has no ``gpu_recovery_action``,
< 535 uses the ``clocks_throttle_reason*`` names.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

import defusedxml.ElementTree as DET

from .models import GPU_MODELS, branch

TEMPLATE = Path(__file__).resolve().parents[3] / "shared" / "captures" / "h200-vm-580.159.04" / "smi_qx.out"
_LOCAL_TEMPLATE = Path(__file__).with_name("data") / "smi_qx_h200_580.xml"


@lru_cache(maxsize=1)
def _template() -> ET.Element:
    src = _LOCAL_TEMPLATE if _LOCAL_TEMPLATE.is_file() else TEMPLATE
    return DET.fromstring(src.read_bytes())


def _set(el: ET.Element, path: str, value) -> None:
    node = el.find(path)
    if node is None:
        raise KeyError(f"template has no element {path}")
    node.text = str(value)


def _remove(parent: ET.Element, tag: str) -> None:
    for c in list(parent):
        if c.tag == tag:
            parent.remove(c)


def bus_id_smi(dom: int, bus: int, dev: int, fn: int) -> str:
    """nvidia-smi's bus id form: 8-digit domain, upper-case hex (``00000000:3B:00.0``)."""
    return f"{dom:08X}:{bus:02X}:{dev:02X}.{fn:X}"


def render_gpu(st: dict, model: str, bdf: tuple[int, int, int, int], version: str, vm: bool) -> ET.Element:
    m = GPU_MODELS[model]
    g = copy.deepcopy(_template().find("gpu"))
    dom, bus, dev, fn = bdf
    g.set("id", bus_id_smi(*bdf))
    _set(g, "product_name", m["product_name"])
    _set(g, "product_architecture", m["architecture"])
    _set(g, "persistence_mode", st["persistence"])
    _set(g, "serial", st["serial"])
    _set(g, "uuid", st["uuid"])
    _set(g, "minor_number", st["minor"])
    _set(g, "vbios_version", st["vbios"])
    _set(g, "inforom_version/img_version", st["inforom"])
    _set(g, "mig_mode/current_mig", st["mig"])
    _set(g, "mig_mode/pending_mig", st["mig_pending"] or st["mig"])
    _set(g, "compute_mode", st["compute_mode"])
    _set(g, "fabric/state", st["fabric"]["state"])
    _set(g, "fabric/status", st["fabric"]["status"])
    _set(g, "pci/replay_counter", st["replays"])
    _set(g, "pci/replay_rollover_counter", st["replay_rollovers"])
    _set(g, "board_id", f"0x{bus << 8 | dev << 3 | fn:x}")
    _set(g, "board_part_number", m["board_part"])
    _set(g, "gpu_part_number", m["gpu_part"])
    _set(g, "platformInfo/module_id", st["minor"] + 1)
    _set(g, "gpu_virtualization_mode/virtualization_mode", "Pass-Through" if vm else "None")
    _set(g, "gpu_recovery_action", st["recovery_action"])
    _set(g, "gsp_firmware_version", st["gsp_version"])
    _set(g, "pci/pci_bus", f"{bus:02X}")
    _set(g, "pci/pci_device", f"{dev:02X}")
    _set(g, "pci/pci_domain", f"{dom:04X}")
    _set(g, "pci/pci_device_id", f"{m['device_id']:04X}10DE")
    _set(g, "pci/pci_bus_id", bus_id_smi(*bdf))
    _set(g, "pci/pci_sub_system_id", m["subsystem"])
    pc = st["pcie"]
    gen = "pci/pci_gpu_link_info/pcie_gen/"
    _set(g, gen + "max_link_gen", pc["max_gen"])
    _set(g, gen + "current_link_gen", pc["cur_gen"])
    _set(g, gen + "device_current_link_gen", pc["cur_gen"])
    _set(g, gen + "max_device_link_gen", pc["device_max_gen"])
    _set(g, gen + "max_host_link_gen", pc["host_max_gen"])
    _set(g, "pci/pci_gpu_link_info/link_widths/max_link_width", f"{pc['max_width']}x")
    _set(g, "pci/pci_gpu_link_info/link_widths/current_link_width", f"{pc['cur_width']}x")
    _set(g, "performance_state", st["pstate"])
    _set(g, "gpu_power_readings/power_state", st["pstate"])
    _set(g, "module_power_readings/power_state", st["pstate"])
    _set(g, "gpu_power_readings/current_power_limit", f"{st['power_limit']:.2f} W")
    _set(g, "gpu_power_readings/requested_power_limit", f"{st['power_limit']:.2f} W")
    _set(g, "gpu_power_readings/default_power_limit", f"{st['power_default']:.2f} W")
    _set(g, "gpu_power_readings/max_power_limit", f"{max(st['power_default'], st['power_limit']):.2f} W")
    for c in g.find("clocks_event_reasons"):
        c.text = "Active" if c.tag.removeprefix("clocks_event_reason_") in st["events"] else "Not Active"
    busy = "gpu_idle" not in st["events"]
    _set(g, "utilization/gpu_util", f"{st['utilization'] if busy or st['utilization'] else 0} %")
    _set(g, "clocks/graphics_clock", "1980 MHz" if busy else "345 MHz")
    _set(g, "clocks/sm_clock", "1980 MHz" if busy else "345 MHz")
    total = m["memory_mib"]
    _set(g, "fb_memory_usage/total", f"{total} MiB")
    _set(g, "fb_memory_usage/reserved", f"{m['reserved_mib']} MiB")
    _set(g, "fb_memory_usage/free", f"{total - m['reserved_mib']} MiB")
    ecc = st["ecc"]
    _set(g, "ecc_mode/current_ecc", ecc["mode"])
    _set(g, "ecc_mode/pending_ecc", ecc["pending"])
    for scope in ("volatile", "aggregate"):
        blk = g.find(f"ecc_errors/{scope}")
        for k, v in (ecc.get(scope) or {}).items():
            if blk.find(k) is None:
                raise KeyError(f"unknown ECC counter {scope}/{k}")
            blk.find(k).text = str(v)
    for k in ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory"):
        if k in ecc:
            _set(g, f"ecc_errors/{k}", ecc[k])
    _render_retired(g, st["retired"])
    # remapped rows read N/A under MIG (corpus 010: A100 in MIG mode)
    _render_remap(g, None if st["mig"] == "Enabled" else st["remap"], m["remap_banks"])
    return g


def _render_retired(g: ET.Element, rp: dict | None) -> None:
    if rp is None:
        return  # template: N/A (Ampere and later retire rows instead of pages)
    r = g.find("retired_pages")
    for tag, n, base in (("multiple_single_bit_retirement", rp["sbe"], 0x1F000),
                         ("double_bit_retirement", rp["dbe"], 0x2F000)):
        blk = r.find(tag)
        blk.find("retired_count").text = str(n)
        pl = blk.find("retired_pagelist")
        pl.text = "\n\t\t\t\t\t" if n else ""
        for k in range(n):
            page = ET.SubElement(pl, "retired_page")
            addr = ET.SubElement(page, "retired_page_address")
            addr.text = f"0x{base + k * 0x100:016x}"
            page.tail = "\n\t\t\t\t\t" if k < n - 1 else "\n\t\t\t\t"
    r.find("pending_blacklist").text = "Yes" if rp["pending"] else "No"
    r.find("pending_retirement").text = "Yes" if rp["pending"] else "No"


def _render_remap(g: ET.Element, rr: dict | None, banks: int) -> None:
    r = g.find("remapped_rows")
    if rr is None:
        for c in list(r):
            r.remove(c)
        r.text = "N/A"
        return
    _set(r, "remapped_row_corr", rr["corr"])
    _set(r, "remapped_row_unc", rr["unc"])
    _set(r, "remapped_row_pending", "Yes" if rr["pending"] else "No")
    _set(r, "remapped_row_failure", "Yes" if rr["failure"] else "No")
    used = rr["corr"] + rr["unc"]
    hist = {"max": banks - min(used, banks), "high": min(used, banks), "partial": 0, "low": 0, "none": 0}
    hist.update(rr.get("histogram") or {})
    for k, v in hist.items():
        _set(r, f"row_remapper_histogram/row_remapper_histogram_{k}", f"{v} bank(s)")


def _downgrade(root: ET.Element, version: str) -> str:
    """Apply the element changes of older branches; returns the DTD name."""
    b = branch(version)
    if b >= 580:
        return "nvsmi_device_v13.dtd"
    for g in root.findall("gpu"):
        e = g.find("ecc_errors")
        for k in ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory"):
            _remove(e, k)
        if b < 570:
            _remove(g, "gpu_recovery_action")
            _remove(e, "aggregate_uncorrectable_sram_sources")
            for scope in ("volatile", "aggregate"):
                blk = e.find(scope)
                _remove(blk, "sram_threshold_exceeded")
                par, sec = blk.find("sram_uncorrectable_parity"), blk.find("sram_uncorrectable_secded")
                total = sum(int(x.text) for x in (par, sec) if x.text.isdigit())
                par.tag, par.text = "sram_uncorrectable", str(total)
                blk.remove(sec)
        if b < 535:
            cer = g.find("clocks_event_reasons")
            cer.tag = "clocks_throttle_reasons"
            for c in cer:
                c.tag = c.tag.replace("clocks_event_reason_", "clocks_throttle_reason_")
            _remove(g, "clocks_event_reasons_counters")
    return "nvsmi_device_v12.dtd" if b >= 525 else "nvsmi_device_v11.dtd"


def render_smi_xml(gpus: list[ET.Element], version: str, cuda: str) -> str:
    root = ET.Element("nvidia_smi_log")
    tpl = _template()
    root.text = tpl.text
    for tag in ("timestamp", "driver_version", "cuda_version", "attached_gpus"):
        el = copy.deepcopy(tpl.find(tag))
        root.append(el)
    root.find("driver_version").text = version
    root.find("cuda_version").text = cuda
    root.find("attached_gpus").text = str(len(gpus))
    for i, g in enumerate(gpus):
        g.tail = "\n\n" if i == len(gpus) - 1 else "\n\t"
        root.append(g)
    dtd = _downgrade(root, version)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "{dtd}">\n{body}\n'
