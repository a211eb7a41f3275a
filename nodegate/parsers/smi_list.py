"""Parser for ``nvidia-smi -L``: one line per physical GPU, indented lines for its MIG devices.

Usage::

    nvidia-smi -L

Shape: ``GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)``; under a GPU in MIG mode, one
``  MIG 3g.40gb     Device  0: (UUID: MIG-...)`` line per MIG device (corpus 120). MIG lines
are not GPUs. A GPU with MIG lines has MIG enabled; one without them may still have MIG
enabled with no instance created, so ``mig_mode_current`` is True or None (unknown), never False.
Lines starting with ``#`` (a pasted capture's comments) are skipped.

Schema::

    parse_smi_list(text) -> [GpuFacts(index, name, uuid, mig_mode_current True|None, source="smi_list")]
    mig_devices(text)     -> {gpu index: [(profile, device index, MIG UUID), ...]}

Example::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)
      MIG 3g.40gb     Device  0: (UUID: MIG-00000000-0000-0000-0000-000000000000)
    -> [GpuFacts(index=0, name="NVIDIA H100 80GB HBM3", uuid="GPU-0000...", mig_mode_current=True)]
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import GpuFacts
from . import _values as V
from ._limits import check_gpu_count, number

_GPU = re.compile(r"^GPU (?P<i>\d+): (?P<name>.+?) \(UUID: (?P<uuid>[^)]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG (?P<profile>\S+)\s+Device\s+(?P<d>\d+): \(UUID: (?P<uuid>[^)]+)\)\s*$")


def _lines(text):
    for raw in text.splitlines():
        ln = raw.rstrip()
        if ln.strip() and not ln.lstrip().startswith("#"):
            yield ln


def parse_smi_list(text: str | bytes) -> list[GpuFacts]:
    """Physical GPUs in order. Empty -> []. ParseError for a line that is neither form."""
    text = V.check_text(text, cap=1024 * 1024, what="nvidia-smi -L")
    out: list[GpuFacts] = []
    for ln in _lines(text):
        m = _GPU.match(ln)
        if m:
            out.append(GpuFacts(index=number(m.group("i")), name=m.group("name"), uuid=m.group("uuid"), source="smi_list"))
            check_gpu_count(len(out), "nvidia-smi -L", running=True)
            continue
        if _MIG.match(ln) and out:
            out[-1].mig_mode_current = True
            continue
        raise ParseError(f"nvidia-smi -L: unexpected line: {ln.strip()[:80]!r}")
    return out


def mig_devices(text: str | bytes) -> dict[int, list[tuple[str, int, str]]]:
    """MIG devices per GPU index (same input rules as parse_smi_list)."""
    text = V.check_text(text, cap=1024 * 1024, what="nvidia-smi -L")
    out: dict[int, list] = {}
    gpu = None
    for ln in _lines(text):
        m = _GPU.match(ln)
        if m:
            gpu = number(m.group("i"))
            out[gpu] = []
            continue
        m = _MIG.match(ln)
        if m and gpu is not None:
            out[gpu].append((m.group("profile"), number(m.group("d")), m.group("uuid")))
    return out
