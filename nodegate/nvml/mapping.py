"""NVML JSON (``nvml.json``, written by ``probe_nvml.py``) -> facts. Pure: no I/O.

Input schema: docs/nvml.md (``"schema": "nodegate.nvml"``, ``"version": 1``). Each leaf is the
value, ``{"unsupported": true}`` (NVML_ERROR_NOT_SUPPORTED) or ``{"error": "<NVML error
name>"}``. Mapping rules (one meaning everywhere, see nodegate/facts.py):

- value -> the fact in the unit its name says (mW -> W, pciDeviceId -> 4 hex digits, ...);
- unsupported -> ``NA``; error -> ``None`` and the error listed by ``nvml_field_errors``;
- a key the document does not carry -> ``None`` (an older probe or pynvml lacked the call).

A failed ``nvmlInit()`` is not GPU data: ``nvml_status()`` classifies it (``NvmlStatus.kind``),
and ``gpus_from_nvml_json`` raises ``NvmlUnavailable`` carrying that status.

Errors raised: ``ParseError`` for anything that is not this schema (not JSON, wrong types,
unknown schema/version, over ``MAX_JSON_CHARS``); ``NvmlUnavailable`` (a NodegateError, not a
ParseError) for a recorded init error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import NodegateError, ParseError
from ..parsers._limits import check_gpu_count
from ..facts import (CLOCKS_EVENT_BITS, NA, EccCounters, GpuFacts, PcieLink, RemappedRows,
                     RetiredPages, normalize_bus_id)

SCHEMA = "nodegate.nvml"
SUPPORTED_VERSIONS = (1,)

#: Largest document accepted, characters. One GPU is ~3 KB; 64 GPUs stay far below this.
MAX_JSON_CHARS = 4 * 1024 * 1024

#: nvmlDeviceArchitecture_t -> the name nvidia-smi prints as product_architecture
#: (nvml.h NVML_DEVICE_ARCH_*; "Ada Lovelace" as nvidia-smi -q prints it).
ARCHITECTURES = {2: "Kepler", 3: "Maxwell", 4: "Pascal", 5: "Volta", 6: "Turing", 7: "Ampere",
                 8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell", 13: "Rubin"}

#: NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values (nvmlDeviceGpuRecoveryAction_t) -> the words of
#: NVIDIA's "Error Recovery and Response Flags" page
#: (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html).
RECOVERY_ACTIONS = {0: "None", 1: "Reset", 2: "Reboot", 3: "Drain P2P", 4: "Drain and Reset"}

_PSTATE_UNKNOWN = 32  # NVML_PSTATE_UNKNOWN

# ------------------------------------------------------------------ init status

#: init_error name -> NvmlStatus.kind. Kinds match SmiError.kind where the meaning is the same.
INIT_ERROR_KINDS = {
    "NVML_ERROR_DRIVER_NOT_LOADED": "no_driver",
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": "driver_library_mismatch",
    "NVML_ERROR_LIBRARY_NOT_FOUND": "library_not_found",
    "NVML_ERROR_NO_PERMISSION": "no_permission",
    "PYNVML_MISSING": "pynvml_missing",
}

#: Kinds the driver-stack check FAILs on (checks.md "Driver stack consistency"); every GPU
#: check is ERROR naming the status instead of evaluating.
DRIVER_STACK_FAIL_KINDS = frozenset({"no_driver", "driver_library_mismatch", "library_not_found"})

_KIND_TEXT = {
    "no_driver": "NVML could not communicate with the NVIDIA driver (kernel module not loaded or "
                 "not bound to the GPU)",
    "driver_library_mismatch": "Driver/library version mismatch: userspace NVML and the loaded "
                               "kernel module differ (reboot or reload the modules)",
    "library_not_found": "libnvidia-ml.so.1 could not be loaded (userspace driver missing or not "
                         "on the library path)",
    "no_permission": "NVML refused access (permissions on /dev/nvidia*)",
    "pynvml_missing": "nvidia-ml-py (pynvml) is not installed for the node's python3",
    "other": "NVML could not be initialised",
}


@dataclass(frozen=True)
class NvmlStatus:
    """Outcome of ``nvmlInit()`` on the node.

    kind: ``ok``, ``no_driver`` (NVML_ERROR_DRIVER_NOT_LOADED), ``driver_library_mismatch``
    (NVML_ERROR_LIB_RM_VERSION_MISMATCH), ``library_not_found`` (NVML_ERROR_LIBRARY_NOT_FOUND),
    ``no_permission``, ``pynvml_missing`` (nvidia-ml-py absent: not a node fault, fall back to
    nvidia-smi), ``other``. ``error`` is the raw init_error name. ``library_version`` comes from
    the loaded ``libnvidia-ml.so.<version>`` and ``kernel_module_version`` from
    ``/sys/module/nvidia/version`` (both None when unknown): the two versions of a mismatch.
    """

    kind: str
    error: str | None = None
    message: str = ""
    library_version: str | None = None
    kernel_module_version: str | None = None

    @property
    def usable(self) -> bool:
        return self.kind == "ok"

    @property
    def fails_driver_stack(self) -> bool:
        """True when the driver-stack check must FAIL on this status (GPU checks ERROR)."""
        return self.kind in DRIVER_STACK_FAIL_KINDS

    def describe(self) -> str:
        """One line for a check message: what failed, the NVML error, both versions if known."""
        if self.kind == "ok":
            return "NVML initialised"
        s = f"{_KIND_TEXT.get(self.kind, _KIND_TEXT['other'])} [{self.error}]"
        vers = []
        if self.library_version:
            vers.append(f"NVML library {self.library_version}")
        if self.kernel_module_version:
            vers.append(f"kernel module {self.kernel_module_version}")
        return s + (f" ({', '.join(vers)})" if vers else "")


class NvmlUnavailable(NodegateError, ValueError):
    """``nvml.json`` records a failed ``nvmlInit()``; ``status`` says which (NvmlStatus).

    Also a ValueError so that a caller treating "not GPU data" as ValueError falls back to
    nvidia-smi; catch NvmlUnavailable itself to report ``status``."""

    def __init__(self, status: NvmlStatus):
        self.status = status
        super().__init__(status.describe())


@dataclass(frozen=True)
class NvmlSystem:
    """System-wide NVML values: ``nvmlSystemGetDriverVersion`` (e.g. "580.159.04"),
    ``nvmlSystemGetNVMLVersion`` ("13.580.159.04"), ``nvmlSystemGetCudaDriverVersion_v2``
    (13000 = CUDA 13.0), the loaded library's version and ``/sys/module/nvidia/version``.
    None when not carried or an error; NA when unsupported."""

    driver_version: Any = None
    nvml_version: Any = None
    cuda_driver_version: Any = None
    library_version: str | None = None
    kernel_module_version: str | None = None


# ------------------------------------------------------------------ document

def load_nvml_json(text: str | bytes) -> dict:
    """Decode and validate the top level of an ``nvml.json`` document.

    Raises ParseError: empty, over MAX_JSON_CHARS, not JSON, not an object, unknown schema or
    version, ``gpus`` not a list of objects, ``init_error`` not a string.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError("nvml.json: not text")
    if len(text) > MAX_JSON_CHARS:
        raise ParseError(f"nvml.json: {len(text)} characters exceeds the {MAX_JSON_CHARS} cap")
    if not text.strip():
        raise ParseError("nvml.json: empty output")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ParseError(f"nvml.json: not JSON ({str(e)[:120]})") from None
    if not isinstance(doc, dict):
        raise ParseError("nvml.json: top level is not an object")
    # PYNVML_MISSING may come from a minimal printer without schema/version: accept it.
    if doc.get("schema", SCHEMA) != SCHEMA:
        raise ParseError(f"nvml.json: unknown schema {str(doc.get('schema'))[:60]!r}")
    if "init_error" not in doc and doc.get("version") not in SUPPORTED_VERSIONS:
        raise ParseError(f"nvml.json: unsupported version {str(doc.get('version'))[:20]!r}")
    if "init_error" in doc:
        if not isinstance(doc["init_error"], str) or not doc["init_error"]:
            raise ParseError("nvml.json: init_error is not a string")
        return doc
    gpus = doc.get("gpus")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise ParseError("nvml.json: 'gpus' is not a list of objects")
    check_gpu_count(len(gpus), "nvml.json")
    return doc


