"""Expected outcomes: a profile's ``expect:`` table expanded to one outcome per suite test id.

Test ids are the suite's: ``test_<check name>[<node>]`` for node checks and
``test_<check name>[<node>-gpu<i>]`` for GPU checks (``i`` = the suite's GPU slot index: GPUs as
nvidia-smi enumerates them, then missing GPUs after the last one; nodegate/checks/slots.py).

Keys of ``expect`` (most specific wins):
``"<name>[gpu<i>]"`` > ``"<name>"`` > ``"gpu:*"`` / ``"node:*"`` > ``"*"``.
"""

from __future__ import annotations

from typing import Iterable

from .profile import Profile, ProfileError


def registry_checks() -> list[tuple[str, str]]:
    """(name, scope) of every registered check (nodegate.checks.load_all)."""
    from nodegate.checks import load_all
    return sorted((c.name, c.scope) for c in load_all().values())


def gpu_slot_count(prof: Profile) -> int:
    """GPU items the suite creates for this node: spec gpu.count (0: a node without GPUs, none),
    else the GPUs present (min 1)."""
    n = (prof.spec.get("gpu") or {}).get("count")
    if n is not None:
        return int(n)
    return max(1, prof.data["gpus"]["count"] - len(prof.data["gpus"]["missing"]))


def expand(prof: Profile, node: str, checks: Iterable[tuple[str, str]], *, gpu_slots: int | None = None,
           all_outcome: str | None = None) -> dict[str, str]:
    """{test id: outcome} for ``node`` built from ``prof``. ``all_outcome`` overrides every item
    (e.g. "error" for an unreachable node). Raises ProfileError for keys naming no check."""
    checks = list(checks)
    names = {n for n, _ in checks}
    exp = prof.expect
    for k in exp:
        base = k.split("[", 1)[0]
        if k not in ("*", "gpu:*", "node:*") and base not in names:
            raise ProfileError(f"{prof.name}: expect key {k!r} names no registered check")
    slots = gpu_slots if gpu_slots is not None else gpu_slot_count(prof)
    out: dict[str, str] = {}
    for name, scope in checks:
        if scope == "node":
            tid = f"test_{name}[{node}]"
            out[tid] = all_outcome or exp.get(name, exp.get("node:*", exp.get("*", "pass")))
        else:
            for i in range(slots):
                tid = f"test_{name}[{node}-gpu{i}]"
                out[tid] = all_outcome or exp.get(f"{name}[gpu{i}]", exp.get(name, exp.get("gpu:*", exp.get("*", "pass"))))
    return out
