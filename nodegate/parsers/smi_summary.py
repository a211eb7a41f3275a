"""Parser for the default ``nvidia-smi`` table (no arguments): one row block per GPU.

Usage::

    nvidia-smi

Shape (R525+, three lines per GPU; older drivers two, with truncated names such as
``Tesla V100-SXM2...``)::

    | NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |
    |   0  NVIDIA H100 80GB HBM3          Off |   00000000:53:00.0 Off |                    0 |
    | N/A   26C    P0             67W /  700W |       0MiB /  81559MiB |      0%      Default |
    |                                         |                        |             Disabled |

Columns: GPU index, name, Persistence-M (On/Off), Bus-Id, Disp.A, Volatile Uncorr. ECC; Fan,
Temp, Perf, Pwr:Usage/Cap, Memory-Usage, GPU-Util, Compute M.; MIG M. The process table after
``Processes:`` is ignored. Source: corpus 110 (8x H100, 570.133.20, Persistence-M Off).

Schema::

    parse_smi_summary(text) -> SmiReport(driver_version, cuda_version, attached_gpus=None,
        gpus=[GpuFacts(index, pci_bus_id, name, persistence_mode, pstate, temperature_c, power_draw_w,
                       power_limit_w, compute_mode, mig_mode_current, source="smi_summary")])

Example::

    |   0  NVIDIA H100 80GB HBM3          Off |   00000000:53:00.0 Off |                    0 |
    -> GpuFacts(index=0, name="NVIDIA H100 80GB HBM3", persistence_mode=False, pci_bus_id="0000:53:00.0")
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import NA, GpuFacts, SmiReport
from . import _values as V
from ._limits import check_gpu_count, number

MAX_CHARS = 4 * 1024 * 1024
#: 610 labels its header ``KMD Version: 610.57.04     CUDA UMD Version: 13.3`` (utkuozdemir/nvidia_gpu_exporter's
#: RTX 2080 SUPER 610.57.04 capture), earlier branches ``Driver Version: ... CUDA Version: ...``
_HEAD = re.compile(r"(?:Driver|KMD) Version:\s*(?P<drv>\S+)\s+CUDA (?:UMD )?Version:\s*(?P<cuda>\S+)")
#: the table's abbreviated compute modes -> the names ``nvidia-smi -q`` prints
_COMPUTE_MODES = {"E. Process": "Exclusive_Process", "E. Thread": "Exclusive_Thread"}
_BUS = re.compile(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]")
_PERF = re.compile(r"P\d{1,2}|N/A|ERR!")


def _cells(ln: str) -> list[list[str]] | None:
    r"""The whitespace-split words of the three cells of a ``| a | b | c |`` table row, else None.
    Rows are split in code, not matched by one pattern: the former lazy ``(?P<name>.+?)\s+`` and
    ``(?P<ecc>.*?)\s*\|$`` groups backtracked quadratically over a long run of spaces."""
    parts = ln.split("|")
    if len(parts) != 5 or parts[0] or parts[4]:
        return None
    return [p.split() for p in parts[1:4]]


def _row1(ln: str) -> dict | None:
    """``|   0  NVIDIA H100 80GB HBM3   Off |   00000000:53:00.0 Off |   0 |`` -> its fields."""
    c = _cells(ln)
    if c is None or len(c[0]) < 3 or not c[0][0].isdigit() or c[0][-1] not in ("On", "Off") or len(c[1]) != 2 \
            or not _BUS.fullmatch(c[1][0]) or c[1][1] not in ("On", "Off"):
        return None
    return {"i": c[0][0], "name": " ".join(c[0][1:-1]), "pm": c[0][-1], "bus": c[1][0], "disp": c[1][1],
            "ecc": " ".join(c[2])}


def _row2(ln: str) -> dict | None:
    """``| N/A   34C    P0   69W / 700W |   4MiB / 81559MiB |   0%   Default |`` -> its fields."""
    c = _cells(ln)
    if c is None or len(c[0]) < 3 or not _PERF.fullmatch(c[0][2]) or len(c[2]) not in (2, 3):
        return None
    # the compute mode is one or two words: "Default", "Prohibited", "E. Process" (gpud's 525.125.06
    # table of a GeForce in exclusive-process mode), "E. Thread"
    cm = " ".join(c[2][1:])
    return {"fan": c[0][0], "temp": c[0][1], "perf": c[0][2], "pw": " ".join(c[0][3:]), "mem": " ".join(c[1]),
            "util": c[2][0], "cm": _COMPUTE_MODES.get(cm, cm)}


_ROW3 = re.compile(r"^\|\s+\|\s+\|\s*(?P<mig>\S+)\s*\|$")
_POWER = re.compile(r"^(?P<use>\S+?)\s*/\s*(?P<cap>\S+)$")


def _watts(raw: str):
    s = raw.strip()
    if V.is_na(s) or s.upper() == "ERR!":
        return NA
    return V.float_value(s.rstrip("W"), field="power")


def parse_smi_summary(text: str | bytes) -> SmiReport:
    """GPUs in table order. Empty -> empty SmiReport. ParseError when non-empty text holds no GPU
    row and no ``Driver Version`` (610: ``KMD Version``) header (not this table)."""
    text = V.check_text(text, cap=MAX_CHARS, what="nvidia-smi")
    rep = SmiReport()
    if not text.strip():
        return rep
    cur: GpuFacts | None = None
    row = 0
    for raw in text.splitlines():
        ln = raw.rstrip()
        if "Processes:" in ln:
            break
        m = _HEAD.search(ln)
        if m:
            rep.driver_version, rep.cuda_version = m.group("drv"), m.group("cuda")
            continue
        m = _row1(ln)
        if m:
            cur = GpuFacts(index=number(m["i"]), name=m["name"], pci_bus_id=V.bus_id(m["bus"]),
                           persistence_mode=m["pm"] == "On", source="smi_summary")
            rep.gpus.append(cur)
            check_gpu_count(len(rep.gpus), "nvidia-smi (summary)", running=True)
            row = 1
            continue
        if cur is None:
            continue
        m = _row2(ln) if row == 1 else None
        if m:
            cur.pstate = None if m["perf"] in ("N/A", "ERR!") else m["perf"]
            t = m["temp"].rstrip("C")
            cur.temperature_c = V.int_value(t, field="temp") if t not in ("ERR!",) else None
            pm = _POWER.match(m["pw"])
            if pm:
                cur.power_draw_w, cur.power_limit_w = _watts(pm.group("use")), _watts(pm.group("cap"))
            cur.compute_mode = m["cm"]
            row = 2
            continue
        m = _ROW3.match(ln) if row == 2 else None
        if m:
            cur.mig_mode_current = V.bool_value(m.group("mig"), field="MIG M.")
            row = 3
    if not rep.gpus and rep.driver_version is None:
        raise ParseError("nvidia-smi: no GPU row and no 'Driver Version' header")
    return rep
