"""The NVML document (``nvml.json``, written by ``probe_nvml.py``): loading, init status and leaves. Pure.

Schema: docs/nvml.md. This module reads the document and its leaf values (value, ``NA`` for
``{"unsupported": true}``, None for ``{"error": ...}`` or absent); nodegate.nvml.mapping turns a
GPU's leaves into GpuFacts and nodegate.nvml.fabric its configuration and NVLink leaves. Both
import this module and not each other (issue 40: it was a cycle, mapping <-> fabric).

Errors raised: ``ParseError`` for anything that is not this schema (not JSON, wrong types,
unknown schema/version, over ``MAX_JSON_CHARS``); ``NvmlUnavailable`` (a NodegateError, not a
ParseError) for a recorded init error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import NodegateError, ParseError
from ..facts import NA
from ..parsers._limits import check_gpu_count

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
