"""The cross-node phase's result rows: pure data, no I/O, no pytest.

Four kinds of row, each a frozen-enough dataclass with ``to_dict()`` (JSON-ready, what the
reports of the second round present and ``result.json`` holds):

- ``JobRow``: one launched job (a group test, a pair test, a per-HCA perftest): stage, round,
  hosts, HCA/rail, launcher, command, versions, the measured figure, its three threshold
  checks (absolute floor, relative to the run, fail-closed), the verdict, the suspects it
  raised, where its evidence is, how long it took.
- ``NodeRow``: the roll-up of one node: cleared, suspect, confirmed faulty, not used as a
  partner (and why), untested; with the ids of the jobs that prove it.
- ``FaultRow``: a fault localised below the node: an HCA, a cable or a path between two HCAs,
  a link/switch fault between two groups (the boundary case), keyed by both ends.
- ``CableRow``: the static comparison of one cable with the site's plan (Stage A).

Outcomes map onto nodegate's semantics (nodegate/outcomes.py): PASS meets the spec, FAIL
violates it, ERROR could not be evaluated, SKIP only where the spec says a check does not apply.
A node is PASS only when it is ``cleared``: cleared by a measurement that passed every rule.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any

from ..outcomes import Outcome


class NodeState(str, enum.Enum):
    """Where a node ends in the localisation (CRE ADR-055's pass/suspect/confirmed, plus the
    nodes the phase could not use)."""

    CLEARED = "cleared"                    # a job it was in passed every rule
    SUSPECT = "suspect"                    # it failed, and no known-good partner was left to confirm
    CONFIRMED_FAULTY = "confirmed_faulty"  # failed again with a distinct known-good partner
    NOT_USED = "not_used"                  # excluded before any job: per-node prerequisite failed
    UNTESTED = "untested"                  # eligible, but no job it was in was judged (phase stopped)

    @property
    def outcome(self) -> Outcome:
        """CLEARED -> PASS; CONFIRMED_FAULTY -> FAIL; the rest ERROR (fail-closed: a node is
        never accepted on what was not measured, and a suspect is not proven faulty)."""
        if self is NodeState.CLEARED:
            return Outcome.PASS
        if self is NodeState.CONFIRMED_FAULTY:
            return Outcome.FAIL
        return Outcome.ERROR


#: stages of the phase, in order (docs/crossnode.md "Stages")
STAGES = ("static", "screen", "representatives", "bisect", "boundary", "confirm", "links",
          "links-confirm", "links-pinpoint")


@dataclass
class RuleCheck:
    """One of a measurement's three thresholds. ``kind``: absolute | relative | fail-closed.
    ``limit`` and ``value`` in ``unit``; ``passed`` None when the rule could not be applied
    (then ``why`` says so and the job is ERROR). ``rule``: the rule in words ("busbw >= 370
    GB/s"); ``source``: where the figure comes from (a document, a spec key)."""

    kind: str
    rule: str
    source: str
    passed: bool | None
    limit: float | None = None
    value: float | None = None
    unit: str = ""
    why: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class JobRow:
    """One job as judged. ``verdict`` is the job's Outcome: FAIL when a rule fired on a measured
    figure or the tool reported corruption (#wrong > 0), ERROR when it could not be judged (rc
    != 0, timeout, missing output, unknown floor), PASS when every rule passed.

    ``hosts``: node names in rank order; ``hcas``: for a perftest pair, ``["a:mlx5_0",
    "b:mlx5_0"]``; ``rail``: the rail index when the job is confined to one; ``value`` the figure
    the rules judged (``metric``, ``unit``); ``suspects``: the nodes (or ``node:hca``) this job
    put under suspicion; ``evidence``: the job's evidence directory, relative to the run's
    evidence root; ``duration_s``: the launch's wall time (0 when nothing was launched)."""

    job_id: str
    stage: str
    round: int
    hosts: list[str]
    payload: str
    launcher: str = ""
    command: list[str] = field(default_factory=list)
    hcas: list[str] = field(default_factory=list)
    rail: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    metric: str = ""
    value: float | None = None
    unit: str = ""
    checks: list[RuleCheck] = field(default_factory=list)
    verdict: Outcome = Outcome.ERROR
    message: str = ""
    suspects: list[str] = field(default_factory=list)
    evidence: str = ""
    duration_s: float = 0.0
    rc: int | None = None

    @property
    def threshold(self) -> float | None:
        """The absolute floor's limit (the "threshold" column)."""
        for c in self.checks:
            if c.kind == "absolute":
                return c.limit
        return None

    @property
    def rule(self) -> str:
        """The rule that decided the verdict (the first that fired or could not be applied), else
        the absolute floor's; with its source."""
        for c in self.checks:
            if c.passed is not True:
                return f"{c.rule} ({c.source})"
        for c in self.checks:
            if c.kind == "absolute":
                return f"{c.rule} ({c.source})"
        return ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        d["threshold"] = self.threshold
        d["rule"] = self.rule
        d["checks"] = [c.to_dict() for c in self.checks]
        return d


@dataclass
class NodeRow:
    """The roll-up of one node: ``state`` (NodeState), ``why`` in words, ``jobs``: the ids of
    the jobs that prove the state (the passing job that cleared it, the failures that confirmed
    it), ``faults``: the FaultRow ids naming an HCA or cable of this node."""

    node: str
    state: NodeState
    why: str = ""
    jobs: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)

    @property
    def outcome(self) -> Outcome:
        return self.state.outcome

    def to_dict(self) -> dict:
        return {"node": self.node, "state": self.state.value, "outcome": self.outcome.value,
                "why": self.why, "jobs": list(self.jobs), "faults": list(self.faults)}


