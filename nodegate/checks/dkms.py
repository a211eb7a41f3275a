"""DKMS / precompiled module for the booted kernel and for other installed kernels (catalog "DKMS")."""

from __future__ import annotations

from ..errors import EvidenceError
from ..outcomes import Result
from . import check
from ._util import lines, optional, spec_or_default, version_matches

# dkms <= 3.1.2 / >= 3.1.3 suffixes meaning the installed module is not the built one (catalog).
_BAD_SUFFIXES = ("diff between built and installed", "differences between built and installed",
                 "built modules are missing")
_INSTALLED = ("installed", "installed-weak")


def _target_version(facts, spec) -> tuple[str | None, str]:
    """The version DKMS must have installed: the loaded module's (sysfs, else the banner), else
    driver.version. An unreadable loaded version (EvidenceError: timeout, parse error) raises; a
    module not loaded (None) falls back to driver.version; neither -> EvidenceError."""
    v, verr = optional(facts, "nvidia_module_version")
    if v:
        return v, "loaded module"
    banner, berr = optional(facts, "driver_banner")
    if banner is not None and banner.version:
        return banner.version, "loaded module"
    for err in (verr, berr):
        if err is not None:
            raise err
    if spec.driver.version:
        return spec.driver.version, "driver.version"
    raise EvidenceError("modules.nvidia_version", "no loaded nvidia module version (sysfs or "
                        "/proc/driver/nvidia/version) and driver.version not set: target version unknown")


def _nvidia_entries(dk):
    return [e for e in dk.entries if e.module == "nvidia"]


def _fmt_entry(e) -> str:
    w = "".join(f" ({w})" for w in e.warnings)
    weak = f" from {e.weak_from}" if e.weak_from else ""
    return f"{e.module}/{e.version}, {e.kernel}, {e.arch}: {e.state}{weak}{w}"


