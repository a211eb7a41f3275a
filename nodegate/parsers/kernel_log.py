"""Parser for kernel log lines about the NVIDIA driver (NVRM, Xid, nvidia-*).

Usage::

    probe kernel.log: dmesg | grep -iE 'nvrm|nvidia|xid|nouveau|fallen off|gsp'
                      (else journalctl -k -b -o short-iso | grep ...); first line '# source: ...'

Line shapes accepted (checks.md "Kernel log"): plain dmesg ``[  903.609564] msg``; ``dmesg -T``
``[Thu Apr  4 18:03:56 2024] msg``; ``--time-format iso`` ``2024-11-15T05:39:15,491363+00:00 msg``;
``--decode`` prefixes ``kern  :warn  : ``; journal/syslog ``Mar 03 13:47:27 host kernel: msg``,
RFC3339 and short-iso ``2024-06-02T12:28:05.866240-04:00 host kernel: msg``; ``talosctl dmesg``
``10.10.11.119: kern:     err: [2026-04-22T21:25:20.466440686Z]: msg`` (corpus 122); bare lines.

Records: a line without its own timestamp after a timestamped record is a continuation
(dmesg prints the header only on the first line of a multi-line printk); an ``NVRM:`` line whose
text is indented or continues a sentence (lower-case prose word, e.g. ``NVRM: this kernel
module has the version 550.78.``) joins the NVRM record before it even when the journal gave it
its own timestamp. Joined text is separated by single spaces.

Kinds (NVIDIA Xid catalog and NVRM messages seen in corpus/): ``xid`` (``xid`` number, bus id from
``Xid (PCI:0000:19:00): 48``), ``fallen_off_bus``, ``rm_init_adapter_failed`` (details ``code``
e.g. ``0x62:0x65:1792``), ``gsp_init_failed``, ``api_mismatch`` (details ``client_version``,
``kernel_version``), ``requires_open`` (details ``pci_id``), ``open_unsupported_gpu`` ("Open
nvidia.ko is only ready for use on Data Center GPUs": the open module refused a GeForce or
workstation GPU, bug report 204), ``probe_not_called`` (details
``count``), ``persistence_legacy``, ``loading_banner`` (details ``flavor``, ``version``),
``module_license`` (details ``module``, ``license``), ``drm_initialized``, ``nvlink_training_failed``
and ``fsp_boot_failed`` (issue 39.2; bus id from the nearest preceding record naming one), ``sxid`` (NVSwitch:
``nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 ...`` or ``..., Fatal, Link 28 ...``;
details ``sxid``, ``device``, ``fatal`` yes|no|unknown, ``severity``; the bus id keeps its function),
``other``. Xid details: ``recovery_action`` for Xid 154 ("... to 0x1 (GPU Reset Required)"),
``nvlink_link`` for Xid 74 ("fatal error detected on link 8"). The GSP timeout banner
``_kgspLogXid119: *** GSP Timeout ***`` (no ``Xid (PCI:...)`` header) is an ``xid`` event 119
whose bus id is the adjacent ``NVRM: GPU at PCI:<bus>`` line's (corpus 122).

Schema::

    parse_kernel_log(text) -> [KernelEvent(kind, text, timestamp, bus_id, xid, details)]
    kernel_log_source(text) -> "dmesg" | "journalctl -k -b" | None
    kernel_log_cut(text) -> KernelLogCut(seen, kept, dropped_severe) | None   (last line
        '# lines: seen=S kept=K dropped_severe=D|unknown'; None: no such line, e.g. probe v3)

Example::

    [Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.
    -> KernelEvent(kind="xid", xid=79, bus_id="0000:a1:00.0", timestamp="Fri Apr  5 21:29:39 2024", ...)
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..facts import KernelEvent, KernelLogCut
from . import _values as V
from ._limits import number
from .proc_version import parse_banner_line

MAX_LOG_CHARS = 16 * 1024 * 1024

_DECODE = re.compile(r"^[a-z0-9]+\s*:[a-z]+\s*: ")
_TS = [
    re.compile(r"^\[\s*(?P<ts>\d+\.\d+)\]\s?"),
    re.compile(r"^\[(?P<ts>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]\s?"),
    # journal RFC3339 / short-iso with host and identifier
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+"
               r"(?P<host>\S+)\s+(?P<ident>kernel|[A-Za-z0-9_.@/-]+\[\d+\]):\s?"),
    # dmesg --time-format iso (no host)
    re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[.,]\d+(?:Z|[+-]\d\d:?\d\d))\s?"),
    # syslog/journal short: "Mar 03 13:47:27 host kernel: "
    re.compile(r"^(?P<ts>[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d)\s+(?P<host>\S+)\s+"
               r"(?P<ident>kernel|[A-Za-z0-9_.@/-]+\[\d+\]):\s?"),
    # talosctl dmesg: "<node>: <facility>: <level, right-aligned>: [<RFC3339Nano>]: "
    re.compile(r"^(?P<host>[\w.:-]{1,64}): [a-z]{2,8}:\s{0,8}[a-z]{2,8}: \[(?P<ts>[0-9T:.,+Z-]{10,40})\]:\s?"),
]
_UPTIME = re.compile(r"^\[\s*\d{1,10}\.\d{1,9}\]\s?")
_BUS = re.compile(r"(?:PCI:)?\b([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\b")
_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F:.]+)\): (?P<xid>\d+)")
_RMINIT = re.compile(r"RmInitAdapter failed!(?: \((?P<code>0x[0-9a-fA-F]+:0x[0-9a-fA-F]+:\d+)\))?")
_API = re.compile(r"API mismatch: the client has the version (?P<client>[0-9][\w.-]*?),? but.*?"
                  r"this kernel module has the version (?P<kernel>[0-9][\w.-]*?)\.?(?:\s|$)")
_REQ_OPEN = re.compile(r"requires use of the NVIDIA open kernel modules")
_PCI_ID = re.compile(r"PCI ID: ([0-9a-fA-F]{4}:[0-9a-fA-F]{4})")
# the inverse flavour mismatch: the open module (515-555) refuses a GeForce/workstation GPU unless
# NVreg_OpenRmEnableUnsupportedGpus=1 (NVIDIA driver README "Open Linux Kernel Modules"; bug report 204:
# a GTX 1650 Ti laptop under 525, followed by RmInitAdapter failed)
_OPEN_UNSUPPORTED = re.compile(r"Open nvidia\.ko is only ready for use on Data Center GPUs")
_PROBE = re.compile(r"probe routine was not called for (?P<n>\d+) device")
_GSP = re.compile(r"Cannot initialize GSP firmware RM|_kgspBootGspRm|kgspWaitForGfwBootOk|"
                  r"failed to wait for GFW_?BOOT|GSP firmware .*fail", re.I)
# (?<![\w-]) anchors the module name at a word start: without it a long run of word characters
# is retried from every position (quadratic time on one hostile line).
# NVLink training failures without an Xid (issue 39.2): the driver's ALI link training on Hopper and
# Blackwell (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/nvlink/arch/hopper/kernel_nvlink_gh100.c:
# "Getting peer%d's postRxDetLinkMask failed!", kernel_nvlink.c "Failed to update Rx Detect Link mask!",
# "ALI Error for GPU %d::linkId %d: 0x%x"); seen on a B200 node whose nvidia-smi then hung
# (NVIDIA/open-gpu-kernel-modules issues) and on B300 racks (NVLinkFailure)
_NVLINK_TRAIN = re.compile(r"postRxDetLinkMask failed|Failed to update Rx Detect Link mask|"
                           r"ALI Error for GPU \d{1,3}::linkId \d{1,3}|NVLink training failed", re.I)
# FSP (the GPU's boot firmware, which boots the GSP-FMC) failures on Hopper and later: the GSP never
# starts (NVIDIA/open-gpu-kernel-modules#729, NVIDIA/nvtrust#77: "kfspPollForQueueEmpty_IMPL: Timed out
# waiting for FSP command queue to be empty.", "... returned from kfspSendBootCommands_HAL(...)")
_FSP = re.compile(r"Timed out waiting for FSP command queue|FSP boot cmds failed|"
                  r"returned from kfspSendBootCommands", re.I)
_LICENSE = re.compile(r"(?<![\w-])(?P<mod>[\w-]+): module license '(?P<lic>[^']*)' taints kernel")
#: The kernel's printk record is at most 1024 bytes (LOG_LINE_MAX = 1024 - 32 in
#: kernel/printk/printk.c); longer lines are junk and are cut. A record with its continuation
#: lines joined is capped too, so one hostile log cannot make any regex work on megabytes.
MAX_LINE = 4096
MAX_RECORD = 16384
_DRM = re.compile(r"\[drm\] Initialized nvidia-drm .* for (?P<bus>[0-9a-fA-F:.]+)")
_SXID = re.compile(r"(?P<dev>nvidia-nvswitch\d{1,3}): SXid \((?:PCI:)?(?P<bus>[0-9a-fA-F:.]{7,16})\): (?P<sxid>\d{1,6}),?"
                   r"(?P<rest>.{0,200})")
_SEVERITY = re.compile(r"\bSeverity (?P<n>\d+)")
_BANNER_XID = re.compile(r"_kgspLogXid(?P<xid>\d{1,4}):")
_RECOVERY = re.compile(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to 0x[0-9a-fA-F]+ \((?P<action>[^)]+)\)")
_NVLINK_LINK = re.compile(r"NVLink: fatal error detected on link (?P<link>\d+)")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})")
_PROSE = re.compile(r"^[a-z][a-z0-9().,'/-]*(?:\s|$)")


def kernel_log_source(text: str | bytes) -> str | None:
    """The probe's ``# source: <tool>`` header, or None."""
    text = V.check_text(text, cap=MAX_LOG_CHARS, what="kernel log")
    for ln in text.splitlines()[:3]:
        if ln.startswith("# source:"):
            return ln.split(":", 1)[1].strip() or None
    return None


