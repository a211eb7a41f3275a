"""Node status as the reports show it: its order (``sort_key``), the verdict line and CSS classes.

The status itself is decided by nodegate.engine.verdict (``verdict``/``node_verdict``: accepted,
need action, not evaluated, with the reason), THE one place for every run mode; its names are
re-exported here for the renderers.
"""

from __future__ import annotations

from collections import Counter

from ..engine.verdict import (ACCEPTED, JUDGED_ON_NOTHING, NEED_ACTION, NO_SELECTED_ITEM,  # noqa: F401
                              NOT_EVALUATED, STATUSES, catalog_ids, catalog_reason, missing_checks,
                              node_status, not_applicable_to, not_evaluated_reason,
                              selection_reasons, verdict)
from .actions import ACTION_RANK, SEVERITY_RANK


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