def nvml_init_error(text: str | bytes) -> str | None:
    """The recorded ``nvmlInit()`` failure name (e.g. ``NVML_ERROR_DRIVER_NOT_LOADED``,
    ``NVML_ERROR_LIB_RM_VERSION_MISMATCH``, ``PYNVML_MISSING``), or None when init succeeded.
    Raises ParseError on a malformed document."""
    return load_nvml_json(text).get("init_error")


def nvml_status(text: str | bytes) -> NvmlStatus:
    """Classify the document's init outcome (see NvmlStatus). Raises ParseError."""
    doc = load_nvml_json(text)
    err = doc.get("init_error")
    lib = _opt_str(doc.get("library_version"))
    kmod = _opt_str(doc.get("kernel_module_version"))
    if err is None:
        return NvmlStatus("ok", None, "", lib, kmod)
    msg = doc.get("message")
    return NvmlStatus(INIT_ERROR_KINDS.get(err, "other"), err,
                      msg[:500] if isinstance(msg, str) else "", lib, kmod)


def nvml_system(text: str | bytes) -> NvmlSystem:
    """System values of a successful run. Raises NvmlUnavailable / ParseError."""
    doc = _ok_doc(text)
    sysd = doc.get("system") if isinstance(doc.get("system"), dict) else {}
    return NvmlSystem(
        driver_version=_val(sysd, "driver_version", str),
        nvml_version=_val(sysd, "nvml_version", str),
        cuda_driver_version=_val(sysd, "cuda_driver_version", int),
        library_version=_opt_str(doc.get("library_version")),
        kernel_module_version=_opt_str(doc.get("kernel_module_version")),
    )


