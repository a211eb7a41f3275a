"""Kernel log (driver health since boot): NVRM/Xid events mapped to GPUs (catalog "Kernel log")."""

from __future__ import annotations

import re

from ..errors import EvidenceError
from ..outcomes import Result
from ..spec.sxid import sxid_info
from ..spec.xid import xid_fail_set, xid_info
from . import check
from ._util import gpu_for, gpu_label, lines, loaded_driver_version, optional, same_bus, spec_or_default

# Event kinds that FAIL by themselves (catalog "Kernel log").
FAIL_KINDS = {
    "fallen_off_bus": "GPU has fallen off the bus",
    "rm_init_adapter_failed": "RmInitAdapter failed (GPU could not be initialised)",
    "gsp_init_failed": "GSP firmware failed to boot",
    "api_mismatch": "NVRM API mismatch (kernel module vs client versions)",
    "requires_open": "GPU requires the NVIDIA open kernel modules",
    "open_unsupported_gpu": "the open kernel module refuses this GPU ('only ready for use on Data Center GPUs')",
    "probe_not_called": "NVIDIA probe routine not called (another driver such as nouveau owns the device)",
    # issue 39.2: failures NVIDIA's driver logs without an Xid
    "nvlink_training_failed": "NVLink link training failed (postRxDetLinkMask / Rx Detect / ALI error)",
    "fsp_boot_failed": "FSP boot of the GSP firmware failed (GSP-FMC never started)",
}


#: "Xid 45 ... caused by previous Xid N": the driver names the root cause of a cleanup Xid
#: (open-gpu-kernel-modules, rc_engine.c: " caused by previous Xid %d"); the verdict follows N
_ROOT_CAUSE = re.compile(r"caused by previous Xid (\d{1,4})")

#: Xid 154 actions that leave the GPU serviceable (catalog: "None"; "Drain P2P" is a fabric action)
_NO_ACTION_154 = {"none"}

#: outcome of one event: FAIL, ERROR (an Xid the catalog does not know), or informational
FAIL, UNKNOWN, INFO = "fail", "unknown", "info"


def verdict_of(ev, fail_xids) -> tuple[str, str]:
    """(FAIL | UNKNOWN | INFO, description) of one KernelEvent. Xids: NVIDIA's catalog
    (nodegate/data/xid.yaml): the immediate action decides (issue 39.1); Xid 154 by the action it
    names; an Xid 45 "caused by previous Xid N" as Xid N; an Xid the catalog lacks is UNKNOWN
    (ERROR "not in the catalog: review", never PASS)."""
    if ev.kind == "xid" and ev.xid is not None:
        xid, via = ev.xid, ""
        if xid == 45 and (m := _ROOT_CAUSE.search(ev.text or "")) and int(m.group(1)) != 45:
            # (the driver also writes "caused by previous Xid 45" on a cleanup: corpus 122)
            xid, via = int(m.group(1)), "Xid 45 caused by previous "
        info = xid_info(xid)
        link = f" on NVLink {ev.details['nvlink_link']}" if ev.details.get("nvlink_link") else ""
        if info is None:
            return UNKNOWN, f"{via}Xid {xid} is not in the catalog{link}"
        action = ev.details.get("recovery_action") or info.action
        desc = f"{via}Xid {xid} ({info.name}{link}; {info.severity}; action: {action})"
        if xid == 154 and ev.details.get("recovery_action"):
            # the driver states the recovery it requires (catalog: None, Drain P2P, Drain and Reset,
            # GPU Reset Required, Node Reboot Required)
            bad = action.strip().lower() not in _NO_ACTION_154
            return (FAIL if bad and xid in fail_xids else INFO), desc
        return (FAIL if xid in fail_xids else INFO), desc
    if ev.kind == "sxid":
        # NVSwitch SXids: their own catalog (nodegate/data/sxid.yaml, Fabric Manager User Guide)
        fat = ev.details.get("fatal")
        info = sxid_info(int(ev.details.get("sxid", 0)), {"yes": True, "no": False}.get(fat))
        return (FAIL if info.fail else INFO), (
            f"SXid {info.sxid} ({info.name}; {'fatal' if info.fatal or fat == 'yes' else 'non-fatal'}; "
            f"action: {info.action}) on {ev.details.get('device', 'NVSwitch')}")
    if ev.kind in FAIL_KINDS:
        return FAIL, FAIL_KINDS[ev.kind]
    return INFO, ev.kind


