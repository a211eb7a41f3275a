"""Parser for nvidia-fabricmanager log lines (journal, syslog, or /var/log/fabricmanager.log).

Usage (evidence key ``fabricmanager.log``)::

    journalctl -u nvidia-fabricmanager -b --no-pager -o short-iso -n 200
    # else: tail -n 200 /var/log/fabricmanager.log

Prefixes accepted and removed: journal/syslog ``May 01 13:53:50 host nv-fabricmanager[5946]: ``,
short-iso ``2025-05-01T13:53:50+0000 host nv-fabricmanager[5946]: ``, and a bare
``nv-fabricmanager[3228]: `` (corpus 113). Kinds: ``version_mismatch`` from "fabric manager NVIDIA
GPU driver interface version X don't match with driver version Y" (the fabric manager's version
comes FIRST, the kernel driver's second: corpus 113), ``configured`` ("Successfully configured all
the available NVSwitches", corpus 110), ``pre_nvl5`` ("Detected Pre-NVL5 system"), ``error``
(error/failed/fatal), ``other``. A ``-- No entries --`` journal line and blank lines are skipped.

Schema::

    parse_fabricmanager_log(text) -> [FmLogEvent(kind, text, details)]

Example::

    nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't match
    with driver version 530.41.03. Please update with matching NVIDIA driver package.
    -> [FmLogEvent("version_mismatch", ..., {"fm_version": "530.30.02", "driver_version": "530.41.03"})]
"""

from __future__ import annotations

import re

from ..facts import FmLogEvent
from . import _values as V

MAX_CHARS = 4 * 1024 * 1024
_PREFIX = re.compile(r"^(?:(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+)\s+\S+\s+)?"
                     r"(?:[\w.@/-]+\[\d+\]|[\w.@/-]+):\s")
_MISMATCH = re.compile(r"driver interface version (?P<fm>\d+(?:\.\d+)+)\s+don'?t match with driver version "
                       r"(?P<drv>\d+(?:\.\d+)+)", re.I)
_ERROR = re.compile(r"\b(?:error|failed|failure|fatal)\b", re.I)


def parse_fabricmanager_log(text: str | bytes) -> list[FmLogEvent]:
    """One event per line in order. Empty -> []. Free text never raises."""
    text = V.check_text(text, cap=MAX_CHARS, what="fabric manager log")
    out: list[FmLogEvent] = []
    for raw in text.splitlines():
        ln = raw.strip()
        if not ln or ln.startswith("-- ") or ln.startswith("#"):
            continue
        msg = _PREFIX.sub("", ln, count=1)[:2000]
        ev = FmLogEvent("other", msg)
        if m := _MISMATCH.search(msg):
            ev.kind, ev.details = "version_mismatch", {"fm_version": m.group("fm"), "driver_version": m.group("drv")}
        elif "Successfully configured all the available NVSwitches" in msg:
            ev.kind = "configured"
        elif "Detected Pre-NVL5 system" in msg:
            ev.kind = "pre_nvl5"
        elif _ERROR.search(msg):
            ev.kind = "error"
        out.append(ev)
    return out
