"""Check declarations and evaluation.

A check is declared once (id, title, scope, severity, evidence keys, remediation) with a pure
rule ``(facts: NodeFacts, spec: Spec, gpu: GpuSlot | None) -> Result``. Rules raise nothing
but ``EvidenceError`` (turned into ERROR here); suites only call ``evaluate`` and assert.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from ..errors import EvidenceError
from ..outcomes import Outcome, Result
from .slots import GpuSlot, gpu_slots, slot_conflict  # noqa: F401  (re-exported: the suites use them)

SEVERITIES = ("critical", "major", "minor")


@dataclass(frozen=True)
class CheckDef:
    id: str                 # stable, e.g. "NG-PCIE-001"
    name: str               # suite test name without "test_", e.g. "pcie_link"
    title: str
    scope: str              # "node" | "gpu"
    severity: str           # critical | major | minor
    evidence: tuple[str, ...]
    remediation: str
    rule: str               # one-paragraph rule as in the catalog
    func: Callable
    action: str = ""        # RMA-sheet action when a FAIL does not name one (reports/actions.ACTIONS)
    gpu_less: bool = False  # applies to a node whose spec says it has no GPUs (gpu.count: 0)


REGISTRY: dict[str, CheckDef] = {}

# Modules holding check declarations (one per area); imported by load_all().
CHECK_MODULES: tuple[str, ...] = ("driver", "persistence", "modules", "dkms", "flavor", "gsp", "pcie", "clocks",
                                  "ecc", "kernel_log", "inventory",
                                  # issue 19: fabric, InfiniBand, PCIe errors, configuration, CUDA
                                  "nvlink", "fabric", "infiniband", "pcie_errors", "config", "cuda")


def check(*, id: str, name: str, title: str, scope: str, severity: str, evidence: tuple[str, ...],
          remediation: str, rule: str, action: str = "", gpu_less: bool = False):
    """Decorator declaring a check. Duplicate ids or names are a programming error."""
    if scope not in ("node", "gpu"):
        raise ValueError(scope)
    if severity not in SEVERITIES:
        raise ValueError(severity)

    def deco(fn):
        if id in REGISTRY or any(c.name == name for c in REGISTRY.values()):
            raise ValueError(f"duplicate check {id}/{name}")
        REGISTRY[id] = CheckDef(id, name, title, scope, severity, tuple(evidence), remediation, rule, fn, action,
                                gpu_less)
        return fn

    return deco


_LOADED: tuple[str, ...] | None = None   # the CHECK_MODULES tuple already imported


def load_all() -> dict[str, CheckDef]:
    """The registry, every module of ``CHECK_MODULES`` imported. Called once per evaluated
    item: the imports run again only when ``CHECK_MODULES`` was replaced (tests do)."""
    global _LOADED
    if _LOADED is not CHECK_MODULES:
        for m in CHECK_MODULES:
            importlib.import_module(f"{__name__}.{m}")
        _LOADED = CHECK_MODULES
    return REGISTRY


def by_name(name: str) -> CheckDef:
    load_all()
    for c in REGISTRY.values():
        if c.name == name:
            return c
    raise KeyError(name)


def evaluate(check_id: str, facts, spec, gpu: GpuSlot | None = None) -> Result:
    """Run one check. ``spec.checks.skip`` naming its id or name -> SKIP; ``gpu.count: 0`` -> SKIP
    for every check not declared ``gpu_less``; EvidenceError -> ERROR naming the key."""
    c = load_all()[check_id]
    # spec checks.skip: the operator declared the check not applicable (SKIP naming the key).
    skip = getattr(getattr(spec, "checks", None), "skip", None) or ()
    if c.id in skip or c.name in skip:
        return Result.skipped(f"checks.skip lists {c.id if c.id in skip else c.name}: not applicable to this node",
                              expected="checks.skip")
    if not c.gpu_less and getattr(getattr(spec, "gpu", None), "count", None) == 0:
        # a login, storage or service node: the spec says it has no GPUs, so a GPU or driver
        # check does not apply (SKIP naming the key); NG-INV-001 still proves there is none
        return Result.skipped(f"gpu.count=0: the spec says this node has no GPUs; {c.name} does not apply",
                              expected="gpu.count 0")
    try:
        clash = slot_conflict(facts, gpu) if c.scope == "gpu" else None
        if clash:
            # two GPUs with one bus id, serial or UUID: a rule matching by bus id would judge one
            # GPU's facts for both (NG-INV-001 FAILs naming them)
            return Result.errored(f"{clash}: this GPU's evidence cannot be told apart from the other's; "
                                  "see NG-INV-001", evidence_keys=("smi.qx",))
        res = c.func(facts, spec, gpu) if c.scope == "gpu" else c.func(facts, spec)
    except EvidenceError as e:
        res = Result.errored(str(e), evidence_keys=(e.key,))
    except Exception as e:  # noqa: BLE001 - a bug in one rule must not stop the run: ERROR, never PASS
        import traceback
        res = Result.errored(f"internal error in check {check_id}: {type(e).__name__}: {e}",
                             evidence="".join(traceback.format_exception(e))[-2000:])
    if not isinstance(res, Result):
        res = Result.errored(f"check {check_id} returned {type(res).__name__}, not a Result")
    # the remediation is its own field (CheckDef.remediation, the records' ``remediation``): never
    # appended to the message (issue 32: "...above 0 Remediation: Reseat..." in one field)
    return res