def _summary(events, fail_xids) -> tuple[list[str], list[str], list[str]]:
    """(failing, informational, unknown-Xid) descriptions, each "<desc> at <bus> xN"."""
    out = {FAIL: {}, INFO: {}, UNKNOWN: {}}
    for ev in events:
        if ev.kind in ("other", "loading_banner", "persistence_legacy"):
            continue
        v, desc = verdict_of(ev, fail_xids)
        where = f" at {ev.bus_id}" if ev.bus_id else ""
        d = out[v]
        d[desc + where] = d.get(desc + where, 0) + 1
    fmt = lambda d: [f"{k}" + (f" x{n}" if n > 1 else "") for k, n in d.items()]  # noqa: E731
    return fmt(out[FAIL]), fmt(out[INFO]), fmt(out[UNKNOWN])


def _unknown_result(unknown: list[str], expected: str, obs: str, facts, kw) -> Result:
    """ERROR for Xids the catalog lacks (issue 39.1): "Xid N is not in the catalog (driver V): review"."""
    try:
        drv = loaded_driver_version(facts)
    except EvidenceError:   # the version only names the catalog's branch in the message
        drv = None
    return Result.errored(f"{'; '.join(unknown)} (driver {drv or 'version unknown'}): review it against NVIDIA's "
                          "Xid catalog (https://docs.nvidia.com/deploy/xid-errors/) and add it to "
                          "nodegate/data/xid.yaml or kernel_log.xid_fail", expected, obs, **kw)


def _cut_note(facts) -> str:
    """", kept 11005 of 13002 lines (every line that can decide a verdict)" when the probe cut
    the log without losing such a line (``kernel_events`` raises when it lost one), else ""."""
    cut, _ = optional(facts, "kernel_log_cut")
    if cut is None or cut.seen == cut.kept:
        return ""
    return f", kept {cut.kept} of {cut.seen} lines: every line that can decide a verdict, and the last ones"


def _history(facts, spec, keep) -> str:
    """'; history (earlier boots, not judged): Xid 62 (...) at 0000:03:00.0 x3' for the earlier
    boots' events ``keep`` selects (``kernel.history``, a converted nvidia-bug-report), else ''.
    The checks judge the current boot, as on a live node (tests/bugreports/README.md)."""
    hist, _ = optional(facts, "kernel_history")
    events = [e for e in hist or [] if keep(e)]
    fails, infos, _ = _summary(events, xid_fail_set(spec))
    shown = fails + infos
    return f"; history (earlier boots, not judged): {'; '.join(shown)}" if shown else ""


def _disabled(spec) -> Result | None:
    if not spec.kernel_log.enabled:
        return Result.skipped("kernel_log.enabled=false", expected="kernel_log.enabled=false")
    return None


_REMEDIATION = ("Drain the node; act on each event's action (reset the GPU, reboot, reseat/replace riser or GPU, "
                "RMA when row remapping failed); API mismatch: reboot so module and user space match; nouveau: "
                "blacklist it and rebuild the initramfs; requires open: install the open kernel modules; open refused: the "
                "proprietary modules (or NVreg_OpenRmEnableUnsupportedGpus=1).")


@check(id="NG-LOG-001", name="kernel_log_node", title="No driver failures in the kernel log (node-wide)",
       scope="node", severity="critical", evidence=("kernel.log", "smi.qx"), remediation=_REMEDIATION,
       rule="NVRM lines since boot (dmesg, dmesg -T/iso/--decode, journal, talosctl; continuation lines joined). "
            "Node-wide events and events on a bus id that is not an observed GPU FAIL on: an Xid whose immediate "
            "action in NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html, "
            "nodegate/data/xid.yaml; or kernel_log.xid_fail) is an action on the GPU or node (RESET_GPU, RESTART_BM, "
            "CONTACT_SUPPORT, ...; IGNORE and RESTART_APP are informational), Xid 154 naming a recovery action, "
            "an Xid 45 'caused by previous Xid N' as Xid N; an Xid the catalog lacks is ERROR (review), never PASS; "
            "an NVSwitch SXid that "
            "its catalog fails (nodegate/data/sxid.yaml from the Fabric Manager User Guide), 'has fallen off the "
            "bus', RmInitAdapter failed, GSP boot failure, API mismatch, 'requires use of the NVIDIA open kernel "
            "modules', 'Open nvidia.ko is only ready for use on Data Center GPUs', 'probe routine was not called'. Unreadable log (permission) -> ERROR, never PASS; so is an "
            "empty item without the probe's source line, and a log the probe cut with a deciding line lost "
            "(it keeps every such line wherever it is, and records seen/kept lines).",
       gpu_less=True)
