"""Outcome of one check on one node (or one GPU of a node).

PASS meets the spec; FAIL violates it; SKIP only when the spec says the check does not
apply (reason names the spec key) or explicitly allows an unverified state; ERROR when it
could not be evaluated. See ../shared/spec/checks.md "Outcomes".
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Outcome(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


@dataclass
class Result:
    """What a check function returns.

    outcome: the verdict.
    expected: the spec value, human readable (the "Expected" column).
    observed: what the node showed, human readable (the "Observed" column).
    message: one line explaining the verdict; for FAIL it names the GPU. The remediation is
        never part of it: it is the check's declaration (``CheckDef.remediation``), a field of
        its own in every report; pytest's failure text shows it on a line of its own.
    evidence: the lines of raw output that decided the verdict (an excerpt, not the dump).
    evidence_keys: bundle keys the verdict was drawn from.
    """

    outcome: Outcome
    expected: str = ""
    observed: str = ""
    message: str = ""
    evidence: str = ""
    evidence_keys: tuple[str, ...] = ()
    details: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the outcome is PASS (what a suite asserts)."""
        return self.outcome is Outcome.PASS

    @classmethod
    def passed(cls, expected: str = "", observed: str = "", message: str = "", **kw) -> "Result":
        return cls(Outcome.PASS, expected, observed, message, **kw)

    @classmethod
    def failed(cls, expected: str = "", observed: str = "", message: str = "", **kw) -> "Result":
        return cls(Outcome.FAIL, expected, observed, message, **kw)

    @classmethod
    def skipped(cls, message: str, expected: str = "", observed: str = "", **kw) -> "Result":
        return cls(Outcome.SKIP, expected, observed, message, **kw)

    @classmethod
    def errored(cls, message: str, expected: str = "", observed: str = "", **kw) -> "Result":
        return cls(Outcome.ERROR, expected, observed, message, **kw)


#: one check's outcomes on a node folded into one, worst first: fail > error > skip > pass ("" not
#: run). THE rank of every fold: the HTML matrix's cell per check and node (nodegate.reports.html),
#: and a folded GPU check's item (nodegate.engine.fold: one item per check and node carrying its GPUs)
OUTCOME_RANK = {"": 0, "pass": 1, "skip": 2, "error": 3, "fail": 4}


def worst_outcome(outcomes) -> str:
    """The worst of ``outcomes`` (their ``value`` strings) by ``OUTCOME_RANK``; "" for none."""
    return max(outcomes, key=lambda o: OUTCOME_RANK.get(o, 0), default="")


def asserted(res: Result, remediation: str) -> Result:
    """The Result a suite test asserts on (``assert verdict.ok, verdict.message``): a FAIL's
    message with the remediation on a line of its own, ``Remediation: ...``, so pytest's failure
    text shows both, clearly apart; the reports take the message and the remediation as
    separate fields before this (issue 32). Other outcomes are returned unchanged."""
    from dataclasses import replace
    if res.outcome is not Outcome.FAIL or not remediation:
        return res
    return replace(res, message=f"{res.message}\nRemediation: {remediation}")
