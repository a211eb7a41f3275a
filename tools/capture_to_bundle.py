#!/usr/bin/env python3
"""Convert the read-only H200 capture into a nodegate bundle (probe keys and formats).

Usage::

    .venv/bin/python tools/capture_to_bundle.py [CAPTURE_DIR] [BUNDLES_ROOT]
    # defaults: ../shared/captures/h200-vm-580.159.04 (relative to the repo) and
    #           inventories/samples  -> writes inventories/samples/h200-vm/

The capture (``index.tsv`` + ``NAME.out``/``NAME.err``) ran ad-hoc commands, not the probe.
Each probe key is rebuilt from the capture file holding the same information, in the probe's
format (nodegate/probe/probe.sh); tools absent on the node become rc 127 with
``<tool>: command not found`` on stderr, as ``ng_missing`` prints. Keys the capture cannot
support are left out (then NodeFacts says "evidence not collected"), never invented:
``meta.boot_id`` and ``nvml.json`` (the capture's NVML dump is not the probe's schema).
Derivations that lose detail are listed in meta.json ``derived``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nodegate.bundle import Bundle, Evidence  # noqa: E402

NODE = "h200-vm"
DEFAULT_CAPTURE = REPO / ".." / "shared" / "captures" / "h200-vm-580.159.04"
DEFAULT_OUT = REPO / "inventories" / "samples"


def _read(cap: Path, name: str) -> str:
    p = cap / name
    return p.read_text() if p.is_file() else ""


def _ev(key: str, out: str, rc: int = 0, err: str = "") -> Evidence:
    return Evidence(key, out.encode(), err.encode(), rc)


def _missing(key: str, tool: str) -> Evidence:
    return _ev(key, "", 127, f"{tool}: command not found\n")


def sys_modules(sys_module_out: str) -> str:
    """sys_module.out (names, then '== /sys/module/X' + version, srcversion, initstate) ->
    '<name> loadable <initstate>' / '<name> builtin'. A listed name with no initstate block is
    built in (capture README: ib_core, mlx5_core, mlx5_ib are built in)."""
    names, states, cur = [], {}, None
    for ln in sys_module_out.splitlines():
        if ln.startswith("== /sys/module/"):
            cur = ln.split("/")[-1].strip()
            continue
        if cur is None:
            if ln.strip():
                names.append(ln.strip())
        elif ln.strip() in ("live", "coming", "going"):
            states[cur] = ln.strip()
    return "".join(f"{n} loadable {states[n]}\n" if n in states else f"{n} builtin\n" for n in names)


def nvidia_version(sys_module_out: str) -> str:
    lines = sys_module_out.splitlines()
    i = lines.index("== /sys/module/nvidia")
    return lines[i + 1].strip() + "\n"


def gpus_information(proc_driver_gpus: str) -> str:
    out, keep = [], False
    for ln in proc_driver_gpus.splitlines():
        if ln.startswith("== "):
            keep = ln.endswith("/information")
        if keep:
            out.append(ln)
    return "\n".join(out) + "\n\n"


def pci_sysfs(sys_pci: str) -> str:
    """sys_pci.out -> the probe's '== <bdf> gpu' blocks for NVIDIA display-class functions.
    sys_pci_up.out shows the parent is the host bridge without link attributes: no upstream."""
    out, n, keep = [], 0, False
    hdr = re.compile(r"^== /sys/bus/pci/devices/(\S+) vendor=(\S+) device=(\S+) class=(\S+)")
    for ln in sys_pci.splitlines():
        m = hdr.match(ln)
        if m:
            keep = m.group(2) == "0x10de" and m.group(4).startswith("0x03")
            if keep:
                n += 1
                out += [f"== {m.group(1)} gpu", f"device: {m.group(3)}", f"class: {m.group(4)}"]
            continue
        if keep and not ln.startswith("numa_node"):
            out.append(ln)
    out.append(f"gpus: {n}")
    return "\n".join(out) + "\n"


def pci_nvswitch(sys_pci: str) -> str:
    """sys_pci.out -> the probe's NVSwitch listing: NVIDIA functions of class 0x0680 (none in this VM)."""
    hdr = re.compile(r"^== /sys/bus/pci/devices/(\S+) vendor=(\S+) device=(\S+) class=(\S+)")
    out = [f"== {m.group(1)} device {m.group(3)} class {m.group(4)}" for m in map(hdr.match, sys_pci.splitlines())
           if m and m.group(2) == "0x10de" and m.group(4).startswith("0x0680")]
    return "".join(x + "\n" for x in out) + f"nvswitches: {len(out)}\n"


