"""Localisation a vendor accepts, from one node's judged items (docs/perf.md "Localisation").

From a device-to-device matrix: a GPU whose row AND column are low (at least half of the cells it
sends and half it receives FAIL) is named as the faulty GPU; a low cell outside such a row and
column names the link pair. All-reduce low while every P2P cell is fine names the node's fabric
(NVSwitch / topology), not a GPU.

``localise(items)`` rewrites the messages of the affected items in place and returns one summary
item per P2P kind (subject ``node``) that says what was found.
"""

from __future__ import annotations

from collections import defaultdict

from ..outcomes import Outcome
from .rules import Item


def localise(items: list[Item]) -> list[Item]:
    out: list[Item] = []
    links = defaultdict(list)
    for it in items:
        if it.gpu is not None and it.peer is not None and it.outcome in (Outcome.PASS, Outcome.FAIL):
            links[(it.key, it.metric, it.kind)].append(it)
    for (key, metric, kind), cells in sorted(links.items(), key=lambda kv: str(kv[0])):
        gpus = sorted({c.gpu for c in cells} | {c.peer for c in cells})
        bad = [c for c in cells if c.outcome is Outcome.FAIL]
        culprits = []
        for g in gpus:
            row = [c for c in cells if c.gpu == g]
            col = [c for c in cells if c.peer == g]
            if row and col and 2 * sum(c.outcome is Outcome.FAIL for c in row) >= len(row) \
                    and 2 * sum(c.outcome is Outcome.FAIL for c in col) >= len(col):
                culprits.append(g)
        pairs = [c for c in bad if c.gpu not in culprits and c.peer not in culprits]
        for c in bad:
            if c.gpu in culprits or c.peer in culprits:
                g = c.gpu if c.gpu in culprits else c.peer
                c.message = f"localised to GPU {g} (its row and column are low): {c.message}"
            else:
                c.message = f"localised to the link GPU {c.gpu} -> GPU {c.peer} (a single low cell): {c.message}"
        first = cells[0]
        summary = Item(first.node, first.tool, key, f"{metric}_locate", f"{first.label}: localisation", "node",
                       Outcome.FAIL if bad else Outcome.PASS, "", kind=kind)
        if not bad:
            summary.message = f"all {len(cells)} cells of the {len(gpus)}x{len(gpus)} matrix pass"
        else:
            parts = [f"GPU {g} (row and column low)" for g in culprits]
            parts += [f"link GPU {c.gpu} -> GPU {c.peer}" for c in pairs[:10]]
            summary.message = f"{len(bad)} of {len(cells)} cells low: " + "; ".join(parts)
            summary.rules = sorted({r for c in bad for r in c.rules})
        out.append(summary)
    p2p_ok = [s for s in out if s.outcome is Outcome.PASS]
    p2p_bad = [s for s in out if s.outcome is Outcome.FAIL]
    for it in items:
        if (it.tool == "nccl" and it.subject == "node" and it.metric.endswith("busbw") and it.outcome is Outcome.FAIL
                and "data_corruption" not in it.rules):
            if p2p_bad:
                it.message += "; P2P is low too (see the localisation item)"
            elif p2p_ok:
                it.message = ("localised to the node's fabric (NVSwitch / topology): every P2P cell is fine; "
                              + it.message)
            else:
                it.message += "; P2P not measured: cannot localise"
    return out
