"""Under-load rules: pure functions over the burn-in time series -> Result (PASS/FAIL/SKIP/ERROR).

Every rule takes ``(data: BurninData, ctx: Context, gpu: int | None)``; node rules ignore ``gpu``.
``RULES`` maps the suite test name (``test_<name>``) to (scope, severity, title, remediation, func).
Evidence keys: ``burnin.samples`` unless a rule says otherwise. Sources of each rule in comments
(../shared/spec/checks.md, "catalog" below).

One module because ``RULES`` is one table: the rules share the series helpers and the
Context, and the catalog (docs/checks.md) is generated from the table in this order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..facts import CLOCKS_EVENT_BITS, _Unsupported
from ..outcomes import Result
from ..errors import EvidenceError, ParseError
from .dcgm import RUN_LINE, DcgmResult, parse_dcgm
from .series import BurninData, GpuSample, Sample, kernel_lines_since_start
from .spec import BurninSpec

#: catalog "Kernel log": Xids that FAIL (the table nodegate/data/xid.yaml is preferred when present).
DEFAULT_XID_FAIL = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 140, 154})

_XID = re.compile(r"NVRM: Xid \((?:PCI:)?(?P<bus>[0-9a-fA-F]{1,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)\): (?P<xid>\d+)")
# "fallen off the bus" with the bus id before it (the NVRM line) or after it; found with two linear
# searches instead of one `bus.*phrase|phrase.*?bus` pattern, which backtracks quadratically on a
# line of repeated phrases or bus ids (issue 31: parsing time linear on every node-output path)
_PHRASE = re.compile(r"fallen off the bus", re.I)
_BUS_BEFORE = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?")
_BUS_AFTER = re.compile(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}")


def fallen_bus(ln: str) -> str | None:
    """The bus id of a "fallen off the bus" kernel line, or None (no such phrase, or no bus id).

    Leftmost of: a bus id followed (anywhere later) by the phrase, or the first phrase followed by a
    bus id (without function): what ``bus.*phrase|phrase.*?bus`` (re.I) finds, in linear time."""
    first = _PHRASE.search(ln)
    if first is None:
        return None
    last = first
    for last in _PHRASE.finditer(ln, first.start()):
        pass
    before = _BUS_BEFORE.search(ln, 0, last.start())
    after = _BUS_AFTER.search(ln, first.end())
    if before is not None and (after is None or before.start() < first.start()):
        return before.group()
    return after.group() if after is not None else None


@dataclass
class Context:
    """What a rule needs besides the series. ``expected_link``: gpu index -> (gen, width, source)
    or None; ``xid_fail``: the fail set; ``ecc_required`` / ``repair``: the spec's ecc.required and
    memory.repair; ``gathered_gpus``: GPU count from the probe (None when unknown)."""

    bspec: BurninSpec = field(default_factory=BurninSpec)
    expected_link: dict[int, tuple[int | None, int | None, str]] = field(default_factory=dict)
    xid_fail: frozenset[int] = DEFAULT_XID_FAIL
    xid_source: str = "catalog default set"
    ecc_required: bool = True
    repair: str = "auto"
    architecture: dict[int, str] = field(default_factory=dict)
    gathered_gpus: int | None = None
    kernel_lines: tuple[str, list[str]] | Exception | None = None
    dcgm: list[DcgmResult] | Exception | None = None


def _ints(vals) -> list[int]:
    return [v for v in vals if isinstance(v, int) and not isinstance(v, bool)]


def _series(data: BurninData, gpu: int) -> list[tuple[Sample, GpuSample]]:
    return [(s, g) for s, g in data.series(gpu) if s.ok]


def _no_samples(gpu: int) -> Result:
    return Result.errored(f"GPU {gpu} never answered a burn-in sample", evidence_keys=("burnin.samples",))


def _t(s: Sample) -> str:
    return f"t={s.t:g}s"


# ------------------------------------------------------------------ clocks event reasons
def rule_clocks(data: BurninData, ctx: Context, gpu: int) -> Result:
    """catalog "Clocks event reasons": the spec's fail set never active under load. Counters
    (µs engaged, nvidia-smi clocks_event_reasons_counters.*) growing over the window are
    decisive where the driver has them; otherwise (and always for HW Slowdown, which has no
    counter) the sampled bitmask, where a reason seen in one sample counts only when the next
    sample shows it too (a single sample may catch a P-state change)."""
    ser = _series(data, gpu)
    if not ser:
        return _no_samples(gpu)
    reasons = list(ctx.bspec.fail_reasons)
    expected = "never active under load: " + ", ".join(reasons)
    if not any(isinstance(g.mask, int) for _, g in ser):
        return Result.errored(f"GPU {gpu}: clocks event reasons unsupported/absent in every sample",
                              expected=expected, evidence_keys=("burnin.samples",))
    bad, notes = [], []
    for r in reasons:
        first = ser[0][1].counters_us.get(r)
        last = ser[-1][1].counters_us.get(r)
        if isinstance(first, int) and isinstance(last, int) and last >= first:
            if last > first:
                bad.append(f"{r} engaged {(last - first) / 1e6:.3f}s during the window (counter)")
            continue
        bit = CLOCKS_EVENT_BITS[r]
        hits = [i for i, (_, g) in enumerate(ser) if isinstance(g.mask, int) and g.mask & bit]
        confirmed = [i for i in hits if i + 1 in hits]
        if confirmed:
            i = confirmed[0]
            bad.append(f"{r} active in consecutive samples from {_t(ser[i][0])} "
                       f"({len(hits)} of {len(ser)} samples)")
        elif hits:
            notes.append(f"{r} seen once at {', '.join(_t(ser[i][0]) for i in hits)} (not confirmed by the next sample)")
    observed = "; ".join(bad or notes) or "none active"
    ev = _rows(ser, lambda g: f"mask={_hex(g.mask)} counters={g.counters_us}")
    if bad:
        return Result.failed(expected, observed, f"GPU {gpu}: {'; '.join(bad)} under load", evidence=ev,
                             evidence_keys=("burnin.samples",))
    return Result.passed(expected, observed, f"GPU {gpu}: no failing clocks event reason over "
                         f"{ser[-1][0].t - ser[0][0].t:g}s", evidence=ev, evidence_keys=("burnin.samples",))


def _hex(v) -> str:
    return f"0x{v:x}" if isinstance(v, int) else str(v)


def _rows(ser, fmt: Callable[[GpuSample], str], limit: int = 12) -> str:
    pick = ser if len(ser) <= limit else ser[: limit // 2] + ser[-limit // 2:]
    return "\n".join(f"sample {s.seq} {_t(s)}: {fmt(g)}" for s, g in pick)


# ------------------------------------------------------------------ PCIe link
def rule_pcie_link(data: BurninData, ctx: Context, gpu: int) -> Result:
    """catalog "PCIe link": trained link below spec while busy (P0, GpuIdle not active) is a FAIL;
    idle samples (before the load ramps up, after it ends) are not judged. Two consecutive busy
    samples below spec are required (the link retrains when the P-state changes)."""
    ser = _series(data, gpu)
    if not ser:
        return _no_samples(gpu)
    exp = ctx.expected_link.get(gpu)
    if not exp or (exp[0] is None and exp[1] is None):
        return Result.errored(f"GPU {gpu}: no expected PCIe link (set pcie.gen / pcie.width, or a SKU profile)",
                              evidence_keys=("burnin.samples",))
    gen, width, src = exp
    expected = f"Gen{gen or '?'} x{width or '?'} while busy ({src})"
    busy = [(s, g) for s, g in ser if g.busy]
    if not busy:
        return Result.errored(f"GPU {gpu}: never busy (P0 without GpuIdle) during the burn-in: link not verified "
                              "under load", expected=expected, evidence_keys=("burnin.samples",))

    def below(g: GpuSample) -> bool:
        return ((gen is not None and isinstance(g.link_gen, int) and g.link_gen < gen)
                or (width is not None and isinstance(g.link_width, int) and g.link_width < width))

    if all(not isinstance(g.link_gen, int) for _, g in busy):
        return Result.errored(f"GPU {gpu}: pcie.link.gen.current unsupported in every sample", expected=expected,
                              evidence_keys=("burnin.samples",))
    flags = [below(g) for _, g in busy]
    hit = next((i for i in range(len(flags) - 1) if flags[i] and flags[i + 1]), None)
    ev = _rows(busy, lambda g: f"{g.pstate} Gen{g.link_gen} x{g.link_width} mask={_hex(g.mask)}")
    lo = min(_ints(g.link_gen for _, g in busy), default=None)
    lw = min(_ints(g.link_width for _, g in busy), default=None)
    observed = f"lowest while busy: Gen{lo} x{lw} over {len(busy)} busy samples"
    if hit is not None:
        s, g = busy[hit]
        return Result.failed(expected, f"Gen{g.link_gen} x{g.link_width} under load from {_t(s)}",
                             f"GPU {gpu} (bus {g.bus_id}): PCIe link trained down to Gen{g.link_gen} x{g.link_width} "
                             f"under load at {_t(s)}; expected Gen{gen} x{width}", evidence=ev,
                             evidence_keys=("burnin.samples",))
    return Result.passed(expected, observed, f"GPU {gpu}: link at spec in every busy sample", evidence=ev,
                         evidence_keys=("burnin.samples",))


# ------------------------------------------------------------------ ECC
def _growth(ser, attr) -> tuple[int | None, int | None, int | None, bool]:
    vals = [getattr(g, attr) for _, g in ser]
    ints = _ints(vals)
    na = any(isinstance(v, _Unsupported) for v in vals)
    if not ints:
        return None, None, None, na
    return ints[0], max(ints), max(ints) - ints[0], na


def rule_ecc(data: BurninData, ctx: Context, gpu: int) -> Result:
    """catalog "ECC": volatile counters (since driver load) must not grow beyond the spec's
    allowance during the load (uncorrectable default 0; correctable reported unless set)."""
    ser = _series(data, gpu)
    if not ser:
        return _no_samples(gpu)
    b = ctx.bspec
    u0, umax, ug, una = _growth(ser, "ecc_uncorrected")
    c0, cmax, cg, cna = _growth(ser, "ecc_corrected")
    expected = (f"volatile uncorrectable growth <= {b.max_ecc_uncorrected_volatile_growth}, correctable growth "
                + (f"<= {b.max_ecc_corrected_volatile_growth}" if b.max_ecc_corrected_volatile_growth is not None
                   else "reported"))
    if ug is None:
        if una and not ctx.ecc_required:
            return Result.skipped("ECC counters unsupported on this board and ecc.required is false",
                                  expected=expected, observed="N/A")
        return Result.errored(f"GPU {gpu}: volatile ECC counters {'unsupported (N/A)' if una else 'absent'} "
                              "in every sample", expected=expected, evidence_keys=("burnin.samples",))
    observed = f"uncorrectable {u0} -> {umax} (+{ug}), correctable {c0} -> {cmax} (+{cg})"
    ev = _rows(ser, lambda g: f"ecc uncorrected={g.ecc_uncorrected} corrected={g.ecc_corrected}")
    bad = []
    if ug > b.max_ecc_uncorrected_volatile_growth:
        bad.append(f"{ug} new uncorrectable ECC error(s)")
    if b.max_ecc_corrected_volatile_growth is not None and cg is not None and cg > b.max_ecc_corrected_volatile_growth:
        bad.append(f"{cg} new correctable ECC error(s)")
    if bad:
        first = next((s for s, g in ser if isinstance(g.ecc_uncorrected, int) and g.ecc_uncorrected > u0), ser[-1][0])
        return Result.failed(expected, observed, f"GPU {gpu}: {' and '.join(bad)} under load (first at {_t(first)})",
                             evidence=ev, evidence_keys=("burnin.samples",))
    return Result.passed(expected, observed, f"GPU {gpu}: ECC counters within allowance", evidence=ev,
                         evidence_keys=("burnin.samples",))


def rule_remapped_rows(data: BurninData, ctx: Context, gpu: int) -> Result:
    """catalog "Row remapping": rows remapped during the load (correctable + uncorrectable growth
    beyond burnin.max_remapped_rows_growth) or a remap becoming pending = FAIL."""
    ser = _series(data, gpu)
    if not ser:
        return _no_samples(gpu)
    allow = ctx.bspec.max_remapped_rows_growth
    expected = f"remapped rows growth <= {allow}, no remap pending"
    c0, cmax, cg, cna = _growth(ser, "remapped_correctable")
    u0, umax, ug, una = _growth(ser, "remapped_uncorrectable")
    if cg is None and ug is None:
        arch = ctx.architecture.get(gpu, "")
        if (cna or una) and (ctx.repair == "page_retirement" or arch in ("Kepler", "Maxwell", "Pascal", "Volta", "Turing")):
            return Result.skipped(f"remapped rows unsupported (memory.repair={ctx.repair}, {arch or 'pre-Ampere'}: "
                                  "page retirement instead)", expected=expected, observed="N/A")
        return Result.errored(f"GPU {gpu}: remapped rows {'unsupported (N/A)' if (cna or una) else 'absent'} in every "
                              "sample", expected=expected, evidence_keys=("burnin.samples",))
    growth = (cg or 0) + (ug or 0)
    pend = [s for s, g in ser if g.remapped_pending is True]
    pend0 = ser[0][1].remapped_pending is True
    observed = f"correctable {c0} -> {cmax}, uncorrectable {u0} -> {umax}, pending {'yes' if pend else 'no'}"
    ev = _rows(ser, lambda g: f"remapped correctable={g.remapped_correctable} uncorrectable="
                              f"{g.remapped_uncorrectable} pending={g.remapped_pending}")
    if growth > allow or (pend and not pend0):
        why = []
        if growth > allow:
            why.append(f"{growth} row(s) remapped under load")
        if pend and not pend0:
            why.append(f"remap pending from {_t(pend[0])} (drain and reset the GPU)")
        return Result.failed(expected, observed, f"GPU {gpu}: {'; '.join(why)}", evidence=ev,
                             evidence_keys=("burnin.samples",))
    return Result.passed(expected, observed, f"GPU {gpu}: no new row remap", evidence=ev,
                         evidence_keys=("burnin.samples",))


# ------------------------------------------------------------------ temperature
def rule_temperature(data: BurninData, ctx: Context, gpu: int) -> Result:
    """Below burnin.max_temperature_c in every sample; without it, temperature.gpu.tlimit > 0 in
    every sample (T.Limit = degrees below the GPU's Max Operating temperature; nvidia-smi -q
    "GPU Max Operating T.Limit Temp : 0 C")."""
    ser = _series(data, gpu)
    if not ser:
        return _no_samples(gpu)
    temps = _ints(g.temperature_c for _, g in ser)
    limit = ctx.bspec.max_temperature_c
    if limit is not None:
        expected = f"temperature.gpu < {limit} C"
        if not temps:
            return Result.errored(f"GPU {gpu}: temperature.gpu unsupported in every sample", expected=expected)
        hot = [(s, g) for s, g in ser if isinstance(g.temperature_c, int) and g.temperature_c >= limit]
        observed = f"max {max(temps)} C"
        ev = _rows(ser, lambda g: f"{g.temperature_c} C tlimit={g.tlimit_c}")
        if hot:
            return Result.failed(expected, observed, f"GPU {gpu}: reached {max(temps)} C under load (limit {limit} C, "
                                 f"first at {_t(hot[0][0])})", evidence=ev, evidence_keys=("burnin.samples",))
        return Result.passed(expected, observed, f"GPU {gpu}: max {max(temps)} C", evidence=ev,
                             evidence_keys=("burnin.samples",))
    tl = _ints(g.tlimit_c for _, g in ser)
    expected = "T.Limit > 0 C (below the GPU's Max Operating temperature)"
    if not tl:
        return Result.errored(f"GPU {gpu}: temperature.gpu.tlimit not reported by this driver; set "
                              "burnin.max_temperature_c", expected=expected, evidence_keys=("burnin.samples",))
    observed = f"min T.Limit {min(tl)} C, max {max(temps) if temps else '?'} C"
    ev = _rows(ser, lambda g: f"{g.temperature_c} C tlimit={g.tlimit_c}")
    hot = [(s, g) for s, g in ser if isinstance(g.tlimit_c, int) and g.tlimit_c <= 0]
    if hot:
        return Result.failed(expected, observed, f"GPU {gpu}: at/over its Max Operating temperature under load "
                             f"(T.Limit {min(tl)} C from {_t(hot[0][0])})", evidence=ev, evidence_keys=("burnin.samples",))
    return Result.passed(expected, observed, f"GPU {gpu}: {min(tl)} C of headroom at worst", evidence=ev,
                         evidence_keys=("burnin.samples",))


# ------------------------------------------------------------------ Xid
def _xids(lines: list[str]) -> list[tuple[str | None, int | None, str]]:
    from ..facts import normalize_bus_id
    out = []
    for ln in lines:
        m = _XID.search(ln)
        if m:
            b = m.group("bus")
            out.append((normalize_bus_id(b if "." in b else b + ".0"), int(m.group("xid")), ln))
            continue
        b = fallen_bus(ln)
        if b is not None:
            out.append((normalize_bus_id(b if "." in b else b + ".0"), 79, ln))
    return out


def rule_xid(data: BurninData, ctx: Context, gpu: int) -> Result:
    """catalog "Kernel log": no new critical Xid (or "fallen off the bus", counted as Xid 79) for
    this GPU's bus id during the load. Evidence: burnin.klog_start / burnin.klog_end."""
    keys = ("burnin.klog_start", "burnin.klog_end")
    kl = ctx.kernel_lines
    if isinstance(kl, Exception) or kl is None:
        return Result.errored(f"kernel log not readable: {kl}", evidence_keys=keys)
    src, lines = kl
    bus = next((g.bus_id for _, g in data.series(gpu)), None)
    expected = f"no new Xid in {sorted(ctx.xid_fail)} ({ctx.xid_source})"
    mine = [x for x in _xids(lines) if x[0] is None or bus is None or x[0] == bus]
    bad = [x for x in mine if x[1] in ctx.xid_fail]
    observed = ", ".join(f"Xid {x[1]}" for x in mine) or f"no new Xid ({src})"
    if bad:
        return Result.failed(expected, observed, f"GPU {gpu} (bus {bus}): new Xid {', '.join(str(x[1]) for x in bad)} "
                             "during the burn-in", evidence="\n".join(x[2] for x in bad[:20]), evidence_keys=keys)
    return Result.passed(expected, observed, f"GPU {gpu}: no critical Xid during the burn-in",
                         evidence="\n".join(x[2] for x in mine[:20]), evidence_keys=keys)


