"""What every performance parser does to its text first (issue 36 item 8, issue 37 item 2).

Outputs reach nodegate straight from the tool (the perf phase's bundle) or through a ticket: pasted
with quote markers (``> ``, e-mail and GitHub style), trimmed (``...``, ``[===== SNIP 87855
similar lines =====]``), or a JSON result wrapped by a terminal at its width. ``prepare(text,
cap, what)`` decodes and caps the text (``_values.check_text``), strips the quote markers when
most lines carry them, and says what it saw in ``Prepared.notes`` (shown with the verdicts:
"quoted output", "trimmed at line N"). ``load_json(s, what)`` parses JSON with its nesting bounded
(``json.loads`` of 200,000 nested brackets raises RecursionError, not ValueError: issue 37 item 2)
and rejoins a terminal-wrapped document (a newline inside a string or a number).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

#: Nesting any tool's JSON has (nvbandwidth 4, dcgmi 6, nccl-tests 4): far above, far below Python's limit.
MAX_JSON_DEPTH = 64
_QUOTE = re.compile(r"^(?:> ?)+")
#: a trim marker, matched on a stripped line of at most 200 characters (bounded: no backtracking
#: over a long run of spaces)
_TRIM = re.compile(r"(?:\.\.\.+|…|\[ ?=* ?SNIP\b.{0,200}|=+ ?SNIP\b.{0,200}|\[\.\.\.\]|<snip>|\(\.\.\.\)|\[truncated\].{0,200})",
                   re.I)


@dataclass
class Prepared:
    text: str
    notes: list[str] = field(default_factory=list)
    quoted: bool = False
    trimmed: int = 0


def prepare(text, *, cap: int, what: str) -> Prepared:
    """Decoded, capped text with ticket quote markers removed (see module docstring)."""
    text = V.check_text(text, cap=cap, what=what)
    out = Prepared(text)
    lines = text.split("\n")
    nonblank = [ln for ln in lines if ln.strip()]
    if nonblank:
        quoted = sum(1 for ln in nonblank if ln.lstrip().startswith(">"))
        # most lines quoted: a reply's quote of the tool's output (a "> " inside a table row never
        # starts a line of any tool's output; a lone ">" line is an empty quoted line)
        if quoted * 2 > len(nonblank):
            out.text = "\n".join(_QUOTE.sub("", ln.lstrip()) if ln.lstrip().startswith(">") else ln for ln in lines)
            out.quoted = True
            out.notes.append("quoted output ('> ' markers removed)")
    trims = [i + 1 for i, ln in enumerate(out.text.split("\n"))
             if len(ln) <= 400 and (st := ln.strip()) and len(st) <= 200 and _TRIM.fullmatch(st)]
    if trims:
        out.trimmed = len(trims)
        out.notes.append(f"output trimmed at line {trims[0]}" + (f" and {len(trims) - 1} more" if len(trims) > 1 else "")
                         + ": rows may be missing")
    return out


def json_depth_ok(s: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when no bracket nesting in ``s`` exceeds ``limit`` (strings skipped; linear)."""
    depth, in_str, esc = 0, False, False
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def load_json(s: str, what: str) -> tuple[object, bool]:
    """``(object, rejoined)``: the JSON document ``s``; ``rejoined`` when it only parsed with its
    line breaks removed (a terminal wrapped it). ParseError (never RecursionError/ValueError)."""
    if not json_depth_ok(s):
        raise ParseError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels: no tool writes that")
    try:
        return json.loads(s), False
    except ValueError as first:
        joined = s.replace("\r", "").replace("\n", "")
        if joined != s:
            try:
                return json.loads(joined), True
            except ValueError:
                pass
        raise ParseError(f"{what}: JSON unparsable: {str(first)[:200]}") from None
    except RecursionError:   # belt and braces: json_depth_ok bounds it first
        raise ParseError(f"{what}: JSON nested too deep") from None
