"""Where each node's spec came from, in words every report shows (``FleetRun.spec_source``).

The origins (``inventory <file>``, ``--spec <file>``, ``bundle meta.json``, built-in defaults) and
their one-line summary. Below the session (nodegate.session.specfile sets them) and the reports
(reports/terminal.py prints them), so the reports import no session module (issue 40).
"""

from __future__ import annotations

BUNDLE = "bundle meta.json"
BUNDLE_EMPTY = "bundle meta.json (no spec in it: built-in defaults)"
TARGET = "built-in defaults (--target has no spec; give --spec FILE)"
BUGREPORT = "built-in defaults (an nvidia-bug-report log has no spec; give --spec FILE)"


def summary(sources: dict[str, str], nodes: list[str] | None = None, max_names: int = 5) -> list[str]:
    """One line per distinct origin: ``inventory inv.yml: 12 node(s)``, or the node names when
    few (``bundle meta.json: a, b``), in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for n in nodes if nodes is not None else list(sources):
        if n in sources:
            groups.setdefault(sources[n], []).append(n)
    out = []
    for src, ns in groups.items():
        names = ", ".join(ns[:max_names]) + (f" and {len(ns) - max_names} more" if len(ns) > max_names else "")
        out.append(f"{src}: {len(ns)} node(s)" + (f" ({names})" if len(groups) > 1 else ""))
    return out


def from_bundle(sources: dict[str, str]) -> list[str]:
    """Nodes judged by the spec their own bundle carries."""
    return [n for n, s in sources.items() if s in (BUNDLE, BUNDLE_EMPTY)]
