"""nodegate NVML probe: read GPU facts through NVML (nvidia-ml-py's ``pynvml``), print ONE JSON
document on stdout, exit 0.

Self-contained: Python 3.6+ standard library plus ``pynvml``; no f-strings, no dataclasses.
Read-only: every call is an NVML *Get*/*Query*; nothing here changes GPU state, and nothing
is written on the node (run it with ``python3 -B -``: no bytecode cache for pynvml either).

Schema: docs/nvml.md ("schema": "nodegate.nvml", "version": 1). Each leaf value is the value,
``{"unsupported": true}`` (NVML_ERROR_NOT_SUPPORTED) or ``{"error": "<NVML error name>"}``
(optionally with "message"). A failed nvmlInit() gives ``{"init_error": name, "message": ...}``
at top level and no "gpus". pynvml not importable gives ``{"init_error": "PYNVML_MISSING"}``.

NVML reference (R580): https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html
"""

import ctypes
import json
import os
import platform
import sys

SCHEMA = "nodegate.nvml"
VERSION = 1

try:
    import pynvml as N
except Exception as _e:  # ImportError, or a broken install raising anything at import
    N = None
    _IMPORT_ERROR = "%s: %s" % (type(_e).__name__, _e)

# Marker for a pynvml function or constant this nvidia-ml-py version does not have.
MISSING = "PYNVML_FUNCTION_MISSING"


def _code_name(code):
    """NVML_ERROR_* constant name of an nvmlReturn_t code."""
    for k in dir(N):
        if k.startswith("NVML_ERROR_") and getattr(N, k) == code:
            return k
    return "NVML_ERROR_CODE_%s" % code


def _err_name(exc):
    """NVML_ERROR_* name of an NVMLError (pynvml maps codes to subclasses with ``.value``);
    None for any other exception."""
    code = getattr(exc, "value", None)
    if isinstance(code, int) and N is not None and isinstance(exc, getattr(N, "NVMLError", ())):
        return _code_name(code)
    return None


def _plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def call(fn_name, *args, **kw):
    """Call pynvml.<fn_name>; return value, {"unsupported": true} or {"error": name}.

    ``post`` (keyword) converts a successful result (e.g. a ctypes struct) to JSON values.
    """
    post = kw.get("post")
    fn = getattr(N, fn_name, None)
    if fn is None:
        return {"error": MISSING, "message": fn_name}
    try:
        v = _plain(fn(*args))
        return post(v) if post else v
    except Exception as e:
        name = _err_name(e)
        if name == "NVML_ERROR_NOT_SUPPORTED":
            return {"unsupported": True}
        if name:
            return {"error": name}
        return {"error": "EXCEPTION", "message": ("%s: %s" % (type(e).__name__, e))[:300]}


def is_value(v):
    return not (isinstance(v, dict) and ("unsupported" in v or "error" in v) and len(v) <= 2
                and set(v) <= {"unsupported", "error", "message"})


def first_ok(*names_args):
    """First call (name, args) that is not PYNVML_FUNCTION_MISSING / FUNCTION_NOT_FOUND."""
    r = None
    for name, args in names_args:
        r = call(name, *args)
        if is_value(r) or r.get("error") not in (MISSING, "NVML_ERROR_FUNCTION_NOT_FOUND"):
            return r
    return r


def const(name):
    return getattr(N, name, None)


def read_file(path, cap=4096):
    try:
        with open(path, "rb") as fh:
            return fh.read(cap).decode("utf-8", "replace").strip()
    except (IOError, OSError):
        return None


def loaded_library():
    """Path of the libnvidia-ml.so mapped into this process (its name carries the userspace
    driver version, e.g. libnvidia-ml.so.580.159.04), or None."""
    maps = read_file("/proc/self/maps", cap=4 * 1024 * 1024) or ""
    for line in maps.splitlines():
        p = line.split(None, 5)[-1] if len(line.split(None, 5)) == 6 else ""
        if "libnvidia-ml.so" in p:
            return os.path.realpath(p)
    return None


def library_facts(doc):
    lib = loaded_library()
    doc["library_path"] = lib
    ver = None
    if lib and ".so." in lib:
        ver = lib.rsplit(".so.", 1)[1]
    doc["library_version"] = ver if ver and ver[0].isdigit() and ver != "1" else None
    doc["kernel_module_version"] = read_file("/sys/module/nvidia/version")


# ---------------------------------------------------------------- per-GPU sections

