"""NodeFacts: evidence (a Bundle) -> typed facts, lazily, one parser call per fact group.

Each property reads the bundle keys named in its docstring, calls the pure parser, caches the
result and raises ``EvidenceError(key, reason)`` when the evidence is missing, failed (tool
missing, timeout, non-zero exit where that means no data), truncated or unparsable. Checks
let that exception propagate; the check framework turns it into outcome ERROR.

Exit codes that mean "no data" rather than failure are decided per key (see each docstring):
e.g. ``cat`` of an absent file (rc 1) = the file does not exist, ``modinfo`` rc 1 "not found"
= module not on disk, ``getent`` rc 2 = user unknown, the probe's '== <file>' listings rc 1 =
no file matched. ``systemctl show`` of a missing unit is rc 0 with ``LoadState=not-found``.
Everything else non-zero (127 tool missing, 124 timeout, permission denied) is EvidenceError.

Imports point one way: parsers never import this module.

One module because NodeFacts is one class: one cached property per fact group, each a few
lines calling its parser (the fabric's are in collect_fabric.py).
"""

from __future__ import annotations

import time

from . import altkeys
from .bundle import Bundle, Evidence
from .errors import EvidenceError, NodegateError, ParseError
from .facts import (DkmsStatus, DmiFacts, DriverBanner, FirmwareFacts, GpuFacts, KernelEvent, KernelLogCut, LibNvml,
                    ModinfoFacts, ModuleState, PasswdEntry, PersistencedFacts, SmiError,
                    SmiReport, SmiVersion, SysfsLink, SystemdUnit, UnitFile)
from .parsers import (dkms, dmi, firmware, kernel_log, libnvml, modinfo, modules, pci, persistenced,
                      proc_version, smi_csv, smi_error, smi_version, smi_xml, sysfs_lists, systemd)
from .collect_fabric import FabricFacts
from .lazy import cached_property
from .parsers._limits import TooManyGpus


