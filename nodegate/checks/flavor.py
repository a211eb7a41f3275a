"""Kernel module flavor: loaded vs spec and GPU constraints; on-disk vs loaded (catalog "Kernel module flavor")."""

from __future__ import annotations

from ..outcomes import Result
from ..spec import expectations
from . import check
from ._util import gpu_label, lines, optional, spec_or_default

# modinfo -F license nvidia: "Dual MIT/GPL" = open, "NVIDIA" = proprietary (catalog).
_LICENSE_FLAVOR = {"dual mit/gpl": "open", "nvidia": "proprietary"}


#: issue 39.4: why Blackwell and Grace Hopper/Blackwell need the open modules, whatever driver.flavor says
OPEN_REQUIRED_SOURCE = ("NVIDIA: Grace Hopper and Blackwell are supported only by the open GPU kernel modules "
                        "(driver README 'Open Linux Kernel Modules'; https://developer.nvidia.com/blog/"
                        "nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/)")


def license_flavor(license: str | None) -> str | None:
    return _LICENSE_FLAVOR.get((license or "").strip().lower())


@check(id="NG-FLV-001", name="module_flavor", title="Loaded kernel module flavor as specified and supported by the GPUs",
       scope="node", severity="critical", evidence=("driver.proc_version", "smi.qx", "kernel.log"),
       remediation="Install the required flavor (open: nvidia-open / kernel-open packages; proprietary for "
                   "pre-Turing) and reboot.",
       rule="Loaded flavor from /proc/driver/nvidia/version ('Open Kernel Module' = open, 'x86_64 Kernel Module' = "
            "proprietary) equals driver.flavor (any = no constraint). Every GPU's required flavor holds: Blackwell "
            "and Grace Hopper require open (kernel log 'requires use of the NVIDIA open kernel modules' FAILs), "
            "pre-Turing (Maxwell/Pascal/Volta) requires proprietary; the open module refusing a GeForce/workstation "
            "GPU ('Open nvidia.ko is only ready for use on Data Center GPUs', 515-555) FAILs. Earlier boots' "
            "refusals (a bug report's history) are shown, not judged.")
