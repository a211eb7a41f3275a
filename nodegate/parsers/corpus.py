"""Reading the real-output corpus (``../shared/corpus/NNN-*.txt``) for tests of every layer.

A corpus file is a header (``key: value`` lines), a line ``---``, then output byte-exact. Some
bodies hold several outputs pasted from a terminal (``$ dkms status``, ``root@node01:~# dmesg -T |
grep NVRM``). ``corpus_sections`` splits the body at such command lines and names each part's
form: from the command when there is one, else by ``guess_form``.

Schema::

    parse_corpus_file(path) -> (header {source, date, driver, gpu, kind, shows, expected_verdict, note?}, body)
    corpus_sections(path)   -> [Section(command: str|None, form: str, text: str)]

Example (026)::

    [root@localhost ...]#  modinfo nvidia | grep license      -> Section("modinfo nvidia | grep license", "modinfo", ...)
    [root@localhost ...]# cat /proc/driver/nvidia/version     -> Section(..., "proc_version", ...)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError

# A command line pasted with (or without) its shell prompt. Only tools whose output the corpus
# carries; the prompt part is anything up to a prompt character.
_CMD = re.compile(
    r"^(?:.{0,80}?[#$>]\s*)?(?P<cmd>(?:sudo\s+)?(?:nvidia-smi|dkms|modinfo|cat|lsmod|dmesg|systemctl|"
    r"tail|uname|journalctl|lspci|ibstat)(?:\s.*)?)$")

_FORM_BY_TOOL = {
    "dkms": "dkms", "modinfo": "modinfo", "lsmod": "lsmod", "dmesg": "kernel_log",
    "journalctl": "kernel_log", "lspci": "lspci", "tail": "sysfs_tail", "uname": "text",
}


@dataclass
class Section:
    command: str | None
    form: str
    text: str


def parse_corpus_file(path) -> tuple[dict, str]:
    data = Path(path).read_bytes().decode("utf-8")
    head, sep, body = data.partition("\n---\n")
    if not sep:
        raise ParseError(f"{path}: no '---' line between header and body")
    header: dict[str, str] = {}
    for ln in head.splitlines():
        if ": " not in ln:
            continue
        key, val = ln.split(": ", 1)
        if key == "driver" and "  gpu: " in val:
            val, gpu = val.split("  gpu: ", 1)
            header["gpu"] = gpu.strip()
        header[key.strip()] = val.strip()
    return header, body


def corpus_sections(path) -> list[Section]:
    from .forms import guess_form
    _, body = parse_corpus_file(path)
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for ln in body.split("\n"):
        m = _CMD.match(ln.rstrip())
        if m and _looks_like_prompt(ln):
            parts.append((m.group("cmd").strip(), []))
            continue
        parts[-1][1].append(ln)
    out = []
    for cmd, lines in parts:
        text = "\n".join(lines)
        lines_nonblank = [x for x in lines if x.strip() and not _is_bare_prompt(x)]
        if not lines_nonblank:
            if cmd is not None:
                out.append(Section(cmd, _form_for(cmd, ""), ""))
            continue
        text = "\n".join(x for x in lines if not _is_bare_prompt(x))
        out.append(Section(cmd, _form_for(cmd, text) if cmd else guess_form(text), text))
    return out


def _looks_like_prompt(ln: str) -> bool:
    # A pasted command has no leading whitespace and either a prompt or the tool first.
    return not ln[:1].isspace()


def _is_bare_prompt(ln: str) -> bool:
    s = ln.strip()
    return bool(re.fullmatch(r"(?:\([^)]*\)\s*)?(?:\[[^\]]*\]|[\w@.~:/-]*)\s*[#$]", s))


def _form_for(cmd: str, text: str) -> str:
    from .forms import guess_form
    tool = cmd.split()[1] if cmd.startswith("sudo ") else cmd.split()[0]
    if tool == "nvidia-smi":
        if re.search(r"\snvlink\b", cmd):   # nvlink -s|--status, nvlink -e|--errorcounters (corpus 106, 119)
            return "nvlink_errors" if re.search(r"\s(?:-e|--errorcounters)\b", cmd) else "nvlink_status"
        if " -q" in cmd and "-x" not in cmd:
            return "smi_text"
        if "--query" in cmd:
            return "smi_csv"
        return guess_form(text) if text.strip() else "smi_error"
    if tool == "cat":
        return "proc_version" if "/proc/driver/nvidia/version" in cmd else guess_form(text)
    if tool == "journalctl" and "fabricmanager" in cmd:
        return "fabricmanager_log"
    if tool == "systemctl":
        return "systemctl_show" if " show" in cmd else "systemctl_status"
    return _FORM_BY_TOOL.get(tool, guess_form(text))
