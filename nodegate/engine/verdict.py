"""The node verdict: THE one function that turns a node's results into whether it can take work.

Every run mode (live, --replay, shards, -k/-m/--deselect/--lf/-x, site-only test paths,
--baseline, --burn-in, --perf, xdist) ends here: the reports (nodegate.reports.render) call
``node_verdict`` for each node from its records, and the gatherer (nodegate.run) asks
``selection_reasons`` why a node was not evaluated. Pure: imports no pytest, gatherer or report.

- ``accepted``: every acceptance check of the catalog (nodegate.checks, docs/checks.md) ran for
  the node, and every item of the node's suite ran and passed or was skipped by the spec;
- ``need action``: at least one item FAILed (the node violates its spec) or ERRORed (it could
  not be evaluated: the evidence must be obtained first);
- ``not evaluated``: nothing proven wrong, but not everything was proven: items deselected
  (``-k``, ``-m``, ``--deselect``, ``--lf``), not run (``-x``, ``--maxfail``, Ctrl-C), test paths that
  leave catalog checks out (``nodegate site/``), or the node never gathered because nothing
  selected it. The reason always says which.

Decided from the node's records (results.jsonl), the run's selection (``selection_reasons``:
FleetRun's selected and run item counts), the number of items collected for the node before
any deselection (``expected``; None when unknown, e.g. on an xdist controller) and the catalog's
check ids (issue 30: a node is accepted only when everything it was asked to prove was proven).
"""

from __future__ import annotations

from collections import Counter

ACCEPTED, NEED_ACTION, NOT_EVALUATED = "accepted", "need action", "not evaluated"
STATUSES = (NEED_ACTION, NOT_EVALUATED, ACCEPTED)


#: why a node with no selected item is not evaluated (FleetRun.not_evaluated)
NO_SELECTED_ITEM = "NOT EVALUATED: no selected item (deselected by -k/-m/--lf/--deselect)"
#: why a node of a sharded run whose shard was never collected is not evaluated
NOT_COLLECTED = ("NOT EVALUATED: its items were not collected: the run stopped before this node's shard "
                 "(-x/--maxfail, interrupted)")


def node_status(counts: Counter, expected: int | None) -> str:
    """``counts``: outcome -> items of the node (pass, fail, skip, error). The status from the
    counts alone; ``verdict`` adds the run's selection and the catalog."""
    if counts["fail"] or counts["error"]:
        return NEED_ACTION
    ran = counts["pass"] + counts["skip"]
    if ran == 0 or (expected is not None and ran < expected):
        return NOT_EVALUATED
    return ACCEPTED


def missing_checks(judged, catalog) -> list[str]:
    """The catalog's check ids (in catalog order) with no record of the node (``judged``: the
    check ids of its records)."""
    got = set(judged)
    return [c for c in catalog if c not in got]


def catalog_reason(missing: list[str], catalog) -> str:
    """``NOT EVALUATED: 12 of 40 acceptance checks did not run for this node (NG-..., ...)``."""
    shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
    return (f"NOT EVALUATED: {len(missing)} of {len(tuple(catalog))} acceptance checks of the catalog did not run "
            f"for this node ({shown}): the run was narrowed (test paths, -k/-m/--deselect/--lf, -x/--maxfail)")


#: the reason of a node whose every item its spec skipped (issue 37.5); such a run exits 1
JUDGED_ON_NOTHING = "NOT EVALUATED: no acceptance check judged this node"


def verdict(counts: Counter, expected: int | None, *, run_reason: str | None = None, judged=(),
            catalog=None, not_applicable=()) -> tuple[str, str]:
    """(status, reason) of one node; reason is "" unless the status is not evaluated.

    ``counts``: outcome -> the node's items; ``expected``: items collected for it before any
    deselection (None: unknown); ``run_reason``: the run's own reason (``selection_reasons``);
    ``judged``: check ids of the node's records; ``catalog``: every acceptance check id that
    must have run for the node to be accepted (None: not required, the renderer's unit tests);
    ``not_applicable``: catalog ids that cannot have run for this node (``not_applicable_to``)."""
    status = node_status(counts, expected)
    if status == NEED_ACTION:
        return status, ""
    if run_reason:
        return NOT_EVALUATED, run_reason
    if status == NOT_EVALUATED:
        return status, not_evaluated_reason(counts, expected)
    skip = set(not_applicable)
    missing = [c for c in missing_checks(judged, catalog) if c not in skip] if catalog is not None else []
    if missing:
        return NOT_EVALUATED, catalog_reason(missing, catalog)
    if counts["pass"] == 0:
        # issue 37.5: an inventory that skips every check gave "accepted" with 0 checks judged;
        # a node is accepted only when acceptance checks actually judged it (each SKIP names the
        # spec key that turned its check off and the file that set it)
        return NOT_EVALUATED, (f"{JUDGED_ON_NOTHING}: all {counts['skip']} "
                               "item(s) were skipped by its spec (each SKIP names the key and the file)")
    return ACCEPTED, ""


def selection_reasons(nodes, items_selected: dict, items_ran: dict, not_collected=frozenset()) -> dict[str, str]:
    """Node -> why the run's selection leaves it NOT EVALUATED (FleetRun.not_evaluated): no
    selected item, selected items that did not run (-x, --maxfail, an interrupt,
    --collect-only), or, in a sharded run, items never collected (``not_collected``: the run
    stopped before the node's shard; a node the selection was learned for before, ``items_selected``,
    keeps that reason)."""
    out = {}
    for n in nodes:
        want, ran = items_selected.get(n, 0), items_ran.get(n, 0)
        if n in not_collected and n not in items_selected:
            out[n] = NOT_COLLECTED
        elif want == 0:
            out[n] = NO_SELECTED_ITEM
        elif ran < want:
            out[n] = (f"NOT EVALUATED: {want - ran} of {want} selected items did not run "
                      "(-x/--maxfail, interrupted, or --collect-only)")
    return out


def catalog_ids() -> tuple[str, ...]:
    """Every acceptance check id of the catalog (nodegate.checks.load_all: the checks this
    process declares; a synthetic test suite's own when it replaced them)."""
    from ..checks import load_all
    return tuple(load_all())


def not_evaluated_reason(counts: Counter, expected: int | None) -> str:
    """Why a node without FAIL or ERROR is not evaluated, from its counts alone (the run's own
    reason, FleetRun.not_evaluated(), is preferred where it has one)."""
    ran = counts["pass"] + counts["skip"]
    if ran == 0:
        return "NOT EVALUATED: no check judged (deselected, not run, or not gathered)"
    return (f"NOT EVALUATED: {expected - ran} of {expected} items not judged "
            "(deselected by -k/-m/--deselect, or not run: -x/--maxfail, interrupted)")


def not_applicable_to(gpus_expected: str, catalog) -> tuple[str, ...]:
    """The catalog's per-GPU check ids when the node's spec says it has no GPUs (``gpu.count: 0``,
    a login or storage node: its records carry ``gpus_expected`` "0"): no GPU, no per-GPU item.
    Every other node must have a record of every catalog check to be accepted."""
    if str(gpus_expected).strip() != "0" or catalog is None:
        return ()
    from ..checks import load_all
    defs = load_all()
    return tuple(c for c in catalog if c in defs and defs[c].scope == "gpu")


#: the one function of the node verdict (issue 40 item 1), under its name in the engine
node_verdict = verdict
