"""The options an example (job script, manifest) passes to nodegate-collect and to pytest, read from
its text, so that a test can hold them against the real option parsers."""

from __future__ import annotations

import re

_OPT = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def invocations(text: str, prog: str) -> list[list[str]]:
    """One list of ``--option`` names per command line of ``text`` that runs ``prog`` (shell
    continuation lines joined; comment lines and lines that name ``prog`` without options, such as a
    test that it exists, skipped). Options before ``prog`` are not counted."""
    out = []
    for line in re.sub(r"\\\n", " ", text).splitlines():
        i = line.find(prog)
        if i < 0 or line.lstrip().startswith("#"):
            continue
        opts = _OPT.findall(line[i + len(prog):])
        if opts:
            out.append(opts)
    return out


def help_options(help_text: str) -> set[str]:
    """Every ``--option`` named in a program's ``--help`` text (argparse, pytest)."""
    return set(_OPT.findall(help_text))
