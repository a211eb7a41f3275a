"""A fake ``pynvml`` (nvidia-ml-py) for tests: the functions and constants probe_nvml.py uses,
returning the H200 values of ../shared/captures/h200-vm-580.159.04 (nvml_dump.out; the values
the capture script did not read are taken from smi_qx.out of the same moment).

Scenario from the environment variable ``FAKE_NVML_SCENARIO``:
  h200 (default) | driver_not_loaded | library_not_found | mismatch | no_permission |
  geforce (ECC, remapping, GSP, ... NOT_SUPPORTED) | gpu_lost (handle of GPU 1 of 2 lost) |
  old (pre-535 pynvml: no *ClocksEventReasons, no SRAM status, no repair/unrepairable,
  FUNCTION_NOT_FOUND for GpuMaxPcieLinkGeneration) | hw_slowdown (reasons 0x88) |
  nvlink (an HGX H100-like GPU: 18 NVLinks active at 26562 MB/s, link 3 with 5 CRC flit errors,
  fabric Completed/Success)
"""

import os
from ctypes import Structure, c_uint, c_ulonglong

_SCEN = os.environ.get("FAKE_NVML_SCENARIO", "h200")

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_UNKNOWN = 999

NVML_TEMPERATURE_GPU = 0
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_MEMORY_LOCATION_DEVICE_MEMORY = 2
NVML_MEMORY_LOCATION_DRAM = 2
NVML_MEMORY_LOCATION_SRAM = 7
NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
NVML_FI_DEV_POWER_INSTANT = 186
NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230
NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON = 90
NVML_NVLINK_MAX_LINKS = 18
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3


class NVMLError(Exception):
    def __init__(self, value):
        Exception.__init__(self, value)
        self.value = value

    def __str__(self):
        return {9: "Driver Not Loaded", 12: "NVML Shared Library Not Found", 3: "Not Supported",
                18: "RM has detected an NVML/RM version mismatch.", 4: "Insufficient Permissions",
                15: "GPU is lost", 13: "Function Not Found"}.get(self.value, "Unknown Error")


def _raise(code):
    raise NVMLError(code)


class c_nvmlEccSramErrorStatus_v1_t(Structure):
    _fields_ = [("version", c_uint), ("aggregateUncParity", c_ulonglong), ("aggregateUncSecDed", c_ulonglong),
                ("aggregateCor", c_ulonglong), ("volatileUncParity", c_ulonglong),
                ("volatileUncSecDed", c_ulonglong), ("volatileCor", c_ulonglong),
                ("aggregateUncBucketL2", c_ulonglong), ("aggregateUncBucketSm", c_ulonglong),
                ("aggregateUncBucketPcie", c_ulonglong), ("aggregateUncBucketMcu", c_ulonglong),
                ("aggregateUncBucketOther", c_ulonglong), ("bThresholdExceeded", c_uint)]


class c_nvmlGpuFabricInfo_t(Structure):
    _fields_ = [("clusterUuid", c_uint * 4), ("status", c_uint), ("cliqueId", c_uint), ("state", c_uint)]


class _PciInfo(Structure):
    _fields_ = [("domain", c_uint), ("bus", c_uint), ("device", c_uint),
                ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint)]
    busId = b"00000000:00:06.0"  # bytes, like pynvml's c_char array field


class _Hist(Structure):
    _fields_ = [("max", c_uint), ("high", c_uint), ("partial", c_uint), ("low", c_uint), ("none", c_uint)]


class _Val(object):
    def __init__(self, ui):
        self.uiVal = ui


class _Field(object):
    def __init__(self, ret, ui=0):
        self.nvmlReturn = ret
        self.value = _Val(ui)


_INIT_FAIL = {"driver_not_loaded": NVML_ERROR_DRIVER_NOT_LOADED, "library_not_found": NVML_ERROR_LIBRARY_NOT_FOUND,
              "mismatch": NVML_ERROR_LIB_RM_VERSION_MISMATCH, "no_permission": NVML_ERROR_NO_PERMISSION}
_GEFORCE = _SCEN == "geforce"


def _ns_if(cond):
    if cond:
        _raise(NVML_ERROR_NOT_SUPPORTED)


def nvmlInit():
    if _SCEN in _INIT_FAIL:
        _raise(_INIT_FAIL[_SCEN])


def nvmlShutdown():
    return None


def nvmlSystemGetDriverVersion():
    return "580.159.04"


def nvmlSystemGetNVMLVersion():
    return "13.580.159.04"


def nvmlSystemGetCudaDriverVersion():
    return 13000


def nvmlSystemGetCudaDriverVersion_v2():
    return 13000


def nvmlDeviceGetCount():
    return 2 if _SCEN == "gpu_lost" else 1


def nvmlDeviceGetHandleByIndex(i):
    if _SCEN == "gpu_lost" and i == 1:
        _raise(NVML_ERROR_GPU_IS_LOST)
    return ("handle", i)


def nvmlDeviceGetPciInfo_v3(h):
    p = _PciInfo()
    p.pciDeviceId, p.pciSubSystemId, p.device = 590680286, 415174878, 6
    return p


def nvmlDeviceGetPciInfo(h):
    return nvmlDeviceGetPciInfo_v3(h)


def nvmlDeviceGetName(h):
    return "NVIDIA H200"


def nvmlDeviceGetUUID(h):
    return "GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a10"


def nvmlDeviceGetSerial(h):
    _ns_if(_GEFORCE)
    return "1650000000001"


def nvmlDeviceGetBoardPartNumber(h):
    return b"692-2G520-0282-000"


def nvmlDeviceGetVbiosVersion(h):
    return "96.00.A5.00.1A"


