"""Typed facts: what parsers return and checks read. No I/O here.

Conventions (one meaning everywhere):
- ``None``  = the source did not carry the field at all (absent element/line).
- ``NA``    = the driver reported it as unsupported (``N/A``, ``[N/A]``, ``[Not Supported]``,
              ``Requested functionality has been deprecated``, NVML NotSupported). Not zero,
              not a parse error; each check decides what unsupported means (checks.md).
- numbers are ints in the unit the name says; bus ids are normalised to ``dddd:bb:dd.f``
  lower case (nvidia-smi's 8-digit domain ``00000000:19:00.0`` -> ``0000:19:00.0``).

One module because it is the vocabulary every parser and check shares: typed fact records
with no logic beyond their normalisation, read whole by both sides.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


class _Unsupported:
    """Singleton for values the driver reports as unsupported. Compare with ``is NA``."""

    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "N/A"

    def __reduce__(self):
        return (_Unsupported, ())


NA = _Unsupported()

IntV = Union[int, _Unsupported, None]
BoolV = Union[bool, _Unsupported, None]
StrV = Union[str, _Unsupported, None]


def normalize_bus_id(bus_id: str) -> str:
    """``00000000:19:00.0`` / ``0000:19:00.0`` / ``19:00.0`` -> ``0000:19:00.0`` (lower case).
    Domains above 0000 keep every significant digit (issue 39.5): GB200 trays ``00000018`` ->
    ``0018``, GB10 ``0000000F`` -> ``000f``, Intel VMD ``10000`` -> ``10000`` (cutting to the last
    four digits made a VMD domain 10000 the same bus as domain 0000)."""
    b = bus_id.strip().lower()
    parts = b.split(":")
    if len(parts) == 3:
        dom = parts[0].lstrip("0").rjust(4, "0")
        return f"{dom}:{parts[1]}:{parts[2]}"
    if len(parts) == 2:
        return f"0000:{parts[0]}:{parts[1]}"
    return b


# Canonical clocks event reason names (NVML nvmlClocksEventReason* bit values; nvidia-smi
# "Clocks Event Reasons" / pre-535 "Clocks Throttle Reasons" lines; XML
# clocks_event_reason_* / clocks_throttle_reason_*).
CLOCKS_EVENT_BITS: dict[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clocks_setting": 0x100,
}


def check_clocks_reasons(names: list[str]) -> list[str]:
    """``names`` unchanged when every one is in CLOCKS_EVENT_BITS; ValueError naming the unknown
    ones otherwise (spec validation of clocks.fail_reasons and burnin.fail_reasons)."""
    bad = [r for r in names if r not in CLOCKS_EVENT_BITS]
    if bad:
        raise ValueError(f"unknown clocks event reason(s) {bad}; known: {sorted(CLOCKS_EVENT_BITS)}")
    return names


@dataclass
class PcieLink:
    """PCIe link of one GPU. Source: XML ``pci/pci_gpu_link_info``, -q "GPU Link Info",
    CSV ``pcie.link.*``, NVML ``nvmlDeviceGet{Curr,Max}PcieLink{Generation,Width}``,
    ``nvmlDeviceGetGpuMaxPcieLinkGeneration``. Generations 1..6, widths in lanes."""

    current_gen: IntV = None
    max_gen: IntV = None             # "Max" (min of device and host where both known)
    device_max_gen: IntV = None      # "Device Max" (580+) / pcie.link.gen.gpumax
    host_max_gen: IntV = None        # "Host Max" (580+): N/A in VMs, never a failure by itself
    current_width: IntV = None
    max_width: IntV = None


@dataclass
class EccCounters:
    """ECC error counters of one scope (volatile = since driver load, aggregate = lifetime).

    ``by_location`` maps field names as the driver names them, e.g. ``sram_correctable``,
    ``sram_uncorrectable``, ``sram_uncorrectable_parity``, ``sram_uncorrectable_secded``,
    ``dram_correctable``, ``dram_uncorrectable``, or for old ``single_bit``/``double_bit``
    blocks ``single_bit.device_memory`` ... ``double_bit.total``. ``correctable_total`` /
    ``uncorrectable_total`` are the totals the checks compare (sum of SRAM+DRAM, or the
    old ``total`` lines); NA when the board does not support ECC counters.
    """

    correctable_total: IntV = None
    uncorrectable_total: IntV = None
    by_location: dict[str, IntV] = field(default_factory=dict)


@dataclass
class RemappedRows:
    """Row remapping (Ampere+). Source: XML ``remapped_rows``, -q "Remapped Rows",
    ``--query-remapped-rows``, NVML ``nvmlDeviceGetRemappedRows`` / ``...RowRemapperHistogram``.
    ``histogram`` keys: max, high, partial, low, none (banks with that many spare rows left)."""

    correctable: IntV = None
    uncorrectable: IntV = None
    pending: BoolV = None
    failure: BoolV = None
    histogram: dict[str, IntV] = field(default_factory=dict)


@dataclass
class RetiredPages:
    """Page retirement (pre-Ampere). Source: XML ``retired_pages``, -q "Retired Pages",
    NVML ``nvmlDeviceGetRetiredPages``/``...PendingStatus``. Counts are pages."""

    sbe: IntV = None     # retired for multiple single-bit errors
    dbe: IntV = None     # retired for double-bit errors
    pending: BoolV = None


@dataclass
class GpuFacts:
    """Everything nodegate knows about one GPU, from one source (``source``).

    ``source`` is one of ``smi_xml`` (nvidia-smi -q -x), ``smi_text`` (nvidia-smi -q),
    ``smi_csv`` (--query-gpu), ``nvml`` (nvidia-ml-py).
    """

    index: int | None = None               # enumeration order (minor number order)
    pci_bus_id: str | None = None          # normalised, see normalize_bus_id
    name: str | None = None                # product_name, e.g. "NVIDIA H200"
    serial: StrV = None
    uuid: str | None = None
    vbios_version: StrV = None
    board_part_number: StrV = None
    pci_device_id: str | None = None       # 4 hex digits lower case, e.g. "2335" (from 0x233510DE)
    architecture: str | None = None        # product_architecture, e.g. "Hopper"
    persistence_mode: BoolV = None
    pstate: str | None = None              # "P0".."P12"
    link: PcieLink = field(default_factory=PcieLink)
    clocks_event_reasons: dict[str, BoolV] = field(default_factory=dict)  # canonical name -> active
    clocks_event_reasons_mask: IntV = None  # bitmask when the source gives one (CSV active / NVML)
    # 535+ "Clocks Event Reasons Counters" (XML clocks_event_reasons_counters): canonical reason ->
    # microseconds the reason was active since the driver loaded. History, never a current state.
    clocks_event_reasons_counters: dict[str, IntV] = field(default_factory=dict)
    ecc_mode_current: BoolV = None
    ecc_mode_pending: BoolV = None
    ecc_volatile: EccCounters = field(default_factory=EccCounters)
    ecc_aggregate: EccCounters = field(default_factory=EccCounters)
    sram_threshold_exceeded: BoolV = None  # 580+: aggregate SRAM threshold exceeded (RMA)
    channel_repair_pending: BoolV = None   # 580+: ecc_errors/channel_repair_pending
    tpc_repair_pending: BoolV = None       # 580+: ecc_errors/tpc_repair_pending
    unrepairable_memory: BoolV = None      # 580+: ecc_errors/unrepairable_memory
    remapped_rows: RemappedRows | _Unsupported | None = None   # NA as a scalar (pre-Ampere, MIG)
    retired_pages: RetiredPages | _Unsupported | None = None
    gsp_firmware_version: StrV = None
    recovery_action: StrV = None           # 570+: "None" when nothing is needed
    mig_mode_current: BoolV = None
    temperature_c: IntV = None
    power_draw_w: float | _Unsupported | None = None
    utilization_gpu: IntV = None           # percent of the last sample period a kernel ran (XML utilization/gpu_util)
    graphics_clock_mhz: IntV = None        # current graphics clock, MHz (XML clocks/graphics_clock)
    max_graphics_clock_mhz: IntV = None    # max graphics clock, MHz (XML max_clocks/graphics_clock)
    mig_ecc_volatile: EccCounters | None = None  # sum of the MIG instances' volatile counts (mig_devices)
    # issue 19 (firmware, configuration, fabric, PCIe errors); same None/NA conventions
    mig_mode_pending: BoolV = None         # mig_mode/pending_mig: a MIG change waiting for a GPU reset
    inforom_image: StrV = None             # inforom_version/img_version, e.g. "G520.0282.02.02"
    compute_mode: StrV = None              # compute_mode: Default | Exclusive_Process | Prohibited
    power_limit_w: float | _Unsupported | None = None          # enforced power limit (W)
    power_limit_default_w: float | _Unsupported | None = None  # default_power_limit (W)
    pcie_replay_counter: IntV = None       # pci/replay_counter (since driver load / GPU reset)
    pcie_replay_rollover: IntV = None      # pci/replay_rollover_counter
    fabric_state: StrV = None              # fabric/state: Not Started | In Progress | Completed (Hopper+)
    fabric_status: StrV = None             # fabric/status: Success, or the NVML error of registration
    fabric_health: StrV = None             # fabric/health/summary (550+): Healthy | ...
    # issue 39.5: the NVLink domain a GPU registered in (NVL72: one domain per rack), -q -x
    # fabric/cliqueId and fabric/clusterUuid (text "CliqueId", "ClusterUUID"); N/A off an NVLink domain
    fabric_clique_id: StrV = None
    fabric_cluster_uuid: StrV = None
    # GpuFacts attribute -> why the driver's value for it could not be read (one bad field makes
    # only the facts that need it ERROR: checks._util.gpu_for raises on access to these)
    field_errors: dict[str, str] = field(default_factory=dict)
    source: str = ""


@dataclass
class SmiReport:
    """One ``nvidia-smi -q`` / ``-q -x`` run: the header values and one GpuFacts per GPU.

    ``driver_version``/``cuda_version`` from the log header (XML ``driver_version``; text
    "Driver Version"); ``attached_gpus`` as printed (None when the header is absent, e.g. a
    partial ``-q`` excerpt)."""

    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None
    gpus: list[GpuFacts] = field(default_factory=list)


@dataclass
class SmiError:
    """nvidia-smi failed instead of printing GPU data.

    kind: ``driver_library_mismatch`` ("Failed to initialize NVML: Driver/library version
    mismatch", with ``nvml_library_version`` from "NVML library version: 535.154"),
    ``no_driver`` ("couldn't communicate with the NVIDIA driver"), ``no_devices``
    ("No devices were found"), ``device_handle`` ("Unable to determine the device handle for
    GPU<bus id>: <reason>", ``bus_id``/``reason`` set), ``other``.
    """

    kind: str
    message: str
    nvml_library_version: str | None = None
    bus_id: str | None = None
    reason: str | None = None


@dataclass
class SmiVersion:
    """``nvidia-smi --version``: labels vary (``DRIVER version`` / later ``KMD version``)."""

    smi_version: str | None = None
    nvml_version: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None


@dataclass
class ModuleEntry:
    """One line of /proc/modules or lsmod. ``refcount`` None when the kernel prints ``-``."""

    name: str
    size: int | None = None
    refcount: int | None = None
    used_by: list[str] = field(default_factory=list)
    state: str | None = None   # Live, Loading, Unloading
    position: int = 0          # 0 = first line = most recently loaded


@dataclass
class ModuleState:
    """Which modules are loaded, in which order, and which are built in.

    Sources: /proc/modules (``modules.proc``), /sys/module listing (``modules.sys``).
    """

    loaded: list[ModuleEntry] = field(default_factory=list)   # in /proc/modules order
    builtin: set[str] = field(default_factory=set)
    sys_loadable: dict[str, str] = field(default_factory=dict)  # name -> initstate

    def is_present(self, name: str) -> bool:
        return name in self.builtin or any(m.name == name for m in self.loaded)


@dataclass
class ModinfoFacts:
    """``modinfo`` fields. license "Dual MIT/GPL" = open, "NVIDIA" = proprietary."""

    filename: str | None = None
    license: str | None = None
    version: str | None = None
    firmware: list[str] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    vermagic: str | None = None
    srcversion: str | None = None


@dataclass
class DriverBanner:
    """``/proc/driver/nvidia/version`` (or the dmesg "NVRM: loading ..." line).
    flavor: ``open`` ("Open Kernel Module") or ``proprietary`` ("x86_64 Kernel Module")."""

    flavor: str | None = None
    version: str | None = None
    arch: str | None = None
    raw: str = ""


@dataclass
class DkmsEntry:
    """One ``dkms status`` line. state: added, built, installed, installed-weak, broken, ...
    ``warnings`` are the parenthesised suffixes, de-duplicated (e.g.
    "WARNING! Diff between built and installed module!")."""

    module: str
    version: str
    kernel: str | None = None
    arch: str | None = None
    state: str = ""
    weak_from: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class DkmsStatus:
    """Parsed ``dkms status``. ``errors`` holds ``Error! ...`` lines: a broken DKMS tree."""

    entries: list[DkmsEntry] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class SystemdUnit:
    """``systemctl show`` properties (LoadState, ActiveState, SubState, UnitFileState,
    ExecStart as the list of argv lists, MainPID, FragmentPath, DropInPaths, NRestarts, Result).
    From ``systemctl status`` text only the states are filled."""

    load_state: str | None = None
    active_state: str | None = None
    sub_state: str | None = None
    unit_file_state: str | None = None
    exec_start: list[list[str]] = field(default_factory=list)
    main_pid: int | None = None
    fragment_path: str | None = None
    drop_in_paths: list[str] = field(default_factory=list)
    n_restarts: int | None = None
    result: str | None = None
    user: str | None = None
    raw: dict[str, str] = field(default_factory=dict)


@dataclass
class UnitFile:
    """One unit file or drop-in: ``exec_start`` lists each ``ExecStart=`` value in order,
    including empty resets (``""``)."""

    path: str
    exec_start: list[str] = field(default_factory=list)
    user: str | None = None
    type: str | None = None
    text: str = ""


@dataclass
class DaemonProcess:
    """A running nvidia-persistenced (from /proc/<pid>/status and cmdline)."""

    pid: int
    uid: int | None = None
    argv: list[str] = field(default_factory=list)


@dataclass
class PersistencedFacts:
    processes: list[DaemonProcess] = field(default_factory=list)
    rundir_owner_uid: int | None = None
    rundir_present: bool = False


@dataclass
class PasswdEntry:
    name: str
    uid: int
    gid: int
    home: str = ""
    shell: str = ""


@dataclass
class FirmwareFacts:
    """GSP firmware search result. ``dirs`` maps each searched ``<dir>/nvidia/<ver>`` to the
    files found there (name -> size in bytes; None when the listing gave no size), or None
    when the directory is absent."""

    search_path: str | None = None        # firmware_class.path ("" when unset)
    driver_version: str | None = None
    dirs: dict[str, dict[str, int | None] | None] = field(default_factory=dict)

    def find(self, name: str) -> tuple[str, int | None] | None:
        """First (dir, size) holding ``name`` in kernel search order, or None."""
        for d, files in self.dirs.items():
            if files and name in files:
                return d, files[name]
        return None


@dataclass
class SysfsLink:
    """sysfs link attributes of one PCI function. Speeds are generations (2.5 GT/s = 1 ...
    32.0 GT/s = 5, 64.0 GT/s = 6); None when unreadable or "Unknown"."""

    bdf: str
    role: str                      # "gpu" or "upstream"
    upstream_of: str | None = None # the GPU bdf this port leads to
    device: str | None = None
    current_gen: int | None = None
    current_width: int | None = None
    max_gen: int | None = None
    max_width: int | None = None


@dataclass
class LspciLink:
    """``lspci -vvv`` LnkCap/LnkSta of one function."""

    bdf: str
    description: str = ""
    cap_gen: int | None = None
    cap_width: int | None = None
    sta_gen: int | None = None
    sta_width: int | None = None
    downgraded: bool = False
    driver: str | None = None
    vendor_device: str | None = None   # "10de:2330" from -nn's [10de:2330] or "NVIDIA Corporation Device 2330"
    display: bool = False              # an NVIDIA VGA/3D/display-class function (a GPU)


@dataclass
class KernelEvent:
    """One kernel log record (continuation lines joined to ``text``).

    kind: ``xid``, ``fallen_off_bus``, ``rm_init_adapter_failed``, ``gsp_init_failed``,
    ``api_mismatch``, ``requires_open``, ``open_unsupported_gpu``, ``probe_not_called``, ``persistence_legacy``,
    ``loading_banner``, ``module_license`` ("nvidia: module license 'NVIDIA' taints kernel.",
    details ``license``), ``drm_initialized`` ("[drm] Initialized nvidia-drm ... for <bdf>"),
    ``other``. ``bus_id`` normalised when the line names one.
    """

    kind: str
    text: str
    timestamp: str | None = None
    bus_id: str | None = None
    xid: int | None = None
    details: dict[str, str] = field(default_factory=dict)


@dataclass
class LibNvml:
    """Resolved ``libnvidia-ml.so.1`` (driver.libnvml): target path and version from its name."""

    path: str | None = None
    target: str | None = None
    version: str | None = None


@dataclass
class DmiFacts:
    """The system's DMI identity (``dmi.id``: /sys/class/dmi/id). ``values``: attribute ->
    firmware string; ``unreadable``: attributes the probe's user could not read (the serials and
    product_uuid are root-only); ``absent``: attributes the firmware does not provide."""

    values: dict[str, str] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    absent: set[str] = field(default_factory=set)

    def text(self, attr: str) -> str:
        """The value, or why there is none (for a report cell: never a guess)."""
        if attr in self.values:
            return self.values[attr] or "(empty in firmware)"
        if attr in self.unreadable:
            return "unreadable without root (re-run with --sudo)"
        if attr in self.absent:
            return "not provided by the firmware"
        return "not reported"


@dataclass
class KernelLogCut:
    """How the probe cut the kernel log (its last line ``# lines: seen=S kept=K dropped_severe=D``).

    seen: NVRM lines the node's log held; kept: lines in the item; dropped_severe: lines that can
    decide a verdict (Xid, off the bus, RmInitAdapter, GSP, ...) cut beyond the probe's keep cap,
    None when unknown (a node without awk cuts the last lines only)."""

    seen: int
    kept: int
    dropped_severe: int | None = 0

    @property
    def lost_severe(self) -> bool:
        """True when lines that could decide a verdict may be missing from the item."""
        if self.dropped_severe is None:
            return self.seen > self.kept
        return self.dropped_severe > 0



# --------------------------------------------------------------------------- fabric (issue 19)
@dataclass
class NvLink:
    """One NVLink of one GPU. ``active``: True (a speed is printed / NVML_NVLINK_STATE_ACTIVE),
    False (``<inactive>`` / inactive), NA (unsupported). ``speed_gbps``: GB/s per link as
    nvidia-smi prints it (``26.562 GB/s``; NVML field MBps / 1000). ``errors``: counter name ->
    count: ``replay``, ``recovery``, ``crc_flit``, ``crc_data``, ``crc`` (nvidia-smi's one
    "CRC Errors" line), or the tool's own name snake-cased for any other counter."""

    link: int
    active: BoolV = None
    speed_gbps: float | None = None
    errors: dict[str, IntV] = field(default_factory=dict)


@dataclass
class GpuNvLinks:
    """NVLink state of one GPU as one source reports it.

    ``status``: ``ok`` (links listed), ``none`` (the GPU block lists no link: the driver reports no
    NVLink for it, e.g. a VM or a PCIe board), ``mig`` ("Nvlink queries are not supported for
    Devices in MIG mode"), ``unsupported`` (NVML NotSupported / the tool's own refusal), with the
    tool's ``message``. ``index``/``name``/``uuid`` as the header prints them; ``bus_id`` from NVML."""

    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    bus_id: str | None = None
    links: list[NvLink] = field(default_factory=list)
    status: str = "ok"
    message: str = ""
    source: str = ""


@dataclass
class PciFunction:
    """One PCI function from sysfs (``pci.nvswitch``): bdf, device and class as 0x-hex strings."""

    bdf: str
    device: str | None = None
    pci_class: str | None = None


@dataclass
class AerCounters:
    """PCIe AER counters of one function (sysfs ``aer_dev_correctable``/``_nonfatal``/``_fatal``,
    drivers/pci/pcie/aer.c): each dict maps the kernel's error names (``RxErr``, ``BadTLP``,
    ``DLP``, ...) to counts; ``*_total`` are the ``TOTAL_ERR_COR``/``_NONFATAL``/``_FATAL`` lines
    (None when the file was absent). ``role``: ``gpu`` or ``upstream`` (``upstream_of`` = GPU bdf)."""

    bdf: str
    role: str
    upstream_of: str | None = None
    correctable: dict[str, int] = field(default_factory=dict)
    nonfatal: dict[str, int] = field(default_factory=dict)
    fatal: dict[str, int] = field(default_factory=dict)
    correctable_total: int | None = None
    nonfatal_total: int | None = None
    fatal_total: int | None = None
    files: int = 0                 # aer_dev_* files the probe found readable


@dataclass
class IbPort:
    """One InfiniBand/RDMA port (``/sys/class/infiniband/<device>/ports/<n>``, or ``ibstat``).
    ``state``/``phys_state`` are the words (``ACTIVE``, ``LinkUp``; sysfs prints ``4: ACTIVE``);
    ``rate_gbps`` the port rate in Gb/s (sysfs ``400 Gb/sec (4X NDR)``, ibstat ``Rate: 400``);
    ``link_layer`` ``InfiniBand`` or ``Ethernet`` (RoCE)."""

    device: str
    port: int
    state: str | None = None
    phys_state: str | None = None
    rate_gbps: float | None = None
    link_layer: str | None = None
    fw_ver: str | None = None
    hca_type: str | None = None
    source: str = ""


@dataclass
class FmLogEvent:
    """One nvidia-fabricmanager log line. kind: ``version_mismatch`` (details ``fm_version``,
    ``driver_version``), ``configured`` ("Successfully configured all the available NVSwitches"),
    ``pre_nvl5`` ("Detected Pre-NVL5 system"), ``error`` (a line with error/failed), ``other``."""

    kind: str
    text: str
    details: dict[str, str] = field(default_factory=dict)
