"""Firmware and configuration consistency per GPU: VBIOS/InfoROM, enforced power limit, MIG mode,
compute mode (issue 19 item 7). The fleet-wide view of the same fields is the report's drift table
(nodegate/reports/drift.py).
"""

from __future__ import annotations

from collections import Counter

from ..errors import EvidenceError
from ..facts import NA
from ..outcomes import Result
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, loaded_driver_version, optional, spec_or_default

# MIG arrived with the R450 driver (the A100 launch driver 450.36.06; nvsmi_device_v11.dtd, the 450 branch's DTD,
# adds mig_mode): an -q -x of an older driver has no mig_mode element at all, and no GPU can be in MIG mode under
# it. Real outputs agree: every public 352-440 output in ../shared/sweep lacks the element, every 450+ one has it.
MIG_FIRST_DRIVER_BRANCH = 450


def _allowed(v) -> list[str] | None:
    return None if v is None else ([v] if isinstance(v, str) else list(v))


def _peers(facts, g) -> list:
    """The node's GPUs of ``g``'s model (PCI device id, else product name), ``g`` included."""
    gpus, _ = optional(facts, "gpus")
    dev, _ = optional(g, "pci_device_id")   # masked ([REDACTED]): the product name groups them (issue 39.6)

    def key(x):
        if dev:
            v, _ = optional(x, "pci_device_id")
            return v
        return x.name
    return [x for x in gpus or [g] if key(x) == key(g)] or [g]


def _consistency(label: str, value, values: list) -> str | None:
    """Why ``value`` breaks the node's consistency, or None. A value differing from the majority
    fails; with no majority (a tie) every GPU of the tie fails."""
    known = Counter(v for v in values if isinstance(v, str))
    if len(known) <= 1 or not isinstance(value, str):
        return None
    (top, n), second = known.most_common(2)[0], known.most_common(2)[1]
    if n == second[1]:
        return f"{label} differs across the node's GPUs with no majority ({', '.join(f'{v} x{c}' for v, c in known.most_common())})"
    if value != top:
        return f"{label} {value} differs from the node's other GPUs ({top} on {n} of {sum(known.values())})"
    return None


@check(id="NG-CFG-001", name="firmware_versions", title="VBIOS and InfoROM as specified and the same on every GPU",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       remediation="Flash the specified VBIOS/InfoROM with the vendor's firmware bundle (nvfwupd / the OEM "
                   "tool) on the GPUs that differ, then reset the GPUs or reboot.",
       rule="VBIOS (nvidia-smi vbios_version) and InfoROM image (inforom_version/img_version) are among "
            "config.vbios / config.inforom when set (a version or a list), and (config.same_firmware, default "
            "true) equal to the node's other GPUs of the same model: a GPU differing from the majority FAILs; with "
            "no majority every GPU FAILs. VBIOS not reported -> ERROR; InfoROM N/A is compared only when "
            "config.inforom is set (then ERROR).")
