"""Parser for ``nvidia-smi nvlink -s`` (``--status``): per GPU, each NVLink's speed or state.

Usage (evidence key ``smi.nvlink_status``)::

    nvidia-smi nvlink -s          # also --status, -i <n>

Shape: a header ``GPU <n>: <name> (UUID: GPU-...)`` (older drivers print ``GPU <n>: <name>``
without the UUID), then one indented line per link: ``Link <k>: 26.562 GB/s`` (the speed is an
integer on A100, ``25 GB/s``; three decimals on V100/H100/B300, ``25.781``/``26.562``/``53.125``),
``Link <k>: <inactive>`` for a link that is down. Indentation is 9 spaces or a tab and a space.
A GPU in MIG mode prints ``Nvlink queries are not supported for Devices in MIG mode`` after its
header (corpus 120); a GPU the driver reports no NVLink for prints its header and nothing else,
``Device does not have or support Nvlink`` (a PCIe board, corpus 119: status ``none`` with that
message), or nothing at all (the H200 VM capture: rc 0, empty output). A pasted shell prompt line
(``user@host:~$ nvidia-smi nvlink --status``) and ``#`` comment lines are skipped. Sources: corpus 106 (A100), 108 (B300),
120 (MIG); public DGX-1 V100 outputs (``Tesla V100-SXM2-32GB``, 6 x 25.781 GB/s).

Schema::

    parse_nvlink_status(text) -> [GpuNvLinks(index, name, uuid, links=[NvLink(link, active, speed_gbps)],
                                             status "ok"|"none"|"mig"|"unsupported", message, source="smi")]

Example::

    GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)
             Link 0: 25 GB/s
             Link 1: <inactive>
    -> [GpuNvLinks(index=0, name="NVIDIA A100-SXM4-80GB", uuid="GPU-0000...",
                   links=[NvLink(0, True, 25.0), NvLink(1, False, None)], status="ok")]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import NA, GpuNvLinks, NvLink
from . import _values as V
from ._limits import check_gpu_count, number

MAX_CHARS = 4 * 1024 * 1024
_MAX_LINKS = 64   # NVML_NVLINK_MAX_LINKS is 18 (R535-R580); anything far above is not this output

# Patterns are linear: no lazy group before a trailing ``\s*$`` (that form backtracked
# quadratically over a long run of spaces); values are stripped in code (tests/hostile/test_parse_bounds.py).
_HEADER = re.compile(r"^GPU (?P<i>\d{1,20}): (?P<rest>.*)$")
_LINK = re.compile(r"^\s+Link (?P<k>\d{1,20}): (?P<v>.*)$")
_SPEED = re.compile(r"^(?P<n>\d+(?:\.\d+)?) ?GB/s$")
_PROMPT = re.compile(r"^\S*[$#] .*nvidia-smi")
_MIG = re.compile(r"not supported for Devices in MIG mode", re.I)
# the driver's answer for a GPU without NVLink (PCIe boards: corpus 119, L40S 595.80); status "none"
NO_NVLINK = re.compile(r"does not have or support Nvlink", re.I)


def parse_nvlink_status(text: str | bytes) -> list[GpuNvLinks]:
    """Per GPU in output order. Empty -> []. ParseError for a link line outside a GPU block, a
    link value that is neither a speed nor ``<inactive>``, or text with no GPU header."""
    text = V.check_text(text, cap=MAX_CHARS, what="nvidia-smi nvlink -s")
    out: list[GpuNvLinks] = []
    for raw in text.splitlines():
        ln = raw.rstrip()
        if not ln.strip() or _PROMPT.match(ln) or ln.startswith("#"):
            continue
        h = gpu_header(ln)
        if h is not None:
            out.append(GpuNvLinks(index=h[0], name=h[1], uuid=h[2], status="none", source="smi"))
            check_gpu_count(len(out), "nvidia-smi nvlink -s", running=True)
            continue
        if not out:
            raise ParseError(f"nvidia-smi nvlink -s: line before any GPU header: {ln.strip()[:80]!r}")
        g = out[-1]
        m = _LINK.match(ln)
        if m:
            g.links.append(_link(number(m.group("k")), m.group("v")))
            if len(g.links) > _MAX_LINKS:
                raise ParseError(f"nvidia-smi nvlink -s: more than {_MAX_LINKS} links for GPU {g.index}")
            g.status = "ok"
            continue
        if _MIG.search(ln):
            g.status, g.message = "mig", ln.strip()
            continue
        if NO_NVLINK.search(ln) and not g.links:
            g.status, g.message = "none", ln.strip()[:300]
            continue
        # any other line inside a block is the tool's own refusal or error for that GPU
        g.status, g.message = ("unsupported" if not g.links else g.status), ln.strip()[:300]
    return out


def gpu_header(ln: str) -> tuple[int, str | None, str | None] | None:
    """``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)`` -> (0, name, uuid); the UUID part is
    optional (``GPU 0: NVIDIA GB300``). None for any other line."""
    m = _HEADER.match(ln)
    if m is None:
        return None
    rest = m.group("rest").rstrip()
    uuid = None
    i = rest.find(" (UUID: ")
    if i >= 0 and rest.endswith(")") and ")" not in rest[i + 8:-1]:
        rest, uuid = rest[:i], rest[i + 8:-1]
    return number(m.group("i")), rest.strip() or None, uuid


def _link(k: int, value: str) -> NvLink:
    v = value.strip()
    m = _SPEED.match(v)
    if m:
        return NvLink(link=k, active=True, speed_gbps=float(m.group("n")))
    low = v.lower()
    if low in ("<inactive>", "inactive", "<disabled>", "disabled"):
        return NvLink(link=k, active=False)
    if V.is_na(v):
        return NvLink(link=k, active=NA)
    raise ParseError(f"nvidia-smi nvlink -s: link {k}: not a speed or state: {v[:60]!r}")
