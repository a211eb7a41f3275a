"""Test helper: the H200 capture's ``nvml_dump.out`` (the capture script's own schema, see
nvml_dump.py.txt: ``{"ok": v}`` / ``{"err": "NVMLError_NotSupported", "msg": ...}`` per call)
converted to nodegate's ``nvml.json`` schema v1, so the mapping reads real NVML values.

Calls the capture script did not make (row remapper histogram, SRAM ECC status, repair
status, unrepairable memory, recovery action, instant power) are left out: not carried.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

CAPTURE = Path(__file__).resolve().parents[3] / "shared" / "captures" / "h200-vm-580.159.04"


def capture_text(name: str) -> str:
    return (CAPTURE / name).read_text()


def _err_name(cls_name: str) -> str:
    """``NVMLError_NotSupported`` -> ``NVML_ERROR_NOT_SUPPORTED`` (pynvml's class naming)."""
    if not cls_name.startswith("NVMLError_"):
        return "EXCEPTION"
    camel = cls_name[len("NVMLError_"):]
    return "NVML_ERROR_" + re.sub(r"(?<!^)(?=[A-Z])", "_", camel).upper()


def leaf(entry: dict):
    if "ok" in entry:
        return entry["ok"]
    name = _err_name(entry.get("err", ""))
    return {"unsupported": True} if name == "NVML_ERROR_NOT_SUPPORTED" else {"error": name}


def _named(entry: dict, names: tuple[str, ...]):
    v = leaf(entry)
    return dict(zip(names, v)) if isinstance(v, list) else v


def _device(d: dict, index: int) -> dict:
    g: dict = {"index": index}
    p = leaf(d["nvmlDeviceGetPciInfo_v3"])
    g["pci"] = ({"bus_id": p["busId"], "device_id": p["pciDeviceId"], "subsystem_id": p["pciSubSystemId"]}
                if "busId" in p else p)
    for key, fn in (("name", "Name"), ("serial", "Serial"), ("uuid", "UUID"),
                    ("vbios_version", "VbiosVersion"), ("board_part_number", "BoardPartNumber"),
                    ("minor_number", "MinorNumber"), ("architecture", "Architecture"),
                    ("persistence_mode", "PersistenceMode"), ("pstate", "PerformanceState"),
                    ("temperature_c", "Temperature"), ("power_usage_mw", "PowerUsage")):
        g[key] = leaf(d["nvmlDeviceGet" + fn])
    g["pcie"] = {"current_gen": leaf(d["nvmlDeviceGetCurrPcieLinkGeneration"]),
                 "max_gen": leaf(d["nvmlDeviceGetMaxPcieLinkGeneration"]),
                 "gpu_max_gen": leaf(d["nvmlDeviceGetGpuMaxPcieLinkGeneration"]),
                 "current_width": leaf(d["nvmlDeviceGetCurrPcieLinkWidth"]),
                 "max_width": leaf(d["nvmlDeviceGetMaxPcieLinkWidth"])}
    g["clocks_event_reasons"] = {"current": leaf(d["nvmlDeviceGetCurrentClocksEventReasons"]),
                                 "supported": leaf(d["nvmlDeviceGetSupportedClocksEventReasons"])}
    g["ecc_mode"] = _named(d["nvmlDeviceGetEccMode"], ("current", "pending"))
    g["ecc"] = {}
    for scope in ("volatile", "aggregate"):
        e = {}
        for kind, ck in (("correctable", "corrected"), ("uncorrectable", "uncorrected")):
            e[kind + "_total"] = leaf(d[f"TotalEccErrors.{ck}.{scope}"])
            for loc in ("DRAM", "SRAM"):
                e[f"{loc.lower()}_{kind}"] = leaf(d[f"MemoryErrorCounter.{ck}.{scope}.{loc}"])
        g["ecc"][scope] = e
    g["remapped_rows"] = _named(d["nvmlDeviceGetRemappedRows"],
                                ("correctable", "uncorrectable", "pending", "failure"))
    rp = {}
    for key, cause in (("multiple_single_bit", "MULTIPLE_SINGLE_BIT_ECC_ERRORS"),
                       ("double_bit", "DOUBLE_BIT_ECC_ERROR")):
        v = leaf(d["RetiredPages.NVML_PAGE_RETIREMENT_CAUSE_" + cause])
        rp[key] = len(v) if isinstance(v, list) else v
    rp["pending"] = leaf(d["nvmlDeviceGetRetiredPagesPendingStatus"])
    g["retired_pages"] = rp
    g["gsp_firmware"] = {"mode": _named(d["nvmlDeviceGetGspFirmwareMode"], ("enabled", "default")),
                         "version": leaf(d["nvmlDeviceGetGspFirmwareVersion"])}
    g["mig_mode"] = _named(d["nvmlDeviceGetMigMode"], ("current", "pending"))
    # issue 19 fields the capture script read (it did not read the default power limit or fabric info)
    for key, fn in (("power_limit_mw", "EnforcedPowerLimit"), ("inforom_image", "InforomImageVersion"),
                    ("compute_mode", "ComputeMode"), ("pcie_replay_counter", "PcieReplayCounter")):
        g[key] = leaf(d["nvmlDeviceGet" + fn])
    g["nvlink"] = {"links": [], "first": leaf(d["NvLinkState.0"])}
    return g


def dump_to_doc(dump: dict) -> dict:
    """Capture-script JSON -> nodegate nvml.json v1 document (dict)."""
    s = dump["system"]
    return {
        "schema": "nodegate.nvml", "version": 1, "python": "3.12", "pynvml_version": None,
        "library_path": None, "library_version": None, "kernel_module_version": None,
        "system": {"driver_version": leaf(s["nvmlSystemGetDriverVersion"]),
                   "nvml_version": leaf(s["nvmlSystemGetNVMLVersion"]),
                   "cuda_driver_version": leaf(s["nvmlSystemGetCudaDriverVersion_v2"])},
        "device_count": leaf(s["nvmlDeviceGetCount"]),
        "gpus": [_device(d, i) for i, d in enumerate(dump["devices"])],
    }


def capture_doc_text() -> str:
    return json.dumps(dump_to_doc(json.loads(capture_text("nvml_dump.out"))))
