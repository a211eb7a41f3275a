"""Driver stack consistency (catalog "Driver stack consistency") and fabric manager."""

from __future__ import annotations

from ..errors import EvidenceError
from ..outcomes import Result
from . import check
from ._util import fmt, lines, optional, spec_or_default, version_matches


def _api_mismatch_events(facts) -> list:
    events, _ = optional(facts, "kernel_events")
    return [e for e in (events or []) if e.kind == "api_mismatch"]


def _nvml_version(facts) -> tuple[str | None, str]:
    """Userspace NVML: resolved libnvidia-ml.so.<version>, else nvidia-smi --version."""
    lib, _ = optional(facts, "libnvml")
    if lib is not None and lib.version:
        return lib.version, f"libnvidia-ml {lib.target or lib.path}"
    sv, _ = optional(facts, "smi_version")
    if sv is not None and (sv.driver_version or sv.nvml_version):
        # "DRIVER version" (later "KMD version") is the full version; "NVML version" is branch.minor
        return (sv.driver_version or sv.nvml_version), "nvidia-smi --version"
    key, _ = optional(facts, "smi_key")
    if key not in (None, "smi.qx"):
        # no --version (an nvidia-bug-report, a pasted -q): nvidia-smi -q printed its report, so NVML
        # initialised against this module (it refuses on "Driver/library version mismatch")
        rep, _ = optional(facts, "smi_report")
        if rep is not None and rep.driver_version:
            return rep.driver_version, "nvidia-smi -q header (NVML initialised)"
    return None, "unreadable"


@check(id="NG-DRV-001", name="driver_stack", title="Driver stack versions consistent and as specified",
       scope="node", severity="critical",
       evidence=("modules.nvidia_version", "driver.proc_version", "driver.libnvml", "smi.version", "smi.qx",
                 "fabricmanager.version", "kernel.log"),
       remediation="Reboot (or unload and reload the nvidia modules) so the kernel module matches the installed "
                   "user space; install the specified driver version on every component.",
       rule="Loaded module version (/sys/module/nvidia/version, else /proc/driver/nvidia/version), userspace "
            "NVML (libnvidia-ml.so.<ver>, else nvidia-smi --version) and fabric manager (when installed) equal "
            "each other and driver.version (exact or branch). 'Driver/library version mismatch', 'couldn't "
            "communicate with the NVIDIA driver' and NVRM 'API mismatch' are FAIL; GPU checks then ERROR.")