def firmware_versions(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    vb, ir = g.vbios_version, g.inforom_image
    want_vb, want_ir = _allowed(spec.config.vbios), _allowed(spec.config.inforom)
    expected = ("VBIOS " + (" or ".join(want_vb) if want_vb else "as the node's other GPUs")
                + ", InfoROM " + (" or ".join(want_ir) if want_ir else "as the node's other GPUs"))
    obs = f"VBIOS {fmt(vb)}, InfoROM {fmt(ir)}"
    peers = _peers(facts, g)
    kw = dict(evidence=lines(*(f"GPU {x.index}: VBIOS {fmt(x.vbios_version)}, InfoROM {fmt(x.inforom_image)}"
                               for x in peers)), evidence_keys=("smi.qx",))
    if not isinstance(vb, str):
        return Result.errored(f"{name}: VBIOS version {'N/A' if vb is NA else 'not reported'}", expected, obs, **kw)
    fails = []
    if want_vb and vb not in want_vb:
        fails.append(f"VBIOS {vb} not the specified {' or '.join(want_vb)}")
    if want_ir and isinstance(ir, str) and ir not in want_ir:
        fails.append(f"InfoROM {ir} not the specified {' or '.join(want_ir)}")
    if spec.config.same_firmware:
        for label, attr, value in (("VBIOS", "vbios_version", vb), ("InfoROM", "inforom_image", ir)):
            why = _consistency(label, value, [getattr(x, attr) for x in peers])
            if why:
                fails.append(why)
    if fails:
        return Result.failed(expected, obs, f"{name}: " + "; ".join(fails), **kw)
    if want_ir and not isinstance(ir, str):
        return Result.errored(f"{name}: InfoROM image {'N/A' if ir is NA else 'not reported'}", expected, obs, **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-CFG-002", name="power_limit", title="Enforced power limit is the specified or default limit",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       remediation="Restore the limit (nvidia-smi -i <gpu> -pl <watts>, or remove the script/BMC policy that lowered "
                   "it) and make it persistent; the operator, not the acceptance suite, changes it.",
       rule="The enforced power limit (nvidia-smi -q -x enforced_power_limit, 570+ current_power_limit; NVML "
            "nvmlDeviceGetEnforcedPowerLimit) equals config.power_limit_w, else the board's default_power_limit "
            "(nvmlDeviceGetPowerManagementDefaultLimit), within config.power_tolerance_w (default 1 W). A limit "
            "left lowered after a repair FAILs. Not reported -> ERROR.")
def power_limit(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    lim, dflt = g.power_limit_w, g.power_limit_default_w
    want = spec.config.power_limit_w
    src = "config.power_limit_w" if want is not None else "the board default"
    want = want if want is not None else dflt
    obs = f"enforced {fmt(lim)} W, default {fmt(dflt)} W"
    kw = dict(evidence=obs, evidence_keys=("smi.qx",))
    if not isinstance(want, (int, float)) or isinstance(want, bool):
        return Result.errored(f"{name}: default power limit {'N/A' if want is NA else 'not reported'}: set "
                              "config.power_limit_w", "", obs, **kw)
    expected = f"{want:g} W ({src}) +/- {spec.config.power_tolerance_w:g} W"
    if not isinstance(lim, (int, float)) or isinstance(lim, bool):
        return Result.errored(f"{name}: enforced power limit {'N/A' if lim is NA else 'not reported'}", expected, obs, **kw)
    if abs(lim - want) > spec.config.power_tolerance_w:
        how = "lowered" if lim < want else "raised"
        return Result.failed(expected, obs, f"{name}: enforced power limit {lim:g} W {how} from {want:g} W ({src})", **kw)
    return Result.passed(expected, obs, **kw)


def _predates_mig(facts) -> str | None:
    """'driver 440.59 predates MIG (first in the 450 branch)' when the loaded driver is older than MIG, else None
    (unknown driver version included: then nothing is settled)."""
    try:
        ver = loaded_driver_version(facts)
    except EvidenceError:
        ver, _ = optional(facts, "smi_driver_version")     # nvidia-smi's own header, as NG-GSP-002 reads it
        if not ver:
            return None
    major = ver.split(".")[0]
    if major.isdigit() and int(major) < MIG_FIRST_DRIVER_BRANCH:
        return f"driver {ver} predates MIG (first in the {MIG_FIRST_DRIVER_BRANCH} branch)"
    return None


@check(id="NG-CFG-003", name="mig_mode", title="MIG mode as specified",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       remediation="Set the specified MIG mode (nvidia-smi -i <gpu> -mig 0|1) and reset the GPU (a pending change "
                   "waits for the reset).",
       rule="MIG mode current and pending (nvidia-smi mig_mode/current_mig, pending_mig) equal config.mig "
            "(default disabled: acceptance expects MIG off unless the site configures it). A board without MIG "
            "(N/A) counts as disabled, and so does a GPU under a driver older than the 450 branch that "
            "introduced MIG (its output has no mig_mode element). Pending different from current FAILs (a change "
            "waiting for a GPU reset). config.mig=any -> SKIP; not reported on a 450+ (or unknown) driver -> ERROR.")
def mig_mode(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    want = spec.config.mig
    if want == "any":
        return Result.skipped("config.mig=any: MIG mode not enforced", expected="config.mig=any")
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    cur, pend = g.mig_mode_current, g.mig_mode_pending
    word = lambda v: "N/A (not supported)" if v is NA else fmt(v).replace("Yes", "Enabled").replace("No", "Disabled")  # noqa: E731
    obs = f"MIG current {word(cur)}, pending {word(pend)}"
    expected = f"MIG {want} (config.mig)"
    kw = dict(evidence=obs, evidence_keys=("smi.qx",))
    if cur is None:
        old = _predates_mig(facts)
        if old is None:
            return Result.errored(f"{name}: MIG mode not reported", expected, obs, **kw)
        # the driver cannot run MIG: the GPU is not in MIG mode, whatever the board
        obs = f"MIG not reported: the {old}"
        kw["evidence"] = obs
        if want == "enabled":
            return Result.failed(expected, obs, f"{name}: MIG cannot be enabled: the {old}, config.mig={want}", **kw)
        return Result.passed(expected, obs, **kw)
    target = want == "enabled"
    effective = False if cur is NA else cur
    if effective != target:
        return Result.failed(expected, obs, f"{name}: MIG {word(cur)}, config.mig={want}", **kw)
    if isinstance(pend, bool) and pend != effective:
        return Result.failed(expected, obs, f"{name}: MIG change pending ({word(cur)} -> {word(pend)} after a GPU "
                             "reset)", **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-CFG-004", name="compute_mode", title="Compute mode as specified",
       scope="gpu", severity="minor", evidence=("smi.qx", "nvml.json"),
       remediation="Set the compute mode (nvidia-smi -i <gpu> -c DEFAULT|EXCLUSIVE_PROCESS|PROHIBITED) and make "
                   "it persistent (it resets with the driver unless persistence is kept).",
       rule="compute_mode (nvidia-smi; NVML nvmlDeviceGetComputeMode) is config.compute_mode (a mode or a list; "
            "default Default, NVIDIA's default mode). config.compute_mode=any -> SKIP; not reported -> ERROR.")
def compute_mode(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    want = spec.config.compute_mode
    if want == "any":
        return Result.skipped("config.compute_mode=any: compute mode not enforced", expected="config.compute_mode=any")
    allowed = [want] if isinstance(want, str) else list(want)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    cm = g.compute_mode
    expected = "compute mode " + " or ".join(allowed)
    kw = dict(evidence=f"compute_mode: {fmt(cm)}", evidence_keys=("smi.qx",))
    if not isinstance(cm, str):
        return Result.errored(f"{name}: compute mode {'N/A' if cm is NA else 'not reported'}", expected, fmt(cm), **kw)
    norm = {a.lower(): a for a in allowed}
    if cm.lower() not in norm:
        return Result.failed(expected, cm, f"{name}: compute mode {cm}, not {' or '.join(allowed)}", **kw)
    return Result.passed(expected, cm, **kw)