# ------------------------------------------------------------------ node rules
def rule_gpu_count(data: BurninData, ctx: Context, gpu=None) -> Result:
    """A GPU falling off the bus under load: every sample answers for the same GPUs as the first
    (and as the probe, when it counted). nvidia-smi failing for a GPU ("Unable to determine the
    device handle ...") is the same finding."""
    keys = ("burnin.samples",)
    ok = [s for s in data.samples if s.gpus]
    if not ok:
        return Result.errored("no sample listed any GPU", evidence_keys=keys)
    base = set(ok[0].gpus)
    n0 = ctx.gathered_gpus if ctx.gathered_gpus is not None else len(base)
    expected = f"{n0} GPU(s) answering in every sample"
    for s in data.samples:
        lost = [ln for ln in s.stderr if "device handle" in ln or "fallen off" in ln or "GPU is lost" in ln]
        missing = sorted(base - set(s.gpus)) if s.gpus or s.rc not in (0, None) else []
        if lost or missing or (ctx.gathered_gpus is not None and s.gpus and len(s.gpus) < ctx.gathered_gpus):
            names = ", ".join(f"gpu{i} ({ok[0].gpus[i].bus_id})" for i in missing)
            msg = f"{len(s.gpus)} of {n0} GPUs answered at {_t(s)}" + (f"; missing {names}" if names else "")
            return Result.failed(expected, msg, msg + (f": {lost[0]}" if lost else ""),
                                 evidence="\n".join(lost[:5]), evidence_keys=keys)
    return Result.passed(expected, f"{len(base)} GPU(s) in all {len(data.samples)} samples",
                         f"{len(base)} GPU(s) answered throughout", evidence_keys=keys)


