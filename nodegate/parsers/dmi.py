"""Parser for the probe's ``dmi.id`` item: the system's DMI (SMBIOS) identity.

Usage (nodegate/probe/probe.sh ``ng_f_dmi``)::

    for a in sys_vendor product_name product_version product_serial product_uuid board_vendor
             board_name board_serial chassis_serial bios_version:
        '<a> ok <first line of /sys/class/dmi/id/<a>>'
        '<a> unreadable'     (the kernel makes the serials and product_uuid mode 0400, root only:
                              drivers/firmware/dmi-id.c; the probe then needs --sudo)
        '<a> absent'         (the firmware does not provide it)

Schema::

    parse_dmi(text) -> DmiFacts(values={attr: str}, unreadable={attr, ...}, absent={attr, ...})

Example::

    sys_vendor ok Supermicro
    product_serial unreadable
    -> DmiFacts(values={"sys_vendor": "Supermicro"}, unreadable={"product_serial"}, absent=set())

Values are the firmware's strings (untrusted: reports clean and escape them); an empty value
stays "" (some firmware leaves fields blank).
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import DmiFacts
from . import _values as V

ATTRS = ("sys_vendor", "product_name", "product_version", "product_serial", "product_uuid",
         "board_vendor", "board_name", "board_serial", "chassis_serial", "bios_version")
_LINE = re.compile(r"^(?P<a>[a-z_]+) (?:(?P<ok>ok)(?: (?P<v>.*))?|(?P<st>unreadable|absent))$")


def parse_dmi(text: str | bytes) -> DmiFacts:
    text = V.check_text(text, cap=64 * 1024, what="dmi.id")
    facts = DmiFacts()
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _LINE.match(ln.rstrip("\r"))
        if not m or m.group("a") not in ATTRS:
            raise ParseError(f"dmi.id: unrecognised line {ln[:80]!r}")
        a = m.group("a")
        if m.group("ok"):
            facts.values[a] = (m.group("v") or "").strip()
        elif m.group("st") == "unreadable":
            facts.unreadable.add(a)
        else:
            facts.absent.add(a)
    if not (facts.values or facts.unreadable or facts.absent):
        raise ParseError("dmi.id: no attribute listed")
    return facts
