"""Burn-in evidence (bundle keys ``burnin.*``) -> a time series and the load's outcome.

Pure parsing, no I/O besides reading the Bundle object. ``burnin_data(bundle)`` returns
``BurninData`` or raises ``EvidenceError`` naming the key and why (no burn-in ran, no load
available, nvidia-smi missing, ...). Sample rows come from
``nvidia-smi --query-gpu=<burnin.fields> --format=csv,noheader,nounits`` (see burnin.sh); values
are converted by the shared helpers in nodegate.parsers._values (``[N/A]`` -> NA).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..bundle import Bundle
from ..errors import EvidenceError, ParseError
from ..facts import NA, _Unsupported
from ..parsers import _values as V

#: counter field -> canonical clocks event reason (nvidia-smi --help-query-gpu
#: "clocks_event_reasons_counters.*": microseconds the reason was engaged). HW Slowdown has none.
COUNTER_FIELDS = {
    "clocks_event_reasons_counters.sw_power_cap": "sw_power_cap",
    "clocks_event_reasons_counters.sw_thermal_slowdown": "sw_thermal_slowdown",
    "clocks_event_reasons_counters.hw_thermal_slowdown": "hw_thermal_slowdown",
    "clocks_event_reasons_counters.hw_power_brake_slowdown": "hw_power_brake_slowdown",
}

_HDR = re.compile(r"^# sample (?P<seq>\d+|end) uptime=(?P<up>[0-9.]*) epoch=(?P<ep>\d*) rc=(?P<rc>-?\d*) status=(?P<st>\w+)")


@dataclass
class GpuSample:
    """One GPU in one sample. Ints/floats in the field's unit; NA unsupported; None absent."""

    index: int
    bus_id: str | None
    pstate: str | None = None
    mask: object = None                 # clocks event reasons bitmask (int | NA | None)
    link_gen: object = None
    link_width: object = None
    temperature_c: object = None
    tlimit_c: object = None             # temperature.gpu.tlimit: degrees below Max Operating
    power_w: object = None
    sm_mhz: object = None
    utilization: object = None
    ecc_uncorrected: object = None
    ecc_corrected: object = None
    remapped_correctable: object = None
    remapped_uncorrectable: object = None
    remapped_pending: object = None
    counters_us: dict[str, object] = field(default_factory=dict)

    @property
    def busy(self) -> bool:
        """P0 and GpuIdle (0x1) not active: the catalog's "busy" for PCIe link rules."""
        return self.pstate == "P0" and isinstance(self.mask, int) and not self.mask & 0x1


@dataclass
class Sample:
    seq: str                             # "0" (before the load), "1".., "end" (after the load)
    t: float                             # seconds since the first sample
    rc: int | None
    status: str
    gpus: dict[int, GpuSample] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)
    error: str | None = None             # rows unparsable

    @property
    def ok(self) -> bool:
        return self.rc == 0 and self.status == "ok" and self.error is None


@dataclass
class LoadOutcome:
    kind: str                            # dcgmi | gpu-burn | command
    rc: int | None
    output: str
    started_epoch: int | None
    exit_epoch: int | None
    stopped: str | None                  # "deadline" | "interrupted" | None
    window_end_epoch: int | None         # start + duration


@dataclass
class BurninData:
    node: str
    run: dict
    fields: list[str]
    samples: list[Sample]
    load: LoadOutcome
    events: list[tuple[str, int | None, dict]]

    def gpu_indices(self) -> list[int]:
        seen: dict[int, str | None] = {}
        for s in self.samples:
            for i, g in s.gpus.items():
                seen.setdefault(i, g.bus_id)
        return sorted(seen)

    def series(self, index: int) -> list[tuple[Sample, GpuSample]]:
        return [(s, s.gpus[index]) for s in self.samples if index in s.gpus]


def _int(v):
    if v is None or isinstance(v, _Unsupported):
        return v
    try:
        return V.int_value(v)
    except ParseError:
        return None


