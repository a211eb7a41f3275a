"""Xid severity table (nodegate/data/xid.yaml, from NVIDIA's Xid catalog).

``xid_table()`` -> {xid: XidInfo}; ``xid_fail_set(spec)`` -> the Xids that FAIL the kernel-log
checks: ``spec.kernel_log.xid_fail`` when set, else the table's ``fail: true`` entries.
An Xid absent from the table is reported as informational (never dropped silently).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .. import yamlio


class XidInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    xid: int
    name: str
    severity: Literal["critical", "major", "minor", "info"]
    fail: bool
    action: str


@lru_cache(maxsize=1)
def xid_table() -> dict[int, XidInfo]:
    raw = yamlio.safe_load(resources.files("nodegate").joinpath("data/xid.yaml").read_text())
    return {int(k): XidInfo(xid=int(k), **v) for k, v in raw["xids"].items()}


def xid_info(xid: int) -> XidInfo:
    return xid_table().get(xid) or XidInfo(xid=xid, name="not in nodegate's Xid table", severity="info",
                                           fail=False, action="look it up in NVIDIA's Xid catalog")


def xid_fail_set(spec=None) -> frozenset[int]:
    override = getattr(getattr(spec, "kernel_log", None), "xid_fail", None)
    if override is not None:
        return frozenset(override)
    return frozenset(x for x, i in xid_table().items() if i.fail)