def driver_stack(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.driver.version
    expected = "module = NVML = fabric manager" + (f" = {want}" if want else " (driver.version not set)")
    smi_err, _ = optional(facts, "smi_error")
    module, module_err = optional(facts, "nvidia_module_version")
    if not module:
        banner, _ = optional(facts, "driver_banner")
        module = banner.version if banner is not None and banner.version else None
    if smi_err is not None and smi_err.kind == "driver_library_mismatch":
        obs = f"kernel module {fmt(module)}, NVML library {fmt(smi_err.nvml_library_version)}"
        return Result.failed(expected, obs, f"Driver/library version mismatch: {obs}",
                             evidence=smi_err.message, evidence_keys=("smi.qx", "modules.nvidia_version"))
    if smi_err is not None and smi_err.kind == "no_driver":
        return Result.failed(expected, f"nvidia-smi: {smi_err.message.strip()}",
                             "nvidia-smi cannot communicate with the NVIDIA driver: module not loaded or not bound",
                             evidence=smi_err.message, evidence_keys=("smi.qx",))
    api = _api_mismatch_events(facts)
    if api:
        d = api[0].details
        obs = (f"client {d.get('client_version', '?')} vs kernel module {d.get('kernel_version', fmt(module))}"
               if d else api[0].text)
        return Result.failed(expected, f"NVRM API mismatch: {obs}", f"NVRM API mismatch: {obs}",
                             evidence=lines(*(e.text for e in api[:3])), evidence_keys=("kernel.log",))
    if not module:
        raise module_err or EvidenceError("modules.nvidia_version", "nvidia module version not reported")
    nvml, nvml_src = _nvml_version(facts)
    fm, fm_err = optional(facts, "fabricmanager_version")
    if fm_err is not None and not fm_err.reason.startswith("tool missing"):
        # installed but unreadable (timeout, exit code, unparsable): its version cannot be compared
        raise fm_err
    observed = {"kernel module": module, "NVML": nvml}
    if fm:
        observed["fabric manager"] = fm
    obs = ", ".join(f"{k} {fmt(v)}" for k, v in observed.items())
    ev = f"kernel module {module}; NVML {fmt(nvml)} ({nvml_src})" + (f"; fabric manager {fm}" if fm else "")
    keys = ("modules.nvidia_version", "driver.libnvml", "smi.version") + (("fabricmanager.version",) if fm else ())
    if nvml is None:
        return Result.errored("userspace NVML version unreadable (libnvidia-ml.so.1 and nvidia-smi --version)",
                              expected, obs, evidence=ev, evidence_keys=keys)
    # NVML "580.159" (branch.minor) is compared as a prefix of the module version
    mismatched = [k for k, v in observed.items() if v and k != "kernel module" and not version_matches(v, module)
                  and not version_matches(module, v)]
    if mismatched:
        return Result.failed(expected, obs, f"driver stack inconsistent: {obs}", evidence=ev, evidence_keys=keys)
    if want and not version_matches(want, module):
        return Result.failed(expected, obs, f"driver {module} is not the specified {want}", evidence=ev,
                             evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-DRV-002", name="fabricmanager", title="Fabric manager running at the driver version",
       scope="node", severity="critical", evidence=("fabricmanager.version", "systemd.fabricmanager_show",
                                                    "fabricmanager.log"),
       remediation="Install nvidia-fabricmanager matching the driver version and enable/start "
                   "nvidia-fabricmanager.service.",
       rule="fabricmanager.required true: nv-fabricmanager installed, unit active. auto: checked when "
            "nv-fabricmanager is installed (NVSwitch systems); not installed -> SKIP naming the key. "
            "Version equality is part of NG-DRV-001. A FAIL quotes the fabric manager log's version-mismatch "
            "and error lines (journal, else /var/log/fabricmanager.log).")
def fabricmanager(facts, spec) -> Result:
    spec = spec_or_default(spec)
    req = spec.fabricmanager.required
    if req is False:
        return Result.skipped("fabricmanager.required=false: fabric manager not checked",
                              expected="fabricmanager.required=false")
    version, verr = optional(facts, "fabricmanager_version")
    if not version:
        if verr is not None and not verr.reason.startswith("tool missing"):
            # installed but unreadable (timeout, exit code, unparsable): not "not installed"
            raise verr
        if verr is None:
            # the tool ran and exited 0 but printed no version: installed state unknown
            raise EvidenceError("fabricmanager.version", "nv-fabricmanager --version printed no version")
        if req == "auto":
            return Result.skipped(f"fabricmanager.required=auto and fabric manager not installed ({verr.reason})",
                                  expected="fabricmanager.required=auto", observed="not installed")
        return Result.failed("installed and active", "nv-fabricmanager not installed",
                             "fabric manager required but not installed", evidence_keys=("fabricmanager.version",))
    unit = facts.fabricmanager_unit
    state = f"{fmt(unit.active_state)}/{fmt(unit.sub_state)}, {fmt(unit.unit_file_state)}" if unit else "no unit"
    obs = f"version {version}, unit {state}"
    ok = unit is not None and unit.active_state == "active" and unit.unit_file_state in ("enabled", "static")
    res = Result.passed if ok else Result.failed
    # issue 19: the fabric manager's own log says why it did not start (corpus 113: its driver interface
    # version does not match the kernel module's)
    log, _ = optional(facts, "fabricmanager_log")
    why = [e for e in (log or []) if e.kind in ("version_mismatch", "error")][-3:]
    reason = "; log: " + " | ".join(e.text[:200] for e in why) if why and not ok else ""
    return res("installed, active, enabled", obs, "" if ok else f"fabric manager not running/enabled: {obs}{reason}",
               evidence=lines(*(f"{k}={v}" for k, v in (unit.raw.items() if unit else [])), *(e.text for e in why)),
               evidence_keys=("fabricmanager.version", "systemd.fabricmanager_show", "fabricmanager.log"))