def nvmlDeviceGetMinorNumber(h):
    return 0


def nvmlDeviceGetArchitecture(h):
    return 9


def nvmlDeviceGetPersistenceMode(h):
    return 1


def nvmlDeviceGetPerformanceState(h):
    return 0


def nvmlDeviceGetCurrPcieLinkGeneration(h):
    return 5


def nvmlDeviceGetMaxPcieLinkGeneration(h):
    return 5


def nvmlDeviceGetGpuMaxPcieLinkGeneration(h):
    if _SCEN == "old":
        _raise(NVML_ERROR_FUNCTION_NOT_FOUND)
    return 5


def nvmlDeviceGetCurrPcieLinkWidth(h):
    return 16


def nvmlDeviceGetMaxPcieLinkWidth(h):
    return 16


def nvmlDeviceGetCurrentClocksEventReasons(h):
    return 0x88 if _SCEN == "hw_slowdown" else 1


def nvmlDeviceGetCurrentClocksThrottleReasons(h):
    return 1


def nvmlDeviceGetSupportedClocksEventReasons(h):
    return 511


def nvmlDeviceGetSupportedClocksThrottleReasons(h):
    return 511


def nvmlDeviceGetEccMode(h):
    _ns_if(_GEFORCE)
    return [1, 1]


def nvmlDeviceGetTotalEccErrors(h, et, ct):
    _ns_if(_GEFORCE)
    return 0


def nvmlDeviceGetMemoryErrorCounter(h, et, ct, loc):
    _ns_if(_GEFORCE or loc not in (2, 7))
    return 0


def nvmlDeviceGetSramEccErrorStatus(h, status_ref):
    _ns_if(_GEFORCE)
    st = status_ref._obj  # ctypes.byref(...) argument, as the real library fills it
    st.aggregateUncParity = st.aggregateUncSecDed = st.aggregateCor = 0
    st.bThresholdExceeded = 0
    return NVML_SUCCESS


def nvmlDeviceGetRepairStatus(h):
    _ns_if(_GEFORCE)
    return [0, 0]


def nvmlDeviceGetUnrepairableMemoryFlag_v1(h):
    _ns_if(_GEFORCE)
    return 0


def nvmlDeviceGetRemappedRows(h):
    _ns_if(_GEFORCE)
    return (0, 0, 0, 0)


def nvmlDeviceGetRowRemapperHistogram(h):
    _ns_if(_GEFORCE)
    v = _Hist()
    v.max = 3072
    return v


def nvmlDeviceGetRetiredPages(h, cause):
    _raise(NVML_ERROR_NOT_SUPPORTED)


def nvmlDeviceGetRetiredPagesPendingStatus(h):
    _raise(NVML_ERROR_NOT_SUPPORTED)


def nvmlDeviceGetGspFirmwareMode(h):
    _ns_if(_GEFORCE)
    return [1, 1]


def nvmlDeviceGetGspFirmwareVersion(h):
    _ns_if(_GEFORCE)
    return b"580.159.04"


def nvmlDeviceGetFieldValues(h, ids):
    out = []
    for fid in ids:
        if fid == NVML_FI_DEV_POWER_INSTANT:
            out.append(_Field(0, 77070))
        elif fid == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION:
            out.append(_Field(NVML_ERROR_NOT_SUPPORTED) if _GEFORCE else _Field(0, 0))
        elif fid == NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON:
            out.append(_Field(0, 26562) if _SCEN == "nvlink" else _Field(NVML_ERROR_NOT_SUPPORTED))
        else:
            out.append(_Field(NVML_ERROR_INVALID_ARGUMENT))
    return out


def nvmlDeviceGetMigMode(h):
    _ns_if(_GEFORCE)
    return [0, 0]


def nvmlDeviceGetTemperature(h, sensor):
    return 35


def nvmlDeviceGetPowerUsage(h):
    return 76621


# issue 19: configuration, replays, fabric, NVLink (capture values: EnforcedPowerLimit 700000,
# InforomImageVersion G520.0282.02.02, ComputeMode 0, PcieReplayCounter 1, NvLinkState NotSupported;
# default power limit and fabric state from smi_qx.out: 700.00 W, N/A)
def nvmlDeviceGetEnforcedPowerLimit(h):
    return 700000


def nvmlDeviceGetPowerManagementDefaultLimit(h):
    return 700000


def nvmlDeviceGetInforomImageVersion(h):
    _ns_if(_GEFORCE)
    return "G520.0282.02.02"


def nvmlDeviceGetComputeMode(h):
    return 0


def nvmlDeviceGetPcieReplayCounter(h):
    return 1


def nvmlDeviceGetGpuFabricInfo(h, ref):
    st = ref._obj
    st.state, st.status = (3, 0) if _SCEN == "nvlink" else (0, 0)
    return None


def nvmlDeviceGetNvLinkState(h, link):
    if _SCEN != "nvlink":
        _raise(NVML_ERROR_NOT_SUPPORTED)
    if link >= 18:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    return 1


def nvmlDeviceGetNvLinkErrorCounter(h, link, counter):
    return 5 if (link, counter) == (3, NVML_NVLINK_ERROR_DL_CRC_FLIT) else 0


if _SCEN == "old":
    # nvidia-ml-py before 535 / 570: these names do not exist
    for _n in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetSupportedClocksEventReasons",
               "c_nvmlEccSramErrorStatus_v1_t", "nvmlDeviceGetSramEccErrorStatus",
               "nvmlDeviceGetRepairStatus", "nvmlDeviceGetUnrepairableMemoryFlag_v1",
               "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION"):
        del globals()[_n]
