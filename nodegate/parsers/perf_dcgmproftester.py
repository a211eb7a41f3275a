"""Parser for DCGM's ``dcgmproftester`` (``dcgmproftester11/12/13``) output: the FLOPS it reached
per GPU and test id.

Usage (evidence keys ``perf.dcgmproftester.t<id>``)::

    dcgmproftester12 --no-dcgm-validation -t 1004 -d 15       # 1004 tensor, 1006 FP64, 1007 FP32, 1008 FP16

Layouts (one line per second and worker):

- DCGM 2.x: ``TensorEngineActive: generated ???, dcgm 0.000 (27334.5 gflops)`` (no worker: GPU 0);
- DCGM 3.x: ``Worker 0:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 (12238.2 gflops).``;
- DCGM 4.x with ``--cublas``: ``Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0
  (1.89e+05 gflops).`` (dcgmproftester/PhysicalGpu.cpp: ``{:#.3}``, three significant digits);
- DCGM 4.x without ``--cublas``: ``Worker 0:0[1007]: Fp32EngineActive: target max, dcgm 0`` and no
  figure at all (DCGM issue 239): the test ran, nothing was measured.

``Worker <gpu>:<worker>[<field id>]`` names the DCGM GPU id and the test (field 1004
PIPE_TENSOR_ACTIVE, 1006 FP64, 1007 FP32, 1008 FP16: dcgmlib/dcgm_fields.h). The closing ``GPU 0,
TestField 1007 test PASSED.`` / ``All Tests Passed.`` are its own verdicts (recorded, not figures).
Figures go through the bounded reader (``_figures.figure``).

Schema::

    parse_dcgmproftester(text) -> ProfRun(gflops={(gpu, field): [float]}, lines_without_figure=
        {(gpu, field): count}, verdicts={(gpu, field): "PASSED"|"FAILED"}, fields=[int], bad=[str],
        errors=[str], notes=[str])

Example::

    Worker 0:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 (12254.6 gflops).
    -> ProfRun(gflops={(0, 1007): [12254.6]}, ...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from ._figures import InvalidFigure, figure
from ._limits import MAX_GPUS
from ._perftext import prepare

MAX_CHARS = 8 * 1024 * 1024
MAX_LINES = 200_000
_WORKER = re.compile(r"^Worker ([0-9]{1,4}):[0-9]{1,4} ?\[([0-9]{4})\]: ?(\w{1,40})")
_OLD = re.compile(r"^(TensorEngineActive|Fp64EngineActive|Fp32EngineActive|Fp16EngineActive):")
_GF = re.compile(r"\(([0-9eE.+-]{1,40}) gflops\)")
_VERDICT = re.compile(r"GPU ([0-9]{1,4}), TestField ([0-9]{4}) test (PASSED|FAILED)")
_OLD_FIELD = {"TensorEngineActive": 1004, "Fp64EngineActive": 1006, "Fp32EngineActive": 1007, "Fp16EngineActive": 1008}
_ERROR = re.compile(r"\bERROR\b|Error -?\d+ from|returned -\d+|Unable to|failed", re.I)


@dataclass
class ProfRun:
    gflops: dict = field(default_factory=dict)
    lines_without_figure: dict = field(default_factory=dict)
    verdicts: dict = field(default_factory=dict)
    fields: list[int] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def parse_dcgmproftester(text: str | bytes) -> ProfRun:
    """Empty -> ProfRun() (nothing measured). ParseError past the caps."""
    p = prepare(text, cap=MAX_CHARS, what="dcgmproftester")
    run = ProfRun(notes=list(p.notes))
    for n, line in enumerate(p.text.replace("\r", "\n").split("\n")):
        if n > MAX_LINES:
            raise ParseError("dcgmproftester: too many lines")
        st = line.strip()
        if not st:
            continue
        if m := _VERDICT.search(st):
            run.verdicts[(int(m.group(1)), int(m.group(2)))] = m.group(3)
            continue
        key = None
        if m := _WORKER.match(st):
            key = (int(m.group(1)), int(m.group(2)))
        elif m := _OLD.match(st):
            key = (0, _OLD_FIELD[m.group(1)])
        if key is None:
            if _ERROR.search(st) and len(run.errors) < 20:
                run.errors.append(st[:300])
            continue
        if "Message:" in st or "Slept" in st:
            continue
        if key[1] not in run.fields:
            run.fields.append(key[1])
        if len({k[0] for k in run.gflops} | {key[0]}) > MAX_GPUS:
            raise ParseError("dcgmproftester: more GPUs than any node has")
        g = _GF.search(st)
        if g is None:
            run.lines_without_figure[key] = run.lines_without_figure.get(key, 0) + 1
            continue
        try:
            run.gflops.setdefault(key, []).append(float(figure(g.group(1), what="gflops")))
        except InvalidFigure as e:
            if len(run.bad) < 50:
                run.bad.append(f"GPU {key[0]} test {key[1]}: {e}")
    return run