def pci(h):
    # nvmlPciInfo_t: busId "00000000:00:06.0", pciDeviceId = (device << 16) | vendor.
    def post(p):
        return {"bus_id": _plain(p.busId), "device_id": int(p.pciDeviceId),
                "subsystem_id": int(p.pciSubSystemId)}
    return call("nvmlDeviceGetPciInfo_v3", h, post=post) if hasattr(N, "nvmlDeviceGetPciInfo_v3") \
        else call("nvmlDeviceGetPciInfo", h, post=post)


def pcie(h):
    # Curr*/Max* are "possible with this device and system" (min of GPU and slot);
    # GpuMax is the GPU's own capability (nvidia-smi "Device Max").
    return {
        "current_gen": call("nvmlDeviceGetCurrPcieLinkGeneration", h),
        "max_gen": call("nvmlDeviceGetMaxPcieLinkGeneration", h),
        "gpu_max_gen": call("nvmlDeviceGetGpuMaxPcieLinkGeneration", h),
        "current_width": call("nvmlDeviceGetCurrPcieLinkWidth", h),
        "max_width": call("nvmlDeviceGetMaxPcieLinkWidth", h),
    }


def clocks_event_reasons(h):
    # nvmlDeviceGetCurrentClocksEventReasons (535+); the *ThrottleReasons names are the
    # deprecated pre-535 spelling of the same bitmask (nvmlClocksEventReason* constants).
    return {
        "current": first_ok(("nvmlDeviceGetCurrentClocksEventReasons", (h,)),
                            ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,))),
        "supported": first_ok(("nvmlDeviceGetSupportedClocksEventReasons", (h,)),
                              ("nvmlDeviceGetSupportedClocksThrottleReasons", (h,))),
    }


def pair(fn_name, h, names):
    return call(fn_name, h, post=lambda v: dict(zip(names, [int(x) for x in v])))


def ecc_counters(h):
    # nvmlDeviceGetTotalEccErrors: all locations; nvmlDeviceGetMemoryErrorCounter per location
    # (NVML_MEMORY_LOCATION_DRAM == DEVICE_MEMORY == 2, SRAM == 7, nvml.h R535+).
    out = {}
    etypes = (("correctable", const("NVML_MEMORY_ERROR_TYPE_CORRECTED")),
              ("uncorrectable", const("NVML_MEMORY_ERROR_TYPE_UNCORRECTED")))
    for scope, ctype_name in (("volatile", "NVML_VOLATILE_ECC"), ("aggregate", "NVML_AGGREGATE_ECC")):
        ct = const(ctype_name)
        d = {}
        for kind, et in etypes:
            d[kind + "_total"] = call("nvmlDeviceGetTotalEccErrors", h, et, ct)
            for loc in ("DRAM", "SRAM"):
                ln = const("NVML_MEMORY_LOCATION_" + loc)
                if ln is None and loc == "DRAM":
                    ln = const("NVML_MEMORY_LOCATION_DEVICE_MEMORY")
                key = "%s_%s" % (loc.lower(), kind)
                d[key] = {"error": MISSING} if ln is None else \
                    call("nvmlDeviceGetMemoryErrorCounter", h, et, ct, ln)
        out[scope] = d
    return out


def sram_ecc_status(h):
    # nvmlDeviceGetSramEccErrorStatus (R570+): parity/SEC-DED split, sources, threshold flag.
    cls = const("c_nvmlEccSramErrorStatus_v1_t")
    if cls is None:
        return {"error": MISSING, "message": "c_nvmlEccSramErrorStatus_v1_t"}
    st = cls()

    def post(_):
        return {"volatile_correctable": st.volatileCor, "volatile_uncorrectable_parity": st.volatileUncParity,
                "volatile_uncorrectable_secded": st.volatileUncSecDed, "aggregate_correctable": st.aggregateCor,
                "aggregate_uncorrectable_parity": st.aggregateUncParity,
                "aggregate_uncorrectable_secded": st.aggregateUncSecDed,
                "aggregate_uncorrectable_sources": {
                    "sram_l2": st.aggregateUncBucketL2, "sram_sm": st.aggregateUncBucketSm,
                    "sram_microcontroller": st.aggregateUncBucketMcu, "sram_pcie": st.aggregateUncBucketPcie,
                    "sram_other": st.aggregateUncBucketOther},
                "threshold_exceeded": st.bThresholdExceeded}
    return call("nvmlDeviceGetSramEccErrorStatus", h, ctypes.byref(st), post=post)


def remapped_rows(h):
    # nvmlDeviceGetRemappedRows -> (corrRows, uncRows, isPending, failureOccurred), Ampere+.
    return call("nvmlDeviceGetRemappedRows", h, post=lambda v: dict(zip(
        ("correctable", "uncorrectable", "pending", "failure"), [int(x) for x in v])))