_CUT = re.compile(r"^# lines: seen=(?P<seen>\d{1,12}) kept=(?P<kept>\d{1,12}) "
                  r"dropped_severe=(?P<dropped>\d{1,12}|unknown)\s*$", re.M)

#: ``tail -n`` of the probe before it recorded its cut (probe v3 and earlier): a log of exactly
#: this many lines without a ``# lines:`` record may have been cut.
LEGACY_TAIL = 5000


def kernel_log_cut(text: str | bytes) -> KernelLogCut | None:
    """The probe's record of how it cut the log (its last ``# lines:`` line), or None when the
    item has none (written by probe v3 or earlier, or by hand). ParseError for a malformed one
    (kept more than seen)."""
    text = V.check_text(text, cap=MAX_LOG_CHARS, what="kernel log")
    m = None
    for m in _CUT.finditer(text):
        pass
    if m is None:
        return None
    seen, kept = number(m.group("seen")), number(m.group("kept"))
    if kept > seen:
        raise ParseError(f"kernel log cut record keeps more lines than it saw: {m.group(0)!r}")
    d = m.group("dropped")
    return KernelLogCut(seen, kept, None if d == "unknown" else number(d))


def record_lines(text: str | bytes) -> int:
    """Lines of the log that are neither blank nor ``#`` probe records."""
    text = V.check_text(text, cap=MAX_LOG_CHARS, what="kernel log")
    return sum(1 for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))


