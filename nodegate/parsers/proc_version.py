"""Parser for the loaded NVIDIA module banner.

Usage::

    cat /proc/driver/nvidia/version            # parse_proc_version
    dmesg | grep 'NVRM: loading'               # parse_banner_line on one log line

Forms (checks.md "Kernel module flavor"; spacing varies, build fields vary or are cut off):

- ``NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)``
  -> flavor ``open``
- ``NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.06  Wed Jun 26 06:46:07 UTC 2024``
  -> flavor ``proprietary``
- the kernel log line ``NVRM: loading NVIDIA UNIX ... Kernel Module  <version> ...``

Schema::

    DriverBanner(flavor: "open"|"proprietary"|None, version, arch, raw)

Example::

    NVRM version:  NVIDIA UNIX Open Kernel Module for x86_64  515.57  Release Build ...
    -> DriverBanner(flavor="open", version="515.57", arch="x86_64")
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import DriverBanner
from . import _values as V

_BANNER = re.compile(
    r"NVIDIA UNIX\s+(?:(?P<open>Open Kernel Module for\s+(?P<arch_o>\S+))|(?P<arch_p>\S+)\s+Kernel Module)"
    r"\s+(?P<ver>\d+(?:\.\d+)+)")


def parse_banner_line(line: str) -> DriverBanner | None:
    """DriverBanner from any line holding the banner, else None."""
    m = _BANNER.search(line)
    if not m:
        return None
    return DriverBanner(flavor="open" if m.group("open") else "proprietary", version=m.group("ver"),
                        arch=m.group("arch_o") or m.group("arch_p"), raw=line.strip())


def parse_proc_version(text: str | bytes) -> DriverBanner:
    """First banner line of /proc/driver/nvidia/version. Empty input -> empty DriverBanner.
    ParseError when non-empty text has no banner."""
    text = V.check_text(text, cap=1024 * 1024, what="/proc/driver/nvidia/version")
    for ln in text.splitlines():
        if "NVRM" in ln or "NVIDIA UNIX" in ln:
            b = parse_banner_line(ln)
            if b:
                return b
    if text.strip():
        raise ParseError(f"/proc/driver/nvidia/version: no NVRM banner in {text.strip()[:80]!r}")
    return DriverBanner()
