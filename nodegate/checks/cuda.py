"""CUDA compatibility and the SKU's minimum driver (issue 19 item 8).

Layering (NVIDIA CUDA Compatibility guide): a driver at or above a toolkit's own minimum runs it
fully (CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver Versions"); at or above
the major version's first driver it runs it through minor version compatibility, with limitations
(no PTX JIT of newer PTX, no features of newer drivers); below that only the cuda-compat forward
compatibility package helps, which nodegate does not read. Table: nodegate/data/cuda.yaml.
"""

from __future__ import annotations

from ..outcomes import Result
from ..spec.cuda import at_least, known_toolkits, minor_version_minimum, toolkit_minimum
from ..spec.links import driver_minimum
from . import check
from ._util import gpu_label, loaded_driver_version, optional, spec_or_default
from .fabric import gpu_identities


def _smi_cuda(facts) -> str:
    rep, _ = optional(facts, "smi_report")
    cv = getattr(rep, "cuda_version", None)
    return f" (nvidia-smi reports CUDA {cv})" if cv else ""


@check(id="NG-CUDA-001", name="cuda_compatibility", title="Driver meets the specified CUDA toolkit's minimum",
       scope="node", severity="critical", evidence=("modules.nvidia_version", "driver.proc_version", "smi.qx"),
       remediation="Install a driver at or above the toolkit's minimum (the CUDA Toolkit Release Notes' table), or "
                   "build for an older toolkit; minor version compatibility (cuda.compatibility: minor_version) "
                   "only when its limitations are acceptable.",
       rule="When the spec names a CUDA toolkit (cuda: '12.8', or {toolkit, compatibility}), the loaded driver "
            "(/sys/module/nvidia/version) is at least the toolkit's documented minimum (nodegate/data/cuda.yaml "
            "from the CUDA Toolkit Release Notes: 12.8 needs 570.26, 13.0 580.65.06); with "
            "cuda.compatibility=minor_version at least the major's minor-version-compatibility minimum (12.x "
            "525.60.13). cuda unset -> SKIP naming cuda; a toolkit not in the table -> ERROR.")
def cuda_compatibility(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if spec.cuda is None:
        return Result.skipped("cuda not set: no CUDA toolkit to check the driver against", expected="cuda")
    tk, compat = spec.cuda.toolkit, spec.cuda.compatibility
    drv = loaded_driver_version(facts)
    try:
        need = toolkit_minimum(tk)
    except KeyError:
        return Result.errored(f"CUDA {tk} is not in nodegate/data/cuda.yaml (known: {', '.join(known_toolkits())})",
                              f"CUDA {tk}", f"driver {drv}", evidence_keys=("modules.nvidia_version",))
    major = tk.split(".")[0]
    try:
        mv = minor_version_minimum(major)
    except KeyError:
        mv = None
    obs = f"driver {drv}{_smi_cuda(facts)}"
    kw = dict(evidence=f"loaded driver {drv}; CUDA {tk} minimum {need}" + (f"; CUDA {major}.x minor version "
              f"compatibility from {mv}" if mv else ""), evidence_keys=("modules.nvidia_version", "smi.qx"))
    expected = f"driver >= {need} (CUDA {tk})" + (f", or >= {mv} (minor version compatibility)" if compat ==
                                                  "minor_version" and mv else "")
    if at_least(drv, need):
        return Result.passed(expected, obs, **kw)
    if compat == "minor_version" and mv and at_least(drv, mv):
        return Result.passed(expected, obs + f": CUDA {major}.x minor version compatibility (no PTX JIT of newer "
                             "PTX, newer driver features unavailable)", **kw)
    hint = (f"; CUDA {major}.x minor version compatibility starts at {mv}: set cuda.compatibility: minor_version if "
            "its limitations are acceptable" if mv and at_least(drv, mv) and compat == "toolkit" else "")
    return Result.failed(expected, obs, f"driver {drv} is below CUDA {tk}'s minimum {need}{hint}", **kw)


@check(id="NG-CUDA-002", name="driver_sku_minimum", title="Driver branch supports every GPU of the node",
       scope="node", severity="critical", evidence=("modules.nvidia_version", "driver.proc_version", "smi.qx"),
       remediation="Install a driver branch that supports the GPU (at or above the SKU's minimum) and reboot.",
       rule="The loaded driver is at least each GPU's minimum: the SKU profile's min_driver (B200 550, B300 600, "
            "from issue 19; see skus.yaml for NVIDIA's conflicting B200 note), else its architecture's first "
            "supporting driver (the CUDA toolkit that introduced it: Ampere 450.51.05, Hopper and Ada 520.61.05, "
            "Turing 410.48, Volta 384.81, Pascal 367.48). A branch minimum compares the branch only. GPUs come from "
            "nvidia-smi/NVML, else the sysfs PCI listing (device ids survive a driver/library mismatch). No minimum "
            "known for a GPU -> ERROR; no GPU identity readable -> ERROR.")
def driver_sku_minimum(facts, spec) -> Result:
    spec = spec_or_default(spec)
    drv = loaded_driver_version(facts)
    gpus = gpu_identities(facts)
    if gpus is None:
        gpus = facts.gpus  # raises the EvidenceError of the GPU listing
    mins: dict[str, tuple[str | None, str, str]] = {}
    for g in gpus:
        m, src = driver_minimum(g, spec)
        mins.setdefault(src, (m, src, gpu_label(g)))
    expected = "driver >= " + "; ".join(f"{m} ({src})" for m, src, _ in mins.values() if m) if any(
        m for m, _, _ in mins.values()) else "a known minimum driver per GPU"
    obs = f"driver {drv}"
    kw = dict(evidence="\n".join(f"{who}: minimum {m or 'unknown'} ({src})" for m, src, who in mins.values()),
              evidence_keys=("modules.nvidia_version", "smi.qx"))
    if not gpus:
        return Result.errored("no GPU reported: nothing to compare the driver with", expected, obs, **kw)
    below = [f"{who} needs {m} ({src})" for m, src, who in mins.values() if m and not at_least(drv, m)]
    if below:
        return Result.failed(expected, obs, f"driver {drv} is below the minimum: " + "; ".join(below), **kw)
    unknown = [src for m, src, _ in mins.values() if not m]
    if unknown:
        return Result.errored("; ".join(unknown), expected, obs, **kw)
    return Result.passed(expected, obs, **kw)
