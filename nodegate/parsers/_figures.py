"""The bounded figure reader every performance parser goes through (issue 37 item 1).

A performance tool prints figures as decimal text: ``55.20``, ``0.00``, ``2e-06`` (nccl-tests
before 2.13), ``1.89e+05`` (dcgmproftester's ``{:#.3}``), ``-1`` (gpu_burn's "died" marker).
What a tool prints when a copy did not run is also text: ``nan``, ``-nan``, ``inf``, ``N/A``.
``float()`` accepts ``nan``, ``inf``, ``1e308`` and a 5,000-digit string alike, and a comparison
with NaN is always False, so no rule ever fires on it: an unchecked ``float()`` lets a figure
that was never measured PASS.

``figure(text, what=..., signed=False, integer=False)`` returns the number or raises
``InvalidFigure`` (a ParseError) naming it, for:

- anything that is not a plain decimal number (``nan``, ``inf``, ``0x10``, superscripts, ``1_000``);
- more than ``MAX_DIGITS`` (20) significant digits, or an exponent of more than 3 digits;
- a magnitude above ``MAX_FIGURE`` (1e15: the largest figure a perf tool prints is a message
  size in bytes, 2^34 for 16 GiB; 1e308 is no measurement);
- a negative value where the metric has no sign (``signed=False``: bandwidths, FLOPS, counts);
- a fraction where a count belongs (``integer=True``).

Callers decide what an InvalidFigure means: a cell of a matrix becomes a subject "not measured:
invalid figure '<text>'" (nodegate.perf.extract), a malformed structural number (a message size, a
rank index) makes the output unparsable.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ._limits import MAX_DIGITS

#: Largest magnitude of any figure a perf tool prints (see module docstring).
MAX_FIGURE = 1e15
#: ASCII only: ``re`` would accept other scripts' digits under \d (and float() would convert them).
_DECIMAL = re.compile(r"^([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]{1,3}))?$")


class InvalidFigure(ParseError):
    """A token that is not a figure a measurement can have (NaN, inf, overlong, wrong sign)."""

    def __init__(self, what: str, token: str, why: str):
        self.token = token[:40]
        self.why = why
        super().__init__(f"{what}: invalid figure {self.token!r} ({why})")


def figure(text, *, what: str = "figure", signed: bool = False, integer: bool = False) -> float | int:
    """The number ``text`` holds (int when ``integer``), or InvalidFigure (see module docstring)."""
    tok = str(text).strip()
    m = _DECIMAL.match(tok) if len(tok) <= 2 * MAX_DIGITS + 8 else None
    if m is None or not (m.group(2) or m.group(3)):
        low = tok.lower().lstrip("+-")
        why = ("not a number (what a tool prints for a measurement that did not run)"
               if low in ("nan", "inf", "infinity", "n/a", "-nan") else
               "longer than any figure" if len(tok) > 2 * MAX_DIGITS else "not a decimal number")
        raise InvalidFigure(what, tok, why)
    sign, whole, frac, exp = m.groups()
    digits = (whole + (frac or "")).lstrip("0")
    if len(digits) > MAX_DIGITS:
        raise InvalidFigure(what, tok, f"{len(digits)} significant digits, more than any measurement has")
    if integer and (frac or exp):
        raise InvalidFigure(what, tok, "a fraction where a count belongs")
    v = int(tok) if integer else float(tok)
    if abs(v) > MAX_FIGURE:
        raise InvalidFigure(what, tok, f"magnitude above {MAX_FIGURE:.0e}: no tool measures that")
    if sign == "-" and v != 0 and not signed:
        raise InvalidFigure(what, tok, "negative, and this figure has no sign")
    return v + 0.0 if not integer and v == 0 else v   # -0.0 -> 0.0


def is_figure(text, **kw) -> bool:
    try:
        figure(text, **kw)
        return True
    except InvalidFigure:
        return False


def checked(value, *, what: str = "figure", signed: bool = False) -> float:
    """A JSON number (already a float/int) held to the same rules: finite, bounded, signed only
    where allowed. Booleans are not numbers. InvalidFigure otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidFigure(what, repr(value)[:40], "not a number")
    if value != value or value in (float("inf"), float("-inf")):
        raise InvalidFigure(what, repr(value), "not a finite number")
    if isinstance(value, int) and len(str(abs(value))) > MAX_DIGITS:
        raise InvalidFigure(what, str(value)[:40], "more digits than any measurement has")
    if abs(value) > MAX_FIGURE:
        raise InvalidFigure(what, repr(value)[:40], f"magnitude above {MAX_FIGURE:.0e}: no tool measures that")
    if value < 0 and not signed:
        raise InvalidFigure(what, repr(value)[:40], "negative, and this figure has no sign")
    return float(value)
