"""Inventory: GPU count and model (catalog "Inventory")."""

from __future__ import annotations

import re

from ..facts import normalize_bus_id
from ..outcomes import Result
from ..spec import sku_profile
from ..spec.products import model_matches, resolve
from . import check
from ._util import raw_gpu, gpu_for, gpu_label, lines, missing_gpu_name, optional, same_bus, spec_or_default
from .slots import identity_conflicts
from .slots import lost_bus_ids as _lost_bus_ids
from .slots import pci_gpus as _pci_gpus


def _disagreements(facts, gpus, seen: list[str], read_errs: list) -> list[str]:
    """Where the node's own GPU lists contradict each other (issue 17): the attached count
    nvidia-smi prints against the GPUs it lists, a listed GPU without its PCI function, GPUs
    that share a bus id, serial or UUID. Each entry names what disagrees."""
    out = []
    rep, _ = optional(facts, "smi_report")
    attached = getattr(rep, "attached_gpus", None)
    if isinstance(attached, int) and attached != len(gpus) and getattr(facts, "gpu_source", "smi_xml") == "smi_xml":
        out.append(f"nvidia-smi reports {attached} attached GPU(s) but lists {len(gpus)}")
    pci, where = _pci_gpus(facts, [])
    if pci:
        nolink = [b for b in seen if not any(same_bus(b, p, function=True) for p in pci)]
        if nolink:
            out.append(f"listed but without an NVIDIA PCI function in {where}: " + ", ".join(nolink))
    out += list(identity_conflicts(gpus).values())
    return out


@check(id="NG-INV-001", name="gpu_count", title="GPU count as specified, none lost",
       scope="node", severity="critical", evidence=("smi.qx", "nvml.json", "kernel.log", "driver.gpus_information",
                                                    "pci.sysfs"),
       remediation="Drain the node and reboot; a GPU that stays missing or falls off again: reseat or replace the "
                   "riser/GPU and check its power; RMA if it persists.",
       rule="Observed GPUs equal gpu.count (at least one when unset; 0: a node without GPUs, where only PCI "
            "and the driver's list are read, every GPU check SKIPs naming gpu.count). A GPU nvidia-smi cannot get a handle for "
            "('Unable to determine the device handle for GPU<bus id>'), one that fell off the bus (Xid 79 / 'has "
            "fallen off the bus', sometimes with no Xid) or failed RmInitAdapter, one the module bound "
            "(/proc/driver/nvidia/gpus) or PCI shows (an NVIDIA display-class function in sysfs) but NVML does "
            "not list, is a missing GPU named by bus id; gpu.bus_ids names expected slots. With or without "
            "gpu.count the node's lists must agree: nvidia-smi's attached count equals the GPUs it lists, every "
            "listed GPU has its PCI function, and no two GPUs share a bus id, serial or UUID (those GPUs' own "
            "checks are ERROR).",
       gpu_less=True)
def gpu_count(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.gpu.count
    expected = f"{want} GPU(s)" if want is not None else "at least 1 GPU (gpu.count not set)"
    expected += ", in agreement across nvidia-smi, the driver and PCI"
    keys = ("smi.qx", "kernel.log")
    smi_err, _ = optional(facts, "smi_error")
    handle = {}
    if smi_err is not None and smi_err.kind == "device_handle" and smi_err.bus_id:
        handle[normalize_bus_id(smi_err.bus_id)] = f"nvidia-smi: device handle {smi_err.reason or 'error'}"
    gpus, gerr = optional(facts, "gpus")
    if gpus is None:
        if smi_err is not None and smi_err.kind in ("device_handle", "no_devices"):
            gpus = []
        elif want == 0:
            # a node the spec says has no GPUs may have no nvidia-smi at all: the driver's list and
            # PCI (an NVIDIA display-class function) must show none, and must have been read
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
    disagree = _disagreements(facts, gpus, seen, read_errs)
    n = len(gpus)
    obs = f"{n} GPU(s)" + (": " + ", ".join(seen) if seen else "")
    if missing:
        obs += "; missing: " + "; ".join(f"{b} {why}" for b, why in missing.items())
    if disagree:
        obs += "; " + "; ".join(disagree)
    ev = lines(smi_err.message if smi_err is not None else None,
               *(f"{gpu_label(g)} {g.name}" for g in gpus))
    if (want is not None and n != want) or (want is None and n == 0) or missing or disagree:
        if want is not None and n < want and not missing:
            slots = ", ".join(f"gpu{i}" for i in range(n, want))
            msg = f"{want - n} GPU(s) missing (slots {slots}; set gpu.bus_ids to name them)"
        elif want is not None and n > want:
            msg = f"{n} GPUs observed, {want} specified"
        elif missing or (want is not None and n != want) or (want is None and n == 0):
            msg = (f"{n} of {want if want is not None else '>=1'} GPUs" +
                   ("; missing: " + "; ".join(f"{b} {why}" for b, why in missing.items()) if missing else ""))
        else:
            msg = f"{n} GPU(s), but the node's GPU lists disagree"
        if disagree:
            msg += ": " + "; ".join(disagree)
        return Result.failed(expected, obs, msg, evidence=ev, evidence_keys=keys + ("pci.sysfs",))
    if want in (None, 0) and read_errs:
        # without gpu.count a lost GPU shows only in the kernel log / driver GPU list / PCI; with
        # gpu.count 0 those are the only proof of no GPU at all: unread, no evidence
        why = "; ".join(f"{e.key}: {e.reason}" for e in read_errs)
        lead = "gpu.count not set and a lost GPU" if want is None else "gpu.count 0 and a GPU"
        return Result.errored(f"{lead} cannot be ruled out: could not read {why}",
                              expected, obs + f"; unread: {why}", evidence=ev,
                              evidence_keys=keys + tuple(e.key for e in read_errs if e.key not in keys))
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-INV-002", name="gpu_model", title="GPU model as specified",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Install the specified GPU model in this slot (or correct gpu.model / gpu.sku); a missing GPU: "
                   "drain, reboot, reseat or replace.",
       rule="product name matches gpu.model by whole words (or one of a list; case-insensitive; a name listed in "
            "nodegate/data/gpu_products.yaml accepts exactly that product: H200 refuses H200 NVL and GH200), and the "
            "PCI device id is gpu.device_id when set (an unreadable id is then ERROR) "
            "(gpu.sku only selects the SKU profile); a slot the spec expects but the node lacks (gpu.count) FAILs as missing.")