def parse_kernel_log(text: str | bytes) -> list[KernelEvent]:
    """Every record in order. Lines starting with ``#`` (probe header) and blank lines are
    skipped. Empty -> []. Free text never raises (an unknown line is kind ``other``)."""
    text = V.check_text(text, cap=MAX_LOG_CHARS, what="kernel log")
    recs: list[list] = []   # [timestamp, text, stamped]
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        ts, msg, stamped = _strip(raw[:MAX_LINE])
        if recs and _continues(recs[-1], msg, stamped):
            if len(recs[-1][1]) < MAX_RECORD:
                recs[-1][1] += " " + _cont_text(msg)
            continue
        recs.append([ts, msg.strip(), stamped])
    events = [_classify(ts, msg) for ts, msg, _ in recs]
    _attach_banner_buses(events)
    _attach_preceding_buses(events)
    return events


#: kinds whose line names no GPU: the GPU is the one the nearest preceding NVRM record named
_NEAREST_BUS_KINDS = ("nvlink_training_failed", "fsp_boot_failed", "gsp_init_failed")
#: how far back a bus id is looked for (records): a failure is printed amid its GPU's lines
_NEAREST_BUS_WINDOW = 50


def _attach_preceding_buses(events: list[KernelEvent]) -> None:
    """A failure line without a bus id (``Getting peer0's postRxDetLinkMask failed!``,
    ``Timed out waiting for FSP command queue``) belongs to the GPU the nearest preceding NVRM
    record names (``kfspDumpDebugState_GH100: GPU 0000:01:00``, ``NVRM: GPU at PCI:...``, an Xid):
    issue 39.2. Linear: one pass keeping the last bus id seen within the window; none found:
    the event stays node-wide (NG-LOG-001)."""
    _attach_following_rminit(events)
    last_bus, last_i = None, -1
    for i, ev in enumerate(events):
        if ev.bus_id:
            last_bus, last_i = ev.bus_id, i
            continue
        if ev.kind in _NEAREST_BUS_KINDS and last_bus and i - last_i <= _NEAREST_BUS_WINDOW:
            ev.bus_id = last_bus
            ev.details["bus_from"] = "preceding line"