def rule_load(data: BurninData, ctx: Context, gpu=None) -> Result:
    """The load soaked the whole window (issue 37.6: the window is the window).

    burnin.sh starts a load that ends with exit 0 again until the window is spent, and prints a
    ``NODEGATE-BURNIN-RUN`` line after each run (counted here, informational). Outcomes, from the
    script's own events (burnin.events: load-start, load-exit, stop) and the load's status:
    stopped by us at the deadline = PASS; exit non-zero = FAIL with its output tail (a load dying
    under stress points at the GPU, driver or power; dcgmi's own non-zero exit with per-GPU results
    is judged by those results); exit 0 but the load ran less than the window by more than
    ``burnin.early_exit_tolerance_s`` (default max(2 x interval_s, 10) s) = ERROR: the node was not
    soaked, so the burn-in proves nothing either way (a bundle of a version that did not repeat the
    load, or a loop cut short)."""
    L = data.load
    keys = ("burnin.load", "burnin.events")
    dur = int(data.run.get("duration_s") or 0)
    expected = f"{L.kind} runs {dur}s and exits 0"
    tail = "\n".join(L.output.replace("\r", "\n").strip().splitlines()[-15:])
    if L.stopped == "interrupted":
        return Result.errored("burn-in interrupted before the window ended", expected=expected, evidence=tail,
                              evidence_keys=keys)
    runs = len(RUN_LINE.findall(L.output[-(1 << 20):]))
    in_runs = f" in {runs} runs" if runs > 1 else ""
    ran = (L.exit_epoch - L.started_epoch) if (L.exit_epoch is not None and L.started_epoch is not None) else None
    observed = f"exit {L.rc} after {ran if ran is not None else '?'}s{in_runs}" + \
        (" (stopped at the deadline)" if L.stopped else "")
    if L.stopped == "deadline":
        if L.kind == "dcgmi":
            return Result.passed(expected, observed, f"dcgmi diag ran the whole {dur}s window{in_runs}; stopped at its "
                                 "end (a run's unfinished tests are ERROR when no run finished)",
                                 evidence=tail, evidence_keys=keys)
        return Result.passed(expected, observed, f"{L.kind} ran the whole window{in_runs} and was stopped at its end",
                             evidence=tail, evidence_keys=keys)
    if L.rc is None:
        return Result.errored("the load's exit status is unknown (connection lost?)", expected=expected,
                              evidence=tail, evidence_keys=keys)
    if L.kind != "dcgmi" and L.rc != 0 and ran is not None and ran < dur - ctx.bspec.early_tolerance:
        return Result.failed(expected, observed, f"{L.kind} died after {ran}s of {dur}s (exit {L.rc})",
                             evidence=tail, evidence_keys=keys)
    if L.rc != 0 and not (L.kind == "dcgmi" and isinstance(ctx.dcgm, list) and ctx.dcgm):
        return Result.failed(expected, observed, f"{L.kind} exited with status {L.rc}", evidence=tail,
                             evidence_keys=keys)
    if ran is None:
        return Result.errored("the load's run time is unknown (no load-start/load-exit event)",
                              expected=expected, evidence=tail, evidence_keys=keys)
    if ran < dur - ctx.bspec.early_tolerance:
        return Result.errored(f"the node was not soaked: {L.kind} ran {ran}s of the {dur}s window{in_runs} "
                              f"(margin burnin.early_exit_tolerance_s = {ctx.bspec.early_tolerance}s)",
                              expected=expected, evidence=tail, evidence_keys=keys)
    return Result.passed(expected, observed, f"{L.kind} ran {ran}s of the {dur}s window{in_runs}", evidence=tail,
                         evidence_keys=keys)


