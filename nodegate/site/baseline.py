"""Site checks against ``--baseline DIR`` (docs/baseline.md kind ``site``).

A live run records every site check's outcome in the node's bundle (``site.results``,
nodegate.site.recording); a baseline is such a run's bundles. After a node's last site test,
``merge`` compares this run's outcomes with the baseline's and adds to the node's
NodeComparison (nodegate.baseline): a check that PASSed on the baseline and FAILs now is a
regression (``test_regression_site[<node>]`` FAILs, changes.json lists it); one that FAILed and
PASSes now, or is new, or did not run now, is a change. As for nodegate's own checks, a check
that ERRORs now is not a regression (its own item already fails the run); and a baseline
without site results (taken before the site tests existed, or by ``--replay``) is named in the
item's message, not compared.
"""

from __future__ import annotations

from ..baseline.model import Change, Regression, Row


def compare(before: dict | None, after: dict[str, dict]) -> tuple[list[Regression], list[Change], list[Row], list[str]]:
    """(regressions, changes, rows, notes) of one node: ``before``/``after`` map a site result
    key (check id, plus the test's own parameters) to ``{check_id, outcome, title, message}``."""
    regs: list[Regression] = []
    changes: list[Change] = []
    rows: list[Row] = []
    if before is None:
        notes = ["the baseline bundle has no site results (taken without site tests, or by --replay)"]
        rows = [Row(k, "", "-", a["outcome"], "unknown", "site") for k, a in sorted(after.items())]
        return regs, changes, rows, notes
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        bo, ao = (b or {}).get("outcome", "-"), (a or {}).get("outcome", "-")
        if a is None:
            changes.append(Change("site", key, bo, None, note="site check not run in this run"))
            rows.append(Row(key, "", bo, "-", "change", "site"))
        elif b is None:
            changes.append(Change("site", key, None, ao, note="new site check (not in the baseline)"))
            rows.append(Row(key, "", "-", ao, "change", "site"))
        elif bo == "pass" and ao == "fail":
            title = a.get("title") or key
            msg = f"site check {key} ({title}) passed on the baseline and fails now"
            if a.get("message"):
                msg += f": {a['message'][:300]}"
            regs.append(Regression("site", key, bo, ao, msg))
            rows.append(Row(key, "", bo, ao, "regression", "site"))
        elif bo != ao:
            note = "fixed since the baseline" if (bo, ao) == ("fail", "pass") else f"{bo} -> {ao}"
            changes.append(Change("site", key, bo, ao, note=note))
            rows.append(Row(key, "", bo, ao, "change", "site"))
        else:
            rows.append(Row(key, "", bo, ao, "same", "site"))
    return regs, changes, rows, []


def merge(baseline_run, fleet, node: str, after: dict[str, dict]) -> bool:
    """Add the site comparison of ``node`` to its cached NodeComparison (what the
    ``test_regression_site`` item, changes.json and the HTML read). False when the node is not
    compared (not in both runs)."""
    c = baseline_run.comparison(node, fleet)
    if c is None or c.presence != "both" or node not in baseline_run.bundles:
        return False
    if ("site", None) in c.errors:   # not gathered now or in the baseline: the item says so
        return True
    regs, changes, rows, notes = compare(baseline_run.site_results(node), after)
    c.regressions += regs
    c.changes += changes
    c.rows += rows
    for n in notes:
        c.note("site", None, n)
    return True
