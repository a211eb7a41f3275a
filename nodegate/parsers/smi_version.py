"""Parser for ``nvidia-smi --version``.

Usage::

    nvidia-smi --version

Labels vary by branch (checks.md "Driver stack consistency"): ``DRIVER version`` (550-580),
later ``KMD version``; parse by label, split on the first ``:``.

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
}


def parse_smi_version(text: str | bytes) -> SmiVersion:
    """Empty input -> empty SmiVersion. ParseError when non-empty text has no known label."""
    text = V.check_text(text, cap=1024 * 1024, what="nvidia-smi --version")
    out = SmiVersion()
    seen = False
    for ln in text.splitlines():
        if ":" not in ln:
            continue
        label, val = ln.split(":", 1)
        attr = _LABELS.get(label.strip().lower())
        if attr and val.strip():
            setattr(out, attr, val.strip())
            seen = True
    if text.strip() and not seen:
        raise ParseError(f"nvidia-smi --version: no version labels in {text.strip()[:80]!r}")
    return out