def rule_dcgm(r: DcgmResult, ctx: Context) -> Result:
    """One DCGM diagnostic result (per GPU and test): Pass = PASS, Fail = FAIL, Warn = FAIL when
    burnin.dcgm_warn_fails (default), Skip / Not Run = SKIP naming burnin.dcgm_level."""
    expected = "Pass"
    msg = "; ".join(r.messages)[:1000]
    obs = r.status.title() + (f": {msg}" if msg else "")
    if r.status == "pass":
        return Result.passed(expected, obs, f"DCGM {r.category}/{r.test} passed on GPU {r.gpu}",
                             evidence_keys=("burnin.load",))
    if r.status == "fail" or (r.status == "warn" and ctx.bspec.dcgm_warn_fails):
        return Result.failed(expected, obs, f"DCGM {r.category}/{r.test} {r.status} on GPU {r.gpu}: {msg}",
                             evidence=msg, evidence_keys=("burnin.load",))
    if r.status == "warn":
        return Result.passed(expected, obs, f"DCGM warning accepted (burnin.dcgm_warn_fails is false): {msg}",
                             evidence_keys=("burnin.load",))
    return Result.skipped(f"DCGM did not run {r.test} at burnin.dcgm_level={ctx.bspec.dcgm_level} ({r.status})"
                          + (f": {msg}" if msg else ""), expected=expected, observed=obs)


