"""Parser for ``modinfo``.

Usage::

    modinfo -k $(uname -r) nvidia          # also nvidia_peermem, nv_peer_mem

Lines are ``<field>:<spaces><value>``; ``firmware`` repeats (one per file the module may
request, e.g. ``nvidia/545.29.02/gsp_tu10x.bin``); ``depends`` is a comma list (may be empty).
``license``: ``Dual MIT/GPL`` = open flavor, ``NVIDIA`` = proprietary (checks.md "Kernel
module flavor"). ``parm``/``alias`` and unknown fields are ignored.

Schema::

    ModinfoFacts(filename, license, version, firmware=[str], depends=[str], vermagic, srcversion)

Example::

    filename:       /lib/modules/6.2.0-39-generic/updates/dkms/nvidia.ko
    license:        NVIDIA
    firmware:       nvidia/545.29.02/gsp_tu10x.bin
    -> ModinfoFacts(filename=".../nvidia.ko", license="NVIDIA", firmware=["nvidia/545.29.02/gsp_tu10x.bin"])
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import ModinfoFacts
from . import _values as V

_FIELD = re.compile(r"^([a-z_][a-z0-9_.]*):\s*(.*)$")
_SINGLE = ("filename", "license", "version", "vermagic", "srcversion")
# Fields modinfo prints (kmod's modinfo.c plus the module's MODULE_* tags).
_KNOWN = frozenset(_SINGLE + ("firmware", "depends", "alias", "parm", "name", "author", "description",
                              "supported", "retpoline", "intree", "signer", "sig_key", "sig_hashalgo",
                              "signature", "sig_id", "import_ns", "softdep", "license_file", "staging"))


def parse_modinfo(text: str | bytes) -> ModinfoFacts:
    """Empty input -> empty ModinfoFacts. ParseError when non-empty text has no field line."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="modinfo")
    out = ModinfoFacts()
    seen = False
    for ln in text.splitlines():
        m = _FIELD.match(ln.rstrip())
        if not m:
            continue
        key, val = m.group(1), m.group(2).strip()
        if key not in _KNOWN:
            continue
        seen = True
        if key in _SINGLE:
            if getattr(out, key) not in (None, val):   # named twice, two values: never "first one wins"
                raise ParseError(f"modinfo: {key} given twice ({getattr(out, key)[:40]!r} and {val[:40]!r})")
            setattr(out, key, val)
        elif key == "firmware" and val:
            out.firmware.append(val)
        elif key == "depends":
            out.depends = [d for d in (p.strip() for p in val.split(",")) if d]
    if text.strip() and not seen:
        raise ParseError(f"modinfo: no 'field: value' lines in {text.strip()[:80]!r}")
    return out


def flavor_from_license(license: str | None) -> str | None:
    """``Dual MIT/GPL`` -> ``open``; ``NVIDIA`` -> ``proprietary``; other/None -> None."""
    if license is None:
        return None
    lic = license.strip()
    if lic == "Dual MIT/GPL":
        return "open"
    if lic == "NVIDIA":
        return "proprietary"
    return None
