"""Parser for the probe's GSP firmware listing (key ``firmware.gsp``).

Usage (nodegate/probe/probe.sh ng_f_firmware)::

    firmware_class.path: /usr/local/nvidia/firmware
    driver_version: 580.159.04
    == /usr/local/nvidia/firmware/nvidia/580.159.04
    -rw-r--r-- 1 0 0 74335280 Jan  1  1970 gsp_ga10x.bin        (ls -ln)
    == /lib/firmware/nvidia/580.159.04
    absent

Directories come in the kernel's firmware search order (firmware_class.path first, then
/lib/firmware/updates/<kver>, /lib/firmware/updates, /lib/firmware/<kver>, /lib/firmware;
kernel Documentation/driver-api/firmware/fw_search_path.rst).

Schema::

    FirmwareFacts(search_path: str|None ("" when unset), driver_version,
                  dirs={dir: {file name: size bytes | None (size not listed)} | None (absent)})

A bare ``gsp_ga10x.bin`` line (a listing without sizes, e.g. converted from ``find``) is
accepted with size None: the file exists, its size is unknown.

Example: the listing above -> dirs={"/usr/local/nvidia/firmware/nvidia/580.159.04":
{"gsp_ga10x.bin": 74335280}, "/lib/firmware/nvidia/580.159.04": None}
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import FirmwareFacts
from . import _values as V
from ._limits import number

# ls -ln: mode links uid gid size month day time|year name  (symlinks: "name -> target")
_LS = re.compile(r"^[-lbcdps][-rwxsStT.+@]{9}\S*\s+\d+\s+\d+\s+\d+\s+(?P<size>\d+)\s+\S+\s+\S+\s+\S+\s+(?P<name>.+?)(?: -> .*)?$")


_BARE = re.compile(r"^[\w.+-]+\.bin$")


def parse_firmware_gsp(text: str | bytes) -> FirmwareFacts:
    """Empty -> empty FirmwareFacts. ParseError on a line outside the format."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="firmware.gsp")
    ff = FirmwareFacts()
    cur: str | None = None
    for ln in text.splitlines():
        if ln.startswith("firmware_class.path:"):
            ff.search_path = ln.split(":", 1)[1].strip()
        elif ln.startswith("driver_version:"):
            ff.driver_version = ln.split(":", 1)[1].strip() or None
        elif ln.startswith("== "):
            cur = ln[3:].strip()
            ff.dirs[cur] = {}
        elif not ln.strip() or ln.startswith("total "):
            continue
        elif cur is None:
            raise ParseError(f"firmware.gsp: unrecognised line {ln[:80]!r}")
        elif ln.strip() == "absent" or "No such file or directory" in ln:
            ff.dirs[cur] = None
        else:
            files = ff.dirs[cur]
            m = _LS.match(ln.strip())
            if m:
                if files is not None:
                    files[m.group("name")] = number(m.group("size"))
            elif _BARE.match(ln.strip()):
                # a listing without sizes (find output in hand-built bundles): size unknown
                if files is not None:
                    files[ln.strip()] = None
            else:
                raise ParseError(f"firmware.gsp: not an ls -ln line: {ln[:80]!r}")
    return ff
