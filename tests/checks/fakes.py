"""FakeFacts: NodeFacts' attribute names, values set directly; a value that is an EvidenceError
instance raises it on access (and an attribute never set raises EvidenceError too: fail closed).

``healthy()`` is a one-GPU H200 node modelled on ../shared/captures/h200-vm-580.159.04 but with
the state the catalog asks for (daemon, modules, DKMS, firmware), so every check PASSes or
SKIPs by spec; each test changes the one fact its rule is about.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from nodegate.checks import GpuSlot, evaluate, gpu_slots
from nodegate.errors import EvidenceError
from nodegate.facts import (NA, AerCounters, DaemonProcess, DkmsEntry, DkmsStatus, DriverBanner, EccCounters,
                            FirmwareFacts, GpuFacts, GpuNvLinks, KernelEvent, LibNvml, ModinfoFacts,
                            ModuleEntry, ModuleState, NvLink, PasswdEntry, PcieLink, PersistencedFacts,
                            RemappedRows, RetiredPages, SmiVersion, SysfsLink, SystemdUnit, UnitFile)
from nodegate.spec import load_spec

# attribute -> evidence key (the key a missing fact names)
ATTR_KEYS = {
    "kernel_release": "meta.uname_r", "boot_id": "meta.boot_id", "machine_id": "meta.machine_id",
    "modules": "modules.proc",
    "nvidia_module_version": "modules.nvidia_version", "modinfo_nvidia": "modinfo.nvidia",
    "modinfo_peermem": "modinfo.nvidia_peermem", "modinfo_nv_peer_mem": "modinfo.nv_peer_mem",
    "installed_kernels": "kernels.installed", "modules_load_d": "modules.load_d", "dkms": "dkms.status",
    "driver_banner": "driver.proc_version", "driver_gpus": "driver.gpus_information", "libnvml": "driver.libnvml",
    "smi_version": "smi.version", "smi_error": "smi.qx", "gpus": "smi.qx", "gpu_source": "smi.qx",
    "persistenced_unit": "systemd.persistenced_show", "persistenced_unit_files": "persistenced.unit_files",
    "persistenced": "persistenced.process", "persistenced_user": "persistenced.passwd",
    "firmware": "firmware.gsp", "pci_links": "pci.sysfs", "ib_devices": "ib.devices",
    "peermem_registered": "peermem.registration", "kernel_events": "kernel.log",
    "kernel_log_source": "kernel.log", "fabricmanager_version": "fabricmanager.version",
    "fabricmanager_unit": "systemd.fabricmanager_show", "clocks_samples": "smi.clocks_samples",
    # issue 19
    "uptime_s": "meta.uptime", "nvlink_status": "smi.nvlink_status", "nvlink_errors": "smi.nvlink_errors",
    "nvml_nvlinks": "nvml.json", "nvswitches": "pci.nvswitch", "pci_aer": "pci.aer", "ib_ports": "ib.ports",
    "ibstat_ports": "ib.ibstat", "fabricmanager_log": "fabricmanager.log", "smi_report": "smi.qx",
}


def covers(*check_ids: str):
    """Mark the check ids a test covers (read by tools/gen_checks_doc.py and the meta-test)."""
    def deco(fn):
        fn.covers = check_ids
        return fn
    return deco


def missing(attr: str, reason: str = "tool missing (sh: 1: x: not found)") -> EvidenceError:
    return EvidenceError(ATTR_KEYS.get(attr, attr), reason)


class FakeFacts:
    def __init__(self, **attrs):
        object.__setattr__(self, "_attrs", dict(attrs))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        attrs = object.__getattribute__(self, "_attrs")
        if name not in attrs:
            raise EvidenceError(ATTR_KEYS.get(name, name), "not collected (fake)")
        v = attrs[name]
        if isinstance(v, EvidenceError):
            raise v
        return v

    def __setattr__(self, name, value):
        self._attrs[name] = value

    def without(self, *names) -> "FakeFacts":
        """A copy where ``names`` were never collected (access raises EvidenceError)."""
        f = self.but()
        for n in names:
            f._attrs.pop(n, None)
        return f

    def but(self, **changes) -> "FakeFacts":
        """A deep copy with some attributes replaced."""
        a = {k: v if isinstance(v, EvidenceError) else copy.deepcopy(v) for k, v in self._attrs.items()}
        a.update(changes)
        return FakeFacts(**a)


KVER = "6.8.0-50-generic"
VER = "580.159.04"
BUS = "0000:00:06.0"
DROPIN = "/etc/systemd/system/nvidia-persistenced.service.d/override.conf"
DAEMON = "/usr/bin/nvidia-persistenced"


def reasons(**active) -> dict:
    from nodegate.facts import CLOCKS_EVENT_BITS
    return {r: bool(active.get(r, False)) for r in CLOCKS_EVENT_BITS}


def pci_gpus(gpus) -> list[SysfsLink]:
    """The sysfs PCI functions (``pci.sysfs``) of ``gpus``: a node's GPU lists agree (NG-INV-001)."""
    return [SysfsLink(g.pci_bus_id, "gpu", None, "0x2335", 5, 16, 5, 16) for g in gpus]


