"""Parser for ``lspci -vvv`` (link capability and status per PCI function).

Usage (evidence key ``pci.lspci_vvv``, or an nvidia-bug-report section)::

    lspci -vvv [-d 10de:]              # also -nnDvvvxxx(x) (nvidia-bug-report 530+) and -v -xxx (older)

Each stanza starts with ``[domain:]bus:dev.fn <class>: <description>``; inside it
``LnkCap: Port #0, Speed 32GT/s, Width x16`` is the function's capability and
``LnkSta: Speed 32GT/s (ok), Width x16 (ok)`` the trained link; lspci marks a link trained below its
capability ``(downgraded)`` (pciutils ls-caps.c). Old pciutils print ``Speed 8GT/s`` and
``Speed 2.5GT/s``. Hex dump lines of ``-xxx`` (``00: de 10 ...``) and everything else are ignored.
``-v`` alone prints no Lnk* lines: those fields stay None (nvidia-bug-report before 530 runs
``lspci -d "10de:*" -v -xxx``, so its logs carry no link status).

Schema::

    [LspciLink(bdf, description, cap_gen, cap_width, sta_gen, sta_width, downgraded, driver,
               vendor_device "10de:2330" | None, display: bool)]

``display`` is True for a display-class function of vendor NVIDIA (``VGA compatible controller`` or
``3D controller``; the GPUs, not their audio/USB functions).

Example::

    19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)
        LnkCap: Port #0, Speed 32GT/s, Width x16, ASPM L1, Exit Latency L1 <4us
        LnkSta: Speed 32GT/s (ok), Width x16 (ok)
    -> [LspciLink(bdf="0000:19:00.0", cap_gen=5, cap_width=16, sta_gen=5, sta_width=16,
                  vendor_device="10de:2330", display=True)]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import LspciLink
from . import _values as V
from ._limits import check_gpu_count, number

MAX_LSPCI_CHARS = 16 * 1024 * 1024

_STANZA = re.compile(r"^(?P<bdf>(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(?P<desc>\S.*)$")
_SPEED = re.compile(r"Speed\s+(?P<speed>[0-9.]+\s*GT/s|unknown)(?P<dg>\s*\(downgraded\))?", re.I)
_WIDTH = re.compile(r"Width\s+x(?P<w>\d+)(?P<dg>\s*\(downgraded\))?")
_IDS = re.compile(r"\[(?P<v>[0-9a-fA-F]{4}):(?P<d>[0-9a-fA-F]{4})\]")
_DEVICE_WORD = re.compile(r"NVIDIA Corporation Device (?P<d>[0-9a-fA-F]{4})\b")
_DISPLAY = re.compile(r"^(?:VGA compatible controller|3D controller|Display controller)\b", re.I)


def parse_lspci_vvv(text: str | bytes) -> list[LspciLink]:
    """One LspciLink per stanza (function), in order. Lines before the first stanza (a shell
    prompt, a section header) are ignored. Empty -> []. ParseError when non-empty text holds no
    stanza at all."""
    text = V.check_text(text, cap=MAX_LSPCI_CHARS, what="lspci -vvv")
    out: list[LspciLink] = []
    gpus = 0
    for ln in text.splitlines():
        m = _STANZA.match(ln)
        if m:
            out.append(_stanza(m.group("bdf"), m.group("desc").strip()))
            gpus += out[-1].display
            check_gpu_count(gpus, "lspci -vvv", running=True)   # NVIDIA display functions are the GPUs of altkeys.gpus_from_lspci
            continue
        if not out:
            continue
        s = ln.strip()
        cur = out[-1]
        if s.startswith("LnkCap:"):
            cur.cap_gen, cur.cap_width, _ = _link(s)
        elif s.startswith("LnkSta:"):
            cur.sta_gen, cur.sta_width, cur.downgraded = _link(s)
        elif s.startswith("Kernel driver in use:"):
            cur.driver = s.split(":", 1)[1].strip() or None
    if text.strip() and not out:
        raise ParseError("lspci -vvv: no device stanza")
    return out


def _stanza(bdf: str, desc: str) -> LspciLink:
    link = LspciLink(bdf=V.bus_id(bdf), description=desc)
    ids = _IDS.findall(desc)
    if ids:
        v, d = ids[-1]
        link.vendor_device = f"{v.lower()}:{d.lower()}"
    elif (w := _DEVICE_WORD.search(desc)) is not None:
        link.vendor_device = f"10de:{w.group('d').lower()}"
    klass = desc.split(":", 1)[0]
    nvidia = "NVIDIA" in desc or (link.vendor_device or "").startswith("10de:")
    link.display = bool(_DISPLAY.match(klass)) and nvidia
    return link


def _link(s: str) -> tuple[int | None, int | None, bool]:
    sm, wm = _SPEED.search(s), _WIDTH.search(s)
    gen = V.speed_to_gen(sm.group("speed")) if sm else None
    width = number(wm.group("w"), "link width") if wm else None
    down = bool((sm and sm.group("dg")) or (wm and wm.group("dg")))
    return gen, width, down
