"""NVSwitch SXid severity table (nodegate/data/sxid.yaml, from NVIDIA's Fabric Manager User Guide).

``sxid_table()`` -> {sxid: SxidInfo}; ``sxid_fails(sxid, line_fatality)`` -> whether the kernel-log
check FAILs on it: the table's ``fail``; for an SXid not in the table, the line's own fatality
("Fatal"/"Severity 1" fail, "Non-fatal"/"Severity 0" informational) and, when the line says
neither, FAIL (an unknown NVSwitch error on a node under acceptance is looked up, not passed).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

from .. import yamlio


class SxidInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sxid: int
    name: str
    fatal: bool
    fail: bool
    action: str


@lru_cache(maxsize=1)
def sxid_table() -> dict[int, SxidInfo]:
    raw = yamlio.safe_load(resources.files("nodegate").joinpath("data/sxid.yaml").read_text())
    return {int(k): SxidInfo(sxid=int(k), **v) for k, v in raw["sxids"].items()}


def sxid_info(sxid: int, line_fatal: bool | None = None) -> SxidInfo:
    """The table entry, or one built from the line's own fatality (``line_fatal``: True for
    "Fatal"/"Severity 1", False for "Non-fatal"/"Severity 0", None when the line says neither)."""
    info = sxid_table().get(sxid)
    if info is not None:
        return info
    fails = line_fatal is not False
    return SxidInfo(sxid=sxid, name="not in nodegate's SXid table", fatal=bool(line_fatal), fail=fails,
                    action="look it up in the Fabric Manager User Guide (NVSwitch SXid errors); reset the GPUs "
                           "and NVSwitches (reboot) before acceptance")
