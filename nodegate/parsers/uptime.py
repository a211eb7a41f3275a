"""Parser for ``/proc/uptime`` (proc(5)): seconds since boot and aggregate idle seconds.

Usage (evidence key ``meta.uptime``)::

    cat /proc/uptime

Schema::

    parse_uptime(text) -> float (seconds since boot) | None (empty input)

Example::

    86400.42 172000.10
    -> 86400.42
"""

from __future__ import annotations

import re

from ..errors import ParseError
from . import _values as V

_UP = re.compile(r"^(?P<up>\d+(?:\.\d+)?)(?:\s+\d+(?:\.\d+)?)?\s*$")


def parse_uptime(text: str | bytes) -> float | None:
    """Seconds since boot. Empty -> None. ParseError for anything else than proc(5)'s two numbers."""
    text = V.check_text(text, cap=4096, what="/proc/uptime").strip()
    if not text:
        return None
    m = _UP.match(text)
    if not m:
        raise ParseError(f"/proc/uptime: not 'seconds idle': {text[:60]!r}")
    return float(m.group("up"))
