"""GSP firmware: files in the kernel's firmware search path, per-GPU firmware version (catalog "GSP firmware")."""

from __future__ import annotations

import os

from ..errors import EvidenceError
from ..facts import NA
from ..outcomes import Result
from ..spec import expectations
from ..spec.skus import gsp_support
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, loaded_driver_version, optional, spec_or_default


def _driver_version(facts) -> str | None:
    """The loaded driver's version (module, else /proc banner, else nvidia-smi's header); None."""
    v, _ = optional(facts, "nvidia_module_version")
    if v:
        return v
    banner, _ = optional(facts, "driver_banner")
    if banner is not None and banner.version:
        return banner.version
    v, _ = optional(facts, "smi_driver_version")
    return v or None


def _no_gsp_board(spec, g) -> bool:
    """The GPU's architecture cannot run GSP firmware (skus.yaml gsp.architectures: Turing and later)."""
    return gsp_support().architecture_can_run(expectations(spec, g).architecture) is False


def _predates_gsp(facts) -> str | None:
    """'driver 418.43 predates GSP firmware (first shipped with the 465 branch)', or None."""
    ver = _driver_version(facts)
    support = gsp_support()
    if support.driver_predates_gsp(ver):
        return f"driver {ver} predates GSP firmware (first shipped with the {support.first_driver_branch} branch)"
    return None


def _gsp_required(facts, spec) -> tuple[bool, str]:
    """(required, why). auto: the open module always uses GSP; a GPU reporting a GSP version uses it;
    a driver older than the first branch with GSP firmware settles it (issue 21 item 6: such XML has
    no gsp_firmware_version at all)."""
    req = spec.gsp.required
    if req is True:
        return True, "gsp.required=true"
    if req is False:
        return False, "gsp.required=false"
    old = _predates_gsp(facts)
    if old is not None:
        return False, f"gsp.required=auto and the {old}"
    banner, berr = optional(facts, "driver_banner")
    if berr is not None:
        # flavor unknown: neither "GSP in use" nor "not applicable" can be claimed (fail closed)
        raise berr
    if banner is not None and banner.flavor == "open":
        return True, "gsp.required=auto and the open kernel module is loaded (it always runs GSP)"
    gpus, gerr = optional(facts, "gpus")
    if any(isinstance(g.gsp_firmware_version, str) for g in gpus or []):
        return True, "gsp.required=auto and a GPU runs GSP firmware"
    if gerr is not None:
        # proprietary (or unknown) module and GPUs unreadable: whether GSP is in use is unknown,
        # so "not applicable" cannot be claimed (fail closed: ERROR naming why)
        raise gerr
    flavor = banner.flavor if banner is not None and banner.flavor else "unknown"
    if flavor != "proprietary":
        raise EvidenceError("driver.proc_version", f"gsp.required=auto: kernel module flavor {flavor} "
                            "(not loaded or not recognised), cannot tell whether GSP is in use")
    if not gpus:
        raise EvidenceError("smi.qx", "gsp.required=auto: no GPU listed, cannot tell whether GSP is in use")
    # None = not reported (unknown), NA = GSP off; a known pre-Turing GPU has no GSP either way
    unreported = [gpu_label(g) for g in gpus
                  if g.gsp_firmware_version is None and not _no_gsp_board(spec, g)]
    if unreported:
        raise EvidenceError("smi.qx", "gsp.required=auto: gsp_firmware_version not reported for "
                            + ", ".join(unreported) + ", cannot tell whether GSP is in use")
    return False, "gsp.required=auto, proprietary kernel module and every GPU reports GSP firmware N/A"


def _needed_files(facts, spec) -> tuple[list[str], str]:
    gpus, err = optional(facts, "gpus")
    mi, mierr = optional(facts, "modinfo_nvidia")
    modinfo = sorted({os.path.basename(f) for f in mi.firmware}) if mi is not None and mi.firmware else []
    if gpus:
        exs = [(g, expectations(spec, g)) for g in gpus]
        need = sorted({ex.gsp_firmware for _, ex in exs if ex.gsp_firmware})
        # a GPU with no GSP file in its profile is fine only when it is known pre-Turing; an
        # unknown SKU/architecture must not read as "needs no GSP firmware"
        unknown = [f"{gpu_label(g)} ({ex.gsp_source})" for g, ex in exs if not ex.gsp_firmware and not ex.pre_turing]
        if not unknown:
            return need, "per GPU architecture (SKU profiles)"
        if modinfo:
            return sorted(set(need) | set(modinfo)), ("modinfo -F firmware nvidia (no GSP profile for "
                                                      + "; ".join(unknown) + ")")
        raise EvidenceError("modinfo.nvidia", "cannot tell which GSP firmware is needed: no GSP profile for "
                            + "; ".join(unknown) + " and no modinfo firmware list"
                            + (f" ({mierr.reason})" if mierr else "") + "; set gpu.sku")
    if modinfo:
        return modinfo, "modinfo -F firmware nvidia"
    raise err or mierr or EvidenceError("modinfo.nvidia",
                                        "no GPU and no modinfo firmware list to tell which GSP file is needed")


