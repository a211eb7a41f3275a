"""nvidia-bug-report sections -> bundle evidence items (pure; no I/O).

``SOURCES`` says which header forms fill which evidence key (docs/bundle.md shows it); a key no
section fills is absent from the bundle, so every check that needs it ERRORs "evidence not in the
bug report: KEY" (nodegate/bundle.py), never PASS. Items derived by inference rather than copied
are named in ``meta["derived"]`` with the reason.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Iterable

from ..bundle import Bundle, Evidence
from . import kernel
from .sections import _VERSION
from .stream import Kept, Lines, SectionReader, text_chunks


@dataclass(frozen=True)
class Source:
    key: str
    forms: tuple[str, ...]   # the section headers (or start-block lines) that carry it
    note: str


SOURCES: tuple[Source, ...] = (
    Source("meta.uname_r", ("uname: <uname -a> (start block)", "*** /proc/version"),
           "uname -a's release field, else /proc/version's 'Linux version <release>'"),
    Source("meta.hostname", ("uname: <uname -a> (start block)",), "uname -a's node name; the node is named after "
           "it, else after the log's file name"),
    Source("driver.proc_version", ("*** /proc/driver/nvidia/./version", "*** /proc/driver/nvidia/version"),
           "'./' up to 32599928 (the per-instance loop), none from 37062940"),
    Source("driver.params", ("*** /proc/driver/nvidia/./params", "*** /proc/driver/nvidia/params"), ""),
    Source("driver.gpus_information", ("*** /proc/driver/nvidia/./gpus/<bdf>/information",
                                       "*** /proc/driver/nvidia/gpus/<bdf>/information"),
           "one '== <file>' block per GPU, as the probe writes it"),
    Source("modules.proc", ("*** /proc/modules",), ""),
    Source("modinfo.nvidia", ("modinfo nvidia | grep vermagic", "/sbin/modinfo nvidia | grep vermagic"),
           "the vermagic line only; empty output (modinfo printed nothing) is not evidence"),
    Source("smi.q", ("nvidia-smi --query", "/usr/bin/nvidia-smi --query", "nvidia-smi -q"),
           "the alternative key for smi.qx (nvidia-smi -q text), cut before 'nvidia-smi --query --unit'"),
    Source("smi.qx", ("nvidia-smi -q -x", "nvidia-smi --query --xml-format"), "where a site's variant adds it"),
    Source("pci.lspci_vvv", ("lspci -nnDvvvxxxx", "lspci -nnDvvvxxx", "lspci -d \"10de:*\" -v -xxx"),
           "the most verbose block present; '-v -xxx' (before 530) has no LnkCap/LnkSta"),
    Source("kernel.log", ("dmesg:", "Scanning kernel log files for NVIDIA kernel messages: journalctl -b -0"),
           "the current boot (dmesg, plus journal lines dmesg lacks); judged"),
    Source("kernel.history", ("Scanning kernel log files ...: /var/log/kern.log, /var/log/messages, "
                              "/var/log/kernel.log", "Scanning kernel log files ...: journalctl -b -1, -b -2"),
           "earlier boots, each event once; shown as history, not judged"),
    Source("persistenced.process", ("Scanning kernel log files ...: journalctl -b -0",),
           "derived: 'nvidia-persistenced[<pid>]: Started' without a later 'Shutdown' (no uid: the user check "
           "needs /proc evidence)"),
    Source("systemd.persistenced_status", ("systemctl status ... nvidia-persistenced.service",),
           "the unit's block of the systemctl status section (37062940 adds the unit)"),
    Source("systemd.fabricmanager_status", ("systemctl status nvidia-fabricmanager.service",), "37062940"),
    Source("fabricmanager.version", ("(derived)",),
           "derived: 'tool missing' when the log shows no NVSwitch (no NVIDIA bridge in lspci) and no fabric "
           "manager trace (no fabricmanager.log, unit or nv-fabricmanager line)"),
    Source("dkms.status", ("dkms status",), "where a variant adds it; the stock script has none"),
)

_GPU_INFO = re.compile(r"^/proc/driver/nvidia/(?:[^/]+/)?gpus/(?P<bdf>[^/]+)/information$")
_PROC = {"/proc/driver/nvidia/version": "driver.proc_version", "/proc/driver/nvidia/params": "driver.params",
         "/proc/modules": "modules.proc"}
_PROC_INSTANCE = re.compile(r"^/proc/driver/nvidia/(?:\.|\d+)/(?P<leaf>version|params)$")
_LSPCI_RANK = (("-nnDvvvxxxx", 4), ("-nnDvvvxxx", 4), ("vvv", 3), ("-vv", 2), ("-v", 1))
_LINUX_VERSION = re.compile(r"^Linux version (\S+)")


def _file_key(path: str) -> str | None:
    if path in _PROC:
        return _PROC[path]
    m = _PROC_INSTANCE.match(path)
    if m:
        return "driver.proc_version" if m.group("leaf") == "version" else "driver.params"
    return None


def _lspci_rank(name: str) -> int:
    if not name.startswith("lspci") or " -t" in name or name.endswith("-nn") or "10b5" in name:
        return 0
    return next((r for flag, r in _LSPCI_RANK if flag in name), 0)


def _unit_block(lines: Iterable[str], unit: str) -> str:
    """The ``● <unit> - ...`` block of a multi-unit ``systemctl status`` page, as text ("" when absent)."""
    out = io.StringIO()
    inside = False
    for ln in lines:
        s = ln.lstrip("●*○× ").strip()
        head = ln.strip()[:1] in ("●", "○", "×", "*") and " - " in ln
        if head:
            inside = s.startswith(unit)
        if inside:
            out.write(ln + "\n")
    return out.getvalue()


def _item(key: str, text: str, truncated: bool = False) -> Evidence:
    """An evidence item; ``truncated`` when its section was over stream.MAX_SECTION_CHARS (its
    checks ERROR "output exceeded the per-item cap", as for a probe item over its cap)."""
    return Evidence(key, text.encode("utf-8"), b"", 0, "truncated" if truncated else "ok",
                    why="the bug report's section is over the per-item cap" if truncated else "")


def _wanted(kind: str, name: str) -> bool:
    """Whether ``convert`` reads the body of this section (every other body is dropped unread)."""
    if kind == "file":
        return _file_key(name) is not None or _GPU_INFO.match(name) is not None or name == "/proc/version"
    return (name in _SMI_Q or name in _SMI_QX or name == "dkms status" or name.startswith("systemctl status")
            or _lspci_rank(name) > 0 or re.fullmatch(r"modinfo nvidia \| grep vermagic", name) is not None)


_SMI_Q = ("nvidia-smi --query", "nvidia-smi -q")
_SMI_QX = ("nvidia-smi -q -x", "nvidia-smi --query --xml-format")


def _version_of(line: str) -> str | None:
    m = _VERSION.match(line)
    return m.group(1) if m else None


def convert(text: str, fallback_name: str, source_file: str = "") -> Bundle:
    """The Bundle of one bug report ``text`` (see ``convert_stream``)."""
    return convert_stream(text_chunks(text), fallback_name, source_file)


def convert_stream(chunks: Iterable[str], fallback_name: str, source_file: str = "") -> Bundle:
    """The Bundle of one bug report given as pieces of its text (``stream.log_chunks``: read once,
    in order, keeping only the sections that become evidence); the node is named after the log's
    ``uname -a`` host (``fallback_name`` when it has none or it is not usable as a name). Time is
    linear in the text; memory a fixed multiple of the largest kept section (bugreport/stream.py)."""
    r = SectionReader(_wanted, _version_of).read(chunks)
    items: dict[str, Evidence] = {}
    derived: dict[str, str] = {}
    absent: dict[str, str] = {}
    uname = (r.uname or "").split()
    host = uname[1] if len(uname) > 2 and uname[0] == "Linux" else None
    if len(uname) > 2 and uname[0] == "Linux":
        items["meta.uname_r"] = _item("meta.uname_r", uname[2] + "\n")
        items["meta.hostname"] = _item("meta.hostname", uname[1] + "\n")
    gpu_info: list[str] = []
    gpu_info_cut = False
    lspci: tuple[int, Kept] | None = None
    for s in r.kept:
        if s.kind == "file":
            key = _file_key(s.name)
            if key is not None and key not in items:
                items[key] = _item(key, s.body.text, s.body.truncated)
            elif (m := _GPU_INFO.match(s.name)) is not None:
                gpu_info.append(f"== /proc/driver/nvidia/gpus/{m.group('bdf')}/information\n{s.body.text}")
                gpu_info_cut |= s.body.truncated
            elif s.name == "/proc/version" and "meta.uname_r" not in items:
                m = _LINUX_VERSION.match(s.body.text.strip())
                if m:
                    items["meta.uname_r"] = _item("meta.uname_r", m.group(1) + "\n")
        else:
            _command(s, items, absent)
            rank = _lspci_rank(s.name)
            if rank and (lspci is None or rank > lspci[0]):
                lspci = (rank, s)
            if s.name.startswith("systemctl status"):
                block = _unit_block(s.body, "nvidia-persistenced.service")
                if block:
                    items["systemd.persistenced_status"] = _item("systemd.persistenced_status", block, s.body.truncated)
                fm = _unit_block(s.body, "nvidia-fabricmanager.service")
                if fm:
                    r.fm_traces = True
                    items["systemd.fabricmanager_status"] = _item("systemd.fabricmanager_status", fm, s.body.truncated)
    if gpu_info:
        items["driver.gpus_information"] = _item("driver.gpus_information", "\n".join(gpu_info), gpu_info_cut)
    if lspci is not None:
        items["pci.lspci_vvv"] = _item("pci.lspci_vvv", lspci[1].body.text, lspci[1].body.truncated)
        if lspci[0] < 2:
            derived["pci.lspci_vvv"] = f"'{lspci[1].name}': no -vv, so no LnkCap/LnkSta (link values from nvidia-smi)"
    _kernel(r.dmesg, r.journal, r.syslog_files, items, derived)
    _fabricmanager(items, derived, r.fm_traces)
    name = _node_name(host, fallback_name)
    meta = {"node": name, "target": f"nvidia-bug-report {source_file or fallback_name}", "status": "ok",
            "origin": "nvidia-bug-report", "bug_report_version": r.version,
            "source_file": source_file, "sections": r.sections, "derived": derived, "absent": absent,
            "spec": {}}
    return Bundle(name, items, meta)


def _command(s: Kept, items: dict, absent: dict) -> None:
    name = s.name
    if name in _SMI_Q and "smi.q" not in items:
        items["smi.q"] = _item("smi.q", s.body.text, s.body.truncated)
    elif name in _SMI_QX and "smi.qx" not in items:
        items["smi.qx"] = _item("smi.qx", s.body.text, s.body.truncated)
    elif re.fullmatch(r"modinfo nvidia \| grep vermagic", name):
        if s.body.text.strip():
            items["modinfo.nvidia"] = _item("modinfo.nvidia", s.body.text, s.body.truncated)
        else:
            absent["modinfo.nvidia"] = f"'{s.header}' printed nothing"
    elif name == "dkms status":
        items["dkms.status"] = _item("dkms.status", s.body.text, s.body.truncated)


def _kernel(dmesg: Lines | None, journal: dict[int, Lines], syslog_files: dict[str, Lines], items: dict,
            derived: dict) -> None:
    if dmesg is None and 0 not in journal:
        return
    cut = any(x.truncated for x in [dmesg, *journal.values(), *syslog_files.values()] if x is not None)
    current, history, counts = kernel.split_boots(dmesg, journal, syslog_files)
    srcs = " + ".join(x for x, present in (("dmesg", dmesg is not None), ("journalctl -b -0", 0 in journal))
                      if present)
    items["kernel.log"] = _item("kernel.log", f"# source: {srcs} (nvidia-bug-report)\n" + "\n".join(current) + "\n",
                                cut)
    derived["kernel.log"] = (f"current boot: {counts['dmesg']} dmesg line(s) + the journal -b -0 lines dmesg lacks "
                             f"({counts['duplicates']} duplicate line(s) across sources dropped)")
    if history or syslog_files or any(k != 0 for k in journal):
        items["kernel.history"] = _item("kernel.history", "# source: earlier boots (nvidia-bug-report: "
                                        + ", ".join(list(syslog_files) + [f"journalctl -b -{k}" for k in
                                                                           sorted(journal) if k]) + ")\n"
                                        + "\n".join(history) + "\n", cut)
    if 0 in journal:
        pids = kernel.persistenced_from_journal(journal[0])
        body = "".join(f"== pid {p}\ncmdline: nvidia-persistenced\n" for p in pids) + f"processes: {len(pids)}\n"
        items["persistenced.process"] = _item("persistenced.process", body, journal[0].truncated)
        derived["persistenced.process"] = ("from the current boot's journal: 'nvidia-persistenced[<pid>]: Started' "
                                           "without a later 'Shutdown' (uid and rundir unknown)")


def _fabricmanager(items: dict, derived: dict, traces: bool) -> None:
    lspci = items.get("pci.lspci_vvv")
    nvswitch = bool(lspci and re.search(r"^\S+ Bridge[^:]*: NVIDIA", lspci.stdout.decode("utf-8", "replace"), re.M))
    if traces or nvswitch or lspci is None:
        return   # installed, or cannot tell: the checks meet "evidence not in the bug report"
    items["fabricmanager.version"] = Evidence("fabricmanager.version", b"",
                                              b"nv-fabricmanager: not found (nvidia-bug-report)\n", 127, "ok")
    derived["fabricmanager.version"] = ("no NVSwitch in lspci and no fabric manager trace in the log "
                                        "(fabricmanager.log, unit, nv-fabricmanager lines): not installed")


_NAME_OK = re.compile(r"^[A-Za-z0-9_.\-]{1,253}$")


def _node_name(host: str | None, fallback: str) -> str:
    for cand in (host, fallback):
        if cand and _NAME_OK.match(cand) and cand not in (".", ".."):
            return cand
    cleaned = re.sub(r"[^A-Za-z0-9_.\-]+", "-", fallback or "bug-report").strip("-.") or "bug-report"
    return cleaned[:253]