def gpu_model(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    models = spec.gpu.model
    models = [models] if isinstance(models, str) else list(models or [])
    # the Expected column shows the value (H100 80GB HBM3), not a Python repr; the message quotes it
    expected = " or ".join(models) if models else "any model (gpu.model not set)"
    if gpu is not None and not gpu.present:
        return Result.failed(expected, "absent", f"{missing_gpu_name(gpu)} missing: the spec expects "
                             f"{spec.gpu.count} GPUs", evidence_keys=("smi.qx",))
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    dev = raw_gpu(g).pci_device_id   # shown only: an unreadable id must not void the model check
    prof = sku_profile(dev)
    obs = f"{g.name} (device id {dev or 'unknown'}" + (f", SKU profile {prof.name})" if prof else ")")
    ev = lines(f"product_name: {g.name}", f"pci_device_id: {dev}")
    kw = dict(evidence=ev, evidence_keys=("smi.qx",))
    bad = []
    if models and not any(model_matches(m, g.name) for m in models):
        is_ = resolve(g.name)
        bad.append(f"model {g.name!r} is not {' or '.join(repr(m) for m in models)}"
                   + (f" (it is the {is_}: nodegate/data/gpu_products.yaml)" if is_ else ""))
    want_ids = spec.gpu.device_id
    if want_ids:
        want_ids = [want_ids] if isinstance(want_ids, str) else list(want_ids)
        if not dev or not re.fullmatch(r"[0-9a-f]{4}", str(dev)):
            return Result.errored(f"{name}: gpu.device_id is set but the GPU's PCI device id is "
                                  f"{'not reported' if not dev else f'unreadable ({dev!r})'}",
                                  expected, obs, **kw)
        if str(dev) not in want_ids:
            bad.append(f"PCI device id {dev} is not gpu.device_id {' or '.join(want_ids)}")
    if bad:
        return Result.failed(expected, obs, f"{name}: " + "; ".join(bad), **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-INV-003", name="node_identity", title="One machine per node of the run",
       scope="node", severity="critical", evidence=("meta.boot_id", "meta.machine_id"),
       action="fix configuration",   # correct the inventory (the reboot is for cloned machine ids)
       remediation="Correct the inventory: two names that reach one machine (the same ansible_host and port, "
                   "a DNS alias, a jump host) gather that machine twice and leave the other untested. Distinct "
                   "machines with one machine id are clones of one image: remove /etc/machine-id, run "
                   "systemd-machine-id-setup and reboot (machine-id(5)).",
       rule="No other node of the run reports this node's boot id (/proc/sys/kernel/random/boot_id: one running "
            "kernel) or machine id (/etc/machine-id: one installation, machine-id(5)); when one does, both are "
            "ERROR naming each other, since neither node's evidence can be attributed. Run after every node is "
            "gathered; with two or more nodes, a node whose boot id and machine id both cannot be read is ERROR. "
            "A node alone in its run passes.",
       gpu_less=True)
def node_identity(facts, spec) -> Result:
    boot, berr = optional(facts, "boot_id")
    mid, merr = optional(facts, "machine_id")
    view = getattr(facts, "run_identity", None)
    view = view() if callable(view) else None
    expected = "no other node of the run with this boot id or machine id"
    mid_txt = mid or ("none on the node" if merr is None else f"unreadable ({merr.reason})")
    obs = f"boot id {boot or f'unreadable ({berr.reason})'}, machine id {mid_txt}"
    keys = ("meta.boot_id", "meta.machine_id")
    if berr is not None and merr is not None and berr.reason.startswith("node not gathered"):
        raise berr   # nothing of the node to compare
    # the same observed text whatever else is in the run: a node's result does not depend on others
    if view is None or view.others == 0:
        return Result.passed(expected, obs + "; no other node in this run", evidence_keys=keys)
    if view.clashes:
        # each group named once, bounded (ClashGroup.phrase): N copies of one bundle must not make
        # every node's message name the N-1 others (issue 31, item 9)
        same = "; ".join(g.phrase() for g in view.clashes)
        boot_clash = any(g.what == "boot id" for g in view.clashes)
        many = any(g.count > 1 for g in view.clashes)
        why = ((f"one running machine answered for {'all of them' if many else 'both'} (two inventory names for "
                "one address?)") if boot_clash else "one installation, or machines cloned from one image")
        whose = "no node of the group has evidence that" if many else "neither node's evidence"
        return Result.errored(f"{same}: {why}; {whose} can be attributed to it", expected,
                              obs + f"; {same}", evidence=lines(f"boot_id: {boot}", f"machine_id: {mid}"),
                              evidence_keys=keys)
    if boot is None and mid is None:
        return Result.errored(f"neither the boot id nor the machine id could be read: this node cannot be told apart "
                              f"from the run's {view.others} other node(s)", expected, obs, evidence_keys=keys)
    return Result.passed(expected, obs + "; no other node of the run reports either", evidence_keys=keys)