@check(id="NG-GSP-001", name="gsp_firmware_files", title="GSP firmware files present in the firmware search path",
       scope="node", severity="critical", evidence=("firmware.gsp", "driver.proc_version", "modinfo.nvidia", "smi.qx"),
       remediation="Install the driver's firmware package (nvidia-firmware-<version> / the .run installer's "
                   "firmware) so nvidia/<version>/gsp_*.bin exists in /lib/firmware or firmware_class.path.",
       rule="For the loaded driver version, each needed file (gsp_tu10x.bin for Turing/GA100, gsp_ga10x.bin for "
            "GA10x/Ada/Hopper/Blackwell) is found, non-empty, first in kernel search order: firmware_class.path, "
            "/lib/firmware/updates/<kver>, /lib/firmware/updates, /lib/firmware/<kver>, /lib/firmware. "
            "gsp.required=false or auto without GSP in use (proprietary module with GSP off, a driver older than the "
            "465 branch that first shipped GSP firmware) -> SKIP naming the key.")
def gsp_firmware_files(facts, spec) -> Result:
    spec = spec_or_default(spec)
    required, why = _gsp_required(facts, spec)
    if not required:
        return Result.skipped(why, expected="GSP not in use")
    version = loaded_driver_version(facts)
    fw = facts.firmware
    keys = ("firmware.gsp", "driver.proc_version")
    need, src = _needed_files(facts, spec)
    # the profiles name the 530+ files; older branches shipped gsp.bin / gsp_ad10x.bin (skus.yaml gsp:)
    need = sorted({gsp_support().file_for_driver(n, version) for n in need})
    expected = f"nvidia/{version}/{', '.join(need) or '(none)'} non-empty ({src})"
    ev = lines(f"firmware_class.path: {fw.search_path or '(unset)'}",
               *(f"{d}: {', '.join(f'{n} {s}' for n, s in files.items()) if files else 'absent'}"
                 for d, files in fw.dirs.items()))
    if fw.driver_version and fw.driver_version != version:
        return Result.errored(f"firmware listing is for {fw.driver_version}, loaded driver is {version}",
                              expected, evidence=ev, evidence_keys=keys)
    if not need:  # _needed_files returns no file only when every GPU is known pre-Turing
        return Result.passed(expected, "no GPU needs GSP firmware (pre-Turing)", evidence=ev, evidence_keys=keys)
    found, problems, unknown = [], [], []
    for name in need:
        hit = fw.find(name)
        if hit is None:
            problems.append(f"{name} not found in {', '.join(fw.dirs) or 'the search path'}")
        elif not isinstance(hit[1], int):
            unknown.append(f"{hit[0]}/{name} (size not listed)")
        elif hit[1] <= 0:
            problems.append(f"{hit[0]}/{name} is empty (the kernel loads the first match)")
        else:
            found.append(f"{hit[0]}/{name} ({hit[1]} bytes)")
    obs = "; ".join(found + unknown + problems)
    if problems:
        return Result.failed(expected, obs, "GSP firmware missing: " + "; ".join(problems), evidence=ev,
                             evidence_keys=keys)
    if unknown:
        # A listing without sizes (a hand-built bundle, a capture) cannot show "non-empty" by
        # itself; a GPU running GSP firmware of exactly this version shows the kernel loaded it.
        gpus, _ = optional(facts, "gpus")
        running = [g for g in (gpus or []) if isinstance(g.gsp_firmware_version, str)
                   and g.gsp_firmware_version == version]
        if gpus and len(running) == len(gpus):
            obs += f"; loaded: {len(running)} GPU(s) run GSP firmware {version}"
            return Result.passed(expected, obs, evidence=ev, evidence_keys=keys + ("smi.qx",))
        return Result.errored("GSP firmware found but its size is not listed (cannot tell it is non-empty): "
                              + "; ".join(unknown), expected, obs, evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-GSP-002", name="gsp_firmware_version", title="GPU runs GSP firmware of the driver version",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json", "modules.nvidia_version"),
       remediation="Install matching GSP firmware and reboot; do not disable GSP (NVreg_EnableGpuFirmware=0) when "
                   "the spec requires it.",
       rule="gsp_firmware_version equals the loaded driver version. N/A means GSP off: FAIL when GSP is required "
            "(gsp.required=true, or auto with the open module, which always requires it); auto with the "
            "proprietary module, a pre-Turing GPU, or a driver older than the first branch with GSP firmware "
            "(465; nodegate/data/skus.yaml gsp:) -> SKIP naming gsp.required.")
def gsp_firmware_version(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    ex = expectations(spec, g)
    v = g.gsp_firmware_version
    keys = ("smi.qx", "modules.nvidia_version")
    if _no_gsp_board(spec, g) and spec.gsp.required != True:  # noqa: E712 (auto or False)
        return Result.skipped(f"gsp.required={spec.gsp.required}: {ex.architecture} has no GSP",
                              expected="no GSP", observed=fmt(v))
    required, why = _gsp_required(facts, spec)
    if not required:
        return Result.skipped(why, expected="GSP not required", observed=f"gsp_firmware_version {fmt(v)}")
    version = loaded_driver_version(facts)
    expected = f"gsp_firmware_version {version} ({why})"
    ev = f"gsp_firmware_version: {fmt(v)}"
    if v is None:
        old = _predates_gsp(facts)
        if old is not None:   # gsp.required=true on a driver without GSP firmware
            return Result.failed(expected, "not reported", f"{name}: GSP required ({why}) but the {old}",
                                 evidence=ev, evidence_keys=keys)
        return Result.errored(f"{name}: gsp_firmware_version not reported", expected, "not reported",
                              evidence=ev, evidence_keys=keys)
    if v is NA:
        return Result.failed(expected, "N/A (GSP off)", f"{name}: GSP firmware not running ({why})", evidence=ev,
                             evidence_keys=keys)
    if v.strip() != version:
        return Result.failed(expected, v, f"{name}: GSP firmware {v} != driver {version}", evidence=ev,
                             evidence_keys=keys)
    return Result.passed(expected, v, evidence=ev, evidence_keys=keys)
