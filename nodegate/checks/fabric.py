"""NVLink fabric: per-GPU fabric state (Hopper and later) and the node's NVSwitch count (issue 19 items 3-4).

NVSwitch SXid lines in the kernel log are judged with the Xids (NG-LOG-001, catalog
nodegate/data/sxid.yaml); the fabric manager's own unit and version are NG-DRV-001/002.
"""

from __future__ import annotations

import re
from collections import Counter

from ..facts import NA, GpuFacts
from ..outcomes import Result
from ..spec.links import EXTERNAL, nvswitch_expectation
from ..spec.skus import sku_profile
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, optional, spec_or_default

#: nvidia-smi -q fabric state is reported by Hopper and later (NVML nvmlDeviceGetGpuFabricInfo:
#: "Hopper or newer fully supported devices"); A100 HGX fabric health is the fabric manager's.
FABRIC_ARCHS = ("hopper", "blackwell", "rubin")


def _arch(g) -> str:
    a = g.architecture or (sku_profile(g.pci_device_id).architecture if sku_profile(g.pci_device_id) else "")
    return (a or "").lower()


def gpu_identities(facts) -> list | None:
    """The node's GPUs for SKU lookups: nvidia-smi's/NVML's, else the display-class NVIDIA functions
    of the sysfs listing (``pci.sysfs``: device id and bus id survive a driver/library mismatch or a
    hung nvidia-smi); None when neither is readable."""
    gpus, _ = optional(facts, "gpus")
    if gpus is not None:
        return gpus
    links, _ = optional(facts, "pci_links")
    if links is None:
        return None
    return [GpuFacts(index=i, pci_bus_id=lk.bdf, pci_device_id=(lk.device or "").lower().removeprefix("0x") or None,
                     source="sysfs") for i, lk in enumerate(x for x in links if x.role == "gpu")]


def _nvswitch_context(facts, spec):
    """(NVSwitch functions seen or None, their EvidenceError, expected count or None, its source)."""
    seen, err = optional(facts, "nvswitches")
    exp, src = nvswitch_expectation(spec, gpu_identities(facts))
    return seen, err, exp, src


@check(id="NG-FAB-001", name="fabric_state", title="GPU registered with the NVLink fabric (Completed/Success)",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json", "pci.nvswitch"),
       # the first step is software (start the fabric manager); the reset at the end is the escalation
       action="fix configuration",
       remediation="Start nvidia-fabricmanager at the driver version (NG-DRV-001/002) and wait for state "
                   "Completed; if it stays In Progress or Not Started, check the fabric manager log and the "
                   "NVSwitch count (NG-NVSW-001), then reset the GPUs and NVSwitches (reboot).",
       rule="For Hopper and later GPUs behind NVSwitch (fabric.required=auto: NVSwitch functions present or the "
            "SKU profile expects them for this GPU count; true: always): nvidia-smi -q -x fabric/state Completed "
            "and fabric/status Success, health summary Healthy where reported. In Progress or Not Started FAIL "
            "(CUDA then returns 802 'system not yet initialized', corpus 110). Not reported -> ERROR. A stale "
            "Completed while the fabric manager unit failed is NG-DRV-002's FAIL. Pre-Hopper or no NVSwitch "
            "(auto), fabric.required=false -> SKIP.")
