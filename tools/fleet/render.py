"""Profile -> file tree of one simulated node (everything the probe reads or runs).

Tool outputs are rendered here and answered by shims (tools/fleet/shims.py); files the probe reads
directly (/proc, /sys, /etc, /lib/firmware, /dev) are ordinary files in the node's root.
Formats follow real output: /proc/modules (kernel/module/procfs.c m_show: name size refcount
users state address taint), sysfs link attributes (drivers/pci/pci-sysfs.c), dkms status
(dkms <= 2.8.5 comma / >= 2.8.6 slash forms), systemctl show (one ``Name=value`` per property,
exec arrays as ``{ path=... ; argv[]=... }``), modinfo (kmod), nvidia-smi (captures and corpus).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from .models import EVENT_BITS, GPU_MODELS, SYSFS_SPEED, branch, cuda_version
from .profile import Profile, gpu_bus, gpu_state
from .smi_xml import bus_id_smi, render_gpu, render_smi_xml
from .shimtable import Invocation, ToolTable  # noqa: F401  (re-exported: tests import them here)
from .tree import Tree

DATA = Path(__file__).with_name("data")

MODULE_SIZES = {"nvidia": 56717312, "nvidia_uvm": 1527808, "nvidia_modeset": 1306624, "nvidia_drm": 77824,
                "nvidia_peermem": 16384, "nv_peer_mem": 16384, "ib_core": 434176, "ib_uverbs": 176128,
                "mlx5_core": 2191360, "mlx5_ib": 466944, "drm": 622592, "drm_kms_helper": 311296}
#: module -> modules it depends on (modinfo depends:), used for /proc/modules "used by".
MODULE_DEPS = {"nvidia_uvm": ["nvidia"], "nvidia_modeset": ["nvidia"],
               "nvidia_drm": ["nvidia_modeset", "drm_kms_helper", "drm"],
               "nvidia_peermem": ["nvidia", "ib_core"], "nv_peer_mem": ["nvidia", "ib_core"],
               "mlx5_ib": ["ib_uverbs", "ib_core", "mlx5_core"], "ib_uverbs": ["ib_core"],
               "drm_kms_helper": ["drm"]}
NVIDIA_MODULES = {"nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem"}

UBUNTU_UNIT = """[Unit]
Description=NVIDIA Persistence Daemon
Wants=syslog.target
StopWhenUnneeded=true
Before=systemd-backlight@backlight:nvidia_0.service