def _float(v):
    if v is None or isinstance(v, _Unsupported):
        return v
    try:
        return V.float_value(v)
    except ParseError:
        return None


def _row(fields: list[str], line: str) -> GpuSample:
    vals = line.split(", ")
    if len(vals) != len(fields):
        raise ParseError(f"{len(vals)} values for {len(fields)} fields: {line[:80]!r}")
    row = {f.replace("clocks_throttle_reasons", "clocks_event_reasons"): (NA if V.is_na(v) else v.strip())
           for f, v in zip(fields, vals)}
    idx = _int(row.get("index"))
    if not isinstance(idx, int):
        raise ParseError(f"no GPU index in {line[:80]!r}")
    bus = row.get("pci.bus_id")
    g = GpuSample(index=idx, bus_id=V.bus_id(bus) if isinstance(bus, str) and bus else None)
    p = row.get("pstate")
    g.pstate = p if isinstance(p, str) else None
    g.mask = _int(row.get("clocks_event_reasons.active"))
    g.link_gen = _int(row.get("pcie.link.gen.current"))
    g.link_width = _int(row.get("pcie.link.width.current"))
    g.temperature_c = _int(row.get("temperature.gpu"))
    g.tlimit_c = _int(row.get("temperature.gpu.tlimit"))
    g.power_w = _float(row.get("power.draw"))
    g.sm_mhz = _int(row.get("clocks.sm"))
    g.utilization = _int(row.get("utilization.gpu"))
    g.ecc_uncorrected = _int(row.get("ecc.errors.uncorrected.volatile.total"))
    g.ecc_corrected = _int(row.get("ecc.errors.corrected.volatile.total"))
    g.remapped_correctable = _int(row.get("remapped_rows.correctable"))
    g.remapped_uncorrectable = _int(row.get("remapped_rows.uncorrectable"))
    rp = row.get("remapped_rows.pending")
    try:
        g.remapped_pending = rp if isinstance(rp, _Unsupported) or rp is None else V.bool_value(rp)
    except ParseError:
        g.remapped_pending = None
    for f, reason in COUNTER_FIELDS.items():
        if f in row:
            g.counters_us[reason] = _int(row[f])
    return g


