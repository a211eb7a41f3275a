"""Shared value conversion for every parser (one place, one meaning).

nvidia-smi reports "unsupported" in several spellings: ``N/A``, ``[N/A]``, ``[Not Supported]``,
``Not Supported``, ``Requested functionality has been deprecated``, ``Unknown Error`` (and the bracketed
form in ``--query-gpu`` CSV). They all become ``facts.NA`` (checks.md "Outcomes": unsupported is not
zero and not a parse error). Units (``16x``, ``3072 bank(s)``, ``35 C``, ``84.51 W``,
``[MiB]``) are stripped here; booleans come from the driver's words (Enabled/Disabled,
Yes/No, Active/Not Active).

Every function takes a ``str`` (or None) and either returns a value or raises ``ParseError``.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import NA, _Unsupported, normalize_bus_id
from ._limits import MAX_DIGITS, number

#: Lower-cased spellings of "the driver does not support this value".
_NA_WORDS = frozenset({
    "n/a", "[n/a]", "not supported", "[not supported]", "[unknown error]",
    # the same NVML_ERROR_UNKNOWN as -q/-q -x print it, unbracketed: a V100 VM on 550.127.05 prints
    # "Host Max : Unknown Error" under PCIe Generation (thamada/gls gls/V100_x8_smi.py); as NA only the
    # field is unknown, not the GPU's whole link
    "unknown error",
    "requested functionality has been deprecated",
    "[requested functionality has been deprecated]",
    "not available", "[not available]", "not found",
})

_TRUE_WORDS = frozenset({"enabled", "yes", "active", "on", "true", "supported"})
_FALSE_WORDS = frozenset({"disabled", "no", "not active", "off", "false", "none"})

_INT_RE = re.compile(r"^[+-]?\d+")
_FLOAT_RE = re.compile(r"^[+-]?\d+(?:\.\d+)?")


def clean(raw: str | None) -> str | None:
    """Strip whitespace; None stays None."""
    return None if raw is None else raw.strip()


def is_na(raw: str | None) -> bool:
    """True for every unsupported spelling (see module docstring)."""
    return raw is not None and raw.strip().lower() in _NA_WORDS


def text_value(raw: str | None):
    """String value: None when absent, NA when unsupported, else the stripped text."""
    if raw is None:
        return None
    s = raw.strip()
    return NA if is_na(s) else s


def int_value(raw: str | None, *, field: str = "value"):
    """Leading integer of ``raw`` with any unit after it (``16x``, ``3072 bank(s)``, ``35 C``).

    None when absent; NA when unsupported; ParseError when there is no number.
    Hex (``0x1F``) is accepted.
    """
    if raw is None:
        return None
    s = raw.strip()
    if is_na(s):
        return NA
    if s.lower().startswith("0x"):
        return number(s.split()[0], field, 16)
    m = _INT_RE.match(s)
    if not m:
        raise ParseError(f"{field}: not a number: {s[:60]!r}")
    return number(m.group(0), field)


def float_value(raw: str | None, *, field: str = "value"):
    """Leading decimal of ``raw`` (``84.51 W`` -> 84.51); None/NA as int_value."""
    if raw is None:
        return None
    s = raw.strip()
    if is_na(s):
        return NA
    m = _FLOAT_RE.match(s)
    if not m:
        raise ParseError(f"{field}: not a number: {s[:60]!r}")
    if len(m.group(0)) > 2 * MAX_DIGITS:
        raise ParseError(f"{field}: a number of {len(m.group(0))} characters: more than any reading has")
    return float(m.group(0))


def bool_value(raw: str | None, *, field: str = "value"):
    """Enabled/Disabled, Yes/No, Active/Not Active -> True/False; None; NA; else ParseError."""
    if raw is None:
        return None
    s = raw.strip().lower()
    if s in _NA_WORDS:
        return NA
    if s in _TRUE_WORDS:
        return True
    if s in _FALSE_WORDS:
        return False
    raise ParseError(f"{field}: not a boolean word: {raw.strip()[:60]!r}")


def bus_id(raw: str | None) -> str | None:
    """Normalised PCI bus id (``dddd:bb:dd.f`` lower case) or None.

    Accepts nvidia-smi's 8-digit domain (``00000000:19:00.0``), ``0000:19:00.0``,
    ``19:00.0`` and the kernel log's function-less ``PCI:0000:19:00`` (function 0 added).
    """
    if raw is None:
        return None
    s = raw.strip()
    if s.upper().startswith("PCI:"):
        s = s[4:]
    if not s:
        return None
    if not re.fullmatch(r"(?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}(?:\.[0-7])?", s):
        raise ParseError(f"not a PCI bus id: {s[:60]!r}")
    if "." not in s:
        s += ".0"
    return normalize_bus_id(s)


#: sysfs / lspci link speeds -> PCIe generation (PCIe base spec transfer rates per lane).
_SPEED_GEN = {"2.5": 1, "5": 2, "8": 3, "16": 4, "32": 5, "64": 6}


def speed_to_gen(raw: str | None) -> int | None:
    """``2.5 GT/s PCIe`` .. ``64.0 GT/s PCIe``, old ``8 GT/s``, lspci ``32GT/s`` -> 1..6.

    None for ``Unknown``/empty/absent (sysfs prints ``Unknown`` for a link that is down);
    ParseError for any other text.
    """
    if raw is None:
        return None
    s = raw.strip()
    if not s or s.lower().startswith("unknown"):
        return None
    m = re.match(r"^(\d+(?:\.\d+)?)\s*GT/s", s)
    if not m:
        raise ParseError(f"not a PCIe link speed: {s[:60]!r}")
    num = m.group(1)
    if num.endswith(".0"):
        num = num[:-2]
    gen = _SPEED_GEN.get(num)
    if gen is None:
        raise ParseError(f"unknown PCIe link speed: {s[:60]!r}")
    return gen


def width_value(raw: str | None) -> int | None:
    """``16``, ``x16``, ``16x`` -> 16; None for absent/empty/``Unknown``."""
    if raw is None:
        return None
    s = raw.strip().lower().strip("x")
    if not s or s.startswith("unknown"):
        return None
    if not s.isdigit():
        raise ParseError(f"not a link width: {raw.strip()[:60]!r}")
    return number(s, "link width")


def device_id_from_pci(raw: str | None) -> str | None:
    """``0x233510DE`` / ``233510DE`` (device << 16 | vendor) -> ``2335``; None when absent."""
    if raw is None:
        return None
    s = raw.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    if is_na(s) or not s:
        return None
    if not re.fullmatch(r"[0-9a-f]{8}", s):
        raise ParseError(f"not a PCI device id: {raw.strip()[:60]!r}")
    return s[:4]


#: a driver/CUDA version as nvidia-smi prints it, before any note: 610's ``-q`` header reads
#: ``Driver Version : 610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]``
_VERSION_HEAD = re.compile(r"^(\d{1,4}(?:\.\d{1,6}){0,3})(?:\s+\[[^\]]{0,200}\])?$")


def version_label(raw: str | None) -> str | None:
    """The version of a ``Driver/KMD/CUDA (UMD) Version`` label's value: ``610.57.04`` from
    ``610.57.04 [Deprecated; ... Use KMD Version instead]``; None for a value that is no version
    (610's ``--version`` prints ``DRIVER version : Deprecated, see "KMD version" instead``: the
    version is under the new label) or an empty one. Other text is kept as it is (a check that
    compares it then says what it read)."""
    v = clean(raw)
    if not v:
        return None
    m = _VERSION_HEAD.match(v)
    if m:
        return m.group(1)
    return None if v.lower().startswith("deprecated") else v


def is_unsupported(v) -> bool:
    return isinstance(v, _Unsupported)


def check_text(text, *, cap: int | None = None, what: str = "input") -> str:
    """Decode bytes (UTF-8, invalid bytes replaced) and enforce an optional size cap."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise ParseError(f"{what}: expected text, got {type(text).__name__}")
    if cap is not None and len(text) > cap:
        raise ParseError(f"{what}: {len(text)} characters exceeds the cap of {cap}")
    return text
