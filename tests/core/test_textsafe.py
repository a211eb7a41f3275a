"""textsafe.shown: what a node or bundle sends is printed with its control characters escaped."""

from __future__ import annotations

import pytest

from nodegate.textsafe import has_unsafe, shown


@pytest.mark.parametrize("raw,want", [
    ("plain 580.159.04", "plain 580.159.04"),
    ("\x1b]52;c;cHduZWQ=\x07", "\\x1b]52;c;cHduZWQ=\\x07"),          # OSC 52 clipboard write
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),                      # window title
    ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),                            # clear screen
    ("\x1b]8;;http://x/\x1b\\link\x1b]8;;\x1b\\", "\\x1b]8;;http://x/\\x1b\\link\\x1b]8;;\\x1b\\"),   # hyperlink
    ("a\x9b31mb", "a\\x9b31mb"),                                      # C1 CSI
    ("over\rwrite", "over\\x0dwrite"),                               # CR rewrites the line
    ("evil\u202etxt.exe", "evil\\u202etxt.exe"),                     # bidi override
    ("line\u2028break", "line\\u2028break"),
    ("nul\x00del\x7f", "nul\\x00del\\x7f"),
    ("two\nlines\tand tab", "two\nlines\tand tab"),
    ("ünïcödé H200 — ok", "ünïcödé H200 — ok"),
], ids=["plain", "osc52", "title", "clear", "hyperlink", "c1_csi", "cr", "bidi", "line_sep", "nul_del",
        "newlines_kept", "unicode_kept"])
def test_shown_escapes_every_control(raw, want):
    assert shown(raw) == want
    assert shown(shown(raw)) == shown(raw)   # idempotent
    assert has_unsafe(shown(raw, newlines=False)) is False


def test_names_lose_their_newlines_and_tabs_too():
    assert shown("a\nb\tc", newlines=False) == "a\\x0ab\\x09c"
    assert has_unsafe("a\nb") is True and has_unsafe("ab") is False


def test_none_and_non_strings():
    assert shown(None) == "" and shown(3) == "3"