def fabric_state(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    req = spec.fabric.required
    if req is False:
        return Result.skipped("fabric.required=false: fabric state not checked", expected="fabric.required=false")
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    keys = ("smi.qx", "pci.nvswitch")
    if req == "auto":
        arch = _arch(g)
        if arch and arch not in FABRIC_ARCHS:
            return Result.skipped(f"fabric.required=auto: {name} is {g.architecture or arch}; fabric state is reported "
                                  "by Hopper and later (an A100 fabric is the fabric manager's, NG-DRV-002)",
                                  expected="fabric.required=auto", evidence_keys=keys)
        seen, err, exp, src = _nvswitch_context(facts, spec)
        if not seen and not exp:
            if seen is None and exp is None:
                raise err  # neither the listing nor an expectation: cannot tell whether NVSwitches apply
            return Result.skipped(f"fabric.required=auto: no NVSwitch on this node ({len(seen or [])} seen; expected "
                                  f"{fmt(exp)} from {src})", expected="fabric.required=auto",
                                  observed=f"fabric state {fmt(g.fabric_state)}", evidence_keys=keys)
    state, status, health = g.fabric_state, g.fabric_status, g.fabric_health
    expected = "fabric state Completed, status Success"
    obs = f"state {fmt(state)}, status {fmt(status)}" + (f", health {fmt(health)}" if health not in (None, NA) else "")
    kw = dict(evidence=lines(f"fabric/state: {fmt(state)}", f"fabric/status: {fmt(status)}",
                             f"fabric/health/summary: {fmt(health)}"), evidence_keys=keys)
    if state is None:
        return Result.errored(f"{name}: fabric state not reported (nvidia-smi -q -x has no <fabric> element: driver "
                              "before R525?)", expected, obs, **kw)
    if state is NA:
        return Result.errored(f"{name}: fabric state N/A on a GPU behind NVSwitch (not reported by this driver or "
                              "in this VM)", expected, obs, **kw)
    if state != "Completed":
        why = ("the GPU has not finished registering with the NVLink fabric (fabric manager not running or still "
               "training the NVSwitches; CUDA returns 802 'system not yet initialized')")
        return Result.failed(expected, obs, f"{name}: fabric state {state}: {why}", **kw)
    if status != "Success":
        return Result.failed(expected, obs, f"{name}: fabric state Completed but status {fmt(status)}", **kw)
    if health not in (None, NA, "Healthy"):
        return Result.failed(expected, obs, f"{name}: fabric health {health}", **kw)
    dom = _domain_problem(facts, spec, g, name)
    if dom is not None:
        outcome, msg, dobs = dom
        if outcome == "fail":
            return Result.failed(expected, obs + dobs, msg, **kw)
        return Result.errored(msg, expected, obs + dobs, **kw)
    cu, cl = g.fabric_cluster_uuid, g.fabric_clique_id
    if isinstance(cu, str) or isinstance(cl, str):
        obs += f", NVLink domain {fmt(cu)} clique {fmt(cl)}"
    return Result.passed(expected, obs, **kw)


_ZERO_UUID = re.compile(r"^[0-]+$")


def _domain_problem(facts, spec, g, name) -> tuple[str, str, str] | None:
    """The NVLink domain a GPU registered in (issue 39.5: an NVL72 rack's GPUs share one ClusterUUID
    and CliqueId; nvidia-smi -q fabric/clusterUuid, fabric/cliqueId): ("fail" | "error", message,
    observed suffix) or None. FAIL: the spec's fabric.cluster_uuid / fabric.clique_id differ, or the
    node's GPUs registered in different domains (the majority named). ERROR: a spec value is set
    but the GPU does not report its domain."""
    cu, cl = g.fabric_cluster_uuid, g.fabric_clique_id
    dobs = f", NVLink domain {fmt(cu)} clique {fmt(cl)}"
    want_cu, want_cl = spec.fabric.cluster_uuid, spec.fabric.clique_id
    has_cu = isinstance(cu, str) and not _ZERO_UUID.match(cu)
    if want_cu or want_cl:
        if (want_cu and not has_cu) or (want_cl and not isinstance(cl, str)):
            return "error", (f"{name}: fabric.cluster_uuid/clique_id set but the GPU reports no NVLink domain "
                             f"(ClusterUUID {fmt(cu)}, CliqueId {fmt(cl)})"), dobs
        bad = []
        if want_cu and cu.lower() != want_cu.lower():
            bad.append(f"ClusterUUID {cu}, not fabric.cluster_uuid {want_cu}")
        if want_cl and str(cl) != str(want_cl):
            bad.append(f"CliqueId {cl}, not fabric.clique_id {want_cl}")
        if bad:
            return "fail", f"{name}: registered in another NVLink domain: " + "; ".join(bad), dobs
    gpus, _ = optional(facts, "gpus")
    doms = Counter((x.fabric_cluster_uuid, x.fabric_clique_id) for x in gpus or []
                   if isinstance(x.fabric_cluster_uuid, str) and not _ZERO_UUID.match(x.fabric_cluster_uuid))
    if has_cu and len(doms) > 1:
        (top, n), = doms.most_common(1)
        if (cu, cl) != top or n * 2 <= sum(doms.values()):
            seen = ", ".join(f"{u} clique {c} x{k}" for (u, c), k in doms.most_common())
            return "fail", (f"{name}: the node's GPUs registered in different NVLink domains ({seen}); this GPU is in "
                            f"{cu} clique {cl}"), dobs
    return None


@check(id="NG-FAB-002", name="imex_daemon", title="IMEX daemon active on an NVLink-domain node (NVL72)",
       scope="node", severity="critical", evidence=("systemd.imex_show", "smi.qx"),
       action="fix configuration",
       remediation="Install and enable nvidia-imex at the driver's version, configure its nodes_config.cfg with "
                   "the NVLink domain's nodes, start it (systemctl enable --now nvidia-imex) and check its log.",
       rule="fabric.imex=auto: on a node whose GPUs are an NVL72 tray (GB200/GB300: skus.yaml nvswitches external), "
            "the nvidia-imex unit (systemctl show nvidia-imex) is loaded and active: NVIDIA's IMEX service exports "
            "GPU memory across the nodes of the NVLink domain (docs.nvidia.com/multi-node-nvlink-systems/imex-guide); "
            "not installed or not active FAILs; unit state unreadable -> ERROR. fabric.imex=true: on any node. "
            "Other nodes (auto), fabric.imex=false -> SKIP naming fabric.imex.")
def imex_daemon(facts, spec) -> Result:
    spec = spec_or_default(spec)
    want = spec.fabric.imex
    if want is False:
        return Result.skipped("fabric.imex=false: IMEX not checked", expected="fabric.imex=false")
    if want == "auto":
        gpus, _ = optional(facts, "gpus")
        nvl = [g for g in gpus or [] if (p := sku_profile(_dev(g))) is not None and p.nvswitches == EXTERNAL]
        if not nvl:
            return Result.skipped("fabric.imex=auto: not an NVL72 tray (no GPU whose NVLink switches sit outside "
                                  "the node)", expected="fabric.imex=auto")
    unit = facts.imex_unit
    keys = ("systemd.imex_show",)
    state = f"{fmt(unit.load_state)}, {fmt(unit.active_state)}/{fmt(unit.sub_state)}" if unit else "no unit"
    expected = "nvidia-imex loaded and active"
    kw = dict(evidence=lines(*(f"{k}={v}" for k, v in (unit.raw.items() if unit else []))), evidence_keys=keys)
    if unit is None or unit.load_state in (None, "not-found"):
        return Result.failed(expected, state, "nvidia-imex is not installed on an NVLink-domain node", **kw)
    if unit.active_state != "active":
        return Result.failed(expected, state, f"nvidia-imex is {fmt(unit.active_state)} ({fmt(unit.sub_state)}, "
                             f"result {fmt(getattr(unit, 'result', None))})", **kw)
    return Result.passed(expected, state, **kw)


def _dev(g) -> str | None:
    v, _ = optional(g, "pci_device_id")
    return v


@check(id="NG-NVSW-001", name="nvswitch_count", title="NVSwitch count as the board has",
       scope="node", severity="critical", evidence=("pci.nvswitch", "smi.qx"),
       remediation="Reseat or replace the NVSwitch baseboard/tray (a missing NVSwitch fell off the bus or was "
                   "never enumerated: check the BMC/SEL and the kernel log), then reboot and check again.",
       rule="The NVIDIA PCI functions of class 0x0680 (NVSwitch bridges) number nvswitch.count, else what the SKU "
            "profile gives for the node's GPU count (HGX A100 8-GPU 6, HGX H100/H200 8-GPU 4, 4-GPU boards and "
            "single GPUs 0, PCIe boards 0). A SKU whose NVLink switches sit outside the node (skus.yaml "
            "nvswitches: external, GB200 NVL72 compute trays) -> SKIP naming it, FAIL if NVSwitch functions "
            "appear. No expectation (unknown SKU, B200/B300 whose NVLink switch chips are not host PCI "
            "functions, an unlisted GPU count) -> ERROR asking for nvswitch.count.")
def nvswitch_count(facts, spec) -> Result:
    spec = spec_or_default(spec)
    seen = facts.nvswitches
    _, _, exp, src = _nvswitch_context(facts, spec)
    devs = sorted({f.device for f in seen if f.device})
    obs = f"{len(seen)} NVSwitch function(s)" + (f": {', '.join(f.bdf for f in seen)}" if seen else "") + (
        f" (device {', '.join(devs)})" if devs else "")
    kw = dict(evidence=lines(*(f"{f.bdf} device {f.device} class {f.pci_class}" for f in seen)) or "no NVIDIA "
              "function of class 0x0680", evidence_keys=("pci.nvswitch",))
    if exp is None:
        return Result.errored(f"no expected NVSwitch count ({src})", "", obs, **kw)
    if exp == EXTERNAL:
        # a GB200 NVL72 compute tray (corpus 121): the NVLink switch chips live in the rack's switch
        # trays, managed off-node; the GPUs' registration with that fabric is NG-FAB-001's
        expected = f"no local NVSwitch ({src})"
        if seen:
            return Result.failed(expected, obs, f"{len(seen)} NVSwitch function(s) on a node whose SKU has its "
                                 "NVLink switches outside the node: the spec or the board is not what it should be",
                                 **kw)
        return Result.skipped(f"nvswitch.count unset and {src}: this system's NVLink switches are in separate "
                              "switch trays, not PCI functions of this node (the GPUs' fabric registration is "
                              "NG-FAB-001)", expected, obs, **kw)
    expected = f"{exp} NVSwitch(es) ({src})"
    if len(seen) < exp:
        return Result.failed(expected, obs, f"NVSwitch missing: {len(seen)} of {exp} present", **kw)
    if len(seen) > exp:
        return Result.failed(expected, obs, f"{len(seen)} NVSwitches present, {exp} expected: the spec or the "
                             "board is not what it should be", **kw)
    return Result.passed(expected, obs, **kw)
