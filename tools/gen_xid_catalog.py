"""Write nodegate/data/xid.yaml from NVIDIA's Xid catalog (issue 39.1).

The rows below are transcribed from "Analyzing Xid Errors with the Xid Catalog"
(https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, the catalog for Ampere and
newer GPUs, as published for drivers R565-R590): Xid, mnemonic, description, applies to
A100/H100/B100/GB200 (Y/N), the immediate and the investigatory resolution bucket, and the
first CUDA/driver release the catalog names for the Xid where it names one. The verdict is
derived from the immediate action here, once (``verdict_of``), and written into the data file
with the row; `python tools/gen_xid_catalog.py` rewrites it, and tests/checks/test_xid_catalog.py
checks the file is what this script writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "nodegate" / "data" / "xid.yaml"
URL = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"

U = ("Unused", "NNNN", "CONTACT_SUPPORT", "N/A; Unused", "")
# xid: (mnemonic, description, applies A100/H100/B100/GB200, immediate, investigatory, release)
ROWS: dict[int, tuple] = {
    1: ("ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD",) + U,
    2: ("ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD",) + U,
    3: ("ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD",) + U,
    4: ("ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY",) + U,
    5: ("ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW",) + U,
    6: ("ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR",) + U,
    7: ("ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR",) + U,
    8: ("ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    9: ("ROBUST_CHANNEL_GR_ERROR_INSTANCE",) + U,
    10: ("ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP",) + U,
    11: ("ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream", "YYYY", "RESTART_APP", "CHECK_APP/CUDA", ""),
    12: ("ROBUST_CHANNEL_GR_ERROR_SW_METHOD",) + U,
    13: ("ROBUST_CHANNEL_GR_EXCEPTION", "Graphics Engine Exception", "YYYY", "RESTART_APP", "WORKFLOW_XID_13", ""),
    14: ("ROBUST_CHANNEL_FAKE_ERROR", "Fake or injected error from userspace", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    15: ("ROBUST_CHANNEL_SCANLINE_TIMEOUT",) + U,
    16: ("ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT",) + U,
    17: ("ROBUST_CHANNEL_PARAMETER_ERROR",) + U,
    18: ("ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR",) + U,
    19: ("ROBUST_CHANNEL_DISP_MISSED_NOTIFIER",) + U,
    20: ("ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD",) + U,
    21: ("ROBUST_CHANNEL_ME_ERROR_SW_METHOD",) + U,
    22: ("ROBUST_CHANNEL_VP_ERROR_SW_METHOD",) + U,
    23: ("ROBUST_CHANNEL_RC_LOGGING_ENABLED",) + U,
    24: ("ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT",) + U,
    25: ("ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream", "YYYY", "RESTART_APP", "CHECK_APP/CUDA", ""),
    26: ("ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT",) + U,
    27: ("ROBUST_CHANNEL_VP_ERROR",) + U,
    28: ("ROBUST_CHANNEL_VP2_ERROR",) + U,
    29: ("ROBUST_CHANNEL_BSP_ERROR",) + U,
    30: ("ROBUST_CHANNEL_BAD_ADDR_ACCESS",) + U,
    31: ("ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", "YYYY", "RESTART_APP", "WORKFLOW_XID_31", ""),
    32: ("ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", "YYYY", "RESTART_APP", "CHECK_APP/CUDA", ""),
    33: ("ROBUST_CHANNEL_SEC_ERROR",) + U,
    34: ("ROBUST_CHANNEL_MSVLD_ERROR",) + U,
    35: ("ROBUST_CHANNEL_MSPDEC_ERROR",) + U,
    36: ("ROBUST_CHANNEL_MSPPP_ERROR",) + U,
    37: ("ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", "YYYY", "IGNORE", "CHECK_APP/CUDA", ""),
    38: ("ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    39: ("ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    40: ("ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    41: ("ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    42: ("ROBUST_CHANNEL_VIC_ERROR",) + U,
    43: ("ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    44: ("ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    45: ("ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "Preemptive cleanup, due to previous errors", "YYYY", "WORKFLOW_XID_45",
         "Solo: RESTART_FM; not solo: IGNORE (follow the other Xid)", ""),
    46: ("ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", "YYYY", "RESET_GPU", "CONTACT_SUPPORT", ""),
    47: ("ROBUST_CHANNEL_NVENC0_ERROR",) + U,
    48: ("ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", "YYYY", "WORKFLOW_XID_48", "WORKFLOW_XID_48", "CUDA 12.7; R565"),
    49: ("SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY",) + U,
    50: ("SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR",) + U,
    51: ("SILENT_RUNNING_STRESS_TEST_FAILURE",) + U,
    52: ("SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE",) + U,
    53: ("SILENT_RUNNING_TEMP_REDUCED_CLOCKING",) + U,
    54: ("SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board", "YYYN",
         "CHECK_MECHANICALS", "CONTACT_SUPPORT", ""),
    55: ("SILENT_RUNNING_TEMPERATURE_READ_ERROR",) + U,
    56: ("DISPLAY_CHANNEL_EXCEPTION",) + U,
    57: ("FB_LINK_TRAINING_FAILURE_ERROR",) + U,
    58: ("FB_MEMORY_ERROR",) + U,
    59: ("PMU_ERROR",) + U,
    60: ("ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", "YYYY", "RESTART_APP", "INVESTIGATE_SW", ""),
    61: ("PMU_BREAKPOINT",) + U,
    62: ("PMU_HALT_ERROR", "Internal micro-controller halt", "YYYY", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.7; R565"),
    63: ("INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", "YYYY", "IGNORE", "IGNORE", "CUDA 12.7; R565"),
    64: ("INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", "YYYY", "RESET_GPU", "CONTACT_SUPPORT",
         "CUDA 12.7; R565"),
    65: ("ROBUST_CHANNEL_NVENC1_ERROR",) + U,
    66: ("ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", "YYYY", "IGNORE", "INVESTIGATE_SW", ""),
    67: ("ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    68: ("ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    69: ("ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", "YYYY", "RESTART_APP", "CHECK_APP/CUDA", ""),
    70: ("ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    71: ("ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    72: ("ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    73: ("ROBUST_CHANNEL_NVENC2_ERROR",) + U,
    74: ("NVLINK_ERROR", "NVLink Error", "YYNN", "WORKFLOW_NVLINK_ERR", "CONTACT_SUPPORT", "CUDA 12.7; R565"),
    75: ("ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    76: ("ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    77: ("ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    78: ("VGPU_START_ERROR", "vGPU Start Error", "YYYY", "UPDATE_SWFW", "UPDATE_SWFW", ""),
    79: ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus", "YYYY", "RESTART_BM", "CONTACT_SUPPORT",
         "CUDA 12.7; R565"),
    80: ("PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", "YYNN", "RESTART_APP", "CHECK_APP/CUDA", ""),
    81: ("ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR",) + U,
    82: ("ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    83: ("ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    84: ("ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    85: ("ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    86: ("ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    87: ("NVTELEMETRY_DRIVER_REPORT",) + U,
    88: ("ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    89: ("ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", "YYYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    90: ("LTC_ERROR",) + U,
    91: ("RESERVED_XID",) + U,
    92: ("EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "YYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    93: ("INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit", "YNNN", "IGNORE",
         "CONTACT_SUPPORT", ""),
    94: ("ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", "YYYY", "RESTART_APP", "IGNORE (sympathetic)",
         "CUDA 12.7; R565"),
    95: ("ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", "YYYY", "RESET_GPU", "IGNORE (sympathetic)",
         "CUDA 12.7; R565"),
    **{x: (f"ROBUST_CHANNEL_NVDEC{x - 91}_ERROR", f"NVDEC{x - 91} Error", "NYYY", "RESTART_APP", "CONTACT_SUPPORT", "")
       for x in (96, 97, 98)},
    **{x: (f"ROBUST_CHANNEL_NVJPG{x - 98}_ERROR", f"NVJPG{x - 98} Error", "NYYY", "RESTART_APP", "CONTACT_SUPPORT", "")
       for x in range(99, 106)},
    106: ("SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", "YYYY", "IGNORE", "IGNORE", ""),
    107: ("SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", "YYYY", "IGNORE", "IGNORE", ""),
    108: ("NVLINK_REMOTE_TRANSLATION_ERROR", "Unused", "YYYY", "IGNORE", "XID_137_FLOW", ""),
    109: ("ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", "YYYY", "RESET_GPU", "CONTACT_SUPPORT",
          "CUDA 12.7; R570"),
    110: ("SEC_FAULT_ERROR", "Security Fault Error", "NYYY", "RESET_GPU", "INVESTIGATE_SW", "CUDA 12.7; R565"),
    111: ("BUNDLE_ERROR_EVENT",) + U,
    112: ("DISP_SUPERVISOR_ERROR",) + U,
    113: ("DP_LT_FAILURE",) + U,
    114: ("HEAD_RG_UNDERFLOW",) + U,
    115: ("CORE_CHANNEL_REGS",) + U,
    116: ("WINDOW_CHANNEL_REGS",) + U,
    117: ("CURSOR_CHANNEL_REGS",) + U,
    118: ("HEAD_REGS",) + U,
    119: ("GSP_RPC_TIMEOUT", "GSP RPC Timeout", "YYYY", "RESET_GPU", "INVESTIGATE_SW", ""),
    120: ("GSP_ERROR", "GSP Error", "YYYY", "RESET_GPU", "INVESTIGATE_SW", "CUDA 12.7; R565"),
    121: ("C2C_ERROR", "C2C Error (corrected errors on the C2C NVLink to a Grace CPU)", "NNNY", "IGNORE", "CONTACT_SUPPORT",
          ""),
    122: ("SPI_PMU_RPC_READ_FAIL",) + U,
    123: ("SPI_PMU_RPC_WRITE_FAIL",) + U,
    124: ("SPI_PMU_RPC_ERASE_FAIL",) + U,
    125: ("INFOROM_FS_ERROR",) + U,
    **{x: (f"ROBUST_CHANNEL_CE{x - 116}_ERROR", f"CE{x - 116}: Unknown Error", "NNYY", "RESTART_APP", "CONTACT_SUPPORT", "")
       for x in range(126, 136)},
    136: ("ALI_TRAINING_FAIL", "Link Training Failed", "NYNN", "RESET_GPU", "INVESTIGATE_LINK_SI", "CUDA 12.7; R565"),
    137: ("NVLINK_PRIV_ERR", "NVLink Privilege Error", "YYYY", "IGNORE", "XID_137_FLOW", ""),
    138: ("ROBUST_CHANNEL_DLA_ERROR",) + U,
    139: ("ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", "NNYY", "RESTART_APP", "CONTACT_SUPPORT", ""),
    140: ("UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", "YYYY", "RESET_GPU", "CONTACT_SUPPORT", ""),
    141: ("ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", "NYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    142: ("ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", "NNNY", "CONTACT_SUPPORT", "", ""),
    143: ("GPU_INIT_ERROR", "GPU Initialization Error", "NYYY", "RESET_GPU", "CONTACT_SUPPORT", "CUDA 12.9; R575"),
    144: ("NVLINK_SAW_ERROR", "NVLink5: SAW Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    145: ("NVLINK_RLW_ERROR", "NVLink5: RLW Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    146: ("NVLINK_TLW_ERROR", "NVLink5: TLW Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    147: ("NVLINK_TREX_ERROR", "NVLink5: TREX Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    148: ("NVLINK_NVLPW_CTRL_ERROR", "NVLink5: NVLPW_CTRL Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR",
          "CUDA 12.7; R565"),
    149: ("NVLINK_NETIR_ERROR", "NVLink5 network interface (NETIR) Error", "NNYY", "WORKFLOW_NVLINK5_ERR",
          "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    150: ("NVLINK_MSE_ERROR", "NVLink5: MSE Error", "NNYY", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", "CUDA 12.7; R565"),
    151: ("ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", "NYYY", "RESTART_VM", "CONTACT_SUPPORT", ""),
    152: ("ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", "NNNN", "IGNORE", "CONTACT_SUPPORT", ""),
    153: ("ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", "NNNN", "IGNORE", "CONTACT_SUPPORT", ""),
    154: ("GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", "YYYY", "XID_154",
          "N/A: informational, regarding another Xid", ""),
    155: ("NVLINK_SW_DEFINED_ERROR", "NVLink: SW Defined Error (intentional link down)", "NNYY", "RESET_GPU",
          "INVESTIGATE_SW_USER", "CUDA 12.7; R565"),
    156: ("RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", "NYYY", "RESET_GPU", "IGNORE", "CUDA 12.7; R565"),
    157: ("RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", "NYYY", "IGNORE", "CONTACT_SUPPORT", ""),
    158: ("GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", "YYYY", "RESET_GPU", "CONTACT_SUPPORT", ""),
    159: ("ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error (C2C link-connected GPU)", "NNYY", "CHECK_UVM",
          "SYMPATHETIC_REPORT_SOLO", ""),
    160: ("CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", "NNYY", "IGNORE", "INVESTIGATE_SW", "CUDA 12.9; R575"),
    161: ("CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", "NNYY", "IGNORE", "INVESTIGATE_SW", "CUDA 12.9; R575"),
    # 162-172: the catalog gives no resolution bucket, only text; the bucket here is read from that text
    162: ("PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", "NNYY", "IGNORE", "", ""),
    163: ("PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged (no GPU reset required)", "NNYY",
          "IGNORE", "", ""),
    164: ("PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached (monitor power swings)", "NNYY",
          "IGNORE", "", ""),
    165: ("PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted (replace the GPU where power "
          "smoothing is required)", "NNYY", "CONTACT_SUPPORT", "", ""),
    166: ("NVLINK_SECURE_CRYPTO_ERR", "CC traffic before the link was configured for encryption (confidential "
          "computing mode only)", "NNYY", "IGNORE", "", ""),
    167: ("PCIE_FATAL_TIMEOUT", "PCIe fatal timeout", "NYYY", "CONTACT_SUPPORT", "", ""),
    168: ("REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region): enable ECC or reboot",
          "YYYY", "RESTART_BM", "", ""),
    169: ("SEC2_HALT_ERROR", "Internal micro-controller halt (SEC2)", "NYYY", "RESET_GPU", "", ""),
    170: ("NVLINK_SECURE_OTHER", "Interrupt seen in CC mode (confidential computing mode only)", "NNYY", "IGNORE", "", ""),
    171: ("UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (details of an Xid 48)", "YYYY", "WORKFLOW_XID_48", "", ""),
    172: ("UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (details of an Xid 48)", "YYYY", "WORKFLOW_XID_48", "", ""),
}

#: immediate actions that leave the node serviceable as it is: the application restarts, or nothing
INFORMATIONAL = {"IGNORE", "RESTART_APP"}


def verdict_of(immediate: str) -> tuple[bool, str]:
    """(fails the acceptance check?, severity) from the catalog's immediate action. Any action
    on the GPU or the node (RESET_GPU, RESTART_BM, RESTART_VM, CHECK_MECHANICALS, UPDATE_SWFW,
    CHECK_UVM, CONTACT_SUPPORT, the WORKFLOW_* flows) must be done before the node takes work:
    FAIL. XID_154 states its action in its own text (nodegate.checks.kernel_log)."""
    if immediate in INFORMATIONAL:
        return False, "minor" if immediate == "RESTART_APP" else "info"
    if immediate == "WORKFLOW_XID_45":
        # "not solo: IGNORE (follow the other Xid)": a cleanup after another Xid or an aborted
        # application; the kernel-log check follows the Xid it names ("caused by previous Xid N")
        return False, "info"
    if immediate == "XID_154":
        return True, "major"
    if immediate in ("RESTART_BM", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR", "CHECK_MECHANICALS"):
        return True, "critical"
    return True, "major"


def render() -> str:
    head = f"""# NVIDIA Xid catalog (Ampere and newer), generated by tools/gen_xid_catalog.py: do not edit by hand.