#: how far ahead the RmInitAdapter failure of the GPU whose GSP boot failed is looked for (records)
_RMINIT_WINDOW = 8


def _attach_following_rminit(events: list[KernelEvent]) -> None:
    """``RmInitAdapter: Cannot initialize GSP firmware RM`` names no GPU; the driver's caller prints
    ``GPU 0000:98:00.0: RmInitAdapter failed! (0x62:...)`` for the GPU it was initialising right
    after it (corpus 023, 024; a Raspberry Pi 5 RTX report: ``kernel_gsp_tu102.c:482`` assertion, the
    GSP line, then the RmInitAdapter line). That GPU is the one, not whichever GPU an earlier line
    named (on a node of several GPUs, another GPU's). One backward pass (linear); none within the
    window: the preceding-record rule decides."""
    next_bus, next_i = None, -1
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if ev.kind == "rm_init_adapter_failed" and ev.bus_id:
            next_bus, next_i = ev.bus_id, i
        elif ev.kind == "gsp_init_failed" and not ev.bus_id and next_bus and next_i - i <= _RMINIT_WINDOW:
            ev.bus_id = next_bus
            ev.details["bus_from"] = "following RmInitAdapter failure"


def _attach_banner_buses(events: list[KernelEvent]) -> None:
    """A ``_kgspLogXid<N>`` banner names no GPU: the driver prints ``NVRM: GPU at PCI:<bus>`` right
    after it (corpus 122) or, for the Xid line itself, right before (corpus 101): take the nearest
    such line within three records, after first."""
    for i, ev in enumerate(events):
        if ev.kind != "xid" or ev.bus_id or not ev.details.get("banner"):
            continue
        for j in [*range(i + 1, min(len(events), i + 4)), *range(i - 1, max(-1, i - 4), -1)]:
            m = _GPU_AT.search(events[j].text)
            if m:
                ev.bus_id = _bus(m.group("bus"))
                break


def _strip(raw: str) -> tuple[str | None, str, bool]:
    line = raw.rstrip()
    line = _DECODE.sub("", line, count=1)
    for rx in _TS:
        m = rx.match(line)
        if m:
            rest = line[m.end():]
            if m.groupdict().get("host") is not None:
                # syslog files keep the kernel's own uptime stamp after 'kernel:' (kern.log: 'Mar 13 21:36:59 hx
                # kernel: [    6.311007] NVRM: ...', bug report 204): the record starts after it
                rest = _UPTIME.sub("", rest, count=1)
            ident = m.groupdict().get("ident")
            if ident and not ident.startswith("kernel"):
                rest = f"{ident}: {rest}"
            return m.group("ts"), rest, True
    return None, line, False


