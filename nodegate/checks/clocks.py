"""Clocks event reasons: no active HW slowdown (catalog "Clocks event reasons")."""

from __future__ import annotations

from ..facts import CLOCKS_EVENT_BITS, NA
from ..outcomes import Result
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, optional, same_bus, spec_or_default


def reason_active(g, reason: str):
    """True/False/None (not reported) for one canonical reason: the sub-reason's own line or
    XML element first (a power brake can be Active while its parent 'HW Slowdown' is not),
    else the bitmask (NVML / --query-gpu clocks_event_reasons.active)."""
    v = g.clocks_event_reasons.get(reason)
    if isinstance(v, bool):
        return v
    mask = g.clocks_event_reasons_mask
    if isinstance(mask, int) and not isinstance(mask, bool):
        return bool(mask & CLOCKS_EVENT_BITS[reason])
    return None


#: the reasons NVML split out of HW Slowdown and added with SW Thermal Slowdown (nvmlClocksThrottleReason
#: HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80, SwThermalSlowdown 0x20). Drivers before them print the
#: old block: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, unknown (real
#: outputs: 352.99 rai-project/nvidia-smi, 375.66 apache/hadoop, 384.66 microsoft/pai), where HW Slowdown
#: itself stands for "temperature being too high, External Power Brake Assertion ... Power draw is too high"
#: (that era's nvml.h).
_LATER_REASONS = ("hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def _predates_split(g) -> bool:
    """The GPU's reasons are the pre-split block: HW Slowdown reported, none of _LATER_REASONS present
    (an output missing only some of them is not this format)."""
    reasons = g.clocks_event_reasons
    return isinstance(reasons.get("hw_slowdown"), bool) and not any(r in reasons for r in _LATER_REASONS) \
        and not isinstance(g.clocks_event_reasons_mask, int)


def _reason_state(g, reason: str):
    """reason_active, but NA where the driver says the reason is unsupported (its own value is NA, or it is
    absent and the bitmask is NA, or it is one of the reasons a pre-split driver has no element for at all);
    None only where the source does not carry it."""
    v = reason_active(g, reason)
    if v is not None:
        return v
    own = g.clocks_event_reasons.get(reason)
    if own is NA or (own is None and g.clocks_event_reasons_mask is NA):
        return NA
    if own is None and reason in _LATER_REASONS and _predates_split(g):
        return NA
    return None


def _samples_for(facts, g) -> tuple[list | None, str]:
    """This GPU's entries in smi.clocks_samples (one dict {index: GpuFacts} per sample)."""
    samples, err = optional(facts, "clocks_samples")
    if samples is None:
        return None, f"samples unavailable ({err.reason})" if err else "samples unavailable"
    mine = []
    for s in samples:
        hit = s.get(g.index) if g.index is not None else None
        if hit is None or (hit.pci_bus_id and g.pci_bus_id and not same_bus(hit.pci_bus_id, g.pci_bus_id, True)):
            hit = next((x for x in s.values() if same_bus(x.pci_bus_id, g.pci_bus_id, True)), None)
        if hit is not None:
            mine.append(hit)
    return mine, f"{len(mine)} sample(s)"


@check(id="NG-CLK-001", name="clocks_event_reasons", title="No active HW slowdown clocks event reason",
       scope="gpu", severity="major", evidence=("smi.qx", "smi.clocks_samples"),
       remediation="Check cooling, PSU and BMC power-brake signalling (e.g. GPU missing from the BMC power table), "
                   "then reset or reseat; a sustained HW power brake or thermal slowdown needs the platform fixed.",
       action="fix configuration",  # cooling, PSU or BMC power-brake signalling: the platform, not the GPU
       rule="FAIL when any reason in clocks.fail_reasons (default HW Slowdown 0x8, HW Thermal Slowdown 0x40, HW Power "
            "Brake Slowdown 0x80, SW Thermal Slowdown 0x20) is active, each sub-reason evaluated on its own, and "
            "confirmed by every repeated sample (clocks.samples); a reason that clears in a later sample is "
            "transient (a sample not reporting the reason is no evidence it cleared); a fail reason not "
            "reported at all -> ERROR, one the driver reports unsupported (N/A) is listed, and so are the three "
            "sub-reasons a pre-split driver's block (HW Slowdown without HW Thermal, HW Power Brake, SW Thermal; "
            "352-384) has no element for. GpuIdle, SW Power Cap, "
            "Sync Boost, application/display clocks are healthy (an active SW Power Cap is a PASS with a note). "
            "The 535+ 'Clocks Event Reasons Counters' are cumulative since driver load: shown, never judged. Reads "
            "both 'Clocks Throttle Reasons' (pre-535) and 'Clocks Event Reasons'.")
def clocks_event_reasons(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    want = spec.clocks.fail_reasons
    snap = {r: _reason_state(g, r) for r in want}
    reported = {r: v for r, v in snap.items() if isinstance(v, bool)}
    expected = "not active: " + ", ".join(want)
    ev = lines(*(f"{r}: {'Active' if v else 'Not Active'}" for r, v in g.clocks_event_reasons.items()
                 if isinstance(v, bool)),
               f"clocks_event_reasons_mask: {g.clocks_event_reasons_mask:#x}"
               if isinstance(g.clocks_event_reasons_mask, int) else None, _counters_line(g))
    keys = ("smi.qx", "smi.clocks_samples")
    if not reported:
        return Result.errored(f"{name}: clocks event reasons not reported", expected, "not reported",
                              evidence=ev, evidence_keys=keys)
    unsupported = [r for r in want if snap[r] is NA]  # driver says unsupported: listed, not an error
    unreported = [r for r in want if snap[r] is None]  # not carried by the source: cannot be evaluated
    active = [r for r, v in reported.items() if v]
    samples, sdesc = _samples_for(facts, g)
    confirmed, transient = [], []
    for r in active:
        # a sample that did not report the reason (None) is no evidence that it cleared; with no real
        # later value left the snapshot's active reason counts as confirmed
        seen = [v for v in (reason_active(s, r) for s in (samples or [])) if v is not None]
        if seen and not all(seen):
            transient.append(f"{r} ({sum(1 for x in seen if x)}/{len(seen)} samples)")
        else:
            confirmed.append(r)
    # a reason set in every sample although the snapshot missed it is sustained too
    for r in want:
        if r not in active and samples and len(samples) >= spec.clocks.samples and \
                all(reason_active(s, r) for s in samples):
            confirmed.append(r)
    obs_active = ", ".join(confirmed) or "none of the fail reasons"
    obs = f"active: {obs_active}; {sdesc}" + (f"; transient: {', '.join(transient)}" if transient else "") + \
          (f"; not reported by this driver: {', '.join(unsupported)}" if unsupported else "") + \
          (f"; not reported: {', '.join(unreported)}" if unreported else "")
    if samples is not None:
        ev = lines(ev, *(f"sample {i + 1}: {s.pstate or ''} mask {fmt(s.clocks_event_reasons_mask) if not isinstance(s.clocks_event_reasons_mask, int) else hex(s.clocks_event_reasons_mask)}"
                         for i, s in enumerate(samples)))
    if confirmed:
        short = "" if samples else " (single snapshot: no repeated samples to confirm)"
        return Result.failed(expected, obs, f"{name}: active {', '.join(confirmed)}{short}", evidence=ev,
                             evidence_keys=keys)
    if unreported:
        return Result.errored(f"{name}: clocks event reason(s) not reported: {', '.join(unreported)}", expected, obs,
                              evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, _healthy_note(g, want), evidence=ev, evidence_keys=keys)


#: reasons that hold the clocks by design (catalog "Clocks event reasons": healthy), with why
_HEALTHY_WHY = {"sw_power_cap": "the software power-scaling limiter (NVML nvmlClocksEventReasonSwPowerCap: clocks "
                                "held to keep power under the enforced limit; normal at full load, also seen at "
                                "idle on GeForce/workstation boards): not a HW slowdown",
                "sync_boost": "clocks synchronised with other GPUs", "applications_clocks_setting":
                "application clocks set", "display_clocks_setting": "display clock setting"}


def _healthy_note(g, fail_reasons) -> str:
    """The PASS-with-note (nodegate has no WARN; corpus 012): a healthy limiter active now, and the
    fail reasons' cumulative counters (535+ 'Clocks Event Reasons Counters', microseconds since the
    driver loaded: history, never judged as a current state, corpus 011/119)."""
    parts = [f"{r} active: {why}" for r, why in _HEALTHY_WHY.items() if g.clocks_event_reasons.get(r) is True
             and r not in fail_reasons]
    past = [f"{r} {_seconds(v)}" for r, v in g.clocks_event_reasons_counters.items()
            if r in fail_reasons and isinstance(v, int) and v > 0]
    if past:
        parts.append("counters since driver load (history, not judged): " + ", ".join(past))
    return ("note: " + "; ".join(parts)) if parts else ""


def _counters_line(g) -> str | None:
    c = g.clocks_event_reasons_counters
    if not c:
        return None
    return "clocks_event_reasons_counters (since driver load): " + ", ".join(
        f"{r} {_seconds(v) if isinstance(v, int) else fmt(v)}" for r, v in c.items())


def _seconds(us: int) -> str:
    return f"{us} us" if us < 1_000_000 else f"{us / 1e6:.0f} s"
