"""Recommended action for a failing GPU or node, derived from the checks' remediation text.

Ranked from least to most disruptive; a row with several failed checks gets the strongest.
A check may name its action explicitly (``report.nodegate['action']``, one of ``ACTIONS``);
else the observed state may name one ("(RMA candidate)", an Xid's "action: drain and
reboot"); else the remediation text decides: its earliest action phrase wins, because
remediations lead with what to do first ("Drain the node and reset the GPU; if it recurs,
RMA" -> reset; "Flash the specified VBIOS ..., then reset" -> update firmware). No phrase ->
"fix configuration" (driver stack, unit, module settings).

Only ``RMA`` is the vendor's work (rma.csv). A reseat is the site's own hands-on work, done
first: the vendor's desk asks for it before it takes a part back, so it goes to actions.csv
with the RMA to open if the fault persists (issue 32; nodegate.reports.parts names the part).
"""

from __future__ import annotations

import re

FIX_CONFIG, UPDATE_FIRMWARE, RESET, REBOOT, RESEAT, RMA = ("fix configuration", "update firmware", "reset",
                                                           "reboot", "reseat", "RMA")
ACTIONS = (FIX_CONFIG, UPDATE_FIRMWARE, RESET, REBOOT, RESEAT, RMA)
#: labels of earlier versions (results.jsonl written before issue 32), read as today's
LEGACY = {"reseat/replace riser": RESEAT}

#: The action of an ERROR (nothing proven wrong yet): obtain the missing evidence
#: (remedy.error_remediation says how), then re-run.
OBTAIN_EVIDENCE = "obtain evidence"

#: Actions that need the vendor (rma.csv / rma.json); the others are the site's own work
#: (actions.csv).
VENDOR_ACTIONS = (RMA,)

#: Sorting rank of every action, least disruptive first (0: none).
ACTION_RANK = {OBTAIN_EVIDENCE: 1, **{a: i + 2 for i, a in enumerate(ACTIONS)}, "reseat/replace riser": 6}

SEVERITY_RANK = {"minor": 1, "major": 2, "critical": 3}

_PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    (RMA, re.compile(r"\brma\b|\breplace (?:the )?(?:gpu|board|card|module)\b"
                     r"|\breturn (?:the )?(?:gpu|board) to\b", re.I)),
    (RESEAT, re.compile(r"\bre-?seat|\briser\b", re.I)),
    # flashing a VBIOS/InfoROM or updating HCA firmware: a site task with the vendor's bundle
    (UPDATE_FIRMWARE, re.compile(r"\bflash\b|\bupdate the (?:\w+ )?firmware\b|\bfirmware update\b", re.I)),
    # "missing after reboot", "a reboot into it", "the next reboot has no GPU" describe a
    # consequence, not the action
    (REBOOT, re.compile(r"(?<!after )(?<!next )(?<!a )(?<!the )\breboot\b"
                        r"(?! (?:has|will|would|leaves|into it|is due))"
                        r"|\bpower[- ]cycle\b|\brestart the node\b|\bnode[_ ]reboot\b", re.I)),
    (RESET, re.compile(r"\bgpu[_ ]reset\b|\breset (?:the |each |that )?(?:gpu|device)s?\b"
                       r"|nvidia-smi (?:-r|--gpu-reset)\b|\bdrain and reset\b|\breset(?=;)"
                       r"|\brecovery action:? \S*reset\b", re.I)),
)

#: Clauses about what to do if a problem comes back ("recurring: RMA", "if it persists")
#: describe escalation, not the state observed now.
_ESCALATION_RE = re.compile(r"(?:recurring|if it recurs|if it persists|contact support)[^;)]*", re.I)


def _earliest(text: str) -> str | None:
    best: tuple[int, str] | None = None
    for action, pat in _PATTERNS:
        m = pat.search(text or "")
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), action)
    return best[1] if best else None


def _named(text: str) -> set[str]:
    return {a for a, pat in _PATTERNS if pat.search(text or "")}


def action_for(remediation: str, explicit: str = "", observed: str = "", message: str = "") -> str:
    """One of ``ACTIONS`` for one failed check.

    1. ``explicit`` (``report.nodegate['action']``) when it names an action;
    2. else the strongest action the observed state itself names (``observed`` and
       ``message`` up to the appended "Remediation:", escalation clauses removed), e.g.
       "remapping failure occurred (RMA candidate)" or an Xid's "action: drain and reboot";
    3. else the earliest action phrase of the remediation text; none -> fix configuration.
    """
    if explicit:
        e = LEGACY.get(explicit.strip(), explicit).strip().lower()
        for a in ACTIONS:
            if e == a.lower():
                return a
    state = f"{observed or ''} {(message or '').split('Remediation:')[0]}"
    named = _named(_ESCALATION_RE.sub("", state))
    if named:
        return strongest(named)
    return _earliest(remediation) or FIX_CONFIG


def strongest(actions) -> str:
    """The most disruptive of ``actions`` (FIX_CONFIG when empty; an earlier version's label is
    read as today's, an unknown one ranks lowest)."""
    acts = [LEGACY.get(a, a) for a in actions]
    return max(acts, key=lambda a: ACTIONS.index(a) if a in ACTIONS else -1, default=FIX_CONFIG)


def highest_severity(severities) -> str:
    """critical > major > minor; unknown strings rank lowest; "" when empty."""
    sev = [s for s in severities if s]
    return max(sev, key=lambda s: SEVERITY_RANK.get(s.lower(), 0), default="")