def module_flavor(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.driver.flavor
    events, _ = optional(facts, "kernel_events")
    refused = [e for e in (events or []) if e.kind == "requires_open"]
    history = _history_note(facts)
    if refused:
        banner, _ = optional(facts, "driver_banner")
        obs = f"{banner.flavor if banner is not None and banner.flavor else 'proprietary'} module refused a GPU"
        buses = ", ".join(sorted({e.bus_id for e in refused if e.bus_id})) or "bus id not logged"
        return Result.failed("open (GPU requires the open kernel modules)", obs + history,
                             f"the loaded module refuses GPU {buses}: it requires the NVIDIA open kernel modules",
                             evidence=lines(*(e.text for e in refused[:3])), evidence_keys=("kernel.log",))
    unsupported = [e for e in (events or []) if e.kind == "open_unsupported_gpu"]
    if unsupported:
        # the inverse mismatch (bug report 204): the open module refused a GeForce/workstation GPU,
        # RmInitAdapter failed follows on its bus
        failed = sorted({e.bus_id for e in events if e.kind == "rm_init_adapter_failed" and e.bus_id})
        return Result.failed("a module flavor the GPUs support", "open module refused a GPU" + history,
                             "the open kernel module refuses the GPU"
                             + (f" {', '.join(failed)} (RmInitAdapter failed)" if failed else "")
                             + ": 'Open nvidia.ko is only ready for use on Data Center GPUs'; install the proprietary "
                             "modules (or set NVreg_OpenRmEnableUnsupportedGpus=1)",
                             evidence=lines(*(e.text for e in unsupported[:3])), evidence_keys=("kernel.log",))
    banner = facts.driver_banner
    if banner is None:
        return Result.errored("nvidia module not loaded (no /proc/driver/nvidia/version): see NG-DRV-001",
                              evidence_keys=("driver.proc_version",))
    loaded = banner.flavor
    if loaded not in ("open", "proprietary"):
        return Result.errored(f"flavor not recognised in banner: {banner.raw.strip()!r}",
                              evidence=banner.raw, evidence_keys=("driver.proc_version",))
    problems, need = [], []
    if want != "any" and loaded != want:
        problems.append(f"driver.flavor={want} but {loaded} is loaded")
    gpus, gerr = optional(facts, "gpus")
    for g in gpus or []:
        ex = expectations(spec, g)
        if ex.flavor != "any":
            need.append(f"{gpu_label(g)} {ex.architecture or ''} requires {ex.flavor} ({ex.flavor_source})")
            if ex.flavor != loaded:
                problems.append(f"{gpu_label(g)} ({ex.architecture}) requires the {ex.flavor} module "
                                f"({ex.flavor_source}), {loaded} is loaded"
                                + (f" [{OPEN_REQUIRED_SOURCE}]" if ex.flavor == "open" else ""))
    expected = f"driver.flavor={want}" + (f"; {'; '.join(need)}" if need else "")
    obs = f"{loaded} {banner.version or ''}".strip() + ("" if gerr is None else f" (GPU constraints not evaluated: "
                                                              f"{gerr.reason})") + history
    kw = dict(evidence=banner.raw.strip(), evidence_keys=("driver.proc_version", "smi.qx"))
    if problems:
        return Result.failed(expected, obs, "; ".join(problems), **kw)
    if gerr is not None:
        # GPUs unreadable: a GPU the loaded flavor cannot drive (Blackwell under the proprietary
        # module) would go unseen, so the GPU constraints are not shown to hold (fail closed)
        raise gerr
    return Result.passed(expected, obs, **kw)


def _history_note(facts) -> str:
    """'; history (earlier boots, not judged): ...' for flavour refusals in earlier boots (a converted
    nvidia-bug-report's ``kernel.history``: bug report 204 loaded the open module on a GeForce laptop
    one day, the proprietary one since); '' when there is none. The current boot decides."""
    hist, _ = optional(facts, "kernel_history")
    kinds = {"requires_open": "the module required the open kernel modules",
             "open_unsupported_gpu": "the open module refused the GPU ('only ready for use on Data Center GPUs')"}
    seen = {}
    for e in hist or []:
        if e.kind in kinds:
            key = kinds[e.kind] + (f" at {e.bus_id}" if e.bus_id else "")
            seen[key] = seen.get(key, 0) + 1
    if not seen:
        return ""
    return "; history (earlier boots, not judged): " + "; ".join(k + (f" x{n}" if n > 1 else "") for k, n in seen.items())


@check(id="NG-FLV-002", name="module_flavor_on_disk", title="On-disk kernel module flavor equals the loaded one",
       scope="node", severity="major", evidence=("modinfo.nvidia", "driver.proc_version"),
       remediation="Reboot to load the installed module (an upgrade or flavor switch is waiting for a reboot).",
       rule="On-disk flavor (modinfo -F license nvidia: 'Dual MIT/GPL' = open, 'NVIDIA' = proprietary) and version "
            "equal the loaded module's; loaded != on-disk means an upgrade awaiting reboot: FAIL naming both.")
def module_flavor_on_disk(facts, spec) -> Result:
    mi = facts.modinfo_nvidia
    banner = facts.driver_banner
    if banner is None:
        return Result.errored("nvidia module not loaded (no /proc/driver/nvidia/version): see NG-DRV-001",
                              evidence_keys=("driver.proc_version",))
    if mi is None:
        return Result.failed(f"on-disk = loaded ({banner.flavor} {banner.version})",
                             f"no nvidia module on disk for the booted kernel; loaded {banner.flavor} {banner.version}",
                             "the loaded nvidia module is no longer installed for the booted kernel",
                             evidence="modinfo: ERROR: Module nvidia not found.", evidence_keys=("modinfo.nvidia",))
    disk = license_flavor(mi.license)
    ev = lines(f"modinfo license: {mi.license}", f"modinfo version: {mi.version}", banner.raw.strip())
    keys = ("modinfo.nvidia", "driver.proc_version")
    if disk is None:
        if mi.license is None:
            # modinfo evidence without a license line (a bug report's `modinfo nvidia | grep vermagic`,
            # bug report 204): the on-disk flavor is not shown, never guessed
            return Result.errored("on-disk module license not reported (modinfo gave no 'license' line): cannot "
                                  "compare the on-disk flavor with the loaded one", evidence=ev, evidence_keys=keys)
        return Result.errored(f"unknown module license {mi.license!r}", evidence=ev, evidence_keys=keys)
    loaded = banner.flavor
    expected = f"on-disk = loaded ({loaded} {banner.version or ''})".strip()
    obs = f"on-disk {disk} {mi.version or ''}, loaded {loaded} {banner.version or ''}".strip()
    if loaded not in ("open", "proprietary"):
        return Result.errored("loaded flavor not recognised in /proc/driver/nvidia/version", expected, obs,
                              evidence=ev, evidence_keys=keys)
    if disk != loaded:
        return Result.failed(expected, obs, f"installed module ({disk} {mi.version}) differs from the loaded one "
                             f"({loaded} {banner.version}): reboot pending", evidence=ev, evidence_keys=keys)
    if not mi.version or not banner.version:
        which = " and ".join(n for n, v in (("on-disk (modinfo -F version)", mi.version),
                                            ("loaded (/proc/driver/nvidia/version)", banner.version)) if not v)
        return Result.errored(f"{which} module version not reported: cannot compare versions", expected, obs,
                              evidence=ev, evidence_keys=keys)
    if mi.version != banner.version:
        return Result.failed(expected, obs, f"installed module ({disk} {mi.version}) differs from the loaded one "
                             f"({loaded} {banner.version}): reboot pending", evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)
