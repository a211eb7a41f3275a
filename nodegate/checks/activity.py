"""Busy or idle: one verdict from every piece of activity evidence the node gives for a GPU.

Used by the trained-link rule (catalog "PCIe link": a link below spec is a fault only while the
GPU is busy; idle links power down) and by the baseline's link comparison.

Each signal votes ``idle`` or ``busy`` or abstains:

- P-state (``performance_state``): P8 and deeper vote idle. nvidia-smi's documentation of
  "Performance State" (nvidia-smi(1)): P0/P1 maximum 3D performance, P2/P3 balanced, P8 basic
  HD video playback, P10 DVD playback, P12 minimum idle power. P0-P7 abstain: datacenter boards
  idle at P0 with persistence mode (the H200 capture: P0, GpuIdle active, 0 %).
- The GpuIdle clocks event reason (XML ``clocks_event_reason_gpu_idle`` / the bitmask's 0x1,
  NVML nvmlClocksEventReasonGpuIdle): Active votes idle, Not Active votes busy. GeForce and
  workstation boards report Not Active at P8 with 0 % utilisation (telegraf's rtx-3090-v13 and
  pro-6000-maxq-blackwell-v13 fixtures): on its own it is not proof of work.
- GPU utilisation (``utilization/gpu_util``, NVML nvmlUtilization_t.gpu: percent of the last
  sample period, 1/6 s to 1 s, in which a kernel ran): 0 % votes idle, >= BUSY_UTIL_PCT busy;
  1-9 % abstain (nvidia-smi's own query and monitoring agents cause short bursts).
- Graphics clock against its idle values (``clocks/graphics_clock`` vs ``max_clocks``): at most
  IDLE_CLOCK_FRACTION of the maximum votes idle (idle clocks on real outputs: H200 375 of 1980 MHz,
  RTX 2080 Ti 300 of 2160, RTX PRO 6000 180 of 3090), at least BUSY_CLOCK_FRACTION votes busy
  (busy: RTX 2080 Ti 1680-1770 of 2160). Locked application clocks keep an idle board high: that
  disagreement leaves the state mixed, never busy.
- Every further sample the probe took (``smi.clocks_samples``: P-state and the reasons bitmask a
  moment after ``nvidia-smi -q -x``): votes as above, per sample.

The state: ``idle`` when at least one vote and all say idle; ``busy`` when all say busy;
``mixed`` when they disagree (the link is then unverified at idle: the spec's ``pcie.idle``
policy decides, never a FAIL and never a PASS); ``unknown`` without any vote.
"""

from __future__ import annotations

from dataclasses import dataclass

#: utilisation at or above this votes busy, percent
BUSY_UTIL_PCT = 10
#: graphics clock at or below this fraction of its maximum votes idle
IDLE_CLOCK_FRACTION = 0.30
#: graphics clock at or above this fraction of its maximum votes busy
BUSY_CLOCK_FRACTION = 0.70
#: P-states this deep or deeper vote idle
IDLE_PSTATE = 8


def _num(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def pstate_num(p) -> int | None:
    """``P8`` -> 8; None for anything else."""
    if isinstance(p, str) and len(p) > 1 and p[0] in "Pp" and p[1:].isdigit():
        return int(p[1:])
    return None


def gpu_idle_bit(g):
    """True/False from the GpuIdle reason (named, else the bitmask), None when not reported."""
    idle = g.clocks_event_reasons.get("gpu_idle")
    if not isinstance(idle, bool):
        mask = _num(g.clocks_event_reasons_mask)
        idle = bool(mask & 0x1) if mask is not None else None
    return idle


@dataclass(frozen=True)
class Vote:
    signal: str   # pstate | gpu_idle | utilization | clocks | sample
    says: str     # idle | busy
    why: str      # the observation, e.g. "P8", "GpuIdle not active", "utilization 0 %"


@dataclass(frozen=True)
class Activity:
    """The verdict (``state``: busy | idle | mixed | unknown) and the votes behind it."""

    state: str
    votes: tuple[Vote, ...]
    pstate: str | None = None
    gpu_idle: bool | None = None

    def describe(self) -> str:
        """``P8, GpuIdle not active``: the P-state and the GpuIdle bit of the main sample."""
        idle_s = ("GpuIdle active" if self.gpu_idle is True else "GpuIdle not active" if self.gpu_idle is False
                  else "GpuIdle unknown")
        return f"{self.pstate or 'P-state unknown'}, {idle_s}"

    def evidence(self) -> str:
        """``idle: P8, utilization 0 %; busy: GpuIdle not active`` (every vote, grouped)."""
        parts = []
        for side in ("idle", "busy"):
            why = [v.why for v in self.votes if v.says == side]
            if why:
                parts.append(f"{side}: {', '.join(why)}")
        return "; ".join(parts) or "no activity evidence"


def _votes_of(g, prefix: str = "") -> list[Vote]:
    out: list[Vote] = []
    ps = pstate_num(g.pstate)
    if ps is not None and ps >= IDLE_PSTATE:
        out.append(Vote("pstate", "idle", f"{prefix}{g.pstate}"))
    idle = gpu_idle_bit(g)
    if idle is True:
        out.append(Vote("gpu_idle", "idle", f"{prefix}GpuIdle active"))
    elif idle is False:
        out.append(Vote("gpu_idle", "busy", f"{prefix}GpuIdle not active"))
    return out


def _clock_votes(g) -> list[Vote]:
    out: list[Vote] = []
    util = _num(getattr(g, "utilization_gpu", None))
    if util == 0:
        out.append(Vote("utilization", "idle", "utilization 0 %"))
    elif util is not None and util >= BUSY_UTIL_PCT:
        out.append(Vote("utilization", "busy", f"utilization {util} %"))
    cur, top = _num(getattr(g, "graphics_clock_mhz", None)), _num(getattr(g, "max_graphics_clock_mhz", None))
    if cur is not None and top:
        seen = f"graphics clock {cur} of {top} MHz"
        if cur <= IDLE_CLOCK_FRACTION * top:
            out.append(Vote("clocks", "idle", seen))
        elif cur >= BUSY_CLOCK_FRACTION * top:
            out.append(Vote("clocks", "busy", seen))
    return out


def assess(g, samples=()) -> Activity:
    """The activity of GpuFacts ``g``; ``samples`` are further GpuFacts of the same GPU (the
    probe's clocks samples, each with P-state and reasons), votes of each prefixed 'sample N: '."""
    votes = _votes_of(g) + _clock_votes(g)
    for i, s in enumerate(samples or (), start=1):
        votes += [Vote("sample", v.says, v.why) for v in _votes_of(s, f"sample {i}: ")]
    sides = {v.says for v in votes}
    state = "unknown" if not sides else sides.pop() if len(sides) == 1 else "mixed"
    return Activity(state, tuple(votes), g.pstate, gpu_idle_bit(g))


def samples_for(facts, g) -> list:
    """The probe's clocks samples of GPU ``g`` (by bus id, else index); [] when not gathered."""
    from ._util import optional, same_bus
    samples, _ = optional(facts, "clocks_samples")
    out = []
    for sample in samples or []:
        hit = next((s for s in sample.values() if s.pci_bus_id and g.pci_bus_id
                    and same_bus(s.pci_bus_id, g.pci_bus_id, function=True)), None)
        if hit is None and g.index is not None:
            hit = sample.get(g.index) if not any(s.pci_bus_id for s in sample.values()) else None
        if hit is not None:
            out.append(hit)
    return out
