"""One GPU check on one node, its GPUs folded: the result of the item ``test_x[node]``.

A GPU check is judged per GPU (``evaluate_item`` on each slot: the same code path, the same
per-GPU records). Presented as one pytest item per check and node (issue 40 item 5: pytest's
per-item machinery was most of a replay's cost), the item's outcome is the worst of its GPUs'
by the one rank of every fold (``nodegate.outcomes.OUTCOME_RANK``: fail > error > skip > pass,
the HTML matrix's cell too), and its message names every GPU that FAILed or ERRORed (index, bus
id, serial) with that GPU's own message. The per-GPU records travel with it (``record["parts"]``):
results.jsonl, JUnit, HTML and RMA get one record per (check, GPU) exactly as with an item per GPU,
and the node verdict (``node_verdict``) is decided from those, so it cannot depend on the fold.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..outcomes import Outcome, Result, worst_outcome
from .evaluate import ItemResult, item_record

#: the GPUs a folded message names one by one at most (the rest counted: a message stays bounded)
NAMED_GPUS = 16


@dataclass
class FoldedResult:
    """A GPU check's item on one node: ``result`` (the worst of ``parts``, its message naming the
    GPUs that failed or errored), ``parts`` (each GPU's ItemResult, slot order), ``record`` (the
    item's own record, ``parts``: the per-GPU records), ``properties`` (the JUnit properties of
    the GPU that decided the outcome), ``remediation`` (that GPU's) and ``surplus`` (as
    ``ItemResult.surplus``, from any part)."""

    check: object
    result: Result
    parts: list
    record: dict
    properties: list
    remediation: str
    surplus: int | None = None


def gpu_name(rec: dict, slot=None) -> str:
    """``gpu3 (0000:1b:00.0, serial 1650924060001)``: a GPU as every per-GPU message names it; a
    GPU nvidia-smi does not list (no ``gpu_index``) by its item label, ``slot``'s (checks.slots)."""
    bits = [b for b in (rec.get("pci_bus_id") or "", f"serial {rec['gpu_serial']}" if rec.get("gpu_serial") else "") if b]
    idx = rec.get("gpu_index", "")
    if idx == "" and slot is not None:
        idx = slot.index
    return f"gpu{idx}" + (f" ({', '.join(bits)})" if bits else "")


def gpu_ranges(indices: list[str]) -> str:
    """``["0", "1", "2", "5"]`` -> ``0..2,5``: the GPUs a group stands for (a folded message's
    ``gpu0..2,5``; the JUnit's counted testcase ``test_x[NODE-gpu0..2,5]``, reports.junit).
    Indices that are not decimal numbers are left out; none: ``""``."""
    nums = sorted(int(i) for i in indices if str(i).isdecimal())
    out: list[tuple[int, int]] = []
    for n in nums:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return ",".join(f"{a}..{b}" if b > a else str(a) for a, b in out)


def _named(p: ItemResult, outcome: str) -> str:
    """A failing GPU's own message, its GPU named first unless the message names it already
    (most per-GPU messages do: ``GPU 2 (0000:4c:00.0, serial ...): ...``)."""
    rec, msg = p.record, p.result.message
    bus, idx = rec.get("pci_bus_id") or "", str(rec.get("gpu_index", ""))
    err = "could not evaluate: " if p.result.outcome is Outcome.ERROR and outcome == "fail" else ""
    low = msg.lower()
    if (bus and bus.lower() in low) or (idx and (f"gpu {idx}" in low or f"gpu{idx}" in low)):
        return f"{err}{msg}"
    return f"{gpu_name(rec, p.slot)}: {err}{msg}"


def fold_message(parts: list[ItemResult], outcome: str) -> str:
    """The folded item's message: the GPUs that FAILed, then those that ERRORed, each named with
    its own message; a SKIP or PASS says which GPUs and, for a SKIP, why (one message when the
    GPUs agree, each GPU's otherwise)."""
    n = len(parts)
    if outcome in ("fail", "error"):
        bad = [p for p in parts if p.result.outcome is Outcome.FAIL] + \
              [p for p in parts if p.result.outcome is Outcome.ERROR]
        said = [_named(p, outcome) for p in bad[:NAMED_GPUS]]
        more = f"; and {len(bad) - NAMED_GPUS} more GPU(s)" if len(bad) > NAMED_GPUS else ""
        nf = sum(1 for p in parts if p.result.outcome is Outcome.FAIL)
        ne = len(bad) - nf
        head = ", ".join(x for x in (f"{nf} of {n} GPU(s) failed" if nf else "",
                                     f"{ne} of {n} could not be evaluated" if ne else "") if x)
        return f"{head}: " + "; ".join(said) + more
    same = [p for p in parts if p.result.outcome.value == outcome]
    msgs = list(dict.fromkeys(p.result.message for p in same))
    where = gpu_ranges([p.record.get("gpu_index", "") for p in same])
    where = f"gpu{where}" if where else "gpus"
    if outcome == "skip":
        if len(msgs) == 1:
            return f"{msgs[0]} ({where})"
        return "; ".join(f"{gpu_name(p.record, p.slot)}: {p.result.message}" for p in same[:NAMED_GPUS])
    return f"{len(same)} of {n} GPU(s) passed ({where})" + (f": {msgs[0]}" if len(msgs) == 1 and msgs[0] else "")


def fold(parts: list[ItemResult], node: str) -> FoldedResult:
    """The item of one GPU check on ``node`` from its GPUs' results (``parts``, non-empty, each
    from ``evaluate_item``). Decides nothing a part did not: the outcome is the worst part's."""
    outcome = worst_outcome([p.result.outcome.value for p in parts])
    first = next(p for p in parts if p.result.outcome.value == outcome)
    message = fold_message(parts, outcome)
    worst = [p for p in parts if p.result.outcome.value == outcome]
    res = Result(Outcome(outcome), expected=first.result.expected,
                 observed="; ".join(dict.fromkeys(p.result.observed for p in worst if p.result.observed))[:2000],
                 message=message, evidence="\n".join(p.result.evidence for p in worst if p.result.evidence)[:4000],
                 evidence_keys=first.result.evidence_keys, details=first.result.details)
    cdef = first.check
    rec0 = first.record
    record = item_record(node, res, check_id=cdef.id, check_name=cdef.name, title=cdef.title, severity=cdef.severity,
                         scope=cdef.scope, remediation=first.remediation, driver_version=rec0.get("driver_version", ""),
                         action=rec0.get("action", ""), bundle_dir=rec0.get("bundle_dir", ""),
                         spec_source=rec0.get("spec_source", ""), gpus_expected=rec0.get("gpus_expected", ""))
    record["parts"] = [p.record for p in parts]
    surplus = next((p.surplus for p in parts if p.surplus is not None), None)
    return FoldedResult(cdef, res, list(parts), record, list(first.properties), first.remediation, surplus)
