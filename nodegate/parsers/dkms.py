"""Parser for ``dkms status``.

Usage::

    dkms status

Line formats (dkms source, ``dkms status`` output):

- dkms <= 2.8.5: ``nvidia, 535.104.05, 5.15.0-91-generic, x86_64: installed``
- dkms >= 2.8.6: ``nvidia/535.104.05, 5.15.0-91-generic, x86_64: installed``
- ``added`` lines carry no kernel/arch: ``nvidia/535.104.05: added``
- states: ``added``, ``built``, ``installed``, ``installed-weak from <kver>``, ``broken``
- suffixes (kept in ``warnings``, de-duplicated in order): ``(WARNING! Diff between built and
  installed module!)``, ``(WARNING! Missing some built modules!)``, ``(original_module exists)``
  (<= 3.1.2) and ``(Differences between built and installed modules)``, ``(Built modules are
  missing in the kernel modules folder)``, ``(Original modules exist)`` (>= 3.1.3)
- ``Error! ...`` lines (and the lines that follow them, e.g. ``File: ... does not exist.``)
  go to ``errors``: a broken DKMS tree (checks.md "DKMS": never "no nvidia module").

Schema::

    DkmsStatus(entries=[DkmsEntry(module, version, kernel, arch, state, weak_from, warnings)],
               errors=[str])

Example::

    nvidia/535.86.05, 6.5.0-060500rc5-generic, x86_64: installed
    -> DkmsEntry("nvidia", "535.86.05", "6.5.0-060500rc5-generic", "x86_64", "installed")
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import DkmsEntry, DkmsStatus
from . import _values as V

_LINE = re.compile(
    r"^(?P<mod>[A-Za-z0-9_.+-]+)(?:/|, )(?P<ver>[^,:\s]+)"
    r"(?:, (?P<kernel>[^,:\s]+))?(?:, (?P<arch>[^,:\s]+))?: (?P<rest>\S.*)$")
_STATE = re.compile(r"^(?P<state>added|built|installed-weak|installed|broken|[a-z-]+)"
                    r"(?: from (?P<weak>\S+))?(?P<sfx>(?:\s*\(.*\))*)\s*$")
_SUFFIX = re.compile(r"\(([^()]*)\)")
_NOISE = ("deprecated feature:", "warning:")


def parse_dkms_status(text: str | bytes) -> DkmsStatus:
    """Empty output -> empty DkmsStatus (no modules registered). ParseError on a line that is
    neither a status line, an ``Error!`` block nor known dkms noise."""
    text = V.check_text(text, cap=4 * 1024 * 1024, what="dkms status")
    out = DkmsStatus()
    in_error = False
    for raw in text.splitlines():
        ln = raw.strip()
        if not ln:
            in_error = False
            continue
        if ln.startswith("Error!"):
            out.errors.append(ln)
            in_error = True
            continue
        m = _LINE.match(ln)
        if m:
            out.entries.append(_entry(m))
            in_error = False
            continue
        if in_error:
            out.errors[-1] += "\n" + ln
            continue
        if ln.lower().startswith(_NOISE):
            continue
        raise ParseError(f"dkms status: unrecognised line {ln[:100]!r}")
    return out


def _entry(m: re.Match) -> DkmsEntry:
    rest = m.group("rest")
    sm = _STATE.match(rest)
    if not sm:
        raise ParseError(f"dkms status: unrecognised state {rest[:80]!r}")
    warnings: list[str] = []
    for s in _SUFFIX.findall(sm.group("sfx") or ""):
        s = s.strip()
        if s and s not in warnings:
            warnings.append(s)
    return DkmsEntry(module=m.group("mod"), version=m.group("ver"), kernel=m.group("kernel"),
                     arch=m.group("arch"), state=sm.group("state"), weak_from=sm.group("weak"),
                     warnings=warnings)
