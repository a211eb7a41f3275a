"""nvidia-bug-report sections -> bundle evidence items (pure; no I/O).

``SOURCES`` says which header forms fill which evidence key (docs/bundle.md shows it); a key no
section fills is absent from the bundle, so every check that needs it ERRORs "evidence not in the
bug report: KEY" (nodegate/bundle.py), never PASS. Items derived by inference rather than copied
are named in ``meta["derived"]`` with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..bundle import Bundle, Evidence
from . import kernel
from .sections import Section, bug_report_version, scan_parts, split_sections, start_value


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


def _unit_block(lines: list[str], unit: str) -> list[str]:
    """The ``● <unit> - ...`` block of a multi-unit ``systemctl status`` page."""
    out: list[str] = []
    inside = False
    for ln in lines:
        s = ln.lstrip("●*○× ").strip()
        head = ln.strip()[:1] in ("●", "○", "×", "*") and " - " in ln
        if head:
            inside = s.startswith(unit)
        if inside:
            out.append(ln)
    return out


def _item(key: str, text: str) -> Evidence:
    return Evidence(key, text.encode("utf-8"), b"", 0, "ok")


def convert(text: str, fallback_name: str, source_file: str = "") -> Bundle:
    """The Bundle of one bug report ``text``; the node is named after the log's ``uname -a`` host
    (``fallback_name`` when it has none or it is not usable as a name)."""
    sections = split_sections(text)
    items: dict[str, Evidence] = {}
    derived: dict[str, str] = {}
    absent: dict[str, str] = {}
    uname = (start_value(sections, "uname") or "").split()
    host = uname[1] if len(uname) > 2 and uname[0] == "Linux" else None
    if len(uname) > 2 and uname[0] == "Linux":
        items["meta.uname_r"] = _item("meta.uname_r", uname[2] + "\n")
        items["meta.hostname"] = _item("meta.hostname", uname[1] + "\n")
    gpu_info: list[str] = []
    lspci: tuple[int, Section] | None = None
    dmesg: list[str] | None = None
    journal: dict[int, list[str]] = {}
    syslog_files: dict[str, list[str]] = {}
    fm_traces = False
    for s in sections:
        if s.kind == "file":
            key = _file_key(s.name)
            if key is not None and key not in items:
                items[key] = _item(key, s.text)
            elif (m := _GPU_INFO.match(s.name)) is not None:
                gpu_info.append(f"== /proc/driver/nvidia/gpus/{m.group('bdf')}/information\n{s.text}")
            elif s.name == "/proc/version" and "meta.uname_r" not in items:
                m = _LINUX_VERSION.match(s.text.strip())
                if m:
                    items["meta.uname_r"] = _item("meta.uname_r", m.group(1) + "\n")
            if "fabricmanager" in s.name:
                fm_traces = True
        elif s.kind == "command":
            _command(s, items, absent)
            r = _lspci_rank(s.name)
            if r and (lspci is None or r > lspci[0]):
                lspci = (r, s)
            if s.name == "dmesg":
                dmesg = s.body
            if s.name.startswith("systemctl status"):
                block = _unit_block(s.body, "nvidia-persistenced.service")
                if block:
                    items["systemd.persistenced_status"] = _item("systemd.persistenced_status", "\n".join(block) + "\n")
                fm = _unit_block(s.body, "nvidia-fabricmanager.service")
                if fm:
                    fm_traces = True
                    items["systemd.fabricmanager_status"] = _item("systemd.fabricmanager_status", "\n".join(fm) + "\n")
        elif s.kind == "scan":
            for src, lines in scan_parts(s).items():
                if src.startswith("journalctl -b"):
                    journal[abs(int(src.split()[-1]))] = lines
                else:
                    syslog_files[src] = lines
    if gpu_info:
        items["driver.gpus_information"] = _item("driver.gpus_information", "\n".join(gpu_info))
    if lspci is not None:
        items["pci.lspci_vvv"] = _item("pci.lspci_vvv", lspci[1].text)
        if lspci[0] < 2:
            derived["pci.lspci_vvv"] = f"'{lspci[1].name}': no -vv, so no LnkCap/LnkSta (link values from nvidia-smi)"
    _kernel(dmesg, journal, syslog_files, items, derived)
    every = "\n".join(l for s in sections if s.kind in ("command", "scan") for l in s.body)
    if fm_traces or re.search(r"nv-fabricmanager|nvidia-fabricmanager", every):
        fm_traces = True
    _fabricmanager(items, derived, fm_traces)
    name = _node_name(host, fallback_name)
    meta = {"node": name, "target": f"nvidia-bug-report {source_file or fallback_name}", "status": "ok",
            "origin": "nvidia-bug-report", "bug_report_version": bug_report_version(sections),
            "source_file": source_file, "sections": len(sections), "derived": derived, "absent": absent,
            "spec": {}}
    return Bundle(name, items, meta)


def _command(s: Section, items: dict, absent: dict) -> None:
    name = s.name
    if name in ("nvidia-smi --query", "nvidia-smi -q") and "smi.q" not in items:
        items["smi.q"] = _item("smi.q", s.text)
    elif name in ("nvidia-smi -q -x", "nvidia-smi --query --xml-format") and "smi.qx" not in items:
        items["smi.qx"] = _item("smi.qx", s.text)
    elif re.fullmatch(r"modinfo nvidia \| grep vermagic", name):
        if s.text.strip():
            items["modinfo.nvidia"] = _item("modinfo.nvidia", s.text)
        else:
            absent["modinfo.nvidia"] = f"'{s.header}' printed nothing"
    elif name == "dkms status":
        items["dkms.status"] = _item("dkms.status", s.text)


def _kernel(dmesg, journal, syslog_files, items: dict, derived: dict) -> None:
    if dmesg is None and 0 not in journal:
        return
    current, history, counts = kernel.split_boots(dmesg, journal, syslog_files)
    srcs = " + ".join(x for x, present in (("dmesg", dmesg is not None), ("journalctl -b -0", 0 in journal))
                      if present)
    items["kernel.log"] = _item("kernel.log", f"# source: {srcs} (nvidia-bug-report)\n" + "\n".join(current) + "\n")
    derived["kernel.log"] = (f"current boot: {counts['dmesg']} dmesg line(s) + the journal -b -0 lines dmesg lacks "
                             f"({counts['duplicates']} duplicate line(s) across sources dropped)")
    if history or syslog_files or any(k != 0 for k in journal):
        items["kernel.history"] = _item("kernel.history", "# source: earlier boots (nvidia-bug-report: "
                                        + ", ".join(list(syslog_files) + [f"journalctl -b -{k}" for k in
                                                                           sorted(journal) if k]) + ")\n"
                                        + "\n".join(history) + "\n")
    if 0 in journal:
        pids = kernel.persistenced_from_journal(journal[0])
        body = "".join(f"== pid {p}\ncmdline: nvidia-persistenced\n" for p in pids) + f"processes: {len(pids)}\n"
        items["persistenced.process"] = _item("persistenced.process", body)
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