def parse_samples(text: str) -> tuple[list[str], list[Sample]]:
    """``burnin.samples`` text -> (fields, samples in time order). Empty text -> ([], [])."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# fields: "):
        return [], []
    fields = [f.strip() for f in lines[0][len("# fields: "):].split(",") if f.strip()]
    samples: list[Sample] = []
    cur: Sample | None = None
    times: list[tuple[float | None, int | None]] = []
    for ln in lines[1:]:
        m = _HDR.match(ln)
        if m:
            rc = int(m.group("rc")) if m.group("rc") not in ("", "-") else None
            cur = Sample(m.group("seq"), 0.0, rc, m.group("st"))
            samples.append(cur)
            times.append((float(m.group("up")) if m.group("up") else None, int(m.group("ep")) if m.group("ep") else None))
            continue
        if cur is None:
            continue
        if ln.startswith("# stderr: "):
            cur.stderr.append(ln[len("# stderr: "):])
            continue
        try:
            g = _row(fields, ln)
            cur.gpus[g.index] = g
        except ParseError as e:
            cur.error = str(e)
    _assign_times(samples, times)
    return fields, samples


def _assign_times(samples: list[Sample], times: list) -> None:
    """Seconds since the first sample: node uptime when it moves (sub-second), else epoch
    seconds (a chroot or container may show a frozen /proc/uptime)."""
    ups = [u for u, _ in times if u is not None]
    use_up = len(set(ups)) > 1 and len(ups) == len(times)
    base = None
    for s, (u, e) in zip(samples, times):
        v = u if use_up else e
        if v is None:
            continue
        base = v if base is None else base
        s.t = round(float(v - base), 3)


def _events(text: str) -> list[tuple[str, int | None, dict]]:
    out = []
    for ln in text.splitlines():
        parts = ln.split()
        if not parts:
            continue
        ep = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        kv = dict(p.split("=", 1) for p in parts[2 if ep is not None else 1:] if "=" in p)
        out.append((parts[0], ep, kv))
    return out


def _ev(events, name):
    for e in events:
        if e[0] == name:
            return e
    return None


def burnin_data(bundle: Bundle) -> BurninData:
    """Everything the burn-in rules read. Raises EvidenceError (key, reason) when the burn-in did
    not run or could not sample: that makes every burn-in item ERROR, never PASS."""
    if not bundle.has("burnin.run"):
        raise EvidenceError("burnin.run", "no burn-in evidence in this bundle (run with --burn-in DURATION)")
    try:
        run = json.loads(bundle.get("burnin.run").text)
    except (ValueError, RecursionError) as e:
        raise EvidenceError("burnin.run", f"unreadable: {e}") from None
    if not isinstance(run, dict):
        raise EvidenceError("burnin.run", f"unreadable: a JSON {type(run).__name__}, not an object")
    if run.get("status") not in ("ok", "interrupted", "timeout", "incomplete"):
        raise EvidenceError("burnin.run", f"burn-in did not run: {run.get('error') or run.get('status')}")
    tools = bundle.get("burnin.tools")
    if tools.rc == 127:
        raise EvidenceError("burnin.tools", (tools.err_text.strip().splitlines() or ["no load available"])[0])
    kind = ""
    for ln in tools.text.splitlines():
        if ln.startswith("load: "):
            kind = ln[6:].strip()
    bundle.text("burnin.fields")  # raises with the reason (nvidia-smi missing or failing)
    fields, samples = parse_samples(bundle.text("burnin.samples"))
    if not samples:
        raise EvidenceError("burnin.samples", "no samples recorded")
    events = _events(bundle.get("burnin.events").text) if bundle.has("burnin.events") else []
    start = _ev(events, "load-start")
    exit_ = _ev(events, "load-exit")
    stop = _ev(events, "stop") or _ev(events, "interrupted")
    load_ev = bundle.items.get("burnin.load")
    rc = load_ev.rc if load_ev is not None else None
    if exit_ and "rc" in exit_[2] and exit_[2]["rc"].lstrip("-").isdigit():
        rc = int(exit_[2]["rc"])
    dur = int(run.get("duration_s") or 0)
    load = LoadOutcome(kind=kind, rc=rc, output=load_ev.text if load_ev is not None else "",
                       started_epoch=start[1] if start else None, exit_epoch=exit_[1] if exit_ else None,
                       stopped=(("interrupted" if stop[0] == "interrupted" else "deadline") if stop else
                                ("interrupted" if run.get("status") == "interrupted" else None)),
                       window_end_epoch=(start[1] + dur) if start and start[1] is not None else None)
    return BurninData(bundle.node, run, fields, samples, load, events)


def kernel_lines_since_start(bundle: Bundle) -> tuple[str, list[str]]:
    """(source, NVRM/Xid lines that appeared during the burn-in): the end snapshot minus the start
    snapshot (the longest suffix of the start found in the end). Raises EvidenceError when the
    kernel log could not be read (permission: needs root where kernel.dmesg_restrict=1)."""
    end = bundle.text("burnin.klog_end").splitlines()
    try:
        start = bundle.text("burnin.klog_start").splitlines()
    except EvidenceError:
        start = []
    src = end[0][len("# source: "):] if end and end[0].startswith("# source: ") else "kernel log"
    end = [ln for ln in end if not ln.startswith("# source: ")]
    start = [ln for ln in start if not ln.startswith("# source: ")]
    if not start:
        return src, end
    last = start[-1]
    for i in range(len(end) - 1, -1, -1):
        if end[i] == last:
            return src, end[i + 1:]
    # the ring buffer wrapped past our start point: every line at the end is suspect
    known = set(start)
    return src, [ln for ln in end if ln not in known]