def gpu(index=0, bus=BUS, **kw) -> GpuFacts:
    """An idle, healthy H200 (values from the capture's smi_q.out)."""
    g = GpuFacts(
        index=index, pci_bus_id=bus, name="NVIDIA H200", serial=f"165000000000{index + 1}",
        uuid=f"GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a1{index}", pci_device_id="2335", architecture="Hopper",
        persistence_mode=True, pstate="P0",
        link=PcieLink(current_gen=5, max_gen=5, device_max_gen=5, host_max_gen=NA, current_width=16, max_width=16),
        clocks_event_reasons=reasons(gpu_idle=True), clocks_event_reasons_mask=0x1,
        ecc_mode_current=True, ecc_mode_pending=True,
        ecc_volatile=EccCounters(0, 0, {"sram_correctable": 0, "sram_uncorrectable_parity": 0,
                                        "dram_correctable": 0, "dram_uncorrectable": 0}),
        ecc_aggregate=EccCounters(0, 0, {"sram_correctable": 0, "dram_uncorrectable": 0}),
        sram_threshold_exceeded=False,
        remapped_rows=RemappedRows(0, 0, False, False, {"max": 3072, "high": 0, "partial": 0, "low": 0, "none": 0}),
        retired_pages=RetiredPages(NA, NA, NA), gsp_firmware_version=VER, recovery_action="None",
        mig_mode_current=False, mig_mode_pending=False, vbios_version="96.00.A5.00.1A",
        inforom_image="G520.0282.02.02", compute_mode="Default", power_limit_w=700.0, power_limit_default_w=700.0,
        pcie_replay_counter=0, pcie_replay_rollover=0, fabric_state=NA, fabric_status=NA, fabric_health=NA,
        source="smi_xml")
    return replace(g, **kw)


def nvlinks(index=0, uuid=None, n=18, gbps=26.562, down=(), errors=None) -> GpuNvLinks:
    """One GPU's NVLinks as nvidia-smi nvlink -s/-e give them (H100/H200 SXM: 18 x 26.562 GB/s)."""
    uuid = uuid or f"GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a1{index}"
    links = [NvLink(k, active=k not in down, speed_gbps=None if k in down else gbps,
                    errors=dict((errors or {}).get(k, {"replay": 0, "recovery": 0, "crc": 0}))) for k in range(n)]
    return GpuNvLinks(index=index, name="NVIDIA H200", uuid=uuid, links=links, status="ok", source="smi")


def aer(bus=BUS, up="0000:00:01.0", **totals) -> list:
    """AER records of one GPU and its upstream port, every counter 0 unless given (e.g. up_fatal=1)."""
    def rec(bdf, role, prefix):
        t = {k: totals.get(f"{prefix}_{k}", 0) for k in ("correctable", "nonfatal", "fatal")}
        return AerCounters(bdf, role, bus if role == "upstream" else None,
                           correctable={"RxErr": t["correctable"]}, nonfatal={"DLP": t["nonfatal"]},
                           fatal={"DLP": t["fatal"]}, correctable_total=t["correctable"],
                           nonfatal_total=t["nonfatal"], fatal_total=t["fatal"], files=3)
    return [rec(bus, "gpu", "gpu")] + ([rec(up, "upstream", "up")] if up else [])