def row_remapper_histogram(h):
    # nvmlRowRemapperHistogramValues_t: banks with max/high/partial/low/none spare rows left.
    return call("nvmlDeviceGetRowRemapperHistogram", h, post=lambda v: dict(
        (k, int(getattr(v, k))) for k in ("max", "high", "partial", "low", "none")))


def retired_pages(h):
    # nvmlDeviceGetRetiredPages(cause) lists page addresses; we keep the count.
    out = {}
    for key, cause in (("multiple_single_bit", "NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS"),
                       ("double_bit", "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR")):
        c = const(cause)
        out[key] = {"error": MISSING} if c is None else \
            call("nvmlDeviceGetRetiredPages", h, c, post=lambda v: len(v))
    out["pending"] = call("nvmlDeviceGetRetiredPagesPendingStatus", h, post=int)
    return out


def gsp(h):
    return {"mode": pair("nvmlDeviceGetGspFirmwareMode", h, ("enabled", "default")),
            "version": call("nvmlDeviceGetGspFirmwareVersion", h)}


def field_value(h, const_name, member):
    # nvmlDeviceGetFieldValues: the call succeeds even when one field fails; each
    # nvmlFieldValue_t carries its own nvmlReturn.
    fid = const(const_name)
    if fid is None:
        return {"error": MISSING, "message": const_name}

    def post(vals):
        fv = vals[0]
        if fv.nvmlReturn != 0:
            name = _code_name(fv.nvmlReturn)
            return {"unsupported": True} if name == "NVML_ERROR_NOT_SUPPORTED" else {"error": name}
        return int(getattr(fv.value, member))
    return call("nvmlDeviceGetFieldValues", h, [fid], post=post)


def repair(h):
    # nvmlDeviceGetRepairStatus (R575+): [bChannelRepairPending, bTpcRepairPending].
    return pair("nvmlDeviceGetRepairStatus", h, ("channel_repair_pending", "tpc_repair_pending"))


def fabric(h):
    # nvmlDeviceGetGpuFabricInfo (R525+, Hopper and later): nvmlGpuFabricInfo_t.state
    # (NVML_GPU_FABRIC_STATE_NOT_SUPPORTED 0, NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3) and .status
    # (the nvmlReturn_t of the GPU's registration with the fabric).
    cls = const("c_nvmlGpuFabricInfo_t")
    if cls is None:
        return {"error": MISSING, "message": "c_nvmlGpuFabricInfo_t"}
    st = cls()

    def post(_):
        return {"state": int(st.state), "status": int(st.status)}
    return call("nvmlDeviceGetGpuFabricInfo", h, ctypes.byref(st), post=post)


def nvlinks(h):
    # Per link: nvmlDeviceGetNvLinkState (NVML_FEATURE_ENABLED = active) and
    # nvmlDeviceGetNvLinkErrorCounter (NVML_NVLINK_ERROR_DL_REPLAY/RECOVERY/CRC_FLIT/CRC_DATA); the
    # per-link speed from field NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON (MB/s). Links are probed up to
    # NVML_NVLINK_MAX_LINKS; the first link that is NotSupported/InvalidArgument ends the list (a GPU
    # has fewer links than the maximum); link 0 NotSupported = no NVLink (PCIe board, VM, MIG mode).
    speed = field_value(h, "NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON", "uiVal")
    counters = (("replay", "NVML_NVLINK_ERROR_DL_REPLAY"), ("recovery", "NVML_NVLINK_ERROR_DL_RECOVERY"),
                ("crc_flit", "NVML_NVLINK_ERROR_DL_CRC_FLIT"), ("crc_data", "NVML_NVLINK_ERROR_DL_CRC_DATA"))
    links = []
    for k in range(int(const("NVML_NVLINK_MAX_LINKS") or 18)):
        st = call("nvmlDeviceGetNvLinkState", h, k)
        if isinstance(st, dict) and (st.get("unsupported") or st.get("error") in (
                "NVML_ERROR_INVALID_ARGUMENT", MISSING)):
            if k == 0:
                return {"links": [], "first": st, "speed_mbps": speed}
            break
        errs = {}
        for name, cname in counters:
            c = const(cname)
            errs[name] = {"error": MISSING, "message": cname} if c is None else \
                call("nvmlDeviceGetNvLinkErrorCounter", h, k, c)
        links.append({"link": k, "state": st, "errors": errs})
    return {"links": links, "speed_mbps": speed}


