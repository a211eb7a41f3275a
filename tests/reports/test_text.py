"""text.py: cleaning of untrusted strings."""

import pytest

from nodegate.reports.text import clean, esc, excerpt, one_line, safe_filename


@pytest.mark.parametrize("raw, expected", [
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("a\x00b\x07c\x7fd\x85e", "a\\x00b\\x07c\\x7fd\\x85e"),
    ("line1\r\nline2\rline3", "line1\nline2\nline3"),
    ("tab\there", "tab\there"),
    ("lone \ud800 surrogate", "lone \ufffd surrogate"),
    ("evil‮txt.exe ⁦x⁩", "evil\\u202etxt.exe \\u2066x\\u2069"),
    (None, ""),
    (3, "3"),
], ids=["ansi", "c0_del_c1", "crlf", "tab_kept", "surrogate", "bidi", "none", "int"])
def test_clean_replaces_control_characters(raw, expected):
    assert clean(raw) == expected


def test_clean_caps_length_and_says_so():
    assert clean("x" * 12, limit=10) == "xxxxxxxxxx … [2 more characters]"


def test_one_line_joins_lines():
    assert one_line("a\nb\tc") == "a b c"


def test_esc_escapes_markup_and_quotes():
    assert esc("<img src=x onerror='a'>\"&") == "&lt;img src=x onerror=&#x27;a&#x27;&gt;&quot;&amp;"


def test_excerpt_caps_lines():
    assert excerpt("\n".join(str(i) for i in range(50)), max_lines=3) == "0\n1\n2\n… [47 more lines]"


@pytest.mark.parametrize("node, expected", [
    ("gpu-node-01.example.com", "gpu-node-01.example.com"),
    ("..", "node-" + __import__("hashlib").sha256(b"..").hexdigest()[:12]),
    ("../../etc/passwd", "etc_passwd-" + __import__("hashlib").sha256(b"../../etc/passwd").hexdigest()[:12]),
], ids=["plain", "dotdot", "traversal"])
def test_safe_filename(node, expected):
    assert safe_filename(node) == expected


def test_safe_filename_hostile_names_do_not_collide():
    assert safe_filename("a<b>") != safe_filename("a>b<")
    assert "/" not in safe_filename("a/<script>/b")
