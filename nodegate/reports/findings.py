"""Root causes: the FAILs and ERRORs of a node (and of the fleet) grouped so that each cause is
one finding, with its remediation printed once.

- A FAIL finding is one check and one action on one node: every GPU it failed on with that
  action, each with its observed and expected value (``gpu3 0000:19:00.0: Gen1 x16, expected Gen5
  x16``). A check whose GPUs call for different actions (NG-MEM-001: a remapping failure is an
  RMA, rows pending a reset) is one finding per action: a finding's action is each of its items'
  own, never another GPU's or node's (rma.csv holds the RMA's part only; actions.csv the reset).
- An ERROR finding is one reason the node could not be evaluated: every item that errored with
  the same message (a driver/library mismatch makes 107 items ERROR with one message: one
  finding naming the checks and GPUs it covers, not 107 rows).

Fleet findings group the node findings by check and action (FAIL) or by the message with its
numbers and bus ids blanked (ERROR), counting nodes and items; the node list is kept up to ``NODE_CAP`` names
(the matrix lists every node).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .actions import ACTION_RANK, OBTAIN_EVIDENCE, highest_severity, strongest
from .records import Record, gpu_slot

NODE_CAP = 200
_NUM = re.compile(r"(?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]|\b\d+(?:\.\d+)*\b", re.I)


@dataclass
class Finding:
    """One root cause on one node. ``items``: the records it covers (FAIL: one check's failing
    GPUs that call for one action; ERROR: every item with the message)."""

    node: str
    outcome: str                  # fail | error
    key: str                      # check id (fail) or message (error)
    title: str
    severity: str
    action: str
    remediation: str
    message: str
    items: list[Record] = field(default_factory=list)

    @property
    def checks(self) -> list[str]:
        return sorted({r.check_id for r in self.items if r.check_id})

    @property
    def gpus(self) -> list[str]:
        """``gpu<i>`` of the GPUs the finding covers, index order ("node" for node checks)."""
        idx = sorted({gpu_slot(r) for r in self.items}, key=lambda s: (s != "", int(s) if s.isdigit() else 0, s))
        return ["node" if i == "" else f"gpu{i}" for i in idx]


def action_of(rec: Record) -> str:
    """The record's action: its own (FAIL: the check's, resolved when recorded) or, for an
    ERROR, obtain evidence."""
    if rec.outcome == "error":
        return OBTAIN_EVIDENCE
    return rec.action or ""


def node_findings(node: str, recs: list[Record]) -> list[Finding]:
    """The node's findings, worst first (severity, then action, then key)."""
    groups: dict[tuple[str, str], Finding] = {}
    for r in recs:
        if r.outcome not in ("fail", "error"):
            continue
        key = r.check_id or r.nodeid if r.outcome == "fail" else r.message
        act = action_of(r)
        f = groups.get((r.outcome, key, act))
        if f is None:
            f = groups[(r.outcome, key, act)] = Finding(
                node=node, outcome=r.outcome, key=key, title=r.title if r.outcome == "fail" else "could not be evaluated",
                severity=r.severity, action=action_of(r), remediation=r.remediation, message=r.message)
        f.items.append(r)
        f.severity = highest_severity([f.severity, r.severity])
        f.action = strongest_action([f.action, action_of(r)])
    return sorted(groups.values(), key=lambda f: (-_sev(f.severity), -ACTION_RANK.get(f.action, 0),
                                                  f.outcome, f.key))


def strongest_action(actions) -> str:
    acts = [a for a in actions if a]
    if not acts:
        return ""
    if all(a == OBTAIN_EVIDENCE for a in acts):
        return OBTAIN_EVIDENCE
    return strongest(a for a in acts if a != OBTAIN_EVIDENCE)


def _sev(s: str) -> int:
    from .actions import SEVERITY_RANK
    return SEVERITY_RANK.get((s or "").lower(), 0)


def fleet_key(f: Finding) -> tuple[str, str, str]:
    """FAIL: the check id and the action (one row per (check, action): a row's action is every
    node's it names); ERROR: the message with numbers and bus ids blanked (``#``)."""
    if f.outcome == "fail":
        return ("fail", f.key, f.action)
    return ("error", _NUM.sub("#", f.key)[:200], f.action)


@dataclass
class FleetFinding:
    outcome: str
    key: str
    title: str
    severity: str
    action: str
    remediation: str
    message: str                  # the first node's message (an example)
    checks: Counter = field(default_factory=Counter)
    nodes: list[str] = field(default_factory=list)
    n_nodes: int = 0
    n_items: int = 0


class FleetFindings:
    """Accumulates node findings into fleet findings (bounded: ``NODE_CAP`` names each)."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], FleetFinding] = {}

    def add(self, findings: list[Finding]) -> None:
        for f in findings:
            k = fleet_key(f)
            g = self.by_key.get(k)
            if g is None:
                g = self.by_key[k] = FleetFinding(f.outcome, k[1], f.title, f.severity, f.action, f.remediation,
                                                  f.message)
            if len(g.nodes) < NODE_CAP:
                g.nodes.append(f.node)
            g.n_nodes += 1
            g.n_items += len(f.items)
            g.checks.update(r.check_id for r in f.items if r.check_id)
            g.severity = highest_severity([g.severity, f.severity])
            g.action = strongest_action([g.action, f.action])

    def sorted(self) -> list[FleetFinding]:
        return sorted(self.by_key.values(), key=lambda g: (-_sev(g.severity), -ACTION_RANK.get(g.action, 0),
                                                           -g.n_nodes, g.key))
