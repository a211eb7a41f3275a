"""What a site test is as a check: id, title, severity, remediation, command deadline.

Declared with ``@pytest.mark.nodegate_check(id="SITE-FM-001", severity="critical",
remediation="...", title="...", timeout=60)`` on the test (or its module's ``pytestmark``);
every argument is optional and defaults from the test itself:

- ``id``: ``SITE-`` + the test name without ``test_``, upper case, ``_`` -> ``-``
  (``test_fabric_manager_active`` -> ``SITE-FABRIC-MANAGER-ACTIVE``);
- ``title``: the docstring's first line, else the name in words;
- ``severity``: ``major`` (one of nodegate.checks.SEVERITIES);
- ``remediation``: the docstring's other lines, else "see <file>::<test>";
- ``timeout``: the run's ``--command-timeout`` for each command the test runs.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from ..checks import SEVERITIES

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
KEYS = ("id", "title", "severity", "remediation", "timeout")
DEFAULT_SEVERITY = "major"


@dataclass(frozen=True)
class SiteCheck:
    """A site test's identity in the reports (``report.nodegate``: check_id, check_name, title,
    severity, remediation) and its command deadline in seconds (None: ``--command-timeout``)."""

    id: str
    name: str
    title: str
    severity: str
    remediation: str
    timeout_s: float | None = None


def derived_id(name: str) -> str:
    return "SITE-" + re.sub(r"[^A-Za-z0-9]+", "-", name.removeprefix("test_")).strip("-").upper()[:58]


def site_check(function, where: str, kwargs: dict | None) -> SiteCheck:
    """The SiteCheck of test ``function`` (``where``: ``path::name`` for the default
    remediation) from its marker's keyword arguments. Raises ValueError naming the bad one."""
    kw = dict(kwargs or {})
    bad = sorted(set(kw) - set(KEYS))
    if bad:
        raise ValueError(f"nodegate_check: unknown argument(s) {bad} (allowed: {', '.join(KEYS)})")
    name = function.__name__
    doc = inspect.getdoc(function) or ""
    first, _, rest = doc.partition("\n")
    cid = kw.get("id") or derived_id(name)
    if not isinstance(cid, str) or not _ID_RE.match(cid):
        raise ValueError(f"nodegate_check: id {cid!r}: letters, digits, '_', '.', '-' (at most 64)")
    sev = kw.get("severity") or DEFAULT_SEVERITY
    if sev not in SEVERITIES:
        raise ValueError(f"nodegate_check: severity {sev!r} is not one of {', '.join(SEVERITIES)}")
    timeout = kw.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= 24 * 3600):
        raise ValueError(f"nodegate_check: timeout {timeout!r}: seconds, above 0 (at most a day)")
    title = kw.get("title") or first.strip() or name.removeprefix("test_").replace("_", " ")
    remediation = kw.get("remediation") or " ".join(rest.split()) or f"See the site check {where}."
    return SiteCheck(cid, name.removeprefix("test_"), str(title), sev, str(remediation),
                     float(timeout) if timeout is not None else None)