@dataclass(frozen=True)
class RuleDef:
    name: str          # suite test name without test_
    check_id: str
    scope: str         # node | gpu
    severity: str
    title: str
    remediation: str
    func: Callable


RULES: dict[str, RuleDef] = {r.name: r for r in (
    RuleDef("burnin_load", "NG-BURN-001", "node", "critical", "Burn-in load ran the whole window",
            "Check the load's output tail; a load dying early under stress points at the GPU, driver or power.",
            rule_load),
    RuleDef("burnin_gpu_count", "NG-BURN-002", "node", "critical", "No GPU lost under load",
            "A GPU that falls off the bus under load: reseat/replace; check PSU and riser; RMA if repeatable.",
            rule_gpu_count),
    RuleDef("burnin_clocks", "NG-BURN-003", "gpu", "major", "No HW slowdown / thermal / power brake under load",
            "Check cooling (fans, airflow, inlet temperature) and power delivery (PSU, power brake signal).",
            rule_clocks),
    RuleDef("burnin_pcie_link", "NG-BURN-004", "gpu", "major", "PCIe link at spec under load",
            "Reseat the GPU/riser; check slot and BIOS PCIe settings; a link that trains down under load is a "
            "signal integrity problem.", rule_pcie_link),
    RuleDef("burnin_ecc", "NG-BURN-005", "gpu", "critical", "No ECC error growth under load",
            "Drain the node; run DCGM diag -r 3; RMA the GPU if uncorrectable errors repeat.", rule_ecc),
    RuleDef("burnin_remapped_rows", "NG-BURN-006", "gpu", "critical", "No row remap under load",
            "Drain and reset the GPU to apply pending remaps; RMA if remapping fails or repeats.", rule_remapped_rows),
    RuleDef("burnin_xid", "NG-BURN-007", "gpu", "critical", "No critical Xid under load",
            "Look up the Xid in NVIDIA's Xid catalog; collect nvidia-bug-report.sh.", rule_xid),
    RuleDef("burnin_temperature", "NG-BURN-008", "gpu", "major", "Temperature below limit under load",
            "Check cooling: fans, airflow, heatsink contact, inlet temperature.", rule_temperature),
    RuleDef("burnin_dcgm", "NG-BURN-009", "gpu", "critical", "DCGM diagnostic test passed",
            "Follow the DCGM message; rerun dcgmi diag -r 3 after a reset; RMA on repeat failure.", None),
)}


def attach_evidence(ctx: "Context", bundle, data: BurninData) -> None:
    """Fill ``ctx`` with what the rules read beside the samples: the kernel log lines since the
    start (``burnin.klog_*``) and, when the load was dcgmi, its parsed results. A failure to read
    either is kept in place of the value (the rules that need it report ERROR)."""
    try:
        ctx.kernel_lines = kernel_lines_since_start(bundle)
    except EvidenceError as e:
        ctx.kernel_lines = e
    if data.load.kind == "dcgmi":
        try:
            ctx.dcgm = parse_dcgm(data.load.output)
        except ParseError as e:
            ctx.dcgm = e