@dataclass
class FaultRow:
    """A fault localised below the node, keyed by both ends.

    ``kind``: ``hca`` (an HCA failed with two or more distinct partners; ``end_a`` is
    ``node:hca``, ``end_b`` its switch port from the cable map when known), ``cable`` (an HCA's
    cable: the static map shows it degraded or miswired and the HCA failed; ``end_a`` node:hca,
    ``end_b`` switch:port), ``path`` (a pair that fails together while both ends pass with other
    partners: ``end_a``/``end_b`` the two node[:hca] ends, the cables on the way in ``cables``),
    ``boundary`` (a failing group whose halves both pass: a link or switch fault between two
    groups or domains; ``end_a``/``end_b`` name them). ``guid``: the HCA's port GUID for an RMA.
    ``jobs``: the job ids that show it; ``static``: what the static cable map says of it."""

    fault_id: str
    kind: str
    end_a: str
    end_b: str
    why: str
    jobs: list[str] = field(default_factory=list)
    cables: list[str] = field(default_factory=list)
    guid: str = ""
    static: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class CableRow:
    """One cable compared with the site's plan (Stage A, no GPU time). Keyed by both ends:
    ``node_end`` = ``node:hca/port``, ``switch_end`` = ``switch:port`` as observed (or as
    planned when nothing was observed). ``verdict``: PASS when state, rate, width and neighbour
    match the plan; FAIL for a mismatch (``problem``: down, miswired, wrong-rail, degraded-rate,
    degraded-width, unplanned, missing); ERROR when it could not be compared (no neighbour
    evidence, a plan naming an unknown node, ``not-in-plan``: a node the plan leaves out). ``expected``/``observed`` in words; ``source``:
    the evidence the observation came from (iblinkinfo, ibnetdiscover, ibdiagnet, sysfs)."""

    node_end: str
    switch_end: str
    verdict: Outcome
    problem: str = ""
    expected: str = ""
    observed: str = ""
    rail: int | None = None
    guid: str = ""
    source: str = ""

    def to_dict(self) -> dict:
        d = asdict(self)
        d["verdict"] = self.verdict.value
        return d


@dataclass
class PhaseResult:
    """Everything the phase produced, for the reports: rows of the four kinds, the plan as run
    (``rounds``: job ids per round), the errors that stopped or limited it (``errors``: a clear
    message naming what: the launcher, a node, the cable plan), the evidence root and the
    run's figures (jobs, rounds, wall time, the jobs' own time)."""

    run_id: str
    jobs: list[JobRow] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    faults: list[FaultRow] = field(default_factory=list)
    cables: list[CableRow] = field(default_factory=list)
    rounds: list[list[str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    evidence: str = ""
    wall_s: float = 0.0
    jobs_s: float = 0.0
    replayed: bool = False

    def node(self, name: str) -> NodeRow:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def job(self, job_id: str) -> JobRow:
        for j in self.jobs:
            if j.job_id == job_id:
                return j
        raise KeyError(job_id)

    @property
    def outcome(self) -> Outcome:
        """The phase as a whole: PASS only when every node is cleared, every cable matches and
        nothing stopped it; FAIL when something was measured faulty; ERROR otherwise."""
        outs = [n.outcome for n in self.nodes] + [c.verdict for c in self.cables]
        if self.errors or not self.nodes:
            return Outcome.ERROR if Outcome.FAIL not in outs else Outcome.FAIL
        if Outcome.FAIL in outs or self.faults:
            return Outcome.FAIL
        if Outcome.ERROR in outs:
            return Outcome.ERROR
        return Outcome.PASS

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "outcome": self.outcome.value, "replayed": self.replayed,
                "errors": list(self.errors), "evidence": self.evidence,
                "wall_s": round(self.wall_s, 3), "jobs_s": round(self.jobs_s, 3),
                "rounds": [list(r) for r in self.rounds],
                "jobs": [j.to_dict() for j in self.jobs], "nodes": [n.to_dict() for n in self.nodes],
                "faults": [f.to_dict() for f in self.faults], "cables": [c.to_dict() for c in self.cables]}
