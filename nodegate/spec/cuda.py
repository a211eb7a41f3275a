"""CUDA toolkit -> minimum driver (nodegate/data/cuda.yaml, from NVIDIA's CUDA Toolkit Release Notes).

``toolkit_minimum(version)`` -> the driver a toolkit release needs (Table 3), ``minor_version_minimum
(major)`` -> the first driver of CUDA minor version compatibility for that major (Table 2);
``version_key(v)`` turns a driver version into a comparable tuple. ``KeyError`` for a version the
table does not hold (the check reports it as ERROR naming the table).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from .. import yamlio


@lru_cache(maxsize=1)
def _table() -> dict:
    return yamlio.safe_load(resources.files("nodegate").joinpath("data/cuda.yaml").read_text())


def toolkit_minimum(toolkit: str) -> str:
    """Minimum Linux x86_64 driver of CUDA ``toolkit`` ("12.8" = GA, "12.8.0" the same, "12.8.1"
    Update 1). KeyError when unknown."""
    t = toolkit.strip()
    if re.fullmatch(r"\d+\.\d+\.0", t):
        t = t[:-2]
    return str(_table()["toolkit"][t])


def minor_version_minimum(major: int | str) -> str:
    """Minimum driver for CUDA minor version compatibility of a major (11, 12, 13). KeyError."""
    return str(_table()["minor_version"][str(int(major))])


def known_toolkits() -> list[str]:
    return sorted(_table()["toolkit"], key=version_key)


def version_key(v: str) -> tuple[int, ...]:
    """``580.95.05`` -> (580, 95, 5); ``570.26`` -> (570, 26); non-numeric parts stop the key."""
    out = []
    for part in str(v).strip().split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group(0)))
    return tuple(out)


def at_least(version: str, minimum: str) -> bool:
    """``version`` >= ``minimum``, comparing dotted components numerically; a branch minimum
    (``550``) compares the branch only."""
    v, m = version_key(version), version_key(minimum)
    return v[:len(m)] >= m if len(m) == 1 else v >= m
