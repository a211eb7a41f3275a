"""PCIe errors per GPU: the GPU's replay counter and the AER counters of the GPU and its upstream
ports (issue 19 item 6).

Defaults: DCGM's PCIe replay limit is a rate, 8 replays per minute ("the maximum recommended by
RM", dcgm_gpu_hardware_limits.h DCGM_LIMIT_MAX_PCIREPLAY_RATE, applied by DcgmHealthWatch to a
minute's difference); a single reading has only the window since boot (/proc/uptime), so the
default allows 8 x minutes of uptime. A replay-counter rollover means more replays than the
counter holds: FAIL. AER uncorrectable errors (non-fatal and fatal; PCIe base spec 6.2) lose or
corrupt transactions: none allowed by default. Correctable AER counts are shown, enforced only when
``pcie.max_aer_correctable`` is set.
"""

from __future__ import annotations

from ..facts import NA
from ..outcomes import Result
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, optional, same_bus, spec_or_default

#: DCGM_LIMIT_MAX_PCIREPLAY_RATE (dcgm_gpu_hardware_limits.h): replays per minute.
DCGM_REPLAYS_PER_MINUTE = 8


def _aer_for(recs, bus) -> list:
    return [r for r in recs if (r.role == "gpu" and same_bus(r.bdf, bus, function=True))
            or (r.role == "upstream" and same_bus(r.upstream_of, bus, function=True))]


def _nonzero(d: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items() if v)


def _replays(g, spec, uptime, problems: list, fails: list) -> str:
    rc, ro = g.pcie_replay_counter, g.pcie_replay_rollover
    if not isinstance(rc, int) or isinstance(rc, bool):
        problems.append(f"replay counter {'N/A' if rc is NA else 'not reported'}")
        return f"replays {fmt(rc)}"
    if isinstance(ro, int) and ro > 0:
        fails.append(f"replay counter rolled over {ro} time(s)")
    if spec.pcie.max_replays is not None:
        limit, why = spec.pcie.max_replays, "pcie.max_replays"
    elif uptime is None:
        problems.append("uptime unknown: replay rate not evaluated")
        return f"replays {rc}"
    else:
        minutes = max(uptime / 60.0, 1.0)
        limit, why = int(DCGM_REPLAYS_PER_MINUTE * minutes), f"DCGM 8/min over {minutes:.0f} min of uptime"
    if rc > limit:
        fails.append(f"{rc} PCIe replays, above {limit} ({why})")
    return f"replays {rc} (limit {limit}: {why})"


def _aer(recs, spec, problems: list, fails: list) -> list[str]:
    out = []
    for r in recs:
        who = f"{'GPU' if r.role == 'gpu' else 'upstream port'} {r.bdf}"
        if r.files == 0:
            problems.append(f"no AER counters for {who}")
            continue
        for kind, limit in (("fatal", spec.pcie.max_aer_fatal), ("nonfatal", spec.pcie.max_aer_nonfatal),
                            ("correctable", spec.pcie.max_aer_correctable)):
            total = getattr(r, f"{kind}_total")
            if total is None:
                if kind != "correctable" or limit is not None:
                    problems.append(f"{who}: aer_dev_{kind} not reported")
                continue
            if limit is not None and total > limit:
                fails.append(f"{who}: {total} AER {kind} error(s) ({_nonzero(getattr(r, kind))}), above {limit}")
        out.append(f"{who}: correctable {fmt(r.correctable_total)}, nonfatal {fmt(r.nonfatal_total)}, "
                   f"fatal {fmt(r.fatal_total)}")
    return out


@check(id="NG-PCIERR-001", name="pcie_errors", title="No PCIe replays or AER errors beyond thresholds",
       scope="gpu", severity="major", evidence=("smi.qx", "pci.aer", "meta.uptime", "nvml.json"),
       remediation="Reseat the GPU and the riser/cable or PCIe switch board on the path the counters point to "
                   "(the GPU or the named upstream port); check the slot's BIOS link settings; errors that return "
                   "after a reboot: replace the riser/switch board or RMA the GPU.",
       rule="The GPU's PCIe replay counter (nvidia-smi -q -x pci/replay_counter, NVML "
            "nvmlDeviceGetPcieReplayCounter) is at most pcie.max_replays, default DCGM's 8 per minute over the "
            "uptime; no replay-counter rollover; the AER counters (sysfs aer_dev_fatal / aer_dev_nonfatal / "
            "aer_dev_correctable) of the GPU and each upstream port are at most pcie.max_aer_fatal / "
            "max_aer_nonfatal (default 0) / max_aer_correctable (default not enforced). Any FAIL wins; absent "
            "counters (no AER capability exposed, e.g. in a VM) -> ERROR, SKIP when pcie.errors=not_verified.")
def pcie_errors(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    bus = g.pci_bus_id or getattr(gpu, "pci_bus_id", None)
    problems: list[str] = []
    fails: list[str] = []
    uptime, _ = optional(facts, "uptime_s")
    rep = _replays(g, spec, uptime, problems, fails)
    recs, aer_err = optional(facts, "pci_aer")
    if aer_err is not None:
        problems.append(f"AER counters: {aer_err.reason}")
        mine = []
    else:
        mine = _aer_for(recs, bus)
        if not any(r.role == "gpu" for r in mine):
            problems.append(f"GPU function {bus} not in the AER listing")
    aer_lines = _aer(mine, spec, problems, fails)
    expected = (f"replays <= {spec.pcie.max_replays if spec.pcie.max_replays is not None else 'DCGM 8/min'}; AER fatal "
                f"<= {spec.pcie.max_aer_fatal}, nonfatal <= {spec.pcie.max_aer_nonfatal}"
                + (f", correctable <= {spec.pcie.max_aer_correctable}" if spec.pcie.max_aer_correctable is not None else ""))
    obs = "; ".join([rep] + aer_lines)
    kw = dict(evidence=lines(rep, *aer_lines, *problems), evidence_keys=("smi.qx", "pci.aer", "meta.uptime"))
    if fails:
        return Result.failed(expected, obs, f"{name}: " + "; ".join(fails), **kw)
    if problems:
        if spec.pcie.errors == "not_verified":
            return Result.skipped(f"pcie.errors=not_verified: {name}: " + "; ".join(problems), expected, obs, **kw)
        return Result.errored(f"{name}: PCIe error counters incomplete: " + "; ".join(problems)
                              + " (set pcie.errors: not_verified where the node cannot expose them)", expected, obs, **kw)
    return Result.passed(expected, obs, **kw)
