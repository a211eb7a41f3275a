"""Was a measurement taken in valid conditions? From the GPU state sampled during each test.

The phase samples every GPU while each tool runs (bundle key ``perf.<tool>.state``)::

    # fields: index,pci.bus_id,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.gen.max,...
    # sample <seq> epoch=<s>
    0, 00000000:19:00.0, 0x0000000000000000, 5, 5, 16, 16, 1980, 650.10, 700.00, 62
    # apps
    00000000:19:00.0, 4242, python3

``# apps`` lists the compute processes found on the GPUs just before the tool started
(``nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name``): any is another user of the GPU.

``gpu_states(text)`` -> {gpu index: GpuState}; ``GpuState.invalid_reason(link_matters)`` -> str or None.
Throttling = a clocks event reason of ``THROTTLE_MASK`` in two consecutive samples (a single
sample may catch a P-state change: checks.md "Clocks event reasons"), or in the only sample of a
test too short for two; SW power cap (0x4) is
healthy at full load and idle (0x1) is not throttling.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..facts import CLOCKS_EVENT_BITS

#: HW slowdown, SW thermal, HW thermal, HW power brake (NVML nvmlClocksEventReason*).
THROTTLE_MASK = sum(CLOCKS_EVENT_BITS[k] for k in ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
                                                  "hw_power_brake_slowdown"))
_NAMES = {v: k.replace("_", " ") for k, v in CLOCKS_EVENT_BITS.items()}
MAX_LINES = 200_000


@dataclass
class GpuState:
    index: int
    bus_id: str = ""
    masks: list[int] = field(default_factory=list)
    links: list[tuple[int | None, int | None]] = field(default_factory=list)
    max_link: tuple[int | None, int | None] = (None, None)
    sm_mhz: list[float] = field(default_factory=list)
    power_w: list[float] = field(default_factory=list)
    power_limit_w: float | None = None
    temps: list[float] = field(default_factory=list)
    apps: list[str] = field(default_factory=list)

    def throttled(self) -> str | None:
        # a test short enough for one sample: that sample decides (for validity, the safe side)
        pairs = list(zip(self.masks, self.masks[1:])) or [(m, m) for m in self.masks]
        for a, b in pairs:
            both = a & b & THROTTLE_MASK
            if both:
                return ", ".join(_NAMES[bit] for bit in sorted(_NAMES) if both & bit)
        return None

    def link_below(self) -> str | None:
        mg, mw = self.max_link
        seen = [(g, w) for g, w in self.links if g is not None and w is not None]
        if not seen or mg is None or mw is None:
            return None
        best = max(seen)
        if best[0] < mg or max(w for _, w in seen) < mw:
            return f"PCIe link Gen{best[0]} x{max(w for _, w in seen)} below Gen{mg} x{mw} in every sample"
        return None

    def invalid_reason(self, link_matters: bool = True) -> str | None:
        why = []
        if t := self.throttled():
            why.append(f"throttled ({t}) during the test")
        if self.apps:
            why.append(f"another compute process on the GPU ({', '.join(self.apps[:3])})")
        if link_matters and (lk := self.link_below()):
            why.append(lk)
        return "; ".join(why) or None

    def describe(self) -> str:
        """'Gen5 x16, SM 1980 MHz, 650 W, no clocks event reason active during the test'."""
        bits = []
        seen = [(g, w) for g, w in self.links if g is not None and w is not None]
        if seen:
            g, w = max(seen)
            bits.append(f"Gen{g} x{w}")
        if self.sm_mhz:
            bits.append(f"SM {min(self.sm_mhz):.0f}-{max(self.sm_mhz):.0f} MHz")
        if self.power_w:
            bits.append(f"{max(self.power_w):.0f} W peak")
        any_mask = 0
        for m in self.masks:
            any_mask |= m & THROTTLE_MASK
        bits.append(f"throttling reason seen: {', '.join(_NAMES[b] for b in sorted(_NAMES) if any_mask & b)}"
                    if any_mask else "no throttling clocks event reason during the test")
        return ", ".join(bits)


def _num(s: str, conv=float):
    try:
        return conv(s.strip(), 0) if conv is int else conv(s.strip())
    except (ValueError, TypeError):
        return None


def gpu_states(text: str) -> dict[int, GpuState]:
    """Parse a ``perf.<tool>.state`` item (never raises; unknown lines are ignored)."""
    fields: list[str] = []
    out: dict[int, GpuState] = {}
    by_bus: dict[str, GpuState] = {}
    in_apps = False
    for n, line in enumerate(text.splitlines()):
        if n > MAX_LINES:
            break
        if line.startswith("# fields:"):
            fields = [f.strip() for f in line[9:].split(",")]
            continue
        if line.startswith("# apps"):
            in_apps = True
            continue
        if line.startswith("#") or not line.strip():
            if line.startswith("# sample"):
                in_apps = False
            continue
        cells = [c.strip() for c in line.split(",")]
        if in_apps:
            bus = cells[0].upper()
            g = by_bus.get(bus) or by_bus.get(bus[4:] if len(bus) > 12 else "0000" + bus)
            if g is not None and len(g.apps) < 20:
                g.apps.append(" ".join(cells[1:3])[:80])
            continue
        if len(cells) != len(fields) or "index" not in fields:
            continue
        row = dict(zip(fields, cells))
        idx = _num(row["index"], int)
        if idx is None or not 0 <= idx < 4096:
            continue
        g = out.setdefault(idx, GpuState(idx))
        g.bus_id = row.get("pci.bus_id", "").upper()
        by_bus[g.bus_id] = g
        mask = row.get("clocks_event_reasons.active") or row.get("clocks_throttle_reasons.active") or ""
        g.masks.append(_num(mask, int) or 0 if mask.lower().startswith("0x") else 0)
        g.links.append((_num(row.get("pcie.link.gen.current", ""), int), _num(row.get("pcie.link.width.current", ""), int)))
        g.max_link = (_num(row.get("pcie.link.gen.max", ""), int), _num(row.get("pcie.link.width.max", ""), int))
        for key, lst in (("clocks.sm", g.sm_mhz), ("power.draw", g.power_w), ("temperature.gpu", g.temps)):
            v = _num(row.get(key, ""))
            if v is not None:
                lst.append(v)
        g.power_limit_w = _num(row.get("power.limit", "")) or g.power_limit_w
    return out