def gpu(i):
    g = {"index": i}
    try:
        h = N.nvmlDeviceGetHandleByIndex(i)
    except Exception as e:
        g["handle_error"] = _err_name(e) or ("EXCEPTION: %s" % e)[:300]
        return g
    g["pci"] = pci(h)
    for key, fn in (("name", "nvmlDeviceGetName"), ("serial", "nvmlDeviceGetSerial"),
                    ("uuid", "nvmlDeviceGetUUID"), ("vbios_version", "nvmlDeviceGetVbiosVersion"),
                    ("board_part_number", "nvmlDeviceGetBoardPartNumber"),
                    ("minor_number", "nvmlDeviceGetMinorNumber"),
                    ("architecture", "nvmlDeviceGetArchitecture"),
                    ("persistence_mode", "nvmlDeviceGetPersistenceMode"),
                    ("pstate", "nvmlDeviceGetPerformanceState")):
        g[key] = call(fn, h)
    g["pcie"] = pcie(h)
    g["clocks_event_reasons"] = clocks_event_reasons(h)
    g["ecc_mode"] = pair("nvmlDeviceGetEccMode", h, ("current", "pending"))
    g["ecc"] = ecc_counters(h)
    g["sram_ecc_status"] = sram_ecc_status(h)
    g["repair_status"] = repair(h)
    g["unrepairable_memory"] = call("nvmlDeviceGetUnrepairableMemoryFlag_v1", h)
    g["remapped_rows"] = remapped_rows(h)
    g["row_remapper_histogram"] = row_remapper_histogram(h)
    g["retired_pages"] = retired_pages(h)
    g["gsp_firmware"] = gsp(h)
    g["recovery_action"] = field_value(h, "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", "uiVal")
    g["mig_mode"] = pair("nvmlDeviceGetMigMode", h, ("current", "pending"))
    g["temperature_c"] = call("nvmlDeviceGetTemperature", h, const("NVML_TEMPERATURE_GPU"))
    # Power, mW: instant (field 186, what nvidia-smi 570+ prints as instant_power_draw), and
    # nvmlDeviceGetPowerUsage (1 s average on Ampere+ except GA100, instant on older GPUs).
    g["power_instant_mw"] = field_value(h, "NVML_FI_DEV_POWER_INSTANT", "uiVal")
    g["power_usage_mw"] = call("nvmlDeviceGetPowerUsage", h)
    # issue 19: configuration, PCIe replays, fabric, NVLink
    g["power_limit_mw"] = call("nvmlDeviceGetEnforcedPowerLimit", h)
    g["power_limit_default_mw"] = call("nvmlDeviceGetPowerManagementDefaultLimit", h)
    g["inforom_image"] = call("nvmlDeviceGetInforomImageVersion", h)
    g["compute_mode"] = call("nvmlDeviceGetComputeMode", h)
    g["pcie_replay_counter"] = call("nvmlDeviceGetPcieReplayCounter", h)
    g["fabric"] = fabric(h)
    g["nvlink"] = nvlinks(h)
    return g


def collect():
    doc = {"schema": SCHEMA, "version": VERSION, "python": platform.python_version()}
    if N is None:
        doc.update({"init_error": "PYNVML_MISSING", "message": _IMPORT_ERROR})
        return doc
    doc["pynvml_version"] = _pynvml_version()
    try:
        N.nvmlInit()
    except Exception as e:
        # DRIVER_NOT_LOADED, LIBRARY_NOT_FOUND, LIB_RM_VERSION_MISMATCH ("Driver/library
        # version mismatch"), NO_PERMISSION, ...: the controller maps them (docs/nvml.md).
        doc["init_error"] = _err_name(e) or "EXCEPTION"
        doc["message"] = ("%s: %s" % (type(e).__name__, e))[:500]
        library_facts(doc)
        return doc
    try:
        library_facts(doc)
        doc["system"] = {
            "driver_version": call("nvmlSystemGetDriverVersion"),
            "nvml_version": call("nvmlSystemGetNVMLVersion"),
            "cuda_driver_version": first_ok(("nvmlSystemGetCudaDriverVersion_v2", ()),
                                            ("nvmlSystemGetCudaDriverVersion", ())),
        }
        doc["device_count"] = call("nvmlDeviceGetCount")
        n = doc["device_count"] if isinstance(doc["device_count"], int) else 0
        doc["gpus"] = [gpu(i) for i in range(min(n, 64))]
    finally:
        try:
            N.nvmlShutdown()
        except Exception:
            pass
    return doc


def _pynvml_version():
    try:
        from importlib.metadata import version  # Python 3.8+
        return version("nvidia-ml-py")
    except Exception:
        return getattr(N, "__version__", None)


def main():
    try:
        doc = collect()
    except Exception as e:  # never a traceback instead of JSON: the controller needs a shape
        doc = {"schema": SCHEMA, "version": VERSION, "init_error": "SCRIPT_EXCEPTION",
               "message": ("%s: %s" % (type(e).__name__, e))[:500]}
    sys.stdout.write(json.dumps(doc, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
