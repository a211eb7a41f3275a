"""Parser for ``nvidia-smi --version``.

Usage::

    nvidia-smi --version

Labels vary by branch (checks.md "Driver stack consistency"): ``DRIVER version`` (550-580),
later ``KMD version``; parse by label, split on the first ``:``. 610 prints both, the old one as a
notice (``DRIVER version : Deprecated, see "KMD version" instead``, ``CUDA version : Deprecated, see
"CUDA UMD version" instead``): the new labels decide, a notice is no version.

Schema::

    SmiVersion(smi_version, nvml_version, driver_version, cuda_version)   # str | None each

Example::

    NVIDIA-SMI version  : 580.159.04
    NVML version        : 580.159
    DRIVER version      : 580.159.04
    CUDA Version        : 13.0
    -> SmiVersion("580.159.04", "580.159", "580.159.04", "13.0")
"""

from __future__ import annotations

from ..errors import ParseError
from ..facts import SmiVersion
from . import _values as V

_LABELS = {
    "nvidia-smi version": "smi_version",
    "nvml version": "nvml_version",
    "driver version": "driver_version",
    "kmd version": "driver_version",
    "cuda version": "cuda_version",
    "cuda umd version": "cuda_version",
}
#: the 610 labels that replace a deprecated one (its value then reads 'Deprecated, see "KMD version"
#: instead'): they decide whatever their order (utkuozdemir/nvidia_gpu_exporter's 610.57.04 capture)
_NEW = {"kmd version", "cuda umd version"}


def parse_smi_version(text: str | bytes) -> SmiVersion:
    """Empty input -> empty SmiVersion. ParseError when non-empty text has no known label."""
    text = V.check_text(text, cap=1024 * 1024, what="nvidia-smi --version")
    out = SmiVersion()
    seen = False
    decided: set[str] = set()     # attributes a 610 label (KMD / CUDA UMD version) has set
    for ln in text.splitlines():
        if ":" not in ln:
            continue
        label, val = ln.split(":", 1)
        key = label.strip().lower()
        attr = _LABELS.get(key)
        if not attr or not val.strip():
            continue
        seen = True
        v = V.version_label(val) if attr in ("driver_version", "cuda_version") else val.strip()
        if v is None or (attr in decided and key not in _NEW):
            continue          # 'Deprecated, see "KMD version" instead', or an old label after the new one
        if attr in decided and getattr(out, attr) != v:
            raise ParseError(f"nvidia-smi --version: {label.strip()} {v} contradicts {getattr(out, attr)}")
        setattr(out, attr, v)
        if key in _NEW:
            decided.add(attr)
    if text.strip() and not seen:
        raise ParseError(f"nvidia-smi --version: no version labels in {text.strip()[:80]!r}")
    return out