def libnvml(ldconfig: str, libnvml_ls: str) -> str:
    """ldconfig.out + the ls -la of the symlink chain -> 'ldconfig <path> -> <target>' lines.
    Only paths whose link chain the capture shows are resolved."""
    links = {}
    for ln in libnvml_ls.splitlines():
        m = re.search(r"(/\S+) -> (\S+)$", ln)
        if m:
            links[m.group(1)] = m.group(2)
    out = []
    for ln in ldconfig.splitlines():
        m = re.match(r"\s*libnvidia-ml\.so\.1 \(.*\) => (\S+)", ln)
        if not m or m.group(1) not in links:
            continue
        p = m.group(1)
        target = str(Path(p).parent / links[p])
        out.append(f"ldconfig {p} -> {target}")
    for p in sorted(links):
        if p.endswith("libnvidia-ml.so.1"):
            out.append(f"path {p} -> {Path(p).parent / links[p]}")
    return "\n".join(out) + "\n"


def firmware_gsp(firmware_class: str, find_gsp: str, version: str) -> str:
    """firmware_class.out (path) + find_gsp.out (files) -> the probe's listing. The capture
    has no sizes: files are listed by name only (size unknown); /lib/firmware/nvidia is absent
    (firmware.out)."""
    fp = firmware_class.splitlines()[0].strip()
    out = [f"firmware_class.path: {fp}", f"driver_version: {version}"]
    d = f"{fp}/nvidia/{version}"
    out.append(f"== {d}")
    out += sorted(ln.rsplit("/", 1)[1] for ln in find_gsp.splitlines() if ln.startswith(d + "/") and ln.endswith(".bin"))
    for base in ("/lib/firmware/updates", "/lib/firmware"):
        out += [f"== {base}/nvidia/{version}", "absent"]
    return "\n".join(out) + "\n"


def dev_names(dev_nvidia: str) -> str:
    names = []
    for ln in dev_nvidia.splitlines():
        m = re.search(r"\s/dev/(\S+)$", ln)
        if m and m.group(1) not in names:
            names.append(m.group(1))
        elif ln.startswith("/dev/nvidia-caps:") and "nvidia-caps" not in names:
            names.append("nvidia-caps")
    return "\n".join(sorted(names)) + "\n"


def clocks_samples(wide: str, seed: str) -> str:
    """One sample (index, bus id, pstate, mask) from smi_query_wide (bus id, mask) and
    smi_query_seed (pstate) of the same idle node."""
    hdr, row = wide.splitlines()[:2]
    vals = dict(zip([h.split(" [")[0] for h in hdr.split(", ")], row.split(", ")))
    pstate = seed.split(", ")[2]
    return f"{vals['index']}, {vals['pci.bus_id']}, {pstate}, {vals['clocks_event_reasons.active']}\n"