def _continues(prev: list, msg: str, stamped: bool) -> bool:
    s = msg.strip()
    prev_nvrm = prev[1].startswith("NVRM:")
    if not stamped and prev[2] and (s.startswith("NVRM:") or msg[:1].isspace()):
        return True
    if not s.startswith("NVRM:") or not prev_nvrm:
        return False
    body = s[len("NVRM:"):]
    if body.startswith("  "):
        return True
    return bool(_PROSE.match(body.strip()))


def _cont_text(msg: str) -> str:
    s = msg.strip()
    if s.startswith("NVRM:"):
        s = s[len("NVRM:"):].strip()
    return s


def _classify(ts: str | None, msg: str) -> KernelEvent:
    ev = KernelEvent(kind="other", text=msg, timestamp=ts)
    m = _XID.search(msg)
    if m:
        ev.kind, ev.xid = "xid", number(m.group("xid"))
        ev.bus_id = _bus(m.group("bus"))
        if r := _RECOVERY.search(msg):
            ev.details["recovery_action"] = r.group("action").strip()
        if r := _NVLINK_LINK.search(msg):
            ev.details["nvlink_link"] = r.group("link")
        return ev
    if m := _SXID.search(msg):
        rest = m.group("rest")
        sev = _SEVERITY.search(rest)
        low = rest.lower()
        fatal = ("no" if "non-fatal" in low or (sev and sev.group("n") == "0") else
                 "yes" if "fatal" in low or (sev and sev.group("n") == "1") else "unknown")
        ev.kind, ev.bus_id = "sxid", _bus(m.group("bus"))
        ev.details = {"sxid": m.group("sxid"), "device": m.group("dev"), "fatal": fatal,
                      **({"severity": sev.group("n")} if sev else {})}
        return ev
    if m := _BANNER_XID.search(msg):
        ev.kind, ev.xid, ev.details = "xid", number(m.group("xid")), {"banner": "yes"}
        return ev
    ev.bus_id = _first_bus(msg)
    if (m := _RMINIT.search(msg)) or "rm_init_adapter failed" in msg:
        ev.kind = "rm_init_adapter_failed"
        if m and m.group("code"):
            ev.details["code"] = m.group("code")
    elif "fallen off the bus" in msg:
        ev.kind = "fallen_off_bus"
    elif _GSP.search(msg):
        ev.kind = "gsp_init_failed"
    elif _NVLINK_TRAIN.search(msg):
        ev.kind = "nvlink_training_failed"
    elif _FSP.search(msg):
        ev.kind = "fsp_boot_failed"
    elif m := _API.search(msg):
        ev.kind = "api_mismatch"
        ev.details = {"client_version": m.group("client"), "kernel_version": m.group("kernel")}
    elif _REQ_OPEN.search(msg):
        ev.kind = "requires_open"
        if m := _PCI_ID.search(msg):
            ev.details["pci_id"] = m.group(1).lower()
    elif _OPEN_UNSUPPORTED.search(msg):
        ev.kind = "open_unsupported_gpu"
    elif m := _PROBE.search(msg):
        ev.kind, ev.details = "probe_not_called", {"count": m.group("n")}
    elif "Persistence mode is deprecated" in msg:
        ev.kind = "persistence_legacy"
    elif "NVRM: loading NVIDIA UNIX" in msg and (b := parse_banner_line(msg)):
        ev.kind, ev.details = "loading_banner", {"flavor": b.flavor or "", "version": b.version or ""}
    elif m := _LICENSE.search(msg):
        ev.kind, ev.details = "module_license", {"module": m.group("mod"), "license": m.group("lic")}
    elif m := _DRM.search(msg):
        ev.kind, ev.bus_id = "drm_initialized", _bus(m.group("bus"))
    return ev


def _bus(raw: str) -> str | None:
    try:
        return V.bus_id(raw)
    except ParseError:
        return None


def _first_bus(msg: str) -> str | None:
    m = _BUS.search(msg)
    return _bus(m.group(1)) if m else None
