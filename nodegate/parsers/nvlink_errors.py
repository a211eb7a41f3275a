"""Parser for ``nvidia-smi nvlink -e`` (``--errorcounters``): per GPU and link, the error counters.

Usage (evidence key ``smi.nvlink_errors``)::

    nvidia-smi nvlink -e          # also -e -i <n>

Shape: the GPU header of ``nvlink -s`` (``GPU <n>: <name> (UUID: ...)``, the UUID absent on some
drivers, e.g. ``GPU 0: NVIDIA GB300``), then per link ``Link <k>: <Counter> Errors: <count>``
lines, blocks separated by blank lines: ``Replay Errors``, ``Recovery Errors``, ``CRC Errors``
(R450-R580 on A100/H100/GB300); older drivers split CRC into ``CRC Flit Errors`` and
``CRC Data Errors``. Counter names are normalised: ``replay``, ``recovery``, ``crc``, ``crc_flit``,
``crc_data``; any other counter keeps its name snake-cased (e.g. ``rx_errors``; one that is not
a count, such as a bit error rate, is not kept). A value ``N/A`` is NA. MIG refusal and a header without links are as in nvlink_status. Sources: public
``nvidia-smi nvlink -e`` outputs of H100 (18 links), A100-SXM4-40GB (12 links, tab indentation),
GB300, and per-lane CRC forms (``CRC Flit Errors``/``CRC Data Errors``).

Schema::

    parse_nvlink_errors(text) -> [GpuNvLinks(index, name, uuid, links=[NvLink(link, errors={name: count})],
                                             status, message, source="smi")]

Example::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-abcdefab-cdef-abdc-abcd-abababababab)
             Link 0: Replay Errors: 0
             Link 0: Recovery Errors: 0
             Link 0: CRC Errors: 3
    -> [GpuNvLinks(index=0, links=[NvLink(0, errors={"replay": 0, "recovery": 0, "crc": 3})])]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import GpuNvLinks, NvLink
from . import _values as V
from ._limits import check_gpu_count, number
from .nvlink_status import _MAX_LINKS, _MIG, _PROMPT, MAX_CHARS, NO_NVLINK, gpu_header

# linear: the name cannot hold ':' (greedy = lazy here) and the value is stripped in code (the
# former ``:\s*(?P<v>\S.*?)\s*$`` backtracked quadratically over a run of spaces)
_COUNTER = re.compile(r"^\s+Link (?P<k>\d{1,20}): (?P<name>[A-Za-z][A-Za-z0-9 /()_-]*):(?P<v>.*\S)")

#: the tool's counter label (lower case, without a trailing "errors") -> canonical name
_NAMES = {"replay": "replay", "recovery": "recovery", "crc": "crc", "crc flit": "crc_flit",
          "crc data": "crc_data"}


def counter_name(label: str) -> str:
    """``Replay Errors`` -> ``replay``, ``CRC Flit Errors`` -> ``crc_flit``, others snake-cased."""
    s = label.strip().lower()
    for suffix in ("errors", "error"):   # "\s+errors?$" without a regex: a run of spaces stays linear
        head = s[:-len(suffix)]
        if s.endswith(suffix) and head[-1:].isspace():
            s = head.rstrip()
            break
    return _NAMES.get(s) or re.sub(r"[^a-z0-9]+", "_", s).strip("_")


def parse_nvlink_errors(text: str | bytes) -> list[GpuNvLinks]:
    """Per GPU in output order, links in first-seen order. Empty -> []. ParseError for a counter
    line outside a GPU block, a count that is not a number (or N/A), or unknown text with no
    GPU header."""
    text = V.check_text(text, cap=MAX_CHARS, what="nvidia-smi nvlink -e")
    out: list[GpuNvLinks] = []
    for raw in text.splitlines():
        ln = raw.rstrip()
        if not ln.strip() or _PROMPT.match(ln) or ln.startswith("#"):
            continue
        h = gpu_header(ln)
        if h is not None:
            out.append(GpuNvLinks(index=h[0], name=h[1], uuid=h[2], status="none", source="smi"))
            check_gpu_count(len(out), "nvidia-smi nvlink -e", running=True)
            continue
        if not out:
            raise ParseError(f"nvidia-smi nvlink -e: line before any GPU header: {ln.strip()[:80]!r}")
        g = out[-1]
        m = _COUNTER.match(ln)
        if m:
            k = number(m.group("k"))
            link = next((x for x in g.links if x.link == k), None)
            if link is None:
                link = NvLink(link=k)
                g.links.append(link)
                if len(g.links) > _MAX_LINKS:
                    raise ParseError(f"nvidia-smi nvlink -e: more than {_MAX_LINKS} links for GPU {g.index}")
            name, v = counter_name(m.group("name")), m.group("v").strip()
            prev = link.errors.get(name)
            if name in _NAMES.values():   # a counter the checks judge: a number or N/A, else ParseError
                link.errors[name] = V.int_value(v, field=f"link {k} {m.group('name')}")
            elif re.fullmatch(r"\d+", v) or V.is_na(v):
                link.errors[name] = V.int_value(v, field=name)
            if prev is not None and prev != link.errors[name]:   # never "last one wins"
                raise ParseError(f"nvidia-smi nvlink -e: GPU {g.index} link {k} {name} given twice "
                                 f"({prev} and {link.errors[name]})")
            # other values (newer drivers add rates such as "Effective BER: 15e-255") are not kept
            g.status = "ok"
            continue
        if _MIG.search(ln):
            g.status, g.message = "mig", ln.strip()
            continue
        if NO_NVLINK.search(ln) and not g.links:   # a PCIe board (corpus 119): as nvlink_status
            g.status, g.message = "none", ln.strip()[:300]
            continue
        g.status, g.message = ("unsupported" if not g.links else g.status), ln.strip()[:300]
    return out
