"""``guess_form(text)``: which parser an unlabelled output needs (corpus text, pasted output).

Its own module so that the corpus reader (parsers/corpus.py) and the package's ``parse`` entry
both use it without importing each other (issue 40: it was a cycle, parsers <-> parsers.corpus).
"""

from __future__ import annotations

import re

from . import smi_error


_LSMOD_LINE = re.compile(r"^[A-Za-z0-9_]+\s+\d+\s+(?:\d+|-)(?:\s+\S+)?[ \t]*$")
# one `lspci` line: [domain:]bus:dev.fn <class name>: <description>
_LSPCI_PLAIN = re.compile(r"^(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] \w[\w ./-]{0,60}: \S")


def _lines_all(text: str, rx) -> bool:
    """Every non-blank line of ``text`` matches ``rx`` (and there is one)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and all(rx.match(ln) for ln in lines)


def guess_form(text: str) -> str:
    r"""Best form for unlabelled output (pasted or corpus text). Falls back to ``kernel_log``.

    Line-anchored patterns match indentation with ``[ \t]``, never ``\s``: ``^\s*`` under
    re.M runs on across newlines from every line start, quadratic on a text of blank lines
    (100,000 newlines took 200 s; tests/hostile/test_parser_properties.py)."""
    s = text.lstrip()
    if s.startswith("<?xml") or "<nvidia_smi_log" in text[:4096]:
        return "smi_xml"
    if "NVSMI LOG" in text or re.search(r"^[ \t]*Clocks (?:Event|Throttle) Reasons[ \t]*$", text, re.M):
        return "smi_text"
    if re.search(r"^\|\s*NVIDIA-SMI \S+.*Driver Version:", text, re.M):
        return "smi_summary"
    if re.search(r"^[ \t]+Link \d+: [A-Za-z ]+ Errors: ", text, re.M):
        return "nvlink_errors"
    if re.search(r"^[ \t]+Link \d+: (?:\d+(?:\.\d+)? ?GB/s|<inactive>)[ \t]*$", text, re.M) or \
            re.search(r"Nvlink queries are not supported for Devices in MIG mode|"
                      r"Device does not have or support Nvlink", text, re.I):
        return "nvlink_status"
    if re.search(r"^CA '[^']+'[ \t]*$", text, re.M):
        return "ibstat"
    if re.search(r"nv-fabricmanager(?:\[\d+\])?: ", text):
        return "fabricmanager_log"
    if re.search(r"^GPU \d+: .+ \(UUID: GPU-", text, re.M) and not re.search(r"^[ \t]+Link ", text, re.M):
        return "smi_list"
    if smi_error.parse_smi_error(text) is not None:
        return "smi_error"
    if "LnkCap:" in text or "LnkSta:" in text:
        return "lspci"
    if _lines_all(text, _LSPCI_PLAIN):   # plain `lspci` / `lspci -D` (corpus 121): the same stanza lines
        return "lspci"
    if "==> /sys/" in text:
        return "sysfs_tail"
    if re.search(r"NVRM version:.*NVIDIA UNIX", text):
        return "proc_version"
    if re.search(r"^(?:Error! |[A-Za-z0-9_-]+(?:/|, )[^,:\s]+(?:, \S+)*: (?:added|built|installed|broken))", text, re.M):
        return "dkms"
    if re.search(r"^(?:filename|license|vermagic|srcversion):\s", text, re.M):
        return "modinfo"
    if re.search(r"^\[(?:Unit|Service|Install)\][ \t]*$", text, re.M):
        return "unit_text"
    if re.search(r"^[ \t]*(?:Loaded|Active):\s", text, re.M):
        return "systemctl_status"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and all(_LSMOD_LINE.match(ln.strip()) for ln in lines):
        return "lsmod"
    if lines and re.match(r"^[\w.]+(?: \[[^\]]+\])?(?:, [\w.]+(?: \[[^\]]+\])?)+$", lines[0].strip()):
        return "smi_csv"
    return "kernel_log"