def build(cap: Path) -> Bundle:
    r = lambda n: _read(cap, n)  # noqa: E731
    version = nvidia_version(r("sys_module.out")).strip()
    items = [
        _ev("meta.uname_r", r("uname_r.out")),
        _ev("meta.hostname", r("uname_a.out").split()[1] + "\n"),
        _ev("meta.id", r("id.out")),
        _ev("modules.proc", r("proc_modules.out")),
        _ev("modules.sys", sys_modules(r("sys_module.out"))),
        _ev("modules.nvidia_version", nvidia_version(r("sys_module.out"))),
        _ev("modules.load_d", "", 1),
        _ev("kernels.installed", "", 2, "/lib/modules: No such file or directory\n"),
        _ev("driver.proc_version", r("proc_driver_version.out")),
        _ev("driver.params", r("proc_driver_params.out")),
        _ev("driver.gpus_information", gpus_information(r("proc_driver_gpus.out"))),
        _ev("driver.libnvml", libnvml(r("ldconfig.out"), r("libnvml.out"))),
        _ev("dev.nvidia", dev_names(r("dev_nvidia.out"))),
        _ev("pci.sysfs", pci_sysfs(r("sys_pci.out"))),
        _ev("pci.nvswitch", pci_nvswitch(r("sys_pci.out"))),
        _ev("ib.devices", ""),
        _ev("ib.ports", ""),
        _ev("peermem.registration", ""),
        _ev("firmware.gsp", firmware_gsp(r("firmware_class.out"), r("find_gsp.out"), version)),
        _ev("persistenced.process", "processes: 0\n"),
        _ev("persistenced.passwd", "", 2),
        _ev("persistenced.unit_files", "", 1),
        _missing("modinfo.nvidia", "modinfo"),
        _missing("modinfo.nvidia_peermem", "modinfo"),
        _missing("modinfo.nv_peer_mem", "modinfo"),
        _missing("systemd.persistenced_show", "systemctl"),
        _missing("systemd.fabricmanager_show", "systemctl"),
        _missing("fabricmanager.version", "nv-fabricmanager"),
        _missing("dkms.status", "dkms"),
        _ev("smi.version", r("smi_version.out")),
        _ev("smi.qx", r("smi_qx.out")),
        # index.tsv: smi_nvlink rc=0 with no output file: nvidia-smi nvlink -s printed nothing
        _ev("smi.nvlink_status", r("smi_nvlink.out")),
        _ev("smi.clocks_samples", clocks_samples(r("smi_query_wide.out"), r("smi_query_seed.out"))),
        _ev("kernel.log", "# source: dmesg\n" + r("dmesg.out")),
    ]
    meta = {
        "node": NODE, "target": "capture:h200-vm-580.159.04", "status": "ok",
        "source": "tools/capture_to_bundle.py from ../shared/captures/h200-vm-580.159.04",
        "derived": {
            "modules.sys": "sys_module.out lists only names matching nvidia|ib_|mlx|rdma",
            "firmware.gsp": "find_gsp.out has no sizes: files listed by name (size unknown)",
            "persistenced.passwd": "capture grepped /etc/passwd for 'nvidia': no entry (rc 2 = unknown user)",
            "smi.clocks_samples": "one sample from smi_query_wide (mask, bus id) + smi_query_seed (pstate)",
            "dev.nvidia": "only the nvidia* names of /dev",
            "kernel.log": "dmesg.out was captured with grep -iE 'nvrm|nvidia|xid'",
            "pci.nvswitch": "from sys_pci.out (vendor/class of every PCI function)",
            "ib.ports": "like ib.devices: the capture lists no /sys/class/infiniband device",
            "smi.nvlink_status": "smi_nvlink (nvidia-smi nvlink -s) rc 0, empty output",
        },
        "not_collected": ["meta.boot_id", "nvml.json", "meta.uptime", "pci.aer", "smi.nvlink_errors", "ib.ibstat",
                          "fabricmanager.log"],
        # the expected state an operator writes for this node (--replay uses it without an inventory)
        "spec": {"driver": {"version": "580.159.04", "flavor": "open"},
                 "gpu": {"count": 1, "model": "H200"}},
    }
    return Bundle(node=NODE, items={e.key: e for e in items}, meta=meta)


def main(argv: list[str]) -> int:
    cap = Path(argv[1]) if len(argv) > 1 else DEFAULT_CAPTURE
    out = Path(argv[2]) if len(argv) > 2 else DEFAULT_OUT
    if not (cap / "index.tsv").is_file():
        print(f"not a capture directory: {cap}", file=sys.stderr)
        return 2
    d = build(cap).write(out)
    print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
