"""Parser for the probe's PCIe AER counters of every GPU and its upstream ports.

Usage (evidence key ``pci.aer``)::

    for NVIDIA display-class functions: '== <bdf> gpu aer=<n>', then each upstream port
    '== <bdf> upstream-of <gpu bdf> aer=<n>'; 'gpus: <n>'; then
    grep -H -E '^TOTAL_| [1-9][0-9]*$' <dir>/aer_dev_correctable <dir>/aer_dev_nonfatal <dir>/aer_dev_fatal ...
    (each file's TOTAL_ERR_* line and its non-zero counters; a counter not listed is 0)

``aer=<n>``: how many of the three files the device has (0: no AER capability exposed, e.g. in
a VM, or a kernel without CONFIG_PCIEAER). The files are the kernel's
(drivers/pci/pcie/aer.c, Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats): one
``<error name> <count>`` per line, e.g. ``RxErr 0`` ... ``TOTAL_ERR_COR 0`` for correctable,
``DLP 0`` ... ``TOTAL_ERR_FATAL 0`` for fatal.

Schema::

    parse_pci_aer(text) -> [AerCounters(bdf, role "gpu"|"upstream", upstream_of, correctable, nonfatal,
                                        fatal, correctable_total, nonfatal_total, fatal_total, files)]

Example::

    == 0000:19:00.0 gpu aer=3
    gpus: 1
    /sys/devices/pci0000:16/0000:16:01.0/0000:19:00.0/aer_dev_fatal:TOTAL_ERR_FATAL 0
    -> [AerCounters("0000:19:00.0", "gpu", fatal_total=0, files=3, ...)]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import AerCounters
from . import _values as V
from ._limits import MAX_GPUS, number

MAX_CHARS = 4 * 1024 * 1024
_HDR = re.compile(r"^== (?P<bdf>\S+) (?:gpu|upstream-of (?P<gpu>\S+)) aer=(?P<n>\d+)$")
_LINE = re.compile(r"^(?P<dir>/\S*)/aer_dev_(?P<kind>correctable|nonfatal|fatal):(?P<name>[A-Za-z_][A-Za-z0-9_]*) (?P<n>\d+)$")
_TOTAL = {"correctable": "TOTAL_ERR_COR", "nonfatal": "TOTAL_ERR_NONFATAL", "fatal": "TOTAL_ERR_FATAL"}


def parse_pci_aer(text: str | bytes) -> list[AerCounters]:
    """Records in listing order (one per GPU and per upstream port of each GPU). Empty -> [].
    ParseError for a counter line of a device no header names, or any unknown line."""
    text = V.check_text(text, cap=MAX_CHARS, what="pci.aer")
    recs: list[AerCounters] = []
    by_bdf: dict[str, list[AerCounters]] = {}
    for raw in text.splitlines():
        ln = raw.rstrip()
        if not ln.strip() or re.fullmatch(r"gpus: \d+", ln):
            continue
        m = _HDR.match(ln)
        if m:
            bdf = V.bus_id(m.group("bdf"))
            r = AerCounters(bdf=bdf, role="upstream" if m.group("gpu") else "gpu",
                            upstream_of=V.bus_id(m.group("gpu")) if m.group("gpu") else None,
                            files=number(m.group("n")))
            recs.append(r)
            if len(recs) > 8 * MAX_GPUS:   # a GPU and its upstream ports: a bounded list per counter line
                raise ParseError(f"pci.aer: more than {8 * MAX_GPUS} device records (at most {MAX_GPUS} GPUs)")
            by_bdf.setdefault(bdf, []).append(r)
            continue
        m = _LINE.match(ln)
        if not m:
            raise ParseError(f"pci.aer: unexpected line: {ln[:100]!r}")
        bdf = V.bus_id(m.group("dir").rsplit("/", 1)[1])
        if bdf not in by_bdf:
            raise ParseError(f"pci.aer: counters of {bdf}, which no header names")
        kind, name, n = m.group("kind"), m.group("name"), number(m.group("n"))
        for r in by_bdf[bdf]:
            if name == _TOTAL[kind]:
                prev = getattr(r, f"{kind}_total")
                setattr(r, f"{kind}_total", n)
            else:
                prev = getattr(r, kind).get(name)
                getattr(r, kind)[name] = n
            if prev not in (None, n):   # a counter twice with two counts: contradictory, never "last one wins"
                raise ParseError(f"pci.aer: {bdf} {kind} {name} given twice ({prev} and {n})")
    return recs