def kernel_log_node(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if (r := _disabled(spec)) is not None:
        return r
    events = facts.kernel_events
    src, _ = optional(facts, "kernel_log_source")
    gpus, gerr = optional(facts, "gpus")
    known = [g.pci_bus_id for g in gpus or [] if g.pci_bus_id]
    mine = [e for e in events if not (e.bus_id and any(same_bus(e.bus_id, b) for b in known))]
    fx = xid_fail_set(spec)
    fails, infos, unknown = _summary(mine, fx)
    expected = "no failing NVRM events outside the per-GPU results"
    obs = ("; ".join(fails) or "no failing node-wide events") + (f"; informational: {'; '.join(infos)}" if infos
                                                                  else "") + f" ({len(events)} records, {src or 'log'}{_cut_note(facts)})"
    if gerr is not None:
        obs += f"; GPUs unreadable ({gerr.reason}): every event counted here"
    obs += _history(facts, spec, lambda e: not (e.bus_id and any(same_bus(e.bus_id, b) for b in known)))
    bad_ev = [e for e in mine if verdict_of(e, fx)[0] != INFO]
    kw = dict(evidence=lines(*(e.text for e in bad_ev[:12])), evidence_keys=("kernel.log",))
    if fails:
        return Result.failed(expected, obs, "kernel log: " + "; ".join(fails + unknown), **kw)
    if unknown:
        return _unknown_result(unknown, expected, obs, facts, kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-LOG-002", name="kernel_log_gpu", title="No driver failures in the kernel log for this GPU",
       scope="gpu", severity="critical", evidence=("kernel.log", "smi.qx"), remediation=_REMEDIATION,
       rule="The same events as NG-LOG-001 whose PCI bus id (PCI:dddd:bb:dd, domains may be non-zero) is this GPU's. "
            "Xid 63/64 cross-check the memory checks (NG-MEM-001/002).")
def kernel_log_gpu(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    if (r := _disabled(spec)) is not None:
        return r
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    if not g.pci_bus_id:
        # events are matched by bus id: without one none can match, which is no evidence of a clean log
        return Result.errored(f"{name}: PCI bus id not reported; kernel log events cannot be mapped to this GPU",
                              "no failing NVRM events for this GPU", "bus id not reported",
                              evidence_keys=("smi.qx", "kernel.log"))
    events = [e for e in facts.kernel_events if e.bus_id and same_bus(e.bus_id, g.pci_bus_id)]
    fx = xid_fail_set(spec)
    fails, infos, unknown = _summary(events, fx)
    expected = f"no failing NVRM events for {g.pci_bus_id}"
    obs = ("; ".join(fails) or "no failing events") + (f"; informational: {'; '.join(infos)}" if infos else "")
    obs += f" ({_cut_note(facts).lstrip(', ')})" if _cut_note(facts) else ""
    obs += _history(facts, spec, lambda e: bool(e.bus_id and same_bus(e.bus_id, g.pci_bus_id)))
    bad_ev = [e for e in events if verdict_of(e, fx)[0] != INFO]
    kw = dict(evidence=lines(*(e.text for e in bad_ev[:12])), evidence_keys=("kernel.log",))
    if fails:
        xids = {e.xid for e in bad_ev if e.kind == "xid"}
        cross = " (cross-check NG-MEM-001/NG-MEM-002)" if xids & {48, 63, 64, 94, 95} else ""
        return Result.failed(expected, obs, f"{name}: " + "; ".join(fails + unknown) + cross, **kw)
    if unknown:
        return _unknown_result(unknown, expected, obs, facts, kw)
    return Result.passed(expected, obs, **kw)