[Service]
Type=forking
ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode --verbose
ExecStopPost=/bin/rm -rf /var/run/nvidia-persistenced
"""

#: sysfs port rate strings (drivers/infiniband/core/sysfs.c rate_show: "<Gb/s> Gb/sec (<width>X <speed>)")
_IB_RATES = {400: "400 Gb/sec (4X NDR)", 200: "200 Gb/sec (4X HDR)", 100: "100 Gb/sec (4X EDR)",
             56: "56 Gb/sec (4X FDR)", 40: "40 Gb/sec (4X QDR)", 800: "800 Gb/sec (4X XDR)"}

SMI_NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                 "that the latest NVIDIA driver is installed and running.\n\n", 9)
CLOCKS_QUERY = "--query-gpu=index,pci.bus_id,pstate,clocks_event_reasons.active --format=csv,noheader"
CLOCKS_QUERY_OLD = "--query-gpu=index,pci.bus_id,pstate,clocks_throttle_reasons.active --format=csv,noheader"


@dataclass
class NodeRender:
    """What ``render_node`` produces: the tree, the shims, and facts tests compare with."""

    tree: Tree
    tools: dict[str, ToolTable]
    gpus_present: list[int]
    bus_ids: list[str]            # sysfs form of every GPU slot (present or lost)


# --------------------------------------------------------------------------- helpers
def _bdf_sysfs(b: tuple[int, int, int, int]) -> str:
    return f"{b[0]:04x}:{b[1]:02x}:{b[2]:02x}.{b[3]:x}"


def _banner(version: str, flavor: str, build: str, arch: str = "x86_64") -> str:
    """/proc/driver/nvidia/version first line (double spaces are real)."""
    if flavor == "open":
        return f"NVRM version: NVIDIA UNIX Open Kernel Module for {arch}  {version}  {build}"
    return f"NVRM version: NVIDIA UNIX {arch} Kernel Module  {version}  {build}"


def _exec_starts(texts: list[str]) -> list[str]:
    """Effective ExecStart= list after unit + drop-ins (an empty assignment resets the list;
    systemd.unit(5) "drop-in", systemd.service(5) ExecStart=)."""
    cmds: list[str] = []
    for text in texts:
        section = ""
        for line in text.splitlines():
            s = line.strip()
            if s.startswith("[") and s.endswith("]"):
                section = s
            elif section == "[Service]" and s.startswith("ExecStart="):
                v = s.split("=", 1)[1].strip()
                if v:
                    cmds.append(v)
                else:
                    cmds = []
    return cmds


def _user_from_argv(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a in ("--user", "-u") and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--user="):
            return a.split("=", 1)[1]
    return "root"


# --------------------------------------------------------------------------- node
class _Renderer:
    def __init__(self, prof: Profile):
        self.p = prof
        self.d = prof.data
        self.t = Tree()
        self.tools: dict[str, ToolTable] = {}
        self.drv = self.d["driver"]
        self.kver = self.d["node"]["kernel"]
        g = self.d["gpus"]
        self.count = g["count"]
        self.present = [i for i in range(self.count) if i not in g["missing"]]
        self.states = {i: gpu_state(self.d, prof.name, i) for i in range(self.count)}
        self.bdfs = {i: gpu_bus(self.d, i) for i in range(self.count)}
        self.passwd = {"root": (0, 0, "root", "/root", "/bin/bash"),
                       "daemon": (1, 1, "daemon", "/usr/sbin", "/usr/sbin/nologin"),
                       "nobody": (65534, 65534, "nobody", "/nonexistent", "/usr/sbin/nologin")}
        ps = self.d["persistenced"]
        if ps["user"] and ps.get("user_exists", True) and ps["user"] != "root":
            self.passwd[ps["user"]] = (ps["uid"], ps["gid"], "NVIDIA Persistence Daemon,,,", "/nonexistent",
                                       "/usr/sbin/nologin")

    def tool(self, name: str, path: str, default: Invocation | None = None) -> ToolTable:
        t = ToolTable(path)
        if default is not None:
            t.default = default
        self.tools[name] = t
        return t

    def run(self) -> NodeRender:
        self.base_files()
        self.proc()
        self.sys_modules()
        self.dmi()
        self.pci()
        self.driver_files()
        self.firmware()
        self.persistenced()
        self.smi()
        self.modinfo()
        self.systemctl()
        self.dkms()
        self.misc_tools()
        self.kernel_log()
        for path, content in (self.d["files"] or {}).items():
            self.t.file(path, content)
        if self.d.get("perf") is not None:
            from .perf import render_perf
            render_perf(self)
        for name in self.d["tools_absent"]:
            self.tools.pop(name, None)
        return NodeRender(self.t, self.tools, self.present, [_bdf_sysfs(self.bdfs[i]) for i in range(self.count)])

    # ---- /etc, /root, /run
    def base_files(self) -> None:
        t = self.t
        t.file("/etc/hostname", self.d["node"]["hostname"] + "\n")
        if self.d["node"]["machine_id"]:   # "" : a node without one (containers, minimal images)
            t.file("/etc/machine-id", self.d["node"]["machine_id"] + "\n")
        t.file("/etc/os-release", f'PRETTY_NAME="{self.d["node"]["os_release"]}"\nID=ubuntu\n')
        t.file("/etc/passwd", "".join(f"{n}:x:{u}:{g}:{gecos}:{home}:{sh}\n"
                                      for n, (u, g, gecos, home, sh) in self.passwd.items()))
        t.file("/etc/group", "".join(f"{n}:x:{g}:\n" for n, (_, g, *_r) in self.passwd.items()))
        t.dir("/root", 0o700)
        t.dir("/tmp", 0o755)  # not world-writable: nothing on the node writes (the probe is read-only)
        t.dir("/run")

    # ---- /proc
    def proc(self) -> None:
        t, n = self.t, self.d["node"]
        t.file("/proc/uptime", n["uptime"] + "\n")
        t.file("/proc/sys/kernel/random/boot_id", n["boot_id"] + "\n")
        t.file("/proc/1/comm", "systemd\n")
        t.file("/proc/1/status", "Name:\tsystemd\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n")
        t.file("/proc/1/cmdline", b"/sbin/init\0")
        mods = self.d["modules"]
        loaded = [m for m in mods["loaded"] if m not in mods["builtin"]]
        lines = []
        for pos, m in enumerate(loaded):
            later = loaded[pos + 1:]
            users = [u for u in later if m in MODULE_DEPS.get(u, [])]
            taint = ""
            if m in NVIDIA_MODULES:
                taint = " (POE)" if self.drv["flavor"] == "proprietary" else " (OE)"
            if mods["unload"]:
                ref = len(users) + (2 * len(self.present) if m == "nvidia" else 0)
                cols = f"{ref} {','.join(users) + ',' if users else '-'}"
            else:
                cols = "- -"  # kernels without CONFIG_MODULE_UNLOAD print '- -'
            addr = 0xFFFFFFFFC0400000 + 0x400000 * pos
            lines.append(f"{m} {MODULE_SIZES.get(m, 65536)} {cols} Live 0x{addr:016x}{taint}\n")
        t.file("/proc/modules", "".join(reversed(lines)))  # most recently loaded first

    def dmi(self) -> None:
        """/sys/class/dmi/id as the kernel lays it out (drivers/firmware/dmi-id.c): vendor and
        model world-readable, serials and product_uuid root-only (0400)."""
        t, dmi = self.t, self.d["node"]["dmi"]
        for attr, value in dmi.items():
            secret = attr.endswith("_serial") or attr == "product_uuid"
            t.file(f"/sys/class/dmi/id/{attr}", f"{value}\n", mode=0o400 if secret else 0o444)

    def sys_modules(self) -> None:
        t, mods = self.t, self.d["modules"]
        t.file("/sys/module/firmware_class/parameters/path", self.d["firmware"]["class_path"] + "\n")
        for m in mods["builtin"]:
            t.dir(f"/sys/module/{m}")
            t.dir(f"/sys/module/{m}/parameters")
        for m in mods["loaded"]:
            if m in mods["builtin"]:
                continue
            t.file(f"/sys/module/{m}/initstate", "live\n")
            t.file(f"/sys/module/{m}/refcnt", "0\n")
            if m in NVIDIA_MODULES:
                t.file(f"/sys/module/{m}/version", self.drv["version"] + "\n")
        for dev in self.d["infiniband"]:
            t.dir(f"/sys/class/infiniband/{dev}")
            p = self._ib_port(dev)
            t.file(f"/sys/class/infiniband/{dev}/fw_ver", p["fw"] + "\n")
            t.file(f"/sys/class/infiniband/{dev}/hca_type", p["hca_type"] + "\n")
            base = f"/sys/class/infiniband/{dev}/ports/1"
            t.file(f"{base}/state", {"ACTIVE": "4: ACTIVE", "DOWN": "1: DOWN", "INIT": "2: INIT",
                                     "ARMED": "3: ARMED"}[p["state"]] + "\n")
            t.file(f"{base}/phys_state", {"LinkUp": "5: LinkUp", "Disabled": "3: Disabled",
                                          "Polling": "2: Polling"}[p["phys_state"]] + "\n")
            t.file(f"{base}/rate", _IB_RATES[int(p["rate"])] + "\n")
            t.file(f"{base}/link_layer", p["link_layer"] + "\n")
        if self.d["infiniband"] or "ib_core" in mods["loaded"] or "ib_core" in mods["builtin"]:
            t.dir("/sys/class/infiniband")
        if self.d["peermem_registered"]:
            t.file("/sys/kernel/mm/memory_peers/nv_mem/version", self.drv["version"] + "\n")

    def _ib_port(self, dev: str) -> dict:
        """Effective port 1 of an RDMA device: ``ib`` defaults, then ``ib.ports[dev]``."""
        ib = self.d["ib"]
        p = {"state": "ACTIVE", "phys_state": "LinkUp", "rate": ib["rate"], "fw": ib["fw"],
             "hca_type": ib["hca_type"], "link_layer": ib["link_layer"]}
        p.update(ib["ports"].get(dev) or {})
        return p

    def _ibstat(self) -> str:
        """ibstat's text for the same ports (corpus 115's layout)."""
        out = []
        for k, dev in enumerate(sorted(self.d["infiniband"])):
            p = self._ib_port(dev)
            guid = f"0xa0000000000000{k + 1:02x}"
            out += [f"CA '{dev}'", f"\tCA type: {p['hca_type']}", "\tNumber of ports: 1", f"\tFirmware version: {p['fw']}",
                    "\tHardware version: 0", f"\tNode GUID: {guid}", f"\tSystem image GUID: {guid}", "\tPort 1:",
                    f"\t\tState: {p['state'].capitalize()}", f"\t\tPhysical state: {p['phys_state']}",
                    f"\t\tRate: {p['rate']}", "\t\tBase lid: 0", "\t\tLMC: 0", "\t\tSM lid: 0",
                    "\t\tCapability mask: 0xa751e848", f"\t\tPort GUID: {guid}", f"\t\tLink layer: {p['link_layer']}"]
        return "".join(x + "\n" for x in out)

    # ---- PCI topology in sysfs
    def _pcidev(self, path: str, vendor: int, device: int, cls: int, link: dict | None) -> None:
        t = self.t
        t.file(f"{path}/vendor", f"0x{vendor:04x}\n")
        t.file(f"{path}/device", f"0x{device:04x}\n")
        t.file(f"{path}/class", f"0x{cls:06x}\n")
        t.file(f"{path}/numa_node", "-1\n" if self.d["node"]["vm"] else "0\n")
        if link:
            for k in ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width"):
                t.file(f"{path}/{k}", f"{link[k]}\n")
        bdf = path.rsplit("/", 1)[1]
        rel = "../../.." + path.removeprefix("/sys")
        t.link(f"/sys/bus/pci/devices/{bdf}", rel)

    @staticmethod
    def _link(cur_gen, cur_w, max_gen, max_w) -> dict:
        speed = lambda g: SYSFS_SPEED.get(g, "Unknown")  # noqa: E731
        return {"current_link_speed": speed(cur_gen), "current_link_width": cur_w,
                "max_link_speed": speed(max_gen), "max_link_width": max_w}

    def pci(self) -> None:
        m = GPU_MODELS[self.d["gpus"]["model"]]
        vm = self.d["node"]["vm"]
        if vm:
            self._pcidev("/sys/devices/pci0000:00/0000:00:00.0", 0x8086, 0x0D57, 0x060000, None)
            self._pcidev("/sys/devices/pci0000:00/0000:00:03.0", 0x1AF4, 0x1041, 0x020000, None)
        # NVSwitches: NVIDIA functions of class 0x0680 (corpus 110: four GH100 NVSwitch bridges)
        for k in range(0 if vm else self.d["nvswitch"]["count"]):
            self._pcidev(f"/sys/devices/pci0000:80/0000:80:01.{k}/0000:{0x83 + k:02x}:00.0",
                         0x10DE, m["nvswitch_device"] or 0x22A3, 0x068000, self._link(4, 2, 4, 2))
        for i in range(self.count):
            st, b = self.states[i], self.bdfs[i]
            pc = st["pcie"]
            lost = i not in self.present
            dev_max = pc["sysfs_max_gen"] or pc["device_max_gen"]
            if lost:  # config space reads all-ones after the GPU fell off the bus
                glink = {"current_link_speed": "Unknown", "current_link_width": 63,
                         "max_link_speed": "Unknown", "max_link_width": 63}
            else:
                glink = self._link(pc["cur_gen"], pc["cur_width"], dev_max, pc["max_width"])
            if vm:
                path = f"/sys/devices/pci0000:00/{_bdf_sysfs(b)}"
            elif self.d["node"].get("grace"):
                # GH200: the GPU's own root port on its PCI domain (sysfs pci0009:00/0009:00:00.0/0009:01:00.0)
                root = f"/sys/devices/pci{b[0]:04x}:00/{b[0]:04x}:00:00.0"
                self._pcidev(root, 0x10DE, 0x22B2, 0x060400, self._link(pc["cur_gen"], pc["cur_width"],
                                                                        pc["max_gen"], pc["max_width"]))
                self._aer(root, {"correctable": 0, "nonfatal": 0, "fatal": 0} if st["aer"] else None)
                path = f"{root}/{_bdf_sysfs(b)}"
            else:
                host_gen = pc["host_max_gen"] if isinstance(pc["host_max_gen"], int) else pc["max_gen"]
                r = b[1] - 3
                ports = [f"0000:{r:02x}:01.0", f"0000:{r + 1:02x}:00.0", f"0000:{r + 2:02x}:00.0"]
                ups = pc["upstream"] or [{} for _ in ports]
                path = f"/sys/devices/pci0000:{r:02x}"
                for k, port in enumerate(ports):
                    path += f"/{port}"
                    u = ups[k] if k < len(ups) else {}
                    mg = u.get("max_gen", min(host_gen, m["pcie_gen"]))
                    mw = u.get("max_width", 16)
                    if k == len(ports) - 1:  # same link as the GPU: trains to the same state
                        cg, cw = u.get("cur_gen", pc["cur_gen"]), u.get("cur_width", pc["cur_width"])
                    else:
                        cg, cw = u.get("cur_gen", mg), u.get("cur_width", mw)
                    self._pcidev(path, 0x1000 if k else 0x8086, 0xC030 if k else 0x352A, 0x060400,
                                 self._link(cg, cw, mg, mw))
                    self._aer(path, (st["upstream_aer"] or {}).get(k, {"correctable": 0, "nonfatal": 0,
                                                                         "fatal": 0}) if st["aer"] else None)
                path += f"/{_bdf_sysfs(b)}"
            self._pcidev(path, 0x10DE, m["device_id"], 0x030200, glink)
            self._aer(path, st["aer"] if not lost else None)
        if self.d["infiniband"] and not vm:
            for k, dev in enumerate(self.d["infiniband"]):
                self._pcidev(f"/sys/devices/pci0000:a0/0000:a0:01.{k}/0000:{0xA1 + k:02x}:00.0", 0x15B3, 0x1021,
                             0x020700, self._link(5, 16, 5, 16))

    #: aer_dev_* line names (drivers/pci/pcie/aer.c aer_correctable_error_string, aer_uncorrectable_error_string)
    AER_NAMES = {
        "correctable": (["RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
                         "HeaderOF"], "TOTAL_ERR_COR", "BadTLP"),
        "nonfatal": (["Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                      "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked",
                      "TLPBlockedErr", "PoisonTLPBlocked"], "TOTAL_ERR_NONFATAL", "CmpltTO"),
        "fatal": (["Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
                   "ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr",
                   "PoisonTLPBlocked"], "TOTAL_ERR_FATAL", "DLP"),
    }

    def _aer(self, path: str, counts: dict | None) -> None:
        """aer_dev_{correctable,nonfatal,fatal} of one function; a count goes to the kind's typical
        error (BadTLP, completion timeout, data link protocol) and its TOTAL line. None: no AER files."""
        if counts is None:
            return
        for kind, (names, total, typical) in self.AER_NAMES.items():
            n = int(counts.get(kind, 0))
            self.t.file(f"{path}/aer_dev_{kind}", "".join(f"{x} {n if x == typical else 0}\n" for x in names)
                        + f"{total} {n}\n")

    # ---- /proc/driver/nvidia, /dev, NVML library
    def driver_files(self) -> None:
        t, drv = self.t, self.drv
        m = GPU_MODELS[self.d["gpus"]["model"]]
        t.dev("/dev/null", 1, 3)
        t.dev("/dev/zero", 1, 5)
        t.dev("/dev/urandom", 1, 9)
        lib = drv["lib_dir"]
        uv = drv["userspace_version"]
        t.file(f"{lib}/libnvidia-ml.so.{uv}", b"\x7fELF simulated libnvidia-ml\n", mode=0o755)
        t.link(f"{lib}/libnvidia-ml.so.1", f"libnvidia-ml.so.{uv}")
        if not drv["loaded"]:
            return
        t.file("/proc/driver/nvidia/version",
               f"{_banner(drv['version'], drv['flavor'], drv['build'], self.d['node'].get('arch', 'x86_64'))}\nGCC version:  {drv['gcc']} \n")
        t.file("/proc/driver/nvidia/params", (DATA / "proc_driver_params_580.txt").read_text())
        for i in range(self.count):
            st, b = self.states[i], self.bdfs[i]
            bdf = _bdf_sysfs(b)
            t.file(f"/proc/driver/nvidia/gpus/{bdf}/information",
                   f"Model: \t\t {m['product_name']}\nIRQ:   \t\t {40 + i}\nGPU UUID: \t {st['uuid']}\n"
                   f"Video BIOS: \t {m['vbios'].lower()}\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n"
                   f"DMA Mask: \t 0xfffffffffffff\nBus Location: \t {bdf}\nDevice Minor: \t {st['minor']}\n"
                   f"GPU Firmware: \t {st['gsp_version']}\nGPU Excluded:\t No\n")
            t.dev(f"/dev/nvidia{st['minor']}", 195, st["minor"])
        t.dev("/dev/nvidiactl", 195, 255)
        loaded = self.d["modules"]["loaded"]
        if "nvidia_uvm" in loaded:
            t.dev("/dev/nvidia-uvm", 238, 0)
            t.dev("/dev/nvidia-uvm-tools", 238, 1)
        if "nvidia_modeset" in loaded:
            t.dev("/dev/nvidia-modeset", 195, 254)
        t.dev("/dev/nvidia-caps/nvidia-cap1", 241, 1, 0o400)
        t.dev("/dev/nvidia-caps/nvidia-cap2", 241, 2, 0o444)

    def firmware(self) -> None:
        fw = self.d["firmware"]
        base = fw["class_path"] or "/lib/firmware"
        d = fw["dir"] or f"{base}/nvidia/{self.drv['version']}"
        for f in fw["files"]:
            size = 0 if f in fw["empty"] else 4096
            self.t.file(f"{d}/{f}", bytes((i * 7 + len(f)) % 251 for i in range(size)))

    # ---- nvidia-persistenced
    def _unit_texts(self) -> tuple[str | None, list[tuple[str, str]]]:
        ps = self.d["persistenced"]
        if ps["mode"] != "daemon":
            return None, []
        unit = ps["unit_text"] if ps["unit_text"] is not None else UBUNTU_UNIT
        dropins = sorted((ps["dropins"] or {}).items(), key=lambda kv: Path(kv[0]).name)
        return unit, dropins

    def persistenced(self) -> None:
        t, ps = self.t, self.d["persistenced"]
        unit, dropins = self._unit_texts()
        if unit is None:
            return
        t.file(ps["unit_path"], unit)
        for path, text in dropins:
            t.file(path, text)
        cmds = _exec_starts([unit] + [x for _, x in dropins])
        argv = ps["argv"] or (shlex.split(cmds[-1]) if cmds else [])
        if not ps["running"] or not argv:
            return
        user = _user_from_argv(argv)
        uid, gid = (self.passwd[user][0], self.passwd[user][1]) if user in self.passwd else (0, 0)
        pid = ps["pid"]
        t.file(f"/proc/{pid}/comm", "nvidia-persistenced"[:15] + "\n")
        t.file(f"/proc/{pid}/status", f"Name:\tnvidia-persiste\nState:\tS (sleeping)\nPid:\t{pid}\n"
                                      f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\nGid:\t{gid}\t{gid}\t{gid}\t{gid}\n")
        t.file(f"/proc/{pid}/cmdline", "".join(a + "\0" for a in argv).encode())
        t.dir("/run/nvidia-persistenced", 0o755, uid, gid)
        t.file("/run/nvidia-persistenced/nvidia-persistenced.pid", f"{pid}\n", uid=uid, gid=gid)

    def _persistenced_show(self) -> Invocation:
        ps = self.d["persistenced"]
        unit, dropins = self._unit_texts()
        if unit is None:
            props = {"MainPID": "0", "NRestarts": "0", "Result": "success", "User": "", "FragmentPath": "",
                     "DropInPaths": "", "LoadState": "not-found", "ActiveState": "inactive", "SubState": "dead",
                     "UnitFileState": ""}
            props.update({k: str(v) for k, v in (ps["show"] or {}).items()})
            return Invocation(out="".join(f"{k}={v}\n" for k, v in props.items()))
        cmds = _exec_starts([unit] + [x for _, x in dropins])
        running = ps["running"]
        pid = ps["pid"] if running else 0
        lines = []
        for c in cmds:
            argv = shlex.split(c)
            lines.append(f"ExecStart={{ path={argv[0]} ; argv[]={' '.join(argv)} ; ignore_errors=no ; "
                         f"start_time=[Tue 2024-03-05 09:12:01 UTC] ; stop_time=[Tue 2024-03-05 09:12:01 UTC] ; "
                         f"pid={pid - 1 if running else 0} ; code=exited ; status=0 }}\n")
        props = {"MainPID": str(pid), "NRestarts": "0", "Result": "success", "User": "",
                 "FragmentPath": ps["unit_path"], "DropInPaths": " ".join(p for p, _ in dropins),
                 # systemd refuses a Type=forking service with several ExecStart= (service_verify):
                 "LoadState": "bad-setting" if len(cmds) > 1 else "loaded",
                 "ActiveState": "active" if running else "inactive",
                 "SubState": "running" if running else "dead",
                 "UnitFileState": "static" if "[Install]" not in unit else "enabled"}
        props.update({k: str(v) for k, v in (ps["show"] or {}).items()})
        head = "".join(lines) if "ExecStart" not in (ps["show"] or {}) else ""
        return Invocation(out=head + "".join(f"{k}={v}\n" for k, v in props.items() if k != "ExecStart"))

    # ---- nvidia-smi
    def smi(self) -> None:
        drv = self.drv
        t = self.tool("nvidia-smi", drv["smi_path"],
                      Invocation(out="Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n\n",
                                 rc=2))
        err = self.d["nvidia_smi"]["error"]
        if err is None and drv["userspace_version"] != drv["version"] and drv["loaded"]:
            short = ".".join(drv["userspace_version"].split(".")[:2])
            err = {"out": f"Failed to initialize NVML: Driver/library version mismatch\nNVML library version: {short}\n",
                   "rc": 18}
        if err is None and not drv["loaded"]:
            err = {"out": SMI_NO_DRIVER[0], "rc": SMI_NO_DRIVER[1]}
        hang = self.d["nvidia_smi"]["hang"]
        keys = ["--version", "-q -x", "-L", CLOCKS_QUERY, CLOCKS_QUERY_OLD, "", "nvlink -s", "nvlink -e"]
        if err is not None:
            for k in keys:
                t.cases[k] = Invocation(out=err.get("out", ""), err=err.get("err", ""), rc=int(err.get("rc", 1)))
        else:
            v = drv["version"]
            nvml = ".".join(v.split(".")[:2])
            t.cases["--version"] = Invocation(
                out=f"NVIDIA-SMI version  : {v}\nNVML version        : {nvml}\nDRIVER version      : {v}\n"
                    f"CUDA Version        : {cuda_version(v)}\n")
            model = self.d["gpus"]["model"]
            els = [render_gpu(self.states[i], model, self.bdfs[i], v, self.d["node"]["vm"]) for i in self.present]
            t.cases["-q -x"] = Invocation(out=render_smi_xml(els, v, cuda_version(v)))
            t.cases["-L"] = Invocation(out="".join(
                f"GPU {k}: {GPU_MODELS[model]['product_name']} (UUID: {self.states[i]['uuid']})\n"
                for k, i in enumerate(self.present)))
            rows = []
            for k, i in enumerate(self.present):  # NVML enumerates the remaining GPUs 0..n-1
                st = self.states[i]
                mask = sum(EVENT_BITS[e] for e in st["events"])
                rows.append(f"{k}, {bus_id_smi(*self.bdfs[i])}, {st['pstate']}, 0x{mask:016x}\n")
            csv = "".join(rows)
            if branch(v) >= 535:
                t.cases[CLOCKS_QUERY] = Invocation(out=csv)
            else:
                t.cases[CLOCKS_QUERY] = Invocation(
                    out='Field "clocks_event_reasons.active" is not a valid field to query.\n\n', rc=2)
            t.cases[CLOCKS_QUERY_OLD] = Invocation(out=csv)
            t.cases["nvlink -s"], t.cases["nvlink -e"] = self._nvlink_outputs(model)
        for k in keys:
            if hang == "all" or k in (hang or []):
                t.cases[k] = Invocation(hang=True)

    def _nvlink_outputs(self, model: str) -> tuple[Invocation, Invocation]:
        """``nvidia-smi nvlink -s`` and ``-e`` (9-space indentation, as R535-R580 print them, corpus 106).
        A GPU without links prints nothing at all (the H200 VM capture)."""
        name = GPU_MODELS[model]["product_name"]
        s, e = [], []
        for k, i in enumerate(self.present):
            nv = self.states[i]["nvlink"]
            if not nv["links"]:
                continue
            head = f"GPU {k}: {name} (UUID: {self.states[i]['uuid']})"
            s.append(head)
            e.append(head)
            if self.states[i]["mig"] == "Enabled":  # corpus 120
                s.append("Nvlink queries are not supported for Devices in MIG mode")
                e.append("Nvlink queries are not supported for Devices in MIG mode")
                continue
            for n in range(nv["links"]):
                sp = (nv["speed"] or {}).get(n, nv["gbps"])
                s.append(f"         Link {n}: " + ("<inactive>" if n in (nv["down"] or []) else f"{sp} GB/s"))
                err = (nv["errors"] or {}).get(n, {})
                e += [f"         Link {n}: Replay Errors: {err.get('replay', 0)}",
                      f"         Link {n}: Recovery Errors: {err.get('recovery', 0)}",
                      f"         Link {n}: CRC Errors: {err.get('crc', 0)}"]
                if n < nv["links"] - 1:
                    e.append("")
        return Invocation(out="".join(x + "\n" for x in s)), Invocation(out="".join(x + "\n" for x in e))

    # ---- modinfo
    def modinfo(self) -> None:
        drv, k = self.drv, self.kver
        t = self.tool("modinfo", "/usr/sbin/modinfo")
        on_disk = self.d["modules"]["on_disk"]
        dkms = drv["install"] == "dkms"
        sub = "updates/dkms" if dkms else "kernel/nvidia-" + str(branch(drv["ondisk_version"])) + "srv"
        if drv.get("module_dir"):
            sub = drv["module_dir"]
        lic = "Dual MIT/GPL" if drv["ondisk_flavor"] == "open" else "NVIDIA"
        ver = drv["ondisk_version"]
        common = "retpoline:      Y\n"
        for mod in ("nvidia", "nvidia_peermem", "nv_peer_mem"):
            key = f"-k {k} {mod}"
            if mod not in on_disk:
                t.cases[key] = Invocation(err=f"modinfo: ERROR: Module {mod} not found.\n", rc=1)
                continue
            if mod == "nvidia":
                out = (f"filename:       /lib/modules/{k}/{sub}/nvidia.ko\n"
                       f"firmware:       nvidia/{ver}/gsp_tu10x.bin\nfirmware:       nvidia/{ver}/gsp_ga10x.bin\n"
                       "alias:          char-major-195-*\n"
                       f"version:        {ver}\nsupported:      external\nlicense:        {lic}\n"
                       "srcversion:     8302209549E8FEAC029EDC0\n"
                       "alias:          pci:v000010DEd*sv*sd*bc06sc80i00*\n"
                       "alias:          pci:v000010DEd*sv*sd*bc03sc02i00*\n"
                       "alias:          pci:v000010DEd*sv*sd*bc03sc00i00*\n"
                       f"depends:        \n{common}name:           nvidia\n"
                       f"vermagic:       {k} SMP mod_unload modversions \n"
                       "parm:           NvSwitchRegDwords:NvSwitch regkey (charp)\n"
                       "parm:           NVreg_EnableGpuFirmware:int\n")
            elif mod == "nvidia_peermem":
                out = (f"filename:       /lib/modules/{k}/{sub}/nvidia-peermem.ko\nversion:        {ver}\n"
                       "license:        Linux-OpenIB\ndescription:    NVIDIA GPU memory plug-in\n"
                       "author:         Yishai Hadas\nsrcversion:     3F5E8F55BE0A5A4A2D58C1E\n"
                       f"depends:        nvidia,ib_core\n{common}name:           nvidia_peermem\n"
                       f"vermagic:       {k} SMP mod_unload modversions \n"
                       "parm:           peerdirect_support:Set level of support for Peer-direct, 0 [default] or 1 "
                       "[legacy, for example MLNX_OFED 4.9 LTS] (int)\n")
            else:
                out = (f"filename:       /lib/modules/{k}/updates/dkms/nv_peer_mem.ko\nversion:        1.3-0\n"
                       "license:        Dual BSD/GPL\ndescription:    NVIDIA GPU memory plug-in\n"
                       f"depends:        ib_core,nvidia\n{common}name:           nv_peer_mem\n"
                       f"vermagic:       {k} SMP mod_unload modversions \n")
            t.cases[key] = Invocation(out=out)
        t.default = Invocation(err="modinfo: ERROR: Module not found.\n", rc=1)

    # ---- systemctl
    def systemctl(self) -> None:
        t = self.tool("systemctl", "/usr/bin/systemctl",
                      Invocation(err="Unknown command verb.\n", rc=1))
        t.cases["show nvidia-persistenced *"] = self._persistenced_show()
        fm = self.d["fabricmanager"]
        if fm:
            props = {"MainPID": "3120", "Result": "success", "LoadState": "loaded", "ActiveState": "active",
                     "SubState": "running", "UnitFileState": "enabled"}
            props.update({k: str(v) for k, v in (fm.get("show") or {}).items()})
        else:
            props = {"MainPID": "0", "Result": "success", "LoadState": "not-found", "ActiveState": "inactive",
                     "SubState": "dead", "UnitFileState": ""}
        t.cases["show nvidia-fabricmanager *"] = Invocation(out="".join(f"{k}={v}\n" for k, v in props.items()))
        # issue 39.5: nvidia-imex is not installed on the simulated (HGX and VM) nodes: systemctl's answer
        # for a unit it does not know
        imex = {"MainPID": "0", "Result": "success", "LoadState": "not-found", "ActiveState": "inactive",
                "SubState": "dead", "UnitFileState": ""}
        t.cases["show nvidia-imex *"] = Invocation(out="".join(f"{k}={v}\n" for k, v in imex.items()))
        if fm:
            self.tool("nv-fabricmanager", "/usr/bin/nv-fabricmanager").cases["--version"] = Invocation(
                out=f"Fabric Manager version is : {fm.get('version') or self.drv['version']}\n")

    # ---- dkms
    def dkms(self) -> None:
        dk, drv = self.d["dkms"], self.drv
        if drv["install"] != "dkms" and "dkms" not in (self.d.get("tools_present") or []):
            self.tools.pop("dkms", None)
            if dk["lines"] is None:
                return
        t = self.tool("dkms", "/usr/sbin/dkms")
        if dk["lines"] is not None:
            lines = list(dk["lines"])
        else:
            sep = "/" if dk["format"] == "slash" else ", "
            lines = []
            for k in (dk["kernels"] if dk["kernels"] is not None else self.d["node"]["kernels"]):
                suffix = dk["suffix"].get(k, "")
                lines.append(f"nvidia{sep}{drv['ondisk_version']}, {k}, x86_64: installed"
                             + (f" {suffix}" if suffix else ""))
        lines += dk["extra_lines"]
        t.cases["status"] = Invocation(out="".join(x + "\n" for x in lines))

    # ---- uname, ldconfig, getent, lspci
    def misc_tools(self) -> None:
        n, k = self.d["node"], self.kver
        u = self.tool("uname", "/usr/bin/uname", Invocation(out="Linux\n"))
        u.cases["-r"] = Invocation(out=k + "\n")
        u.cases["-n"] = Invocation(out=n["hostname"] + "\n")
        arch = self.d["node"].get("arch", "x86_64")
        u.cases["-m"] = Invocation(out=f"{arch}\n")
        u.cases["-a"] = Invocation(out=f"Linux {n['hostname']} {k} #1 SMP PREEMPT_DYNAMIC {arch} {arch} {arch} GNU/Linux\n")
        for kv in n["kernels"]:
            self.t.file(f"/lib/modules/{kv}/modules.dep", "")
            self.t.dir(f"/lib/modules/{kv}/kernel")
        if self.d["ldconfig"]:
            lib = self.drv["lib_dir"]
            lc = self.tool("ldconfig", "/usr/sbin/ldconfig")
            lc.cases["-p"] = Invocation(out=f"3 libs found in cache `/etc/ld.so.cache'\n"
                                            f"\tlibnvidia-ml.so.1 (libc6,x86-64) => {lib}/libnvidia-ml.so.1\n"
                                            f"\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => {lib}/libc.so.6\n"
                                            f"\tld-linux-x86-64.so.2 (libc6,x86-64) => {lib}/ld-linux-x86-64.so.2\n")
        ge = self.tool("getent", "/usr/bin/getent", Invocation(rc=2))
        for name, (uid, gid, gecos, home, sh) in self.passwd.items():
            ge.cases[f"passwd {name}"] = Invocation(out=f"{name}:x:{uid}:{gid}:{gecos}:{home}:{sh}\n")
        if self.d["ib"]["ibstat"]:
            self.tool("ibstat", "/usr/sbin/ibstat").default = Invocation(out=self._ibstat())
        fm = self.d["fabricmanager"]
        if fm:  # the package's log file (LOG_FILE_NAME); corpus 110's startup lines
            self.t.file("/var/log/fabricmanager.log", fm.get("log") if fm.get("log") is not None else (
                "[May 01 2025 13:53:48] [INFO] [tid 5946] Fabric Manager version " + (fm.get("version") or
                                                                                    self.drv["version"]) + " is running\n"
                "[May 01 2025 13:53:50] [INFO] [tid 5946] Successfully configured all the available NVSwitches to "
                "route GPU NVLink traffic.\n"))
        m = GPU_MODELS[self.d["gpus"]["model"]]
        self.tool("lspci", "/usr/bin/lspci", Invocation(out="".join(
            f"{_bdf_sysfs(self.bdfs[i])} 3D controller [0302]: NVIDIA Corporation Device [10de:{m['device_id']:04x}] "
            f"(rev {'ff' if i not in self.present else 'a1'})\n" for i in range(self.count))))

    # ---- kernel log
    def kernel_log(self) -> None:
        kl, drv = self.d["kernel_log"], self.drv
        ts = [1.0]

        def stamp(s: str, at: float | None = None) -> str:
            if at is not None:
                ts[0] = max(ts[0], at)
            ts[0] += 0.013577
            return f"[{ts[0]:12.6f}] {s}"

        lines = [stamp(f"Linux version {self.kver} (buildd@lcy02-amd64-001) #101-Ubuntu SMP", 0.0),
                 stamp("Command line: BOOT_IMAGE=/vmlinuz ro")]
        if kl["boot_lines"] and drv["loaded"]:
            lines.append(stamp("nvidia: module license 'NVIDIA' taints kernel." if drv["flavor"] == "proprietary"
                               else "nvidia: loading out-of-tree module taints kernel.", 4.5))
            lines.append(stamp("nvidia-nvlink: Nvlink Core is being initialized, major device number 511"))
            lines.append(stamp("NVRM: loading " + _banner(drv["version"], drv["flavor"], drv["build"], self.d["node"].get("arch", "x86_64"))
                               .removeprefix("NVRM version: ")))
            if "nvidia_modeset" in self.d["modules"]["loaded"]:
                lines.append(stamp(f"nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  "
                                   f"{drv['version']}  {drv['build']}"))
            if "nvidia_drm" in self.d["modules"]["loaded"]:
                for k, i in enumerate(range(self.count)):
                    lines.append(stamp(f"[drm] Initialized nvidia-drm 0.0.0 20160202 for "
                                       f"{_bdf_sysfs(self.bdfs[i])} on minor {k + 1}"))
            if "nvidia_uvm" in self.d["modules"]["loaded"]:
                lines.append(stamp("nvidia-uvm: Loaded the UVM driver, major device number 510."))
        if self.d["persistenced"]["mode"] == "legacy":
            lines.append(stamp("NVRM: Persistence mode is deprecated and will be removed in a future release. "
                               "Please use nvidia-persistenced instead.", 9.0))
        if drv["userspace_version"] != drv["version"] and drv["loaded"]:
            lines += [stamp(f"NVRM: API mismatch: the client has the version {drv['userspace_version']}, but", 3600.0),
                      stamp(f"NVRM: this kernel module has the version {drv['version']}.  Please"),
                      stamp("NVRM: make sure that this kernel module and all NVIDIA driver"),
                      stamp("NVRM: components have the same version.")]
        for i in self.d["gpus"]["missing"]:
            b = self.bdfs[i]
            short = f"{b[0]:04x}:{b[1]:02x}:{b[2]:02x}"
            lines += [stamp(f"NVRM: GPU at PCI:{short}: {self.states[i]['uuid']}", 7201.0),
                      stamp(f"NVRM: Xid (PCI:{short}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
                      stamp(f"NVRM: GPU {_bdf_sysfs(b)}: GPU has fallen off the bus."),
                      stamp("NVRM: A GPU crash dump has been created. If possible, please run"),
                      stamp("NVRM: nvidia-bug-report.sh as root to collect this data before"),
                      stamp("NVRM: the NVIDIA kernel module is unloaded.")]
        for line in kl["lines"]:
            lines.append(line if line.startswith("[") else stamp(line))
        t = self.tool("dmesg", "/usr/bin/dmesg")
        if kl["dmesg"] == "denied":
            t.cases[""] = Invocation(err="dmesg: read kernel buffer failed: Operation not permitted\n", rc=1)
        else:
            t.cases[""] = Invocation(out="".join(x + "\n" for x in lines))
        t.default = t.cases[""]


def render_node(prof: Profile) -> NodeRender:
    """Render one profile; raises ProfileError/KeyError on states the renderer cannot express."""
    return _Renderer(prof).run()