def gpus_from_nvml_json(text: str | bytes) -> list[GpuFacts]:
    """One GpuFacts (``source="nvml"``) per GPU, in NVML index order.

    A GPU whose handle could not be obtained (e.g. NVML_ERROR_GPU_IS_LOST) is a GpuFacts with
    only ``index`` set; ``nvml_field_errors`` names the error under ``"handle"``.
    Raises NvmlUnavailable (init failed), ParseError (malformed).
    """
    doc = _ok_doc(text)
    return [_gpu(g, pos) for pos, g in enumerate(doc["gpus"])]


def nvml_field_errors(text: str | bytes) -> dict[int, dict[str, str]]:
    """GPU index -> {field path: NVML error name} for every leaf recorded as an error
    (the facts carry None there). Raises NvmlUnavailable / ParseError."""
    doc = _ok_doc(text)
    out: dict[int, dict[str, str]] = {}
    for pos, g in enumerate(doc["gpus"]):
        errs: dict[str, str] = {}
        if isinstance(g.get("handle_error"), str):
            errs["handle"] = g["handle_error"]
        _collect_errors(g, "", errs)
        if errs:
            out[_index(g, pos)] = errs
    return out


def _ok_doc(text) -> dict:
    doc = load_nvml_json(text)
    if "init_error" in doc:
        raise NvmlUnavailable(nvml_status(text))
    return doc


def _collect_errors(node: Any, path: str, errs: dict[str, str]) -> None:
    if isinstance(node, dict):
        if _is_marker(node):
            if "error" in node:
                errs[path] = str(node["error"])[:80]
            return
        for k, v in node.items():
            _collect_errors(v, f"{path}.{k}" if path else k, errs)


# ------------------------------------------------------------------ leaf values

def _is_marker(v: Any) -> bool:
    return (isinstance(v, dict) and bool(v) and set(v) <= {"unsupported", "error", "message"}
            and ("unsupported" in v or "error" in v))


def _val(d: Any, key: str, typ: type):
    """Leaf ``d[key]``: typed value, NA (unsupported), None (absent/error). ParseError on a
    value of the wrong type."""
    if not isinstance(d, dict) or key not in d:
        return None
    v = d[key]
    if _is_marker(v):
        return NA if v.get("unsupported") is True else None
    if v is None:
        return None
    if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise ParseError(f"nvml.json: {key} is not an integer: {str(v)[:40]!r}")
    if typ is str and not isinstance(v, str):
        raise ParseError(f"nvml.json: {key} is not a string: {str(v)[:40]!r}")
    if typ is dict and not isinstance(v, dict):
        raise ParseError(f"nvml.json: {key} is not an object")
    return v


def _opt_str(v: Any) -> str | None:
    return v.strip() or None if isinstance(v, str) else None


def _flag(v):
    """NVML enable state / 0-1 flag -> bool (NA and None pass through)."""
    if isinstance(v, int):
        return v != 0
    return v


