"""Static data the fleet builder renders from: GPU models and driver branches.

Values come from real captures and public fixtures: the H200 row from
../shared/captures/h200-vm-580.159.04 (smi_qx.out), H100 from corpus 001/050 (HGX H100 bus ids
19/3b/4c/5d/9b/bb/cb/db), V100 from corpus 040. PCI device ids are NVIDIA's (pci.ids).
"""

from __future__ import annotations

#: model key -> facts used to render nvidia-smi XML, /proc/driver/nvidia and sysfs.
GPU_MODELS: dict[str, dict] = {
    "h200": {
        "product_name": "NVIDIA H200", "architecture": "Hopper", "device_id": 0x2335,
        "subsystem": "18BF10DE", "pcie_gen": 5, "pcie_width": 16, "memory_mib": 143771,
        "reserved_mib": 616, "vbios": "96.00.A5.00.1A", "board_part": "692-2G520-0282-000",
        "gpu_part": "2335-895-A1", "serial_prefix": "16500000", "gsp": True,
        "row_remap": True, "retired_pages": False, "remap_banks": 3072, "power_limit": "700.00 W",
        "inforom": "G520.0282.02.02", "nvlink_links": 18, "nvlink_gbps": "26.562", "nvswitch_device": 0x22A3,
        "nvswitches": 4, "fabric": True,
    },
    "h100-sxm": {
        "product_name": "NVIDIA H100 80GB HBM3", "architecture": "Hopper", "device_id": 0x2330,
        "subsystem": "16C110DE", "pcie_gen": 5, "pcie_width": 16, "memory_mib": 81559,
        "reserved_mib": 328, "vbios": "96.00.74.00.0D", "board_part": "692-2G520-0200-000",
        "gpu_part": "2330-885-A1", "serial_prefix": "13200000", "gsp": True,
        "row_remap": True, "retired_pages": False, "remap_banks": 2560, "power_limit": "700.00 W",
        "inforom": "G520.0200.00.05", "nvlink_links": 18, "nvlink_gbps": "26.562", "nvswitch_device": 0x22A3,
        "nvswitches": 4, "fabric": True,
    },
    # issue 39.7: a B200 in the field's formats: device 2901 and the subsystem DCGM lists for it
    # (NVIDIA/DCGM diag-skus.yaml.in "B200 DevId 1999"), 183359 MiB (nvidia-smi's B200 180GB), 1000 W,
    # 18 NVLink5 links printed 53.125 GB/s (corpus 108 on B300, the same NVLink5); on HGX B200 the
    # NVLink switch chips are not host PCI functions (skus.yaml 2901): no NVSwitch function here
    "b200": {
        "product_name": "NVIDIA B200", "architecture": "Blackwell", "device_id": 0x2901,
        "subsystem": "199910DE", "pcie_gen": 5, "pcie_width": 16, "memory_mib": 183359,
        "reserved_mib": 628, "vbios": "97.00.4B.00.0C", "board_part": "692-2G525-0200-000",
        "gpu_part": "2901-886-A1", "serial_prefix": "17400000", "gsp": True,
        "row_remap": True, "retired_pages": False, "remap_banks": 4608, "power_limit": "1000.00 W",
        "inforom": "G525.0200.00.05", "nvlink_links": 18, "nvlink_gbps": "53.125", "nvswitch_device": None,
        "nvswitches": 0, "fabric": True,
    },
    # issue 39.7: a GH200 (Grace Hopper Superchip) in the field's formats: device 2342 and the 97871 MiB
    # nvidia-smi shows for the GH200 480GB's 96 GB HBM3, 900 W (DCGM diag-skus 2342 target_power), GPU
    # attached by NVLink-C2C at 00000009:01:00.0; no NVLink peer or NVSwitch on a single-superchip node
    "gh200": {
        "product_name": "NVIDIA GH200 480GB", "architecture": "Hopper", "device_id": 0x2342,
        "subsystem": "16EB10DE", "pcie_gen": 5, "pcie_width": 16, "memory_mib": 97871,
        "reserved_mib": 452, "vbios": "96.00.7E.00.01", "board_part": "699-2G530-0206-000",
        "gpu_part": "2342-895-A1", "serial_prefix": "16540000", "gsp": True,
        "row_remap": True, "retired_pages": False, "remap_banks": 3072, "power_limit": "900.00 W",
        "inforom": "G530.0206.00.02", "nvlink_links": 0, "nvlink_gbps": "26.562", "nvswitch_device": None,
        "nvswitches": 0, "fabric": False,
    },
    "v100-sxm2": {
        "product_name": "Tesla V100-SXM2-32GB", "architecture": "Volta", "device_id": 0x1DB5,
        "subsystem": "124910DE", "pcie_gen": 3, "pcie_width": 16, "memory_mib": 32768,
        "reserved_mib": 0, "vbios": "88.00.98.00.01", "board_part": "900-2G503-0430-000",
        "gpu_part": "1DB5-890-A1", "serial_prefix": "03231180", "gsp": False,
        "row_remap": False, "retired_pages": True, "remap_banks": 0, "power_limit": "300.00 W",
        "inforom": "G503.0203.00.04", "nvlink_links": 6, "nvlink_gbps": "25.781", "nvswitch_device": None,
        "nvswitches": 0, "fabric": False,
    },
}
# NVLink/NVSwitch/fabric: nvlink_* as `nvidia-smi nvlink -s` prints them (corpus 106/108, DGX-1 V100
# outputs), NVSwitch functions on the 8-GPU HGX board (corpus 110: four 10de:22a3 on HGX H100),
# fabric: the GPU reports a fabric state (Hopper and later). InfoROM images are plausible strings
# of each model's form (the H200 one from the capture).

#: PCI bus numbers of the 8 GPUs on an HGX baseboard (corpus 050), and a 1-GPU VM (capture).
BUS_LAYOUTS: dict[str, list[int]] = {
    "hgx8": [0x19, 0x3B, 0x4C, 0x5D, 0x9B, 0xBB, 0xCB, 0xDB],
    "vm1": [],  # device 06 on bus 00: handled by ``vm: true`` in the profile
}

#: driver branch -> CUDA version nvidia-smi prints (CUDA toolkit release notes, Table 3).
CUDA_BY_BRANCH: dict[int, str] = {470: "11.4", 535: "12.2", 550: "12.4", 560: "12.6", 570: "12.8",
                                  575: "12.9", 580: "13.0"}

#: NVML clocks event reason bits (nvml.h nvmlClocksEventReason*): XML element suffix -> bit.
EVENT_BITS: dict[str, int] = {
    "gpu_idle": 0x1, "applications_clocks_setting": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal_slowdown": 0x20, "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80, "display_clocks_setting": 0x100,
}

#: sysfs link speed strings by PCIe generation (drivers/pci/pci-sysfs.c, pci_speed_string()).
SYSFS_SPEED: dict[int, str] = {1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe",
                               4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe", 6: "64.0 GT/s PCIe"}


def branch(version: str) -> int:
    """Driver branch (major number) of a version string such as ``535.161.08``."""
    return int(str(version).split(".", 1)[0])


def cuda_version(version: str) -> str:
    b = branch(version)
    known = [k for k in sorted(CUDA_BY_BRANCH) if k <= b]
    return CUDA_BY_BRANCH[known[-1]] if known else "11.0"