class _Raw(Exception):
    """Carries a parser's ParseError through ``_budgeted`` (which would turn it into EvidenceError)."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error

    @staticmethod
    def call(fn, *args):
        try:
            return fn(*args)
        except ParseError as e:
            raise _Raw(e) from None


#: CPU seconds one node's parsers may spend together (docs/security.md "Parsing"). Every parser is
#: linear in its input and every item is capped, so a real node parses in well under a second and
#: a hostile one at every cap in tens of seconds (bench/parse_bounds.py); past the budget that node's
#: remaining facts ERROR "parse budget exceeded", so no node can hold the run in its parsers.
PARSE_BUDGET_S = 60.0
#: the clock of the budget: CPU time of the calling thread (nodes are parsed in parallel threads;
#: process time would charge one node for the others). Tests replace it with a fake clock.
cpu_clock = time.thread_time


class NodeFacts(FabricFacts):
    """Facts of one node, derived from its bundle on first access.

    Attributes (each a cached property; see the docstring of each for its source):
    kernel_release, boot_id, machine_id, modules, nvidia_module_version, modinfo_nvidia,
    modinfo_peermem, modinfo_nv_peer_mem, installed_kernels, modules_load_d, dkms,
    driver_banner, libnvml, smi_version, smi_error, gpus, gpu_source, persistenced_unit,
    persistenced_unit_files, persistenced, persistenced_user, firmware, pci_links,
    ib_devices, peermem_registered, kernel_events, kernel_log_cut, kernel_log_source, fabricmanager_version,
    fabricmanager_unit, clocks_samples, dmi; and (nodegate/collect_fabric.py, issue 19) uptime_s,
    nvlink_status, nvlink_errors, nvml_nvlinks, nvswitches, pci_aer, ib_ports, ibstat_ports,
    fabricmanager_log.
    Also: hostname, probe_user, smi_report, smi_driver_version, driver_gpus, dev_nodes,
    peermem_clients, smi_key and lspci_links (alternative evidence keys, nodegate/altkeys.py).
    """

    #: ``{(check id, GpuSlot or None): Result}`` computed ahead from these same facts by the
    #: prefetching process (nodegate.fleetrun.prefetch, engine.check_results), read (and each
    #: result taken once) by engine.evaluate_item; None: every check is evaluated when asked
    checked: dict | None = None

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self.node = bundle.node

    # ------------------------------------------------------------------ helpers
    def _parse(self, key: str, parser, text: str):
        """``parser(text)`` under the node's parse budget: EvidenceError for a ParseError, and
        "parse budget exceeded" when this node's parsers have spent PARSE_BUDGET_S CPU seconds
        (checked before and after each parser: the budget is deterministic, never a race)."""
        return self._budgeted(key, parser, text)

    def _budgeted(self, key: str, fn, *args):
        spent = self.__dict__.get("_parse_spent", 0.0)
        if spent >= PARSE_BUDGET_S:
            raise EvidenceError(key, self._over_budget(spent))
        t0 = cpu_clock()
        try:
            out = fn(*args)
        except ParseError as e:
            raise EvidenceError(key, f"output unparsable: {e}") from None
        finally:
            spent = self.__dict__["_parse_spent"] = spent + (cpu_clock() - t0)
        if spent >= PARSE_BUDGET_S:
            raise EvidenceError(key, self._over_budget(spent))
        return out

    def parsed_cache(self) -> dict | None:
        """Every fact of the node computed now: ``{name: value}`` of each cached property that
        could be computed (one that raises is left out: whoever asks for it meets the error
        again), with ``_parse_spent``; for ``__dict__.update`` of a NodeFacts of the same bundle
        in another process (nodegate.fleetrun.prefetch). None when the parsers spent half the
        budget or more: such a node is parsed where it is judged, in the order its checks ask
        (the budget's errors then fall on the facts they would fall on without this)."""
        names = sorted({n for k in type(self).__mro__ for n, v in vars(k).items() if isinstance(v, cached_property)})
        for n in names:
            try:
                getattr(self, n)
            except Exception:  # noqa: BLE001 - not cached: asked again, it raises again
                pass
        if self.__dict__.get("_parse_spent", 0.0) >= PARSE_BUDGET_S / 2:
            return None
        keep = set(names) | {"_parse_spent"}
        return {k: v for k, v in self.__dict__.items() if k in keep}

    @staticmethod
    def _over_budget(spent: float) -> str:
        return (f"parse budget exceeded: this node's parsers spent {spent:.1f} CPU seconds, over the budget of "
                f"{PARSE_BUDGET_S:.0f} s (nodegate.collect.PARSE_BUDGET_S): its remaining facts are not evaluated")

    def _item(self, key: str, ok_rcs: tuple[int, ...] = (0,)) -> Evidence:
        """The evidence item when usable (status ok, rc in ok_rcs), else EvidenceError."""
        ev = self.bundle.get(key)
        prob = ev.problem(ok_rcs)
        if prob:
            raise EvidenceError(key, prob)
        return ev

    def _text(self, key: str) -> str:
        return self.bundle.text(key)

    # ------------------------------------------------------------------ identity
    @cached_property
    def kernel_release(self) -> str:
        """``meta.uname_r``: the booted kernel release, stripped."""
        t = self._text("meta.uname_r").strip()
        if not t:
            raise EvidenceError("meta.uname_r", "empty output")
        return t

    @cached_property
    def boot_id(self) -> str:
        """``meta.boot_id``: /proc/sys/kernel/random/boot_id, stripped."""
        t = self._text("meta.boot_id").strip()
        if not t:
            raise EvidenceError("meta.boot_id", "empty output")
        return t

    @cached_property
    def machine_id(self) -> str | None:
        """``meta.machine_id``: /etc/machine-id (else /var/lib/dbus/machine-id), stripped and
        lower-cased. None when the node has neither file (rc 1), or the file is empty or holds
        ``uninitialized`` (machine-id(5): the id is not committed yet, first boot)."""
        ev = self._item("meta.machine_id", (0, 1))
        t = ev.text.strip().lower() if ev.rc == 0 else ""
        return None if t in ("", "uninitialized") else t

    @cached_property
    def hostname(self) -> str:
        """``meta.hostname``: ``uname -n``, stripped."""
        return self._text("meta.hostname").strip()

    @cached_property
    def probe_user(self) -> str:
        """``meta.id``: ``id`` output of the probe's user (e.g. ``uid=0(root) gid=0(root) ...``)."""
        return self._text("meta.id").strip()

    # ------------------------------------------------------------------ kernel modules
    @cached_property
    def modules(self) -> ModuleState:
        """``modules.proc`` (/proc/modules, order = load order, most recent first) and
        ``modules.sys`` (built-in = in /sys/module without initstate). Both required."""
        proc = self._parse("modules.proc", modules.parse_proc_modules, self._text("modules.proc"))
        builtin, loadable = self._parse("modules.sys", modules.parse_sys_modules, self._text("modules.sys"))
        return ModuleState(loaded=proc, builtin=builtin, sys_loadable=loadable)

    @cached_property
    def nvidia_module_version(self) -> str | None:
        """``modules.nvidia_version`` (/sys/module/nvidia/version). None when the file does not
        exist (cat rc 1: module not loaded, or built without a version attribute)."""
        ev = self._item("modules.nvidia_version", (0, 1))
        return ev.text.strip() or None if ev.rc == 0 else None

    def _modinfo(self, key: str) -> ModinfoFacts | None:
        ev = self.bundle.get(key)
        if ev.rc == 1 and "not found" in (ev.err_text + ev.text).lower():
            return None   # modinfo: ERROR: Module X not found.
        ev = self._item(key)
        return self._parse(key, modinfo.parse_modinfo, ev.text)

    @cached_property
    def modinfo_nvidia(self) -> ModinfoFacts | None:
        """``modinfo.nvidia`` (modinfo -k <kver> nvidia). None when the module is not on disk
        for the booted kernel (rc 1 "not found"); EvidenceError when modinfo is missing."""
        return self._modinfo("modinfo.nvidia")

    @cached_property
    def modinfo_peermem(self) -> ModinfoFacts | None:
        """``modinfo.nvidia_peermem``; None when not on disk."""
        return self._modinfo("modinfo.nvidia_peermem")

    @cached_property
    def modinfo_nv_peer_mem(self) -> ModinfoFacts | None:
        """``modinfo.nv_peer_mem`` (legacy Mellanox module); None when not on disk."""
        return self._modinfo("modinfo.nv_peer_mem")

    @cached_property
    def installed_kernels(self) -> dict[str, bool]:
        """``kernels.installed``: {kver: has build/modules}. ``{}`` when /lib/modules does not
        exist (probe rc 2 with 'No such file or directory')."""
        ev = self.bundle.get("kernels.installed")
        if ev.rc == 2 and "no such file" in ev.err_text.lower():
            return {}
        return self._parse("kernels.installed", sysfs_lists.parse_kernels_installed,
                           self._text("kernels.installed"))

    @cached_property
    def modules_load_d(self) -> dict[str, list[str]]:
        """``modules.load_d``: {file: [module, ...]}; rc 1 = no file exists -> {}."""
        ev = self._item("modules.load_d", (0, 1))
        return {} if ev.rc == 1 else self._parse("modules.load_d", sysfs_lists.parse_modules_load_d, ev.text)

    @cached_property
    def dkms(self) -> DkmsStatus:
        """``dkms.status``. ``Error! ...`` output (stdout or stderr, any exit code) is kept in
        ``errors`` (a broken DKMS tree, checks.md "DKMS"); tool missing -> EvidenceError."""
        ev = self.bundle.get("dkms.status")
        if ev.status == "ok" and ev.rc not in (0, 127, 124) and "Error!" in (ev.text + ev.err_text):
            return self._parse("dkms.status", dkms.parse_dkms_status, ev.text + "\n" + ev.err_text)
        return self._parse("dkms.status", dkms.parse_dkms_status, self._text("dkms.status"))

    # ------------------------------------------------------------------ driver stack
    @cached_property
    def driver_banner(self) -> DriverBanner | None:
        """``driver.proc_version`` (/proc/driver/nvidia/version): flavor and version of the
        loaded module. None when the file does not exist (rc 1: nvidia not loaded)."""
        ev = self._item("driver.proc_version", (0, 1))
        if ev.rc == 1:
            return None
        return self._parse("driver.proc_version", proc_version.parse_proc_version, ev.text)

    @cached_property
    def driver_gpus(self) -> list[dict[str, str]]:
        """``driver.gpus_information``: one dict per GPU the module bound ('Model', 'Bus
        Location' normalised, 'GPU Firmware', 'Device Minor'); rc 1 = none -> []."""
        ev = self._item("driver.gpus_information", (0, 1))
        return [] if ev.rc == 1 else self._parse("driver.gpus_information",
                                                 sysfs_lists.parse_gpus_information, ev.text)

    @cached_property
    def libnvml(self) -> LibNvml:
        """``driver.libnvml``: resolved libnvidia-ml.so.1 and its version (all None = not found)."""
        return self._parse("driver.libnvml", libnvml.parse_libnvml, self._text("driver.libnvml"))

    @cached_property
    def smi_version(self) -> SmiVersion:
        """``smi.version`` (nvidia-smi --version). EvidenceError naming nvidia-smi's error when
        it printed one instead."""
        ev = self.bundle.get("smi.version")
        if ev.status == "ok" and ev.rc not in (0, 124, 127):
            err = smi_error.parse_smi_error(ev.text + "\n" + ev.err_text)
            if err:
                raise EvidenceError("smi.version", f"nvidia-smi failed: {err.message}")
        return self._parse("smi.version", smi_version.parse_smi_version, self._text("smi.version"))

    @cached_property
    def smi_key(self) -> str:
        """The nvidia-smi evidence key GPU facts come from: ``smi.qx`` (the probe's), else the
        alternative ``smi.q`` (-q text) or ``smi.query_csv`` (nodegate.altkeys)."""
        return altkeys.smi_key(self.bundle)

    @cached_property
    def smi_error(self) -> SmiError | None:
        """The error nvidia-smi printed for ``smi.qx`` (or its alternative ``smi_key``): driver/library
        mismatch, no driver, no devices, device handle; None when it reported normally.
        EvidenceError when nvidia-smi is missing or timed out."""
        key = self.smi_key
        ev = self.bundle.get(key)
        prob = ev.problem(tuple(range(256)))  # 124/127/timeout are reported before ok_rcs
        if prob:
            raise EvidenceError(key, prob)
        if ev.rc == 0 and key == "smi.qx" and ev.text.lstrip().startswith("<"):
            return None
        err = smi_error.parse_smi_error(ev.text + "\n" + ev.err_text)
        if err is None and ev.rc != 0:
            first = (ev.err_text.strip() or ev.text.strip()).splitlines()[:1]
            err = SmiError("other", first[0][:300] if first else f"exit code {ev.rc}")
        return err

    @cached_property
    def smi_report(self) -> SmiReport:
        """``smi.qx`` parsed (nvidia-smi -q -x), or the alternative ``smi_key`` with its parser.
        EvidenceError naming ``smi_error`` when nvidia-smi failed."""
        key = self.smi_key
        err = self.smi_error
        if err is not None:
            raise EvidenceError(key, f"nvidia-smi failed ({err.kind}): {err.message}")
        text = self._text(key)
        try:  # nvidia-smi writes UTF-8: invalid bytes are corruption, not text to repair
            self.bundle.get(key).stdout.decode("utf-8")
        except UnicodeDecodeError as e:
            raise EvidenceError(key, f"output unparsable: not valid UTF-8 (byte {e.start})") from None
        return self._parse(key, lambda t: altkeys.parse_smi(key, t), text)

    @cached_property
    def lspci_links(self):
        """``pci.lspci_vvv`` (alternative key: lspci -vvv): LspciLink per function; [] without it."""
        if not self.bundle.has("pci.lspci_vvv"):
            return []
        return self._parse("pci.lspci_vvv", altkeys.parse_lspci, self._text("pci.lspci_vvv"))

    @cached_property
    def smi_driver_version(self) -> str | None:
        """``smi.qx`` top-level ``driver_version``."""
        return self.smi_report.driver_version

    @cached_property
    def _gpus_and_source(self) -> tuple[list[GpuFacts], str]:
        forced = self.bundle.meta.get("gpu_source") == "nvml"
        nv = self._gpus_from_nvml(forced)
        if nv is not None:
            return nv, "nvml"
        key = self.smi_key
        if not self.bundle.has(key) and self.bundle.has("pci.lspci_vvv") and not self.bundle.gather_error:
            return altkeys.gpus_from_lspci(self.lspci_links), "lspci"   # no nvidia-smi output at all
        gpus = self.smi_report.gpus
        if self.bundle.has("pci.lspci_vvv"):
            gpus = altkeys.fill_links(gpus, self.lspci_links)
        return gpus, altkeys.SOURCE_OF_KEY[key]

    @cached_property
    def nvml_status(self):
        """``nvml.json`` init status (nodegate.nvml.NvmlStatus: kind ok | no_driver |
        driver_library_mismatch | library_not_found | no_permission | pynvml_missing | other),
        or None when the item was not gathered (no python3 on the node, or --gpu-source smi)."""
        if not self.bundle.has("nvml.json"):
            return None
        ev = self.bundle.get("nvml.json")
        if ev.problem() or not ev.text.strip():
            return None
        from .nvml import nvml_status
        try:
            return nvml_status(ev.text)
        except NodegateError:
            return None

    def _gpus_from_nvml(self, forced: bool = False) -> list[GpuFacts] | None:
        """``nvml.json`` through nodegate.nvml.gpus_from_nvml_json when the item is usable;
        None otherwise (then smi.qx is the source). With ``--gpu-source nvml`` (meta
        gpu_source) an unusable NVML is an EvidenceError naming why, never a silent fallback."""
        from .nvml import NvmlUnavailable, gpus_from_nvml_json
        if not self.bundle.has("nvml.json"):
            if forced:
                raise EvidenceError("nvml.json", "evidence not collected: nvml.json (--gpu-source nvml)")
            return None
        ev = self.bundle.get("nvml.json")
        prob = ev.problem()
        if prob or not ev.text.strip():
            if forced:
                raise EvidenceError("nvml.json", prob or "empty output")
            return None
        try:
            gpus = self._budgeted_raw("nvml.json", gpus_from_nvml_json, ev.text)
        except NvmlUnavailable as e:
            if forced:
                raise EvidenceError("nvml.json", f"NVML unusable: {e.status.describe()}") from None
            return None
        except TooManyGpus as e:   # the GPU cap is one outcome on every source: ERROR, never a fallback
            raise EvidenceError("nvml.json", f"output unparsable: {e}") from None
        except ParseError as e:
            if forced:
                raise EvidenceError("nvml.json", f"output unparsable: {e}") from None
            return None
        return list(gpus) if gpus else None

    def _budgeted_raw(self, key: str, fn, *args):
        """``fn(*args)`` under the parse budget, its ParseError passed on as is."""
        try:
            return self._budgeted(key, _Raw.call, fn, *args)
        except _Raw as r:
            raise r.error from None

    @cached_property
    def gpus(self) -> list[GpuFacts]:
        """GPU facts, in index order. Source order: ``nvml.json`` when usable, else
        ``smi.qx``. Raises EvidenceError naming the driver-stack error (``smi_error``) when
        nvidia-smi could not report (mismatch, no driver)."""
        return self._gpus_and_source[0]

    @cached_property
    def gpu_source(self) -> str:
        """``nvml``, ``smi_xml``, or for an alternative key ``smi_text``, ``smi_csv``, ``lspci``:
        where ``gpus`` came from."""
        return self._gpus_and_source[1]

    @cached_property
    def clocks_samples(self) -> list[dict[int, GpuFacts]]:
        """``smi.clocks_samples``: one {GPU index: GpuFacts(pstate, pci_bus_id,
        clocks_event_reasons_mask, clocks_event_reasons)} per sample, first sample first."""
        ev = self.bundle.get("smi.clocks_samples")
        if ev.status == "ok" and ev.rc not in (0, 124, 127):
            err = smi_error.parse_smi_error(ev.text + "\n" + ev.err_text)
            if err:
                raise EvidenceError("smi.clocks_samples", f"nvidia-smi failed ({err.kind}): {err.message}")
        return self._parse("smi.clocks_samples", smi_csv.parse_clocks_samples, self._text("smi.clocks_samples"))

    # ------------------------------------------------------------------ persistence daemon
    @cached_property
    def persistenced_unit(self) -> SystemdUnit:
        """``systemd.persistenced_show`` (systemctl show). A missing unit is a SystemdUnit with
        load_state ``not-found``; systemctl missing -> EvidenceError. Without it, the alternative
        ``systemd.persistenced_status`` (systemctl status: states only, no ExecStart)."""
        key = "systemd.persistenced_show"
        if not self.bundle.has(key) and self.bundle.has("systemd.persistenced_status"):
            return self._parse("systemd.persistenced_status", systemd.parse_systemctl_status,
                               self._text("systemd.persistenced_status"))
        return self._parse(key, systemd.parse_systemctl_show, self._text(key))

    @cached_property
    def persistenced_unit_files(self) -> list[UnitFile]:
        """``persistenced.unit_files``: unit file and drop-ins in the probe's order; rc 1 = no
        file found -> []."""
        ev = self._item("persistenced.unit_files", (0, 1))
        return [] if ev.rc == 1 else self._parse("persistenced.unit_files", systemd.parse_unit_files, ev.text)

    @cached_property
    def persistenced(self) -> PersistencedFacts:
        """``persistenced.process``: running daemons (pid, effective uid, argv) and the owner
        of /run/nvidia-persistenced."""
        return self._parse("persistenced.process", persistenced.parse_persistenced_process,
                           self._text("persistenced.process"))

    @cached_property
    def persistenced_user(self) -> PasswdEntry | None:
        """``persistenced.passwd`` (getent passwd <spec user>). None when no user is configured
        or the user does not exist (getent rc 2, grep rc 1)."""
        ev = self._item("persistenced.passwd", (0, 1, 2))
        if ev.rc != 0 or ev.text.strip() == "no user configured in spec":
            return None
        entries = self._parse("persistenced.passwd", persistenced.parse_passwd, ev.text)
        return entries[0] if entries else None

    # ------------------------------------------------------------------ firmware, PCIe, IB
    @cached_property
    def firmware(self) -> FirmwareFacts:
        """``firmware.gsp``: firmware_class.path and the GSP files per search directory."""
        return self._parse("firmware.gsp", firmware.parse_firmware_gsp, self._text("firmware.gsp"))

    @cached_property
    def pci_links(self) -> list[SysfsLink]:
        """``pci.sysfs``: link speed/width of each NVIDIA display-class function ("gpu") and
        of its upstream ports ("upstream", ``upstream_of`` = the GPU bdf)."""
        return self._parse("pci.sysfs", pci.parse_pci_sysfs, self._text("pci.sysfs"))

    @cached_property
    def ib_devices(self) -> list[str]:
        """``ib.devices``: names under /sys/class/infiniband ([] when none)."""
        return self._parse("ib.devices", sysfs_lists.parse_name_list, self._text("ib.devices"))

    @cached_property
    def dev_nodes(self) -> list[str]:
        """``dev.nvidia``: names in /dev."""
        return self._parse("dev.nvidia", sysfs_lists.parse_name_list, self._text("dev.nvidia"))

    @cached_property
    def peermem_clients(self) -> dict[str, str]:
        """``peermem.registration``: {peer-memory client: version} under /sys/kernel/mm/memory_peers."""
        return self._parse("peermem.registration", sysfs_lists.parse_peermem_registration,
                           self._text("peermem.registration"))

    @cached_property
    def peermem_registered(self) -> bool:
        """True when nvidia_peermem registered with ib_core: /sys/kernel/mm/memory_peers/nv_mem/version
        exists (checks.md "Kernel modules")."""
        return "nv_mem" in self.peermem_clients

    # ------------------------------------------------------------------ kernel log
    @cached_property
    def kernel_events(self) -> list[KernelEvent]:
        """``kernel.log``: NVRM/Xid records since boot. EvidenceError (with the dmesg/journal
        error, e.g. permission) when neither could be read; when the item is empty without the
        probe's ``# source:`` line (an empty file is no evidence of a clean log); and when the
        probe's cut may have lost a line that decides a verdict (``kernel_log_cut``), or, for a
        log without a cut record, it holds exactly the old probe's ``tail -n 5000``."""
        text = self._text("kernel.log")
        events = self._parse("kernel.log", kernel_log.parse_kernel_log, text)
        cut = self.kernel_log_cut
        if not events and cut is None and kernel_log.kernel_log_source(text) is None:
            raise EvidenceError("kernel.log", "empty, without the probe's '# source:' line: not the output of "
                                "dmesg or journalctl (an empty file is no evidence of a clean log)")
        if cut is not None and cut.lost_severe:
            lost = (f"{cut.dropped_severe} line(s) of records that can decide a verdict were" if cut.dropped_severe
                    else "lines that can decide a verdict may have been")
            raise EvidenceError("kernel.log", f"the node's log was cut: the probe kept {cut.kept} of {cut.seen} NVRM "
                                f"lines and {lost} cut away (node without awk, or over the probe's keep cap)")
        if cut is None:
            n = self._parse("kernel.log", kernel_log.record_lines, text)
            if n == kernel_log.LEGACY_TAIL:
                raise EvidenceError("kernel.log", f"{n} lines without a record of the cut: exactly the 'tail -n "
                                    f"{n}' of the probe that wrote it (v3 or earlier), so earlier events may be lost")
        return events

    @cached_property
    def kernel_log_cut(self) -> KernelLogCut | None:
        """``kernel.log`` last line ``# lines: seen=S kept=K dropped_severe=D``: how the probe cut
        the log (None: no record, probe v3 or a hand-built item)."""
        return self._parse("kernel.log", kernel_log.kernel_log_cut, self._text("kernel.log"))

    @cached_property
    def kernel_history(self) -> list[KernelEvent]:
        """``kernel.history`` (a converted nvidia-bug-report, nodegate/bugreport): records of earlier
        boots, each event once; shown by the kernel-log checks, not judged. [] without the item."""
        if not self.bundle.has("kernel.history"):
            return []
        return self._parse("kernel.history", kernel_log.parse_kernel_log, self._text("kernel.history"))

    @cached_property
    def kernel_log_source(self) -> str | None:
        """``kernel.log`` header: ``dmesg`` or ``journalctl -k -b``."""
        return kernel_log.kernel_log_source(self._text("kernel.log"))

    # ------------------------------------------------------------------ system identity
    @cached_property
    def dmi(self) -> DmiFacts:
        """``dmi.id``: system vendor, model, serials from /sys/class/dmi/id (serials need root).
        EvidenceError when the item is missing (older bundles) or /sys/class/dmi/id is absent."""
        return self._parse("dmi.id", dmi.parse_dmi, self._text("dmi.id"))

    # ------------------------------------------------------------------ fabric manager
    @cached_property
    def fabricmanager_version(self) -> str | None:
        """``fabricmanager.version`` (nv-fabricmanager --version). EvidenceError when the tool
        is missing (rc 127): the check decides whether fabric manager applies."""
        return self._parse("fabricmanager.version", sysfs_lists.parse_fabricmanager_version,
                           self._text("fabricmanager.version"))

    @cached_property
    def imex_unit(self) -> SystemdUnit:
        """``systemd.imex_show`` (systemctl show nvidia-imex): issue 39.5, NVL72 nodes."""
        return self._parse("systemd.imex_show", systemd.parse_systemctl_show, self._text("systemd.imex_show"))

    @cached_property
    def fabricmanager_unit(self) -> SystemdUnit:
        """``systemd.fabricmanager_show`` (systemctl show nvidia-fabricmanager)."""
        return self._parse("systemd.fabricmanager_show", systemd.parse_systemctl_show,
                           self._text("systemd.fabricmanager_show"))
