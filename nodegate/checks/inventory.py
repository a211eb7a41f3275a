"""Inventory: GPU count and model (catalog "Inventory")."""

from __future__ import annotations

from ..facts import normalize_bus_id
from ..outcomes import Result
from ..spec import sku_profile
from . import check
from ._util import gpu_for, gpu_label, lines, optional, same_bus, spec_or_default


def _lost_bus_ids(facts, seen: list[str], errors: list | None = None) -> dict[str, str]:
    """Bus ids the kernel log or the driver knows but nvidia-smi/NVML does not list -> why.
    EvidenceErrors of the kernel log / driver GPU list are appended to ``errors``."""
    lost: dict[str, str] = {}
    errors = errors if errors is not None else []
    events, eerr = optional(facts, "kernel_events")
    if eerr is not None:
        errors.append(eerr)
    for e in events or []:
        if e.bus_id and (e.kind == "fallen_off_bus" or (e.kind == "xid" and e.xid == 79)) and \
                not any(same_bus(e.bus_id, s) for s in seen):
            lost.setdefault(e.bus_id, "fell off the bus (kernel log" + (f" Xid {e.xid})" if e.xid else ")"))
        if e.bus_id and e.kind in ("rm_init_adapter_failed", "gsp_init_failed", "requires_open") and \
                not any(same_bus(e.bus_id, s) for s in seen):
            lost.setdefault(e.bus_id, f"failed to initialise (kernel log: {e.kind})")
    bound, berr = optional(facts, "driver_gpus")
    if berr is not None:
        errors.append(berr)
    for d in bound or []:
        b = d.get("Bus Location")
        if b and not any(same_bus(b, s, function=True) for s in seen):
            lost.setdefault(normalize_bus_id(b), "bound by the nvidia module but not reported by nvidia-smi/NVML")
    return lost


@check(id="NG-INV-001", name="gpu_count", title="GPU count as specified, none lost",
       scope="node", severity="critical", evidence=("smi.qx", "nvml.json", "kernel.log", "driver.gpus_information"),
       remediation="Drain the node and reboot; a GPU that stays missing or falls off again: reseat or replace the "
                   "riser/GPU and check its power; RMA if it persists.",
       rule="Observed GPUs equal gpu.count (at least one when unset). A GPU nvidia-smi cannot get a handle for "
            "('Unable to determine the device handle for GPU<bus id>'), one that fell off the bus (Xid 79 / 'has "
            "fallen off the bus', sometimes with no Xid) or failed RmInitAdapter, or one the module bound but "
            "NVML does not list, is a missing GPU named by bus id; gpu.bus_ids names expected slots.")
def gpu_count(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.gpu.count
    expected = f"{want} GPU(s)" if want else "at least 1 GPU (gpu.count not set)"
    keys = ("smi.qx", "kernel.log")
    smi_err, _ = optional(facts, "smi_error")
    handle = {}
    if smi_err is not None and smi_err.kind == "device_handle" and smi_err.bus_id:
        handle[normalize_bus_id(smi_err.bus_id)] = f"nvidia-smi: device handle {smi_err.reason or 'error'}"
    gpus, gerr = optional(facts, "gpus")
    if gpus is None:
        if smi_err is not None and smi_err.kind in ("device_handle", "no_devices"):
            gpus = []
        else:
            raise gerr
    seen = [g.pci_bus_id for g in gpus if g.pci_bus_id]
    missing = dict(handle)
    read_errs: list = []
    missing.update({b: why for b, why in _lost_bus_ids(facts, seen, read_errs).items() if b not in missing})
    for b in spec.gpu.bus_ids or []:
        nb = normalize_bus_id(b)
        if not any(same_bus(nb, s, function=True) for s in seen) and not any(same_bus(nb, m) for m in missing):
            missing[nb] = "expected (gpu.bus_ids) but not observed"
    n = len(gpus)
    obs = f"{n} GPU(s)" + (": " + ", ".join(seen) if seen else "")
    if missing:
        obs += "; missing: " + "; ".join(f"{b} {why}" for b, why in missing.items())
    ev = lines(smi_err.message if smi_err is not None else None,
               *(f"{gpu_label(g)} {g.name}" for g in gpus))
    if (want is not None and n != want) or (want is None and n == 0) or missing:
        if want is not None and n < want and not missing:
            slots = ", ".join(f"gpu{i}" for i in range(n, want))
            msg = f"{want - n} GPU(s) missing (slots {slots}; set gpu.bus_ids to name them)"
        elif want is not None and n > want:
            msg = f"{n} GPUs observed, {want} specified"
        else:
            msg = (f"{n} of {want if want is not None else '>=1'} GPUs" +
                   ("; missing: " + "; ".join(f"{b} {why}" for b, why in missing.items()) if missing else ""))
        return Result.failed(expected, obs, msg, evidence=ev, evidence_keys=keys)
    if want is None and read_errs:
        # without gpu.count a lost GPU shows only in the kernel log / driver GPU list: unread, no evidence
        why = "; ".join(f"{e.key}: {e.reason}" for e in read_errs)
        return Result.errored(f"gpu.count not set and a lost GPU cannot be ruled out: could not read {why}",
                              expected, obs + f"; unread: {why}", evidence=ev,
                              evidence_keys=keys + tuple(e.key for e in read_errs if e.key not in keys))
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-INV-002", name="gpu_model", title="GPU model as specified",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Install the specified GPU model in this slot (or correct gpu.model / gpu.sku); a missing GPU: "
                   "drain, reboot, reseat or replace.",
       rule="product name contains gpu.model (a substring, or one of a list; case-insensitive) "
            "(gpu.sku only selects the SKU profile); a slot the spec expects but the node lacks (gpu.count) FAILs as missing.")
def gpu_model(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    models = spec.gpu.model
    models = [models] if isinstance(models, str) else list(models or [])
    # the Expected column shows the value (H100 80GB HBM3), not a Python repr; the message quotes it
    expected = " or ".join(models) if models else "any model (gpu.model not set)"
    if gpu is not None and not gpu.present:
        where = gpu.pci_bus_id or "bus id unknown"
        return Result.failed(expected, "absent", f"GPU {gpu.index} ({where}) missing: the spec expects "
                             f"{spec.gpu.count} GPUs", evidence_keys=("smi.qx",))
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    prof = sku_profile(g.pci_device_id)
    obs = f"{g.name} (device id {g.pci_device_id or 'unknown'}" + (f", SKU profile {prof.name})" if prof else ")")
    ev = lines(f"product_name: {g.name}", f"pci_device_id: {g.pci_device_id}")
    kw = dict(evidence=ev, evidence_keys=("smi.qx",))
    bad = []
    if models and not any(m.lower() in (g.name or "").lower() for m in models):
        bad.append(f"model {g.name!r} is not {' or '.join(repr(m) for m in models)}")
    if bad:
        return Result.failed(expected, obs, f"{name}: " + "; ".join(bad), **kw)
    return Result.passed(expected, obs, **kw)
