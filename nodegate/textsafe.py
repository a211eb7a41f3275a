"""Untrusted text made safe to print: control characters shown escaped, never interpreted.

Node output, bundle contents and the node names a bundle claims reach the terminal (pytest's
progress line, failure sections, short summary, skip reasons, nodegate's own lines), JUnit and
HTML. A terminal interprets C0/C1 controls: ESC sequences set the window title, write the
clipboard (OSC 52), clear the screen or draw hyperlinks; CR and the Unicode line and paragraph
separators rewrite or split a line; the bidirectional overrides reorder what is shown (the
"Trojan Source" characters, CVE-2021-42574). Each becomes visible text here: ``\\x1b``,
``\\u202e``. The same ``\\xNN`` form as ``nodegate.reports.text.clean``.
"""

from __future__ import annotations

import re

#: C0 controls but TAB and LF, DEL, C1 controls, ALM, LRM/RLM, LINE/PARAGRAPH SEPARATOR, the
#: bidi embeddings/overrides and isolates, lone surrogates (not text at all)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     "\u2066-\u2069\ud800-\udfff]")
_LINE_UNSAFE = re.compile("[\t\n]")


def _repl(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown(value: object, *, newlines: bool = True) -> str:
    """``value`` as text whose every control character is escaped (``\\x1b``, ``\\u202e``).
    TAB and LF stay when ``newlines`` (messages with several lines), else they are escaped too
    (names, one-line fields). ``None`` -> ``""``. Idempotent: the escapes are printable."""
    if value is None:
        return ""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable():
        return s   # the common case: nothing to escape (isprintable is False for every char above)
    s = _UNSAFE.sub(_repl, s)
    return s if newlines else _LINE_UNSAFE.sub(_repl, s)


def has_unsafe(value: str) -> bool:
    """True when ``value`` holds a character ``shown`` would escape (TAB and LF included)."""
    return not value.isprintable() and bool(_UNSAFE.search(value) or _LINE_UNSAFE.search(value))