def _sub(d: Any, key: str) -> dict | Any:
    """A compound value: the dict, or NA/None for a marker/absent key."""
    return _val(d, key, dict)


def _str_or_na(v):
    """Strings: empty means the driver had nothing to report (GSP off, no serial) -> NA."""
    if isinstance(v, str):
        return v.strip() or NA
    return v


# ------------------------------------------------------------------ one GPU

def _index(g: dict, pos: int) -> int:
    i = g.get("index", pos)
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise ParseError(f"nvml.json: gpu index is not a non-negative integer: {str(i)[:20]!r}")
    return i


def _gpu(g: dict, pos: int) -> GpuFacts:
    gf = GpuFacts(index=_index(g, pos), source="nvml")
    if "handle_error" in g:
        return gf
    pci = _sub(g, "pci")
    if isinstance(pci, dict):
        bus = _val(pci, "bus_id", str)
        gf.pci_bus_id = normalize_bus_id(bus) if isinstance(bus, str) and bus.strip() else None
        dev = _val(pci, "device_id", int)
        # nvmlPciInfo_t.pciDeviceId = (device id << 16) | vendor id, e.g. 0x233510DE -> "2335"
        gf.pci_device_id = f"{(dev >> 16) & 0xFFFF:04x}" if isinstance(dev, int) else None
    gf.name = _plain_str(_val(g, "name", str))
    gf.uuid = _plain_str(_val(g, "uuid", str))
    gf.serial = _str_or_na(_val(g, "serial", str))
    gf.vbios_version = _str_or_na(_val(g, "vbios_version", str))
    gf.board_part_number = _str_or_na(_val(g, "board_part_number", str))
    arch = _val(g, "architecture", int)
    gf.architecture = ARCHITECTURES.get(arch, "Unknown") if isinstance(arch, int) else None
    gf.persistence_mode = _flag(_val(g, "persistence_mode", int))
    ps = _val(g, "pstate", int)
    gf.pstate = (f"P{ps}" if 0 <= ps <= 15 else "Unknown") if isinstance(ps, int) else None
    gf.link = _link(g)
    _clocks(g, gf)
    ecc = _sub(g, "ecc_mode")
    gf.ecc_mode_current, gf.ecc_mode_pending = _pair(ecc, "current", "pending")
    _ecc(g, gf)
    _memory_health(g, gf)
    _gsp(g, gf)
    rec = _val(g, "recovery_action", int)
    gf.recovery_action = RECOVERY_ACTIONS.get(rec, f"Unknown ({rec})") if isinstance(rec, int) else rec
    gf.mig_mode_current, _ = _pair(_sub(g, "mig_mode"), "current", "pending")
    gf.temperature_c = _val(g, "temperature_c", int)
    gf.power_draw_w = _power(g)
    _, gf.mig_mode_pending = _pair(_sub(g, "mig_mode"), "current", "pending")
    fabric.config_fields(g, gf)
    return gf


def _plain_str(v):
    # name/uuid are ``str | None`` in GpuFacts: unsupported there carries no meaning
    return v.strip() or None if isinstance(v, str) else None


def _pair(d, a: str, b: str):
    if isinstance(d, dict):
        return _flag(_val(d, a, int)), _flag(_val(d, b, int))
    return d, d


def _link(g: dict) -> PcieLink:
    p = g.get("pcie")
    if not isinstance(p, dict):
        return PcieLink()
    # Max = nvmlDeviceGetMaxPcieLinkGeneration ("possible with this device and system");
    # Device Max = nvmlDeviceGetGpuMaxPcieLinkGeneration. NVML has no separate host maximum.
    return PcieLink(current_gen=_val(p, "current_gen", int), max_gen=_val(p, "max_gen", int),
                    device_max_gen=_val(p, "gpu_max_gen", int), host_max_gen=None,
                    current_width=_val(p, "current_width", int), max_width=_val(p, "max_width", int))


def _clocks(g: dict, gf: GpuFacts) -> None:
    """Bitmask (nvmlClocksEventReason* bits, facts.CLOCKS_EVENT_BITS) -> canonical names.
    A reason outside the supported mask is NA (the driver cannot report it)."""
    c = g.get("clocks_event_reasons")
    if not isinstance(c, dict):
        return
    cur = _val(c, "current", int)
    sup = _val(c, "supported", int)
    gf.clocks_event_reasons_mask = cur
    if cur is None:
        return
    for name, bit in CLOCKS_EVENT_BITS.items():
        if cur is NA or (isinstance(sup, int) and not sup & bit):
            gf.clocks_event_reasons[name] = NA
        else:
            gf.clocks_event_reasons[name] = bool(cur & bit)


