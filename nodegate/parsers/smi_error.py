"""Parser for nvidia-smi error output (instead of GPU data).

Usage: stdout + stderr of any ``nvidia-smi`` call that failed, e.g. ``nvidia-smi -q -x``
exit 9/18, or ``nvidia-smi`` printing a device-handle error for one GPU.

Recognised (NVIDIA driver release notes / nvidia-smi messages seen in the field):

- ``Failed to initialize NVML: Driver/library version mismatch`` (+ newer branches print
  ``NVML library version: 535.154``) -> kind ``driver_library_mismatch``
- ``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver`` -> ``no_driver``
- ``No devices were found`` (also "No devices found") -> ``no_devices``
- ``Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error`` (with or
  without a space after "GPU") -> ``device_handle`` with ``bus_id`` and ``reason``
- any other ``Failed to initialize NVML: <reason>`` -> ``other``

Schema::

    parse_smi_error(text) -> SmiError | None      # None: no known error text in the output

Example::

    Failed to initialize NVML: Driver/library version mismatch
    NVML library version: 535.154
    -> SmiError(kind="driver_library_mismatch", nvml_library_version="535.154", message=...)
"""

from __future__ import annotations

import re

from ..facts import SmiError
from . import _values as V

_MISMATCH = re.compile(r"Failed to initialize NVML: Driver/library version mismatch")
_NVML_LIB = re.compile(r"NVML library version:\s*([0-9][0-9.]*[0-9])")
_NO_DRIVER = re.compile(r"couldn't communicate with the NVIDIA driver")
_NO_DEV = re.compile(r"^No devices (?:were )?found", re.M)
_HANDLE = re.compile(r"Unable to determine the device handle for GPU\s*"
                     r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:\s*(.*)")
_NVML_FAIL = re.compile(r"Failed to initialize NVML: *(.*)")


def parse_smi_error(text: str | bytes) -> SmiError | None:
    """The first known nvidia-smi error in ``text``, or None. Never raises for text input."""
    text = V.check_text(text, cap=8 * 1024 * 1024, what="nvidia-smi output")
    if _MISMATCH.search(text):
        m = _NVML_LIB.search(text)
        return SmiError("driver_library_mismatch", _line(text, _MISMATCH),
                        nvml_library_version=m.group(1) if m else None)
    if _NO_DRIVER.search(text):
        return SmiError("no_driver", _line(text, _NO_DRIVER))
    m = _HANDLE.search(text)
    if m:
        return SmiError("device_handle", m.group(0).strip(), bus_id=V.bus_id(m.group(1)),
                        reason=m.group(2).strip() or None)
    if _NO_DEV.search(text):
        return SmiError("no_devices", _line(text, _NO_DEV))
    m = _NVML_FAIL.search(text)
    if m:
        return SmiError("other", m.group(0).strip(), reason=m.group(1).strip() or None)
    return None


def _line(text: str, rx: re.Pattern) -> str:
    for ln in text.splitlines():
        if rx.search(ln):
            return ln.strip()
    return ""
