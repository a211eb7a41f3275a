"""Parser for the probe's NVSwitch listing: NVIDIA PCI functions of bridge class (0x0680).

Usage (evidence key ``pci.nvswitch``)::

    for /sys/bus/pci/devices/* with vendor 0x10de and class 0x0680xx:
        '== <bdf> device <0xdddd> class <0x068000>'; then 'nvswitches: <n>'

NVSwitches enumerate as "Bridge: NVIDIA Corporation GH100 [H100 NVSwitch]" (class 0680, corpus
110: four on an HGX H100) and 10de:1af1 on HGX A100 (corpus 106's companion lspci: six).

Schema::

    parse_pci_nvswitch(text) -> [PciFunction(bdf, device, pci_class)]

Example::

    == 0000:83:00.0 device 0x22a3 class 0x068000
    nvswitches: 1
    -> [PciFunction("0000:83:00.0", "0x22a3", "0x068000")]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import PciFunction
from . import _values as V
from ._limits import number

_LINE = re.compile(r"^== (?P<bdf>\S+) device (?P<dev>0x[0-9a-fA-F]{4}) class (?P<cls>0x[0-9a-fA-F]{6})$")
_COUNT = re.compile(r"^nvswitches: (?P<n>\d+)$")


def parse_pci_nvswitch(text: str | bytes) -> list[PciFunction]:
    """Functions in listing order. Empty -> []. ParseError for an unknown line or a count line
    that disagrees with the functions listed (a cut listing)."""
    text = V.check_text(text, cap=1024 * 1024, what="pci.nvswitch")
    out: list[PciFunction] = []
    count = None
    for raw in text.splitlines():
        ln = raw.strip()
        if not ln:
            continue
        m = _LINE.match(ln)
        if m:
            out.append(PciFunction(V.bus_id(m.group("bdf")), m.group("dev").lower(), m.group("cls").lower()))
            continue
        m = _COUNT.match(ln)
        if m:
            count = number(m.group("n"))
            continue
        raise ParseError(f"pci.nvswitch: unexpected line: {ln[:100]!r}")
    if count is not None and count != len(out):
        raise ParseError(f"pci.nvswitch: {len(out)} functions listed, count line says {count}")
    return out
