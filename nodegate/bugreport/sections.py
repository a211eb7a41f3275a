"""Split an nvidia-bug-report.log into its sections (pure; no I/O).

nvidia-bug-report.sh (shipped with every NVIDIA Linux driver) writes blocks separated by a line of
44 underscores; the first non-blank line after the separator names the block in one of these
forms (every version's ``report_file``/``append``/``report_command`` functions):

- ``*** <path>`` then ``*** ls: <ls -l --full-time of it>``, then the file (a file dump);
- ``*** <path> does not exist`` / ``*** <path> is not readable``;
- a bare ``*** ls: ...`` listing (``echo_metadata`` of a link, e.g. /sys/class/drm/card0/device/driver);
- a command line, bare or with the path the script resolved (``nvidia-smi --query``,
  ``/usr/bin/nvidia-smi --query``, ``/usr/bin/lspci -d "10de:*" -v -xxx``, ``/sbin/modinfo nvidia | grep
  vermagic``, ``journalctl -b -0 _COMM=Xorg``), some with a colon (``dmesg:``, ``xset -q:``);
- fixed texts: ``Start of NVIDIA bug report log file.``, ``Scanning kernel log files for NVIDIA kernel
  messages:``, ``Skipping ... (x not found)`` / ``Skipping: x`` / ``Error: x``, ``End of NVIDIA bug report
  log file.``

``report_command`` writes several commands into one block (``nvidia-smi --query`` then
``nvidia-smi --query --unit`` and, from the 2025 script, the ``nvidia-smi nvlink ...`` commands): a
block's body is cut again at each line that is itself an nvidia-smi command line. The kernel-log
scan holds one part per source, each introduced by ``  <file>:`` or ``  journalctl -b <n>:``.

Versions seen (``nvidia-bug-report.sh Version: <$Change>`` in the first block) and what changed in
the headers this module and nodegate/bugreport/convert.py read: see VERSIONS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SEPARATOR = "_" * 44

#: bug-report versions whose header forms were read from the script or a real log (convert.SOURCES
#: maps each evidence key to the header forms; docs/bundle.md shows both tables)
VERSIONS: dict[str, str] = {
    "23400452": "driver 390 era (sakjain92/Fractional-GPUs driver/NVIDIA-Linux-x86_64-390.48/"
                "nvidia-bug-report.sh): '*** /proc/driver/nvidia/./version', 'lspci -d \"10de:*\" -v -xxx' (no link "
                "status), 'nvidia-smi --query', 'Scanning kernel log files' (/var/log/messages, kern.log, "
                "kernel.log, dmesg; journalctl -b -0/-1/-2), 'dmesg:'",
    "27505028": "driver 440 (akshaybaviskar/NVIDIA_driver_440 nvidia-bug-report.sh; tests/bugreports/202): as "
                "23400452 plus 'lspci -d \"10b5:*\" -v -xxx', 'lspci -t', 'lspci -nn', 'modinfo nvidia | grep "
                "vermagic', journalctl _COMM=Xorg blocks",
    "31295035": "driver 510 (tests/bugreports/203): adds 'systemctl status nvidia-suspend.service "
                "nvidia-hibernate.service nvidia-resume.service nvidia-powerd.service' and "
                "'/proc/driver/nvidia/./gpus/<bdf>/power'",
    "32599928": "driver 530-550 era (script text, code-index file id 12979609956): lspci as three blocks "
                "'lspci -nntv', 'lspci -nn', 'lspci -nnDvvvxxx' (LnkCap/LnkSta from here on), 'modinfo <m> | grep "
                "vermagic' for each loaded NVIDIA module, grep of nvrm-nvlog and nvidia-powerd in the scan",
    "37062940": "driver 570-580 era (bottlerocket-os/bottlerocket-admin-container nvidia-bug-report.sh, 2025): a "
                "versions table ('Component | Details') and 'NVIDIA Driver Type Detection:' first, 'lspci "
                "-nnDvvvxxxx', '*** /proc/driver/nvidia/version' (no './'), nvidia-persistenced.service in the "
                "systemctl status block, 'systemctl status nvidia-fabricmanager.service', 'nvidia-smi nvlink "
                "--status' etc. in the nvidia-smi block, 'Skipping: <what>' / 'Error: <what>' blocks",
}

_LS = re.compile(r"^\*\*\* ls: ")
_VERSION = re.compile(r"^nvidia-bug-report\.sh Version:\s*(\d{1,20})")
_SMI_CMD = re.compile(r"^(?:/\S*/)?nvidia-smi(?: .*)?$")
# the boot number is bounded (a 5,000-digit one made int() raise ValueError: INTERNALERROR)
_SCAN_PART = re.compile(r"^  (?P<src>(?:/\S+|journalctl -b -?\d{1,6})):\s*$")
_ABSENT = (" does not exist", " is not readable")


@dataclass
class Section:
    """One block: ``kind`` file | missing | listing | command | start | scan | skip | text | end;
    ``name`` the file path or the command without the executable's directory and a trailing colon
    (``lspci -nnDvvvxxxx``, ``nvidia-smi --query``, ``dmesg``); ``body`` the lines after the header
    (for files, after the ``*** ls:`` line); ``line`` the 1-based line of the header."""

    kind: str
    name: str
    header: str
    body: list[str] = field(default_factory=list)
    line: int = 0

    @property
    def text(self) -> str:
        return "\n".join(self.body).strip("\n") + ("\n" if any(l.strip() for l in self.body) else "")


def command_name(header: str) -> str:
    """``/usr/bin/lspci -d "10de:*" -v -xxx`` -> ``lspci -d "10de:*" -v -xxx``; ``dmesg:`` -> ``dmesg``."""
    h = header.strip()
    first, _, rest = h.partition(" ")
    if first.startswith("/"):
        first = first.rsplit("/", 1)[-1]
    h = (first + (" " + rest if rest else "")).strip()
    return h[:-1].rstrip() if h.endswith(":") else h


def _classify(header: str) -> tuple[str, str]:
    h = header.strip()
    if h.startswith("Start of NVIDIA bug report log file"):
        return "start", "start"
    if h.startswith("End of NVIDIA bug report log file"):
        return "end", "end"
    if h.startswith("Scanning kernel log files for NVIDIA kernel messages"):
        return "scan", "kernel log scan"
    if h.startswith(("Skipping", "Error: ")):
        return "skip", h
    if h.startswith("*** /"):   # a file dump, or '*** <path> does not exist' (no pattern: linear)
        path = h[4:]
        for suffix in _ABSENT:
            if path.endswith(suffix) and len(path) > len(suffix):
                return "missing", path[:-len(suffix)].rstrip()
        return "file", path
    if _LS.match(h):
        return "listing", h[len("*** ls: "):]
    if re.match(r"^(?:/\S*/)?[A-Za-z][\w.+-]*(?: |:$|$)", h):
        return "command", command_name(h)
    return "text", h


def split_sections(text: str) -> list[Section]:
    """Every block in order (a block before the first separator is kept as kind ``text``). Never
    raises: a line that fits no form makes a ``text`` section."""
    lines = text.split("\n")
    out: list[Section] = []
    block: list[str] = []
    start = 1
    blocks: list[tuple[int, list[str]]] = []
    for idx, ln in enumerate(lines):
        if ln.rstrip("\r") == SEPARATOR:
            blocks.append((start, block))
            block, start = [], idx + 2
        else:
            block.append(ln.rstrip("\r"))
    blocks.append((start, block))
    for first_line, blk in blocks:
        j = 0
        while j < len(blk) and not blk[j].strip():
            j += 1
        if j >= len(blk):
            continue
        kind, name = _classify(blk[j])
        body = blk[j + 1:]
        if kind == "file" and body and _LS.match(body[0]):
            body = body[1:]
        out.extend(_split_commands(Section(kind, name, blk[j].strip(), body, first_line + j)))
    return out


def _split_commands(sec: Section) -> list[Section]:
    """An nvidia-smi block holding several report_command outputs -> one Section per command."""
    if sec.kind != "command" or not sec.name.startswith("nvidia-smi"):
        return [sec]
    parts = [Section(sec.kind, sec.name, sec.header, [], sec.line)]
    for k, ln in enumerate(sec.body):
        s = ln.strip()
        if s and not ln.startswith((" ", "\t")) and _SMI_CMD.match(s):
            parts.append(Section("command", command_name(s), s, [], sec.line + k + 1))
        else:
            parts[-1].body.append(ln)
    return parts


def scan_parts(sec: Section) -> dict[str, list[str]]:
    """The kernel-log scan block: ``{"/var/log/kern.log": [...], "journalctl -b -0": [...]}``."""
    out: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for ln in sec.body:
        m = _SCAN_PART.match(ln)
        if m:
            cur = out.setdefault(m.group("src"), [])
            continue
        if cur is not None and ln.strip():
            cur.append(ln)
    return out


def bug_report_version(sections: list[Section]) -> str | None:
    """The ``nvidia-bug-report.sh Version:`` number of the start block, or None."""
    for s in sections:
        if s.kind == "start":
            for ln in s.body:
                m = _VERSION.match(ln.strip())
                if m:
                    return m.group(1)
    return None


def start_value(sections: list[Section], label: str) -> str | None:
    """A ``<label>: value`` line of the start block (``uname``, ``Date``, ``command line flags``)."""
    for s in sections:
        if s.kind == "start":
            for ln in s.body:
                if ln.startswith(label + ":"):
                    return ln.split(":", 1)[1].strip()
    return None
