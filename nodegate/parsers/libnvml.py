"""Parser for the probe's resolved ``libnvidia-ml.so.1`` (key ``driver.libnvml``).

Usage (nodegate/probe/probe.sh ng_f_libnvml)::

    ldconfig <path> -> <readlink -f target>
    path <path> -> <readlink -f target>

The userspace driver version is the suffix of the real file's name:
``libnvidia-ml.so.580.159.04`` -> ``580.159.04`` (checks.md "Driver stack consistency").
The first ``ldconfig`` line wins (the dynamic loader's choice), else the first ``path`` line.

Schema::

    LibNvml(path, target, version)     # all None when the library was not found

Example::

    ldconfig /usr/local/nvidia/lib64/libnvidia-ml.so.1 -> /usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04
    -> LibNvml(path=".../libnvidia-ml.so.1", target=".../libnvidia-ml.so.580.159.04", version="580.159.04")
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import LibNvml
from . import _values as V

_LINE = re.compile(r"^(?P<how>ldconfig|path) (?P<path>\S+) -> ?(?P<target>\S*)\s*$")
_VER = re.compile(r"libnvidia-ml\.so\.(\d+(?:\.\d+)+)$")


def parse_libnvml(text: str | bytes) -> LibNvml:
    """Empty -> LibNvml() (not found). ParseError on a line outside the format."""
    text = V.check_text(text, cap=1024 * 1024, what="driver.libnvml")
    found: list[tuple[str, str, str]] = []
    for ln in text.splitlines():
        if not ln.strip():
            continue
        m = _LINE.match(ln.strip())
        if not m:
            raise ParseError(f"driver.libnvml: unrecognised line {ln[:80]!r}")
        found.append((m.group("how"), m.group("path"), m.group("target")))
    found.sort(key=lambda f: 0 if f[0] == "ldconfig" else 1)
    if not found:
        return LibNvml()
    _, path, target = found[0]
    m = _VER.search(target or "")
    return LibNvml(path=path, target=target or None, version=m.group(1) if m else None)