def module_state(names=("nvidia_drm", "nvidia_modeset", "nvidia_uvm", "nvidia"), builtin=("ib_core",)):
    users = {"nvidia": ["nvidia_uvm", "nvidia_modeset"], "nvidia_modeset": ["nvidia_drm"]}
    loaded = [ModuleEntry(n, 1000, 0, users.get(n, []), "Live", i) for i, n in enumerate(names)]
    return ModuleState(loaded=loaded, builtin=set(builtin), sys_loadable={n: "live" for n in names})


def healthy(**changes) -> FakeFacts:
    sample = {0: GpuFacts(index=0, pci_bus_id=BUS, pstate="P0", clocks_event_reasons_mask=0x1, source="smi_csv")}
    f = FakeFacts(
        kernel_release=KVER, boot_id="0f0e", modules=module_state(), nvidia_module_version=VER,
        modinfo_nvidia=ModinfoFacts(filename=f"/lib/modules/{KVER}/updates/dkms/nvidia.ko.zst", license="Dual MIT/GPL",
                                    version=VER, firmware=[f"nvidia/{VER}/gsp_ga10x.bin", f"nvidia/{VER}/gsp_tu10x.bin"],
                                    vermagic=f"{KVER} SMP preempt mod_unload modversions"),
        modinfo_peermem=ModinfoFacts(filename=f"/lib/modules/{KVER}/updates/dkms/nvidia-peermem.ko.zst",
                                     license="Dual MIT/GPL", version=VER),
        modinfo_nv_peer_mem=None,
        installed_kernels={KVER: True}, modules_load_d={},
        dkms=DkmsStatus([DkmsEntry("nvidia", VER, KVER, "x86_64", "installed")]),
        driver_banner=DriverBanner("open", VER, "x86_64",
                                   f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {VER}  Release Build  "
                                   "(dvs-builder@U22-I3-AF03-09-1)  Wed Apr 15 2026"),
        driver_gpus=[{"Model": "NVIDIA H200", "Bus Location": BUS, "Device Minor": "0"}],
        libnvml=LibNvml(path="/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                        target=f"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.{VER}", version=VER),
        smi_version=SmiVersion(VER, "580.159", VER, "13.0"), smi_error=None, gpus=[gpu()], gpu_source="smi_xml",
        persistenced_unit=SystemdUnit(load_state="loaded", active_state="active", sub_state="running",
                                      unit_file_state="enabled",
                                      exec_start=[[DAEMON, "--user", "nvidia-persistenced", "--persistence-mode"]], main_pid=1234,
                                      fragment_path="/usr/lib/systemd/system/nvidia-persistenced.service",
                                      drop_in_paths=[DROPIN], result="success",
                                      raw={"LoadState": "loaded", "ActiveState": "active"}),
        persistenced_unit_files=[
            UnitFile("/usr/lib/systemd/system/nvidia-persistenced.service", [f"{DAEMON} --verbose"], type="forking"),
            UnitFile(DROPIN, ["", f"{DAEMON} --user nvidia-persistenced --persistence-mode"],
                     text=f"[Service]\nExecStart=\nExecStart={DAEMON} --user nvidia-persistenced --persistence-mode\n")],
        persistenced=PersistencedFacts([DaemonProcess(1234, 998, [DAEMON, "--user", "nvidia-persistenced",
                                                                  "--persistence-mode"])], 998,
                                       True),
        persistenced_user=PasswdEntry("nvidia-persistenced", 998, 998, "/", "/usr/sbin/nologin"),
        firmware=FirmwareFacts("", VER, {f"/lib/firmware/updates/{KVER}/nvidia/{VER}": None,
                                         f"/lib/firmware/updates/nvidia/{VER}": None,
                                         f"/lib/firmware/{KVER}/nvidia/{VER}": None,
                                         f"/lib/firmware/nvidia/{VER}": {"gsp_ga10x.bin": 75000000,
                                                                         "gsp_tu10x.bin": 30000000}}),
        pci_links=[SysfsLink(BUS, "gpu", None, "0x2335", 5, 16, 5, 16),
                   SysfsLink("0000:00:01.0", "upstream", BUS, "0x1234", 5, 16, 5, 16)],
        ib_devices=[], peermem_registered=False,
        kernel_events=[KernelEvent("loading_banner", f"NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {VER}")],
        kernel_log_source="dmesg", fabricmanager_version=missing("fabricmanager_version"),
        fabricmanager_unit=SystemdUnit(load_state="not-found", active_state="inactive"),
        clocks_samples=[sample],
        uptime_s=86400.0, nvlink_status=[nvlinks()], nvlink_errors=[nvlinks()], nvml_nvlinks=None,
        nvswitches=[], pci_aer=aer(), ib_ports=[], ibstat_ports=None, fabricmanager_log=[],
    )
    return f.but(**changes) if changes else f


def spec(**raw):
    return load_spec(raw or None, "tests")


def run(check_id: str, facts, sp=None, gpu: int | GpuSlot | None = None):
    """Evaluate one check; per-GPU checks get the slot ``gpu`` (index) from gpu_slots."""
    sp = sp if sp is not None else spec()
    from nodegate.checks import load_all
    c = load_all()[check_id]
    if c.scope == "node":
        r = evaluate(check_id, facts, sp)
    elif isinstance(gpu, GpuSlot):
        r = evaluate(check_id, facts, sp, gpu)
    else:
        r = evaluate(check_id, facts, sp, gpu_slots(facts, sp)[gpu or 0])
    # a rule bug shows as ERROR "internal error": never let a test take it for an intended ERROR
    assert "internal error in check" not in r.message, r.evidence
    return r


#: the checks a public nvidia-smi output is judged by, on a healthy node holding its GPUs (the sweep's rule:
#: ../shared/sweep/README.md): test_public_fixtures_more.py (-q -x) and test_public_text_fixtures.py (-a)
PUBLIC_CHECKS = ("NG-INV-001", "NG-INV-002", "NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-ECC-001", "NG-ECC-002",
                 "NG-MEM-001", "NG-MEM-002", "NG-GSP-002", "NG-CFG-001", "NG-CFG-002", "NG-CFG-003", "NG-CFG-004",
                 "NG-PER-004")


def spec_of_report(rep):
    """The sweep's spec of a parsed report: its first GPU's model and the GPU count, PCIe as the board's
    maximum, ECC not required where the board reports N/A."""
    g = rep.gpus[0]
    raw = {"gpu": {"model": g.name, "count": len(rep.gpus)}}
    if isinstance(g.link.max_gen, int) and not isinstance(g.link.max_gen, bool):
        raw["pcie"] = {"gen": g.link.max_gen, "width": g.link.max_width}
    if not isinstance(g.ecc_mode_current, bool):
        raw["ecc"] = {"required": False}
    return spec(**raw)


def node_of_smi_text(rep):
    """A healthy node whose GPUs, driver version and module flavor are those of an ``nvidia-smi -a``
    report (the public text fixtures): the flavor the branch defaults to (open from 560)."""
    ver = rep.driver_version
    flavor = "open" if int(ver.split(".")[0]) >= 560 else "proprietary"
    banner = DriverBanner(flavor, ver, "x86_64", f"NVRM version: {ver}")
    return healthy(gpus=rep.gpus, nvidia_module_version=ver, driver_banner=banner, driver_gpus=[],
                   gpu_source="smi_text", pci_links=pci_gpus(rep.gpus)).without("clocks_samples")


def verdict_letters(facts, sp, checks=PUBLIC_CHECKS) -> dict[str, str]:
    """check id -> the first letter of its outcome for NG-INV-001 (the GPU count, once a node), one letter
    per GPU for the others."""
    return {cid: run(cid, facts, sp).outcome.name[0] if cid == "NG-INV-001" else
            "".join(run(cid, facts, sp, gpu=i).outcome.name[0] for i in range(len(facts.gpus))) for cid in checks}