def _ecc(g: dict, gf: GpuFacts) -> None:
    e = g.get("ecc")
    sram = _sub(g, "sram_ecc_status")
    for scope in ("volatile", "aggregate"):
        d = e.get(scope) if isinstance(e, dict) else None
        ec = EccCounters()
        if isinstance(d, dict):
            ec.correctable_total = _val(d, "correctable_total", int)
            ec.uncorrectable_total = _val(d, "uncorrectable_total", int)
            for key in ("sram_correctable", "sram_uncorrectable", "dram_correctable", "dram_uncorrectable"):
                if key in d:
                    ec.by_location[key] = _val(d, key, int)
        if isinstance(sram, dict):
            # nvmlEccSramErrorStatus_v1_t: the 570+ parity / SEC-DED split of SRAM uncorrectable
            for part in ("uncorrectable_parity", "uncorrectable_secded"):
                k = f"{scope}_{part}"
                if k in sram:
                    ec.by_location[f"sram_{part}"] = _val(sram, k, int)
        setattr(gf, f"ecc_{scope}", ec)
    if isinstance(sram, dict):
        gf.sram_threshold_exceeded = _flag(_val(sram, "threshold_exceeded", int))
        src = _sub(sram, "aggregate_uncorrectable_sources")
        if isinstance(src, dict):
            for k in src:
                gf.ecc_aggregate.by_location[f"aggregate_uncorrectable_sram_sources.{k}"] = _val(src, k, int)
    elif sram is NA:
        gf.sram_threshold_exceeded = NA


def _memory_health(g: dict, gf: GpuFacts) -> None:
    rep = _sub(g, "repair_status")
    gf.channel_repair_pending, gf.tpc_repair_pending = _pair(rep, "channel_repair_pending",
                                                             "tpc_repair_pending")
    gf.unrepairable_memory = _flag(_val(g, "unrepairable_memory", int))
    rr = _sub(g, "remapped_rows")
    if isinstance(rr, dict):
        r = RemappedRows(correctable=_val(rr, "correctable", int),
                         uncorrectable=_val(rr, "uncorrectable", int),
                         pending=_flag(_val(rr, "pending", int)),
                         failure=_flag(_val(rr, "failure", int)))
        hist = _sub(g, "row_remapper_histogram")
        if isinstance(hist, dict):
            r.histogram = {k: _val(hist, k, int) for k in ("max", "high", "partial", "low", "none")
                           if k in hist}
        elif hist is NA:
            r.histogram = {k: NA for k in ("max", "high", "partial", "low", "none")}
        gf.remapped_rows = r
    else:
        gf.remapped_rows = rr  # NA (pre-Ampere, MIG with instances) or None
    rp = g.get("retired_pages")
    if isinstance(rp, dict):
        gf.retired_pages = RetiredPages(sbe=_val(rp, "multiple_single_bit", int),
                                        dbe=_val(rp, "double_bit", int),
                                        pending=_flag(_val(rp, "pending", int)))


def _gsp(g: dict, gf: GpuFacts) -> None:
    gsp = g.get("gsp_firmware")
    if not isinstance(gsp, dict):
        return
    mode = _sub(gsp, "mode")
    ver = _str_or_na(_val(gsp, "version", str))
    # GSP off: nvidia-smi prints N/A for gsp_firmware_version; NVML returns an empty string
    if isinstance(mode, dict) and _val(mode, "enabled", int) == 0:
        ver = NA
    gf.gsp_firmware_version = ver


def _power(g: dict):
    """Watts. Instant power (NVML_FI_DEV_POWER_INSTANT, what nvidia-smi 570+ prints first),
    else nvmlDeviceGetPowerUsage (1 s average on Ampere+ except GA100)."""
    for key in ("power_instant_mw", "power_usage_mw"):
        v = _val(g, key, int)
        if isinstance(v, int):
            return v / 1000.0
        if v is NA and key == "power_usage_mw":
            return NA
    return None


from . import fabric  # noqa: E402  (uses the helpers above)
from .fabric import nvlinks_from_nvml_json  # noqa: E402,F401