def _dkms_rule(dk, kver: str, target: str | None, tsrc: str) -> Result:
    keys = ("dkms.status", "meta.uname_r", "modules.nvidia_version")
    ents = _nvidia_entries(dk)
    ev = lines(*(_fmt_entry(e) for e in ents)) or "no nvidia line in dkms status"
    expected = f"nvidia/{target or '*'} installed for {kver}"
    if dk.errors:
        return Result.failed(expected, "dkms status error: " + "; ".join(dk.errors),
                             "DKMS tree broken (dkms status printed Error!): " + "; ".join(dk.errors),
                             evidence=lines(*dk.errors, ev), evidence_keys=keys)
    mine = [e for e in ents if e.kernel == kver]
    good = [e for e in mine if e.state in _INSTALLED and version_matches(target, e.version)]
    problems = []
    for e in mine:
        bad = [w for w in e.warnings if any(s in w.lower() for s in _BAD_SUFFIXES)]
        if bad and e.state in _INSTALLED:
            problems.append(f"nvidia/{e.version} for {kver}: {bad[0]}")
    if not good:
        seen = ", ".join(f"{e.version} {e.state}" for e in mine) or "no entry"
        problems.insert(0, f"no installed nvidia/{target or '*'} for {kver} ({tsrc}); seen: {seen}")
    obs = "; ".join(_fmt_entry(e) for e in mine) or f"no nvidia entry for {kver}"
    if problems:
        return Result.failed(expected, obs, "; ".join(problems), evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


def _precompiled_rule(facts, kver: str, note: str = "") -> Result:
    mi = facts.modinfo_nvidia
    keys = ("modinfo.nvidia", "meta.uname_r")
    expected = f"modinfo -k {kver} nvidia resolves a file with vermagic {kver}"
    if mi is None:
        return Result.failed(expected, f"modinfo: module nvidia not found for {kver}{note}",
                             f"no nvidia module on disk for the booted kernel {kver}",
                             evidence="modinfo: ERROR: Module nvidia not found.", evidence_keys=keys)
    vm = (mi.vermagic or "").split()
    obs = f"filename {mi.filename or 'none'}, vermagic {mi.vermagic or 'none'}" + note
    ev = lines(f"filename: {mi.filename}", f"version: {mi.version}", f"vermagic: {mi.vermagic}")
    if not mi.filename and not mi.vermagic:
        return Result.failed(expected, obs, f"no nvidia module file for {kver}", evidence=ev, evidence_keys=keys)
    if not mi.filename:
        # modinfo prints a module's fields only for a file it resolved: evidence that carries just the
        # vermagic line (nvidia-bug-report's `modinfo nvidia | grep vermagic`, bug report 204) shows
        # the file exists without naming it; the vermagic decides
        obs += " (file name not in the evidence: modinfo's vermagic line only)"
    if not vm or vm[0] != kver:
        return Result.failed(expected, obs, f"nvidia module built for {vm[0] if vm else 'unknown'}, booted {kver}",
                             evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-DKMS-001", name="dkms_booted_kernel", title="NVIDIA module built and installed for the booted kernel",
       scope="node", severity="major", evidence=("dkms.status", "meta.uname_r", "modules.nvidia_version",
                                                  "modinfo.nvidia"),
       remediation="Rebuild and install: dkms install nvidia/<version> -k $(uname -r) (remove stale trees under "
                   "/var/lib/dkms first); for precompiled packages install the kernel's matching nvidia module "
                   "package. Do this before rebooting.",
       rule="driver.install=dkms: dkms status has 'installed' for nvidia at the loaded version for uname -r (both "
            "'nvidia, v, k' and 'nvidia/v, k' formats); a diff/missing-module suffix or 'Error!' output FAILs. "
            "precompiled: modinfo -k $(uname -r) nvidia resolves a file whose vermagic is the booted kernel. "
            "any: the dkms rule when dkms lists nvidia, else the precompiled rule.")
def dkms_booted_kernel(facts, spec) -> Result:
    spec = spec_or_default(spec)
    kver = facts.kernel_release
    mode = spec.driver.install
    if mode == "dkms":
        return _dkms_rule(facts.dkms, kver, *_target_version(facts, spec))
    if mode == "precompiled":
        return _precompiled_rule(facts, kver)
    dk, err = optional(facts, "dkms")
    if err is not None and not err.reason.startswith("tool missing"):
        # dkms present but unreadable (timeout, exit code, parse error): not "no DKMS"
        raise err
    if dk is not None and (_nvidia_entries(dk) or dk.errors):
        return _dkms_rule(dk, kver, *_target_version(facts, spec))
    note = f" (driver.install=any; dkms: {err.reason if err else 'no nvidia entry'})"
    return _precompiled_rule(facts, kver, note)


def _kernels(installed) -> list[str]:
    """installed_kernels: {kver: has_build} or a list of kernel releases."""
    if isinstance(installed, dict):
        return [k for k, build in installed.items() if build]
    return list(installed)


@check(id="NG-DKMS-002", name="dkms_other_kernels", title="NVIDIA module installed for every other installed kernel",
       scope="node", severity="minor", evidence=("dkms.status", "kernels.installed"),
       remediation="dkms autoinstall -k <kver> for each listed kernel (or remove the unused kernel) so a reboot "
                   "into it keeps the GPUs.",
       rule="Every installed kernel other than the booted one (/lib/modules/* with a build directory) has an "
            "installed nvidia entry at the target version; otherwise the next reboot into it has no GPU. "
            "dkms.other_kernels=ignore -> SKIP; precompiled installs -> SKIP naming driver.install.")
def dkms_other_kernels(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if spec.dkms.other_kernels == "ignore":
        return Result.skipped("dkms.other_kernels=ignore", expected="dkms.other_kernels=ignore")
    if spec.driver.install == "precompiled":
        return Result.skipped("driver.install=precompiled: DKMS does not build for other kernels",
                              expected="driver.install=precompiled")
    if spec.driver.install == "any":
        dk, err = optional(facts, "dkms")
        if err is not None and not err.reason.startswith("tool missing"):
            # dkms present but unreadable (timeout, exit code, parse error): not "not DKMS-managed"
            raise err
        if dk is None or not (_nvidia_entries(dk) or dk.errors):
            why = err.reason if err else "dkms lists no nvidia module"
            return Result.skipped(f"driver.install=any and the module is not DKMS-managed ({why})",
                                  expected="driver.install=any")
    dk = facts.dkms
    kver = facts.kernel_release
    target, tsrc = _target_version(facts, spec)
    others = [k for k in _kernels(facts.installed_kernels) if k != kver]
    expected = f"nvidia/{target or '*'} installed for every other kernel with a build dir"
    keys = ("dkms.status", "kernels.installed")
    ev = lines(*(_fmt_entry(e) for e in _nvidia_entries(dk)))
    if dk.errors:
        return Result.failed(expected, "dkms status error: " + "; ".join(dk.errors),
                             "DKMS tree broken: " + "; ".join(dk.errors), evidence=lines(*dk.errors),
                             evidence_keys=keys)
    missing = [k for k in others if not any(e.kernel == k and e.state in _INSTALLED
                                            and version_matches(target, e.version) for e in _nvidia_entries(dk))]
    obs = (f"other kernels: {', '.join(others) or 'none'}" + (f"; missing: {', '.join(missing)}" if missing else ""))
    if missing:
        return Result.failed(expected, obs, f"no installed nvidia/{target or '*'} for: {', '.join(missing)} "
                             "(next reboot into it has no GPU)", evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


