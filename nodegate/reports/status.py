"""Node status, the first thing every report says about a node: can it take work?

- ``accepted``: every item of the node's full suite ran and passed or was skipped by the spec;
- ``need action``: at least one item FAILed (the node violates its spec) or ERRORed (it could
  not be evaluated: the evidence must be obtained first);
- ``not evaluated``: nothing proven wrong, but not every item ran: its items were deselected
  (``-k``, ``-m``, ``--deselect``), not run (``-x``, ``--maxfail``, ``--lf``, Ctrl-C), or the node
  was never gathered because nothing selected it.

Decided from the node's records (results.jsonl) and the run's node list plus, per node, the
number of items collected for it before any deselection (``expected``; None when unknown, e.g.
on an xdist controller, where a node with records that all passed is then accepted).
"""

from __future__ import annotations

from collections import Counter

from .actions import ACTION_RANK, SEVERITY_RANK

ACCEPTED, NEED_ACTION, NOT_EVALUATED = "accepted", "need action", "not evaluated"
STATUSES = (NEED_ACTION, NOT_EVALUATED, ACCEPTED)


def node_status(counts: Counter, expected: int | None) -> str:
    """``counts``: outcome -> items of the node (pass, fail, skip, error)."""
    if counts["fail"] or counts["error"]:
        return NEED_ACTION
    ran = counts["pass"] + counts["skip"]
    if ran == 0 or (expected is not None and ran < expected):
        return NOT_EVALUATED
    return ACCEPTED


def not_evaluated_reason(counts: Counter, expected: int | None) -> str:
    """Why a node without FAIL or ERROR is not evaluated, from its counts alone (the run's own
    reason, FleetRun.not_evaluated(), is preferred where it has one)."""
    ran = counts["pass"] + counts["skip"]
    if ran == 0:
        return "NOT EVALUATED: no check judged (deselected, not run, or not gathered)"
    return (f"NOT EVALUATED: {expected - ran} of {expected} items not judged "
            "(deselected by -k/-m/--deselect, or not run: -x/--maxfail, interrupted)")


def sort_key(status: str, worst_severity: str, action: str, node: str) -> tuple:
    """Nodes that need action first, worst severity first, then the most disruptive action;
    then nodes not evaluated; accepted nodes last; by name within a rank."""
    return (STATUSES.index(status) if status in STATUSES else 0,
            -SEVERITY_RANK.get((worst_severity or "").lower(), 0), -ACTION_RANK.get(action, 0), node)


def verdict_line(counts: Counter) -> str:
    """``N accepted, N need action, N not evaluated`` (``counts``: status -> nodes)."""
    return (f"{counts[ACCEPTED]} accepted, {counts[NEED_ACTION]} need action, "
            f"{counts[NOT_EVALUATED]} not evaluated")

#: CSS class of each status in the HTML pages
STATUS_CLASS_NAMES = {ACCEPTED: "st-ok", NEED_ACTION: "st-bad", NOT_EVALUATED: "st-ne"}
