"""The expected node state: the ``nodegate:`` inventory variable, as pydantic v2 models.

Every section is its own sub-model with ``extra='forbid'`` so a misspelt key is a SpecError,
not a silently ignored setting. Each default names its source in a comment: the check
catalog (``../shared/spec/checks.md``, "catalog" below), NVIDIA documentation or DCGM.
A default of ``None`` means "not enforced / taken from the SKU profile" (see
``nodegate.spec.expect``): spec override > SKU profile (nodegate/data/skus.yaml) > catalog
default.

New sections (``burnin:``, ``baseline:`` ...) are added as further sub-models on ``Spec``.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..baseline.spec import BaselineSpec
from ..burnin.spec import BurninSpec
from ..crossnode.spec import CrossnodeSpec
from ..perf.spec import PerfSpec

_DRIVER_VERSION = re.compile(r"^\d{3}(\.\d{1,3}){0,2}$")
_USER = re.compile(r"^[a-z_][a-z0-9_.-]{0,31}$")
_MODULE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DEVICE_ID = re.compile(r"^(0x)?[0-9a-fA-F]{4}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DriverSpec(_Section):
    # No default version: the catalog compares module/NVML/fabric manager with each other
    # always, and with the spec only when one is given.
    version: Optional[str] = Field(None, description="exact '580.159.04' or branch '580' (prefix by dotted components)")
    # 'any': only the SKU constraints apply (Blackwell open, pre-Turing proprietary; catalog "flavor").
    flavor: Literal["open", "proprietary", "any"] = Field("any", description="kernel module flavor")
    # 'any': dkms rule when dkms lists nvidia, else the precompiled (modinfo vermagic) rule.
    install: Literal["dkms", "precompiled", "any"] = Field("any", description="how the kernel module is installed")

    @field_validator("version")
    @classmethod
    def _version(cls, v):
        if v is not None and not _DRIVER_VERSION.match(v):
            raise ValueError(f"driver version {v!r} is neither a branch ('580') nor a version ('580.159.04')")
        return v


class GpuSpec(_Section):
    count: Optional[int] = Field(None, ge=0, le=64, description="number of GPUs (None: at least one)")
    model: Optional[Union[str, list[str]]] = Field(None, description="substring(s) of the product name, case-insensitive")
    sku: Optional[str] = Field(None, description="PCI device id (4 hex digits) whose SKU profile applies instead of the detected one")
    # issue 39.3: the exact part, for sites that want it (nvidia-smi -q -x pci_device_id 0x233510DE -> 2335)
    device_id: Optional[Union[str, list[str]]] = Field(None, description="PCI device id(s) (4 hex digits) every GPU must have")
    bus_ids: Optional[list[str]] = Field(None, description="expected PCI bus ids, to name a missing GPU")

    @field_validator("device_id")
    @classmethod
    def _device_id(cls, v):
        if v is None:
            return v
        vals = [v] if isinstance(v, str) else list(v)
        out = []
        for x in vals:
            if not isinstance(x, str) or not _DEVICE_ID.match(x):
                raise ValueError(f"gpu.device_id {x!r} is not a 4-hex-digit PCI device id (e.g. 0x2335)")
            out.append(x.lower().removeprefix("0x"))
        if not out:
            raise ValueError("gpu.device_id is an empty list")
        return out

    @field_validator("sku")
    @classmethod
    def _sku(cls, v):
        if v is not None:
            if not _DEVICE_ID.match(v):
                raise ValueError(f"gpu.sku {v!r} is not a 4-hex-digit PCI device id")
            v = v.lower().removeprefix("0x")
        return v


class PersistenceSpec(_Section):
    # catalog "Persistence daemon": the daemon is the supported mechanism; legacy -pm 1 is
    # deprecated (kernel log: "Persistence mode is deprecated ... use nvidia-persistenced").
    mode: Literal["daemon", "legacy", "any"] = Field("daemon", description="how persistence mode must be provided")
    # NVIDIA's packaged unit runs the daemon as nvidia-persistenced (nvidia-persistenced README).
    user: str = Field("nvidia-persistenced", description="user the daemon runs as (--user / -u)")
    # catalog: default drop-in path.
    dropin: str = Field("/etc/systemd/system/nvidia-persistenced.service.d/override.conf",
                        description="drop-in that resets ExecStart= and sets the command")
    # Root is refused unless allowed here or recorded as the GH200 exception (catalog).
    allow_root: bool = Field(False, description="accept the daemon running as root on any SKU")
    # catalog: the drop-in's one command carries --user and "the spec's persistence flag".
    # --persistence-mode: the command must not disable it (without either flag the daemon enables
    # it, nvidia-persistenced option-table.h; Ubuntu's packaged unit passes --no-persistence-mode);
    # --no-persistence-mode must be given explicitly; 'none': neither flag on the command line.
    flag: Literal["--persistence-mode", "--no-persistence-mode", "none"] = Field(
        "--persistence-mode", description="persistence flag the daemon's command line must carry")
    # issue 21: the whole command is compared; --verbose and --group are always accepted.
    extra_flags: list[str] = Field([], description="further nvidia-persistenced options the command may carry "
                                                   "(e.g. --nvidia-cfg-path, --uvm-persistence-mode)")

    @field_validator("user")
    @classmethod
    def _user(cls, v):
        if not _USER.match(v):
            raise ValueError(f"persistence.user {v!r} is not a valid user name")
        return v


# catalog "Kernel modules": default ordering pairs (a before b).
DEFAULT_ORDER = (("ib_core", "nvidia_peermem"), ("nvidia", "nvidia_peermem"), ("nvidia", "nvidia_uvm"),
                 ("nvidia", "nvidia_modeset"), ("nvidia_modeset", "nvidia_drm"))


class ModulesSpec(_Section):
    # catalog: required modules default.
    required: list[str] = Field(["nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm"],
                                description="modules that must be Live or built in")
    # catalog: auto = required when /sys/class/infiniband has a device.
    peermem: Literal["required", "auto", "absent", "ignore"] = Field("auto", description="nvidia_peermem policy")
    # catalog: the legacy Mellanox nv_peer_mem counts only if allowed.
    allow_nv_peer_mem: bool = Field(False, description="accept legacy nv_peer_mem for GPUDirect RDMA")
    order: list[tuple[str, str]] = Field(list(DEFAULT_ORDER),
                                         description="pairs [a, b]: a loads before b")
    # catalog "Deterministic reload": the fix for peermem missing after reboot.
    load_d_required: bool = Field(True, description="peer-memory module named in modules-load.d when required")

    @field_validator("required")
    @classmethod
    def _names(cls, v):
        for m in v:
            if not _MODULE.match(m):
                raise ValueError(f"invalid module name {m!r}")
        return [m.replace("-", "_") for m in v]

    @field_validator("order")
    @classmethod
    def _order(cls, v):
        return [(a.replace("-", "_"), b.replace("-", "_")) for a, b in v]


class DkmsSpec(_Section):
    # catalog: another installed kernel without an nvidia build is a separate finding.
    other_kernels: Literal["fail", "ignore"] = Field("fail", description="other installed kernels lacking the module")


class GspSpec(_Section):
    # catalog "GSP firmware": the open module always requires GSP; 'auto' = required when the
    # open module is loaded or a GPU reports a GSP firmware version.
    required: Union[bool, Literal["auto"]] = Field("auto", description="GSP firmware must be in use")


class PcieSpec(_Section):
    # None: from the SKU profile (nodegate/data/skus.yaml).
    gen: Optional[int] = Field(None, ge=1, le=6, description="expected PCIe generation")
    width: Optional[int] = Field(None, description="expected link width (lanes)")
    # catalog: idle links legitimately power down; default leaves them unverified (SKIP).
    idle: Literal["not_verified", "fail"] = Field("not_verified", description="below-spec link while idle")
    # issue 39.5: a GPU attached to its Grace CPU by NVLink-C2C (GH200, GB200) has no PCIe slot link
    # to judge; "judge" holds the link nvidia-smi reports to pcie.gen/pcie.width anyway
    c2c: Literal["skip", "judge"] = Field("skip", description="PCIe link checks on a GPU attached by NVLink-C2C (GH200, GB200): skip | judge")
    # issue 21: the width does not train down for power (only the speed does): a narrow link
    # FAILs at any activity unless this allows it at idle (or pcie.width names the narrower slot).
    width_at_idle: Literal["fail", "not_verified"] = Field("fail", description="below-spec link width while idle")
    check_upstream: bool = Field(True, description="compare upstream ports' sysfs link with the GPU's")
    # issue 19 (PCIe errors, NG-PCIERR-001): absent replay/AER counters are ERROR unless not_verified.
    errors: Literal["verify", "not_verified"] = Field("verify", description="PCIe error counters: verify | not_verified (absent counters SKIP instead of ERROR)")
    # None: DCGM's rate, 8 replays per minute (dcgm_gpu_hardware_limits.h DCGM_LIMIT_MAX_PCIREPLAY_RATE),
    # over the time since boot (/proc/uptime), the one window a single reading has.
    max_replays: Optional[int] = Field(None, ge=0, description="PCIe replays allowed (None: DCGM's 8 per minute since boot)")
    # PCIe base spec: uncorrectable (non-fatal and fatal) errors lose or corrupt data; a node under
    # acceptance shows none (DCGM has no AER threshold; the kernel's AER counters are cumulative since boot).
    max_aer_fatal: int = Field(0, ge=0, description="fatal AER errors allowed on the GPU and its upstream ports")
    max_aer_nonfatal: int = Field(0, ge=0, description="non-fatal AER errors allowed on the GPU and its upstream ports")
    max_aer_correctable: Optional[int] = Field(None, ge=0, description="correctable AER errors allowed (None: shown, not enforced)")

    @field_validator("width")
    @classmethod
    def _width(cls, v):
        if v is not None and v not in (1, 2, 4, 8, 12, 16, 32):
            raise ValueError(f"pcie.width {v} is not a PCIe lane count")
        return v


# catalog "Clocks event reasons": default fail set (NVML nvmlClocksEventReason* bits).
DEFAULT_FAIL_REASONS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


class ClocksSpec(_Section):
    fail_reasons: list[str] = Field(list(DEFAULT_FAIL_REASONS), description="clocks event reasons that FAIL")
    # catalog: confirm with several samples; 3 = the probe's default (nodegate.probe.render_script).
    samples: int = Field(3, ge=1, le=20, description="samples that must all show a reason before FAIL")

    @field_validator("fail_reasons")
    @classmethod
    def _reasons(cls, v):
        from ..facts import check_clocks_reasons
        return check_clocks_reasons(v)


class EccSpec(_Section):
    # catalog: ECC mode default Enabled.
    mode: Literal["enabled", "disabled", "any"] = Field("enabled", description="ECC mode current and pending")
    # false: boards without ECC (N/A) SKIP naming ecc.required.
    required: bool = Field(True, description="the board must support ECC")
    # catalog: any uncorrectable > 0 FAILs.
    max_uncorrectable_volatile: int = Field(0, ge=0, description="uncorrectable errors since driver load (catalog: > 0 FAILs)")
    max_uncorrectable_aggregate: int = Field(0, ge=0, description="lifetime uncorrectable errors (catalog: > 0 FAILs)")
    # catalog: correctable thresholds are spec; None = reported, not enforced.
    max_correctable_volatile: Optional[int] = Field(None, ge=0, description="correctable since driver load (None: shown, not enforced)")
    max_correctable_aggregate: Optional[int] = Field(None, ge=0, description="lifetime correctable (None: shown, not enforced)")


class MemorySpec(_Section):
    # auto: the SKU profile by PCI device id (issue 21: a board property, not the architecture's:
    # GDDR6X GeForce Ampere has no row remapper), else what the driver reports; an unknown board
    # whose driver reports the feature N/A is ERROR "unknown board: add it to the SKU profiles".
    repair: Literal["auto", "row_remap", "page_retirement", "none"] = Field("auto", description="auto (SKU profile by PCI device id) | row_remap | page_retirement | none (the board has neither)")
    # catalog: remapped_rows N/A under MIG is unsupported: ERROR unless allowed (then SKIP).
    allow_mig_unsupported_remap: bool = Field(False, description="remapped rows N/A under MIG: SKIP instead of ERROR")
    # DCGM dcgm_gpu_hardware_limits.h: DCGM_LIMIT_MAX_RETIRED_PAGES 63 (FAIL at >= 63).
    retired_pages_max_total: int = Field(63, ge=1, description="FAIL when sbe+dbe retired pages >= this")
    # DCGM DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT 15 (FAIL when DBE pages > 15).
    retired_pages_max_dbe: int = Field(15, ge=0, description="FAIL when DBE retired pages > this")
    # catalog: uncorrectable remaps >= 512 FAIL (A100/H100 remap up to 512 rows; NVIDIA
    # "GPU Memory Error Management" doc).
    max_uncorrectable_remaps: int = Field(512, ge=1, description="FAIL when uncorrectable remapped rows >= this")
    # catalog: banks in the histogram's 'None' bucket (no spare row left) above spec FAIL.
    max_banks_no_spare: int = Field(0, ge=0, description="banks in the remap histogram's None bucket allowed")


class KernelLogSpec(_Section):
    enabled: bool = Field(True, description="evaluate the kernel log (false: SKIP naming kernel_log.enabled)")
    # None: the fail set of nodegate/data/xid.yaml (NVIDIA Xid catalog).
    xid_fail: Optional[list[int]] = Field(None, description="Xids that FAIL (replaces the table's set)")


class FabricManagerSpec(_Section):
    # auto: checked when installed (nv-fabricmanager present); NVSwitch systems need it.
    required: Union[bool, Literal["auto"]] = Field("auto", description="fabric manager installed and active (auto: when installed)")


class NvlinkSpec(_Section):
    # None: from the SKU profile (nodegate/data/skus.yaml nvlink_links / nvlink_gbps); 0 = the GPU has no
    # NVLink here (PCIe board, VM): NG-NVL-* SKIP naming nvlink.links.
    links: Optional[int] = Field(None, ge=0, le=64, description="active NVLinks per GPU (None: SKU profile; 0: no NVLink, SKIP)")
    speed_gbps: Optional[float] = Field(None, gt=0, description="minimum per-link speed, GB/s as nvidia-smi prints it (None: SKU profile)")
    # Defaults 0: DCGM's health watch FAILs on any replay or recovery error (DcgmHealthWatch
    # MonitorNVLink: delta >= DCGM_LIMIT_MAX_NVLINK_ERROR 1) and warns on any CRC error; Meta GCM's
    # check-dcgmi nvlink tolerates 0 of each by default. nodegate has no WARN: a CRC error is a FAIL.
    max_replay_errors: int = Field(0, ge=0, description="NVLink replay errors per link allowed (DCGM: any is a failure)")
    max_recovery_errors: int = Field(0, ge=0, description="NVLink recovery errors per link allowed (DCGM: any is a failure)")
    max_crc_errors: int = Field(0, ge=0, description="NVLink CRC (flit + data) errors per link allowed (DCGM warns on any)")
    # corpus 120: the driver refuses NVLink queries in MIG mode; not_verified SKIPs, error ERRORs.
    mig: Literal["not_verified", "error"] = Field("not_verified", description="GPU in MIG mode (NVLink not queryable): SKIP (not_verified) or ERROR")


class FabricSpec(_Section):
    # auto: required for Hopper and later GPUs behind NVSwitch (NVSwitch functions present, or the SKU
    # profile expects them for this GPU count): nvidia-smi -q fabric state is Hopper+ (NVML
    # nvmlDeviceGetGpuFabricInfo "Hopper or newer fully supported devices").
    required: Union[bool, Literal["auto"]] = Field("auto", description="fabric state Completed/Success required (auto: Hopper+ with NVSwitch)")
    # issue 39.5: the NVLink domain (GB200/GB300 NVL72: the rack) every GPU must have registered in
    cluster_uuid: Optional[str] = Field(None, max_length=64, description="expected fabric ClusterUUID (the NVLink domain, e.g. the NVL72 rack)")
    clique_id: Optional[str] = Field(None, max_length=32, description="expected fabric CliqueId")
    # issue 39.5: the IMEX daemon exports GPU memory across the nodes of an NVLink domain (NVL72)
    imex: Union[bool, Literal["auto"]] = Field("auto", description="nvidia-imex active required (auto: GPUs of an NVL72 tray, SKU nvswitches: external)")


class NvswitchSpec(_Section):
    # None: the SKU profile's count for its HGX baseboard (skus.yaml nvswitch_count / nvswitch_gpus).
    count: Optional[int] = Field(None, ge=0, le=64, description="NVSwitch PCI functions (vendor 10de, class 0680) expected (None: SKU profile)")


class IbSpec(_Section):
    # None: every InfiniBand-layer port found must be Active/LinkUp (none found -> SKIP naming ib.ports).
    ports: Optional[int] = Field(None, ge=0, le=64, description="InfiniBand-layer ports expected Active/LinkUp (None: those present)")
    rate_gbps: Optional[float] = Field(None, gt=0, description="minimum port rate, Gb/s (e.g. 400 for NDR; None: not enforced)")
    # Ethernet-layer (RoCE) functions are ignored unless named here.
    devices: Optional[list[str]] = Field(None, description="RDMA devices to judge, any link layer (None: every InfiniBand-layer device)")
    firmware: Optional[Union[str, list[str]]] = Field(None, description="HCA firmware version(s) allowed (sysfs fw_ver)")
    gpu_hca: Optional[dict[int, str]] = Field(None, description="GPU index -> its RDMA device (rail), for the per-GPU port check")


class ConfigSpec(_Section):
    vbios: Optional[Union[str, list[str]]] = Field(None, description="VBIOS version(s) allowed (None: only the same on every GPU)")
    inforom: Optional[Union[str, list[str]]] = Field(None, description="InfoROM image version(s) allowed (None: only the same on every GPU)")
    # the node's GPUs of one model run one firmware (a mixed VBIOS after a partial update is drift)
    same_firmware: bool = Field(True, description="VBIOS and InfoROM equal on every GPU of one model")
    # None: the board's default_power_limit (nvidia-smi -q "Default Power Limit").
    power_limit_w: Optional[float] = Field(None, gt=0, description="enforced power limit, W (None: the board default)")
    power_tolerance_w: float = Field(1.0, ge=0, description="allowed difference from the expected power limit, W")
    # Acceptance default: MIG off unless the site configures it (nvidia-smi -mig; pending != current
    # waits for a GPU reset).
    mig: Literal["disabled", "enabled", "any"] = Field("disabled", description="MIG mode current and pending")
    # NVIDIA's default compute mode (nvidia-smi -c 0 = DEFAULT).
    compute_mode: Union[Literal["Default", "Exclusive_Process", "Prohibited", "any"], list[str]] = Field(
        "Default", description="compute mode(s) allowed")


class CudaSpec(_Section):
    toolkit: str = Field(..., description="CUDA toolkit the node must run, e.g. '12.8' (GA) or '12.8.1' (update 1)")
    # toolkit: the toolkit's own minimum driver (CUDA Toolkit Release Notes, "CUDA Toolkit and
    # Corresponding Driver Versions"); minor_version: CUDA minor version compatibility (same major,
    # the major's first driver, with its documented limitations).
    compatibility: Literal["toolkit", "minor_version"] = Field("toolkit", description="toolkit (full) or minor_version compatibility")

    @field_validator("toolkit")
    @classmethod
    def _toolkit(cls, v):
        if not re.fullmatch(r"\d{1,2}\.\d{1,2}(?:\.\d{1,2})?", v):
            raise ValueError(f"cuda toolkit {v!r} is not a version such as '12.8' or '12.8.1'")
        return v


class ChecksSpec(_Section):
    skip: list[str] = Field([], description="check ids or names that do not apply (SKIP naming checks.skip)")


class Spec(_Section):
    """Expected state of a node (all sections optional; defaults from the catalog)."""

    driver: DriverSpec = DriverSpec()
    gpu: GpuSpec = GpuSpec()
    persistence: PersistenceSpec = PersistenceSpec()
    modules: ModulesSpec = ModulesSpec()
    dkms: DkmsSpec = DkmsSpec()
    gsp: GspSpec = GspSpec()
    pcie: PcieSpec = PcieSpec()
    clocks: ClocksSpec = ClocksSpec()
    ecc: EccSpec = EccSpec()
    memory: MemorySpec = MemorySpec()
    kernel_log: KernelLogSpec = KernelLogSpec()
    fabricmanager: FabricManagerSpec = FabricManagerSpec()
    checks: ChecksSpec = ChecksSpec()
    baseline: BaselineSpec = BaselineSpec()
    burnin: Optional[BurninSpec] = None
    perf: Optional[PerfSpec] = None
    crossnode: Optional[CrossnodeSpec] = None
    nvlink: NvlinkSpec = NvlinkSpec()
    fabric: FabricSpec = FabricSpec()
    nvswitch: NvswitchSpec = NvswitchSpec()
    ib: IbSpec = IbSpec()
    config: ConfigSpec = ConfigSpec()
    cuda: Optional[CudaSpec] = Field(None, description="CUDA toolkit the node must run: '12.8' or {toolkit, compatibility}")

    @field_validator("cuda", mode="before")
    @classmethod
    def _cuda(cls, v):
        # `cuda: "12.8"` (issue 19) is shorthand for {toolkit: "12.8"}; a YAML float (12.8 unquoted)
        # is refused: 12.10 would read as 12.1
        if isinstance(v, float):
            raise ValueError(f"cuda {v!r}: quote the version (YAML reads 12.10 as 12.1)")
        return {"toolkit": v} if isinstance(v, str) else v

    # the site's own checks (docs/site-checks.md): commands added to the ONE probe exec, and
    # free values for the site's tests (kept in the bundle's spec, so --replay has them too)
    site_evidence: dict[str, str] = Field({}, description="name -> shell command run inside the probe's one exec "
                                          "(bundle item site_evidence.<name>, the site_evidence fixture)")
    site_vars: dict[str, Any] = Field({}, description="free values for the site's tests (nodegate_node.vars)")

    @field_validator("site_evidence")
    @classmethod
    def _site_evidence(cls, v):
        from ..site.evidence import validate
        return validate(v)
