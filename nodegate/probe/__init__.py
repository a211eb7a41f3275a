"""The probe: ONE POSIX sh script per node that gathers every evidence item.

``render_script()`` fills the script template; ``split_stream()`` turns the framed stdout
of one run back into evidence items. Evidence keys are documented in ``ITEMS`` (and in
docs/bundle.md, which a test keeps in step with this table).
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from importlib import resources

#: 2: exit code on stdout (RC line), stderr on the stream's stderr; 3: kernel pseudo-files and
#: the probe's own functions framed without per-item ``head -c`` (same bytes on the wire); 4:
#: kernel.log keeps every deciding line wherever it is and records its cut (``# lines:``), and
#: ``meta.machine_id``
PROBE_VERSION = "4"

#: Per-item cap on captured stdout, bytes. A tool's output stops on the node (``head -c``); a
#: kernel pseudo-file's or a probe function's is cut here (``split_stream``). Either way the
#: item is marked truncated; parsers then report ERROR, never a partial verdict.
DEFAULT_ITEM_CAP = 8 * 1024 * 1024

#: Per-item stderr, bytes: the node sends at most this much of a tool's stderr (``head -c``)
#: and a bundle keeps at most this much of any item's (longer blocks are cut, and say so).
ITEM_STDERR_CAP = 64 * 1024

#: room for the "\n<marker> RC <n>\n" line that travels with an item's capped stdout
_RC_ROOM = 128

#: Clocks event reason bits that trigger re-sampling on the node (HW slowdown 0x8,
#: SW thermal 0x20, HW thermal 0x40, HW power brake 0x80; NVML nvmlClocksEventReasons).
DEFAULT_FAILMASK = 0x8 | 0x20 | 0x40 | 0x80

#: key -> (command as run on the node, what it is). The probe script is the authority for
#: the exact invocation; this table is its documentation and the simulator's index.
ITEMS: dict[str, tuple[str, str]] = {
    "meta.uname_r": ("uname -r", "booted kernel release"),
    "meta.boot_id": ("cat /proc/sys/kernel/random/boot_id", "boot id (changes every boot)"),
    "meta.machine_id": ("cat /etc/machine-id (else /var/lib/dbus/machine-id); rc 1 when neither exists",
                        "machine id (machine-id(5): set once per installation)"),
    "meta.hostname": ("uname -n", "node's own hostname"),
    "meta.id": ("id", "user the probe ran as"),
    "modules.proc": ("cat /proc/modules", "loaded modules, most recent first"),
    "modules.sys": ("for m in /sys/module/*: '<name> loadable <initstate>' | '<name> builtin'",
                    "every module the kernel knows; no initstate = built in"),
    "modules.nvidia_version": ("cat /sys/module/nvidia/version", "loaded nvidia module version"),
    "modules.load_d": ("'== <file>' + content of modules-load.d/*.conf (/etc, /run, /usr/local/lib, /usr/lib, /lib) and /etc/modules",
                       "modules loaded at boot"),
    "kernels.installed": ("for d in /lib/modules/*: '<kver> build=yes|no'", "installed kernels"),
    "driver.proc_version": ("cat /proc/driver/nvidia/version", "loaded module banner (flavor, version)"),
    "driver.params": ("cat /proc/driver/nvidia/params", "module parameters"),
    "driver.gpus_information": ("'== <file>' + cat /proc/driver/nvidia/gpus/*/information", "GPUs the module bound"),
    "driver.libnvml": ("ldconfig -p | grep libnvidia-ml.so.1 + readlink -f; known paths",
                       "'ldconfig <path> -> <target>' / 'path <path> -> <target>' lines"),
    "dev.nvidia": ("ls -1 /dev", "device nodes (nvidia*, nvidia-caps)"),
    "pci.sysfs": ("for NVIDIA display-class functions: '== <bdf> gpu' + link attrs; each upstream port: '== <bdf> upstream-of <gpu bdf>'",
                  "sysfs current/max link speed and width"),
    "ib.devices": ("ls -1 /sys/class/infiniband", "InfiniBand devices (peermem auto rule)"),
    "peermem.registration": ("'<path>: <content>' of /sys/kernel/mm/memory_peers/*/version", "peer-memory clients registered with ib_core"),
    "firmware.gsp": ("firmware_class.path, driver_version, then '== <dir>/nvidia/<ver>' + ls -lnL (or 'absent') for each search dir",
                     "GSP firmware files in the kernel's search path"),
    "persistenced.process": ("'== pid N', Uid/Gid lines, 'cmdline: ...' per nvidia-persistenced process; 'processes: N'; 'rundir: <ls -ldn>'",
                             "the running daemon"),
    "persistenced.passwd": ("getent passwd <spec user>", "the configured user's passwd entry"),
    "persistenced.unit_files": ("'== <file>' + content of nvidia-persistenced unit and drop-ins", "unit text"),
    "dmi.id": ("for a in sys_vendor product_name product_version product_serial product_uuid board_vendor board_name "
               "board_serial chassis_serial bios_version: '<a> ok <value>' | '<a> unreadable' | '<a> absent' "
               "(/sys/class/dmi/id/<a>; serials and product_uuid need root)",
               "system vendor, model and serial (DMI) for the RMA sheet"),
    "modinfo.nvidia": ("modinfo -k $(uname -r) nvidia", "on-disk module (license, version, firmware, vermagic)"),
    "modinfo.nvidia_peermem": ("modinfo -k $(uname -r) nvidia_peermem", "on-disk peermem module"),
    "modinfo.nv_peer_mem": ("modinfo -k $(uname -r) nv_peer_mem", "legacy Mellanox peer-memory module"),
    "systemd.persistenced_show": ("systemctl show nvidia-persistenced --no-pager -p LoadState,ActiveState,SubState,UnitFileState,ExecStart,MainPID,FragmentPath,DropInPaths,NRestarts,Result,User",
                                  "effective unit state"),
    "systemd.fabricmanager_show": ("systemctl show nvidia-fabricmanager --no-pager -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Result",
                                   "fabric manager unit state"),
    "systemd.imex_show": ("systemctl show nvidia-imex --no-pager -p LoadState,ActiveState,SubState,UnitFileState,MainPID,Result",
                          "the IMEX daemon's unit (GB200/GB300 NVL72: multi-node NVLink memory export)"),
    "fabricmanager.version": ("nv-fabricmanager --version", "fabric manager version"),
    "dkms.status": ("dkms status", "DKMS module states"),
    "smi.version": ("nvidia-smi --version", "userspace driver / NVML versions"),
    "smi.qx": ("nvidia-smi -q -x", "every GPU fact (XML)"),
    "smi.clocks_samples": ("nvidia-smi --query-gpu=index,pci.bus_id,pstate,clocks_event_reasons.active --format=csv,noheader (clocks_throttle_reasons.active on drivers before 535); when a failing bit is set, up to N-1 more samples 1 s apart, each after '# sample N'",
                           "clocks event reasons samples"),
    "kernel.log": ("dmesg (else journalctl -k -b -o short-iso) | grep -iE 'nvrm|nvidia|xid|nouveau|fallen off|gsp'; "
                   "the last 5000 lines plus every line that can decide a verdict (with 1 line before, 3 after) "
                   "wherever it is; first line '# source: ...', last '# lines: seen=S kept=K dropped_severe=D'",
                   "NVRM/Xid lines since boot"),
    # issue 19: fabric, InfiniBand, PCIe errors, uptime
    "meta.uptime": ("cat /proc/uptime", "seconds since boot (window of the PCIe replay rate)"),
    "pci.nvswitch": ("for NVIDIA functions of class 0x0680: '== <bdf> device <id> class <class>'; 'nvswitches: N'",
                     "NVSwitch PCI functions"),
    "pci.aer": ("'== <bdf> gpu aer=N' / '== <bdf> upstream-of <gpu> aer=N' per GPU and upstream port, then their aer_dev_{correctable,nonfatal,fatal} TOTAL_ERR_* lines and non-zero counters (grep -H)",
                "PCIe AER counters of each GPU and its upstream ports"),
    "ib.ports": ("'== <dev>' + fw_ver, hca_type; '== <dev> port <n>' + state, phys_state, rate, link_layer under /sys/class/infiniband",
                 "InfiniBand/RDMA port state, rate, link layer, HCA firmware"),
    "ib.ibstat": ("ibstat", "InfiniBand ports as infiniband-diags reports them (when installed)"),
    "ib.guids": ("'== <dev>' + node_guid, sys_image_guid, board_id, device (PCI function), netdev; '== <dev> port <n>' + lid, sm_lid, rate, gid0 under /sys/class/infiniband",
                 "HCA GUIDs, PCI function and port LIDs: what the cross-node phase joins the fabric on"),
    "ib.iblinkinfo": ("per local HCA port: '== <dev> port <n>' + iblinkinfo -C <dev> -P <n> -D 0 -l (when installed)",
                      "each HCA port's link and the switch port at its other end"),
    "fabricmanager.log": ("journalctl -u nvidia-fabricmanager -b --no-pager -o short-iso -n 200 (else tail -n 200 /var/log/fabricmanager.log); '# fabric manager not installed' when it is not",
                          "fabric manager messages this boot"),
    "smi.nvlink_status": ("nvidia-smi nvlink -s", "per GPU, each NVLink's speed or <inactive>"),
    "smi.nvlink_errors": ("nvidia-smi nvlink -e", "per GPU and link: replay, recovery, CRC error counters"),
    "nvml.json": ("python3 -B - < nodegate/nvml/probe_nvml.py (heredoc; only when python3 exists on the node)",
                  "NVML facts as JSON"),
}

_TEMPLATE_NAME = "probe.sh"
_USER_RE = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")


@dataclass
class RawItem:
    """One evidence item as framed by the probe.

    stdout/stderr are raw bytes; rc is the exit code, or None when the item never finished
    (the controller's deadline cut it: ``status == 'timeout'``).
    """

    key: str
    stdout: bytes = b""
    stderr: bytes = b""
    rc: int | None = None
    duration_s: float | None = None
    status: str = "ok"  # ok | timeout | truncated | malformed


def template() -> str:
    return resources.files(__package__).joinpath(_TEMPLATE_NAME).read_text()


def render_script(*, user: str = "", marker: str | None = None, cap: int = DEFAULT_ITEM_CAP,
                  samples: int = 3, failmask: int = DEFAULT_FAILMASK, timeout_s: int = 30,
                  extra: str = "") -> tuple[str, str]:
    """Return ``(script, marker)``.

    ``user`` is the spec's persistence daemon user (validated: it is pasted into the
    script). ``marker`` defaults to a fresh random token so node output cannot forge frames.
    ``extra`` is appended shell (e.g. the NVML item).
    """
    if user and not _USER_RE.match(user):
        raise ValueError(f"invalid user name for probe: {user!r}")
    marker = marker or f"@@NG-{secrets.token_hex(12)}"
    if not re.fullmatch(r"@@NG-[0-9a-f]{8,64}", marker):
        raise ValueError("bad marker")
    s = template()
    for k, v in {"MARKER": marker, "CAP": str(int(cap)), "HCAP": str(int(cap) + _RC_ROOM), "USER": user, "SAMPLES": str(int(samples)),
                 "FAILMASK": str(int(failmask)), "TIMEOUT": str(int(timeout_s)), "EXTRA": extra}.items():
        s = s.replace(f"@@{k}@@", v)
    return s, marker


_FRAME = re.compile(rb"^(?P<m>@@NG-[0-9a-f]+) (?P<kind>BEGIN|END|ERR|ERREND|DONE)(?: (?P<rest>.*))?$")
_RC_LINE = re.compile(rb"\n(?P<m>@@NG-[0-9a-f]+) RC (?P<rc>[0-9]{1,3})\n\Z")
_KEY = re.compile(rb"^[a-z0-9_]+(?:\.[a-z0-9_]+)*$")
#: _FRAME for ``pattern.match(data, pos, endpos)`` (``^`` would only match at 0 there).
_FRAME_AT = re.compile(_FRAME.pattern[1:])


def split_stream(data: bytes, marker: str, *, cap: int = DEFAULT_ITEM_CAP,
                 stderr: bytes | None = None) -> tuple[dict[str, RawItem], bool]:
    """Split the probe's framed stdout into items (and, given ``stderr``, the probe's stderr
    stream: each item's block, see ``split_stderr``, becomes that item's ``stderr``).

    Returns ``(items, complete)``; ``complete`` is True when the DONE frame was seen. An item
    whose BEGIN was seen without END is kept with ``status='timeout'`` and whatever stdout
    arrived. A key framed twice is ``malformed`` (a section that claims to be another).
    Lines that look like frames but carry another marker are ordinary output.

    Memory: each item's stdout is one slice of ``data`` (the stream is never split into a list
    of lines: output of millions of short lines would cost ~50 bytes per line).
    """
    mk = marker.encode()
    needle = mk + b" "
    items: dict[str, RawItem] = {}
    complete = False
    cur: RawItem | None = None
    body_at = 0                      # where the current item's (or ERR block's) content starts
    err_key: bytes | None = None
    t_begin = 0.0
    pos = data.find(needle)
    while pos >= 0:
        eol = data.find(b"\n", pos)
        line_end = len(data) if eol < 0 else eol
        m = _FRAME_AT.match(data, pos, line_end) if pos == 0 or data[pos - 1] == 10 else None
        if not m or m.group("m") != mk or m.end() != line_end:
            pos = data.find(needle, pos + 1)
            continue
        content = data[body_at:max(body_at, pos - 1)]  # the lines between the frames, without the last newline
        nxt = line_end + 1
        kind, rest = m.group("kind"), (m.group("rest") or b"")
        parts = rest.split(b" ")
        if kind == b"BEGIN":
            key = parts[0]
            if _KEY.match(key):
                cur = RawItem(key.decode())
                body_at = nxt
                try:
                    t_begin = float(parts[1]) if len(parts) > 1 else 0.0
                except ValueError:
                    t_begin = 0.0
                if cur.key in items:
                    items[cur.key].status = "malformed"
                    cur = None
        elif kind == b"END" and cur is not None and parts[0].decode(errors="replace") == cur.key:
            # the probe prints one newline before END so that output without one stays exact
            cur.stdout = content
            rc_field = parts[1] if len(parts) > 1 else b""
            t_field = parts[2] if len(parts) > 2 else b""
            if rc_field == b"rc=":
                # probe v2: the exit code is the last line of the (capped) content
                rcm = _RC_LINE.search(content, max(0, len(content) - _RC_ROOM))
                if rcm is not None and rcm.group("m") == mk:
                    cur.rc = int(rcm.group("rc"))
                    cur.stdout = content[:rcm.start()]
                    if len(cur.stdout) > cap:
                        cur.stdout, cur.status = cur.stdout[:cap], "truncated"
                elif len(content) >= cap:
                    # the cap cut the RC line away: output past the cap, exit code unknown
                    cur.stdout, cur.rc, cur.status = content[:cap], None, "truncated"
                else:
                    cur.rc, cur.status = None, "malformed"
            else:
                try:
                    cur.rc = int(rc_field.split(b"=", 1)[1])
                except (IndexError, ValueError):
                    cur.rc = None
                    cur.status = "malformed"
                if len(cur.stdout) >= cap:
                    cur.status = "truncated"
            try:
                cur.duration_s = round(max(0.0, float(t_field) - t_begin), 3)
            except ValueError:
                pass
            items[cur.key] = cur
            cur = None
        elif kind == b"ERR":
            err_key = parts[0]
            body_at = nxt
        elif kind == b"ERREND" and err_key is not None:
            k = err_key.decode(errors="replace")
            if k in items:
                items[k].stderr = content
            err_key = None
        elif kind == b"DONE":
            complete = True
        pos = data.find(needle, nxt) if eol >= 0 else -1
    if cur is not None:
        # cut mid-item: keep what arrived, less a frame line of ours cut short (e.g. "M END")
        tail_at = data.rfind(b"\n" + mk, body_at - 1)
        end = tail_at if tail_at >= body_at - 1 and _FRAME_AT.match(data, tail_at + 1) else len(data)
        cur.stdout = data[body_at:max(body_at, end)]
        cur.status = "timeout"
        items[cur.key] = cur
    if stderr:
        errs, _ = split_stderr(stderr, marker)
        for k, e in errs.items():
            if k in items and not items[k].stderr:
                items[k].stderr = e
    return items, complete


def split_stderr(data: bytes, marker: str, *, cap: int = ITEM_STDERR_CAP) -> tuple[dict[str, bytes], bytes]:
    """Split the probe's stderr stream (probe v2) into ``({key: stderr}, rest)``.

    Each item's stderr follows its ``\\n<marker> ERR <key>`` line up to the next such line;
    trailing newlines are dropped, empty blocks omitted, each kept to ``cap`` bytes (then
    ``...[stderr truncated at N bytes]`` is appended). ``rest``: what is not an item's (the shell's
    own messages before the first item; ``[nodegate] ...`` notes the transport appended at the
    end). Lines that look like ERR lines with another marker are ordinary stderr.
    """
    mk = marker.encode()
    # this run's marker only, at a line start, the newline before it left in place: a tool's
    # stderr that ends in a forged "<other marker> ERR x" without a newline cannot swallow the
    # newline the next real ERR line stands on
    err_line = re.compile(rb"(?:\A|(?<=\n))" + re.escape(mk) + rb" ERR (?P<key>[a-z0-9_.]+)\n")
    marks = list(err_line.finditer(data))
    out: dict[str, bytes] = {}
    rest = data[:marks[0].start()] if marks else data
    for i, m in enumerate(marks):
        end = marks[i + 1].start() - 1 if i + 1 < len(marks) else len(data)   # less the newline
        block = data[m.end():max(m.end(), end)]
        if i + 1 == len(marks):
            # notes the transport appended after the stream (connection dropped, cap reached)
            note = block.rfind(b"\n[nodegate] ")
            if note >= 0:
                rest, block = rest + block[note:], block[:note]
        block = block.rstrip(b"\n")
        if not block:
            continue
        if len(block) > cap:   # the node sends cap + 1 bytes: more than cap means it cut the rest
            block = block[:cap] + f"\n...[stderr truncated at {cap} bytes]".encode()
        out[m.group("key").decode()] = block
    return out, rest