# Source: {URL}
# (resolution buckets: RESTART_APP, IGNORE, RESET_GPU, RESTART_BM, RESTART_VM, CHECK_MECHANICALS,
# UPDATE_SWFW, CHECK_UVM, CONTACT_SUPPORT, and the WORKFLOW_* flows the catalog describes). Covers the
# drivers R565 to R590 (`release`: the first CUDA/driver release the catalog names for the Xid).
# fail: the kernel-log checks FAIL on the Xid (issue 39.1: derived from the immediate action; this
# supersedes the short list of ../shared/spec/checks.md); IGNORE and RESTART_APP are informational.
# An Xid that is not here is ERROR "Xid N is not in the catalog (driver <version>): review", never PASS.
# kernel_log.xid_fail in the spec replaces the fail set.
source: "{URL}"
xids:
"""
    out = [head]
    for x in sorted(ROWS):
        mn, desc, applies, imm, inv, rel = ROWS[x]
        fail, sev = verdict_of(imm)
        ap = ",".join(p for p, f in zip(("A100", "H100", "B100", "GB200"), applies) if f == "Y") or "none (unused)"

        def q(s):
            return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'
        out.append(f"  {x}: {{name: {q(desc)}, mnemonic: {mn}, severity: {sev}, fail: {str(fail).lower()}, "
                   f"action: {imm}, investigate: {q(inv)}, applies: {q(ap)}"
                   + (f", release: {q(rel)}" if rel else "") + "}\n")
    return "".join(out)


def main(argv: list[str]) -> int:
    text = render()
    if len(argv) > 1 and argv[1] == "--check":
        return 0 if OUT.read_text() == text else 1
    OUT.write_text(text)
    print(f"wrote {OUT} ({len(ROWS)} Xids)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
