"""The performance rules, judged per GPU, per link (GPU pair) and per HCA (docs/perf.md "Rules").

Per measured subject, in order:

1. no valid figure (not measured, invalid figure, unstable rows) -> ERROR naming why, whatever the
   peers show (issue 36 item 1, issue 37 items 1 and 3);
2. the tool's output unusable or the GPU state during the test invalid -> ERROR "invalid
   measurement: <why>";
3. every rule that applies, each that fires named with its numbers -> FAIL:

   - ``sku_floor``: below the SKU table's floor (floors.py; nodegate/data/perf_floors.yaml, every
     number with its public source), the spec's override, or an HCA's port-rate floor; above a
     latency's ceiling;
   - ``in_node_peers``: below ``peer_ratio`` (0.90) x the median of the same node's OTHER subjects
     of the same kind with a valid figure, when there are at least ``min_peers`` (3) of them;
   - ``fleet``: with at least ``fleet_min_nodes`` OTHER nodes of the SKU holding valid figures of the
     kind, more than ``fleet_drop`` (5 %, SuperBench's fail band) below the fleet median of their
     figures AND a robust z-score 0.6745 (x - median) / MAD below -``fleet_z`` (3.5: Iglewicz and
     Hoaglin's outlier cut-off);
   - ``baseline``: with ``--baseline``, more than ``baseline_drop`` (5 %) below the node's own figure
     in its last accepted bundle.

   A latency is judged the other way round (above a ceiling, above the peers' median / 0.90...).
4. no rule fired: PASS when the SKU floor applied, or when only relative rules applied (the
   message then says plainly that no absolute floor exists); ERROR "no floor: <SKU> <metric> (set
   perf.floors...)" when no rule applied at all (issue 36 item 2: never a silent PASS).

Data integrity (a tool's own check: #wrong, gpu_burn's errors and FAULTY, pattern checks) is an
item of its own per subject, judged whether or not a throughput floor exists: clean -> PASS,
corruption -> FAIL, not checked (the run never got there) -> ERROR; "clean" from an output that is
invalid (a non-zero exit, a run that died part-way, a contradiction) proves nothing -> ERROR.

One module because the rules are one ordered judgment per report: the subjects held to the node's
GPUs first (``_subjects``), then each figure through rules 1-4 with the same Item, Thresholds and
fleet statistics; split, each part would import the others' types.

Only the same kind is ever compared (model.Measurement.kind: tool, metric, unit, engine,
direction, mode). An exception while judging one tool's evidence is contained to that tool's
items (ERROR naming it, issue 37 item 2): one node's output never stops the others.
"""

from __future__ import annotations

import bisect
import math
import statistics
from dataclasses import dataclass, field, replace
from typing import Callable

from ..outcomes import Outcome
from ..parsers._figures import MAX_FIGURE
from ..perfmodel.floors import Floor, floor_for, hca_floor
from ..perfmodel.model import Integrity, Measurement, StatusResult, ToolReport
from .validity import GpuState

RULES = ("sku_floor", "in_node_peers", "fleet", "baseline", "data_corruption", "tool_verdict")


@dataclass(frozen=True)
class Thresholds:
    peer_ratio: float = 0.90
    fleet_drop: float = 0.05
    fleet_min_nodes: int = 10
    fleet_z: float = 3.5
    baseline_drop: float = 0.05
    min_peers: int = 3


@dataclass
class NodeInput:
    """What one node's bundle says, ready to judge. ``reports`` keyed by tool key (``nvbandwidth``,
    ``ib_write_bw.mlx5_0``...); ``states`` by the same key; ``problems``: tool key -> why the tool
    could not be judged (missing, timed out, failed): ERROR naming it."""

    node: str
    sku: str | None = None
    sku_label: str = ""
    reports: dict[str, ToolReport] = field(default_factory=dict)
    states: dict[str, dict[int, GpuState]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    gpu_count: int | None = None
    hca_rates: dict[str, float] = field(default_factory=dict)
    serials: dict[int, str] = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)
    in_node_nranks_ok: bool = True


@dataclass
class Item:
    """One judged subject. ``rules``: the rules that fired; ``threshold``: the strictest figure the
    value had to reach; ``validity``: the sampled GPU state, or why the measurement is invalid;
    ``valid_figure``: the value is a measurement the relative rules may use."""

    node: str
    tool: str
    key: str
    metric: str
    label: str
    subject: str
    outcome: Outcome
    message: str
    value: float | None = None
    unit: str = ""
    threshold: float | None = None
    rules: list[str] = field(default_factory=list)
    floor: Floor | None = None
    node_median: float | None = None
    node_peers: int = 0
    fleet_median: float | None = None
    fleet_n: int = 0
    baseline: float | None = None
    validity: str = ""
    gpu: int | None = None
    peer: int | None = None
    hca: str | None = None
    serial: str = ""
    kind: tuple = ()
    valid_figure: bool = False

    @property
    def id(self) -> str:
        return f"{self.key}-{self.metric}{_kind_suffix(self.kind)}-{self.subject}"


def _kind_suffix(kind: tuple) -> str:
    if len(kind) < 5:
        return ""
    mode = kind[5] if len(kind) > 5 else ""
    return (f"-{kind[3]}" if kind[3] else "") + ("-bidir" if kind[4] == "bidir" else "") + (f"-{mode}" if mode else "")


@dataclass
class FleetStat:
    """Every valid figure of one (SKU, tool, scope, kind) in the run, sorted, and who gave it."""

    median: float
    mad: float
    n_values: int
    n_nodes: int
    values: list[float] = field(default_factory=list, repr=False)
    by_node: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def excluding(self, node: str) -> tuple[float | None, int, int]:
        """(median, values, nodes) of the OTHER nodes' figures (bisect order statistics: O(log^2 n))."""
        own = sorted(self.by_node.get(node, []))
        n = len(self.values) - len(own)
        if n <= 0:
            return None, 0, 0

        def kth(k: int) -> float:
            lo, hi = 0, len(self.values) - 1
            while lo < hi:
                mid = (lo + hi) // 2
                v = self.values[mid]
                if bisect.bisect_right(self.values, v) - bisect.bisect_right(own, v) >= k + 1:
                    hi = mid
                else:
                    lo = mid + 1
            return self.values[lo]

        med = kth(n // 2) if n % 2 else (kth(n // 2 - 1) + kth(n // 2)) / 2
        return med, n, self.n_nodes - (1 if own else 0)


def fleet_key(sku, key: str, m: Measurement) -> tuple:
    return (sku, key.split(".")[0], m.scope, m.kind)


def fleet_stats(nodes: list[NodeInput]) -> dict[tuple, FleetStat]:
    """Per (SKU, tool, scope, kind): the valid figures of every node of the run (a figure taken in
    invalid conditions, or no figure at all, is no one's reference)."""
    vals: dict[tuple, list[float]] = {}
    who: dict[tuple, dict[str, list[float]]] = {}
    for ni in nodes:
        for key, rep in ni.reports.items():
            if rep.invalid:
                continue
            for m in _subjects(ni, key, rep)[0]:
                if not _usable(ni, key, m):
                    continue
                k = fleet_key(ni.sku, key, m)
                vals.setdefault(k, []).append(m.value)
                who.setdefault(k, {}).setdefault(ni.node, []).append(m.value)
    out = {}
    for k, v in vals.items():
        v.sort()
        med = statistics.median(v)
        out[k] = FleetStat(med, statistics.median(abs(x - med) for x in v), len(v), len(who[k]), v, who[k])
    return out


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:.2f}" if abs(v) < 10 else f"{v:.1f}" if abs(v) < 1000 else f"{v:,.0f}")


def _validity(ni: NodeInput, key: str, m: Measurement) -> tuple[str | None, str]:
    st = ni.states.get(key) or {}
    gpus = [g for g in (m.gpu, m.peer) if g is not None]
    if m.scope == "node":
        gpus = sorted(st)
    link_matters = m.metric in ("h2d", "d2h")
    why = [f"GPU {g}: {r}" for g in gpus if g in st and (r := st[g].invalid_reason(link_matters))]
    desc = "; ".join(f"GPU {g}: {st[g].describe()}" for g in gpus[:2] if g in st)
    return ("; ".join(why) or None), desc


def _usable(ni: NodeInput, key: str, m: Measurement) -> bool:
    """A figure the relative rules may use: measured, stable, taken in valid conditions."""
    return (isinstance(m.value, (int, float)) and math.isfinite(m.value) and not m.unstable
            and _validity(ni, key, m)[0] is None)


def judge_node(ni: NodeInput, fleet: dict[tuple, FleetStat], baseline: dict[str, float] | None = None,
               th: Thresholds = Thresholds()) -> list[Item]:
    """Every item of one node (pure). ``baseline``: Item.id -> the node's last accepted figure."""
    items: list[Item] = []
    for key, why in sorted(ni.problems.items()):
        items.append(Item(ni.node, key.split(".")[0], key, "tool", key, "node", Outcome.ERROR, why))
    # in-node peers of a figure: the valid figures of its kind in every report of the same tool
    # (perftest runs per HCA: ib_write_bw.mlx5_0, ib_write_bw.mlx5_1... are one tool's reports)
    pool: dict[str, list[Measurement]] = {}
    for key, rep in ni.reports.items():
        try:
            if not rep.invalid:
                pool.setdefault(key.split(".")[0], []).extend(m for m in _subjects(ni, key, rep)[0]
                                                              if _usable(ni, key, m))
        except Exception:  # noqa: BLE001 - the report's own judging below says what is wrong with it
            pass
    for key, rep in sorted(ni.reports.items()):
        try:
            items.extend(_judge_report(ni, key, rep, fleet, baseline, th, pool.get(key.split(".")[0], [])))
        except Exception as e:  # noqa: BLE001 - contained to this tool's items (issue 37 item 2)
            items.append(Item(ni.node, rep.tool, key, "judging", key, "node", Outcome.ERROR,
                              f"internal error judging {key}: {type(e).__name__}: {str(e)[:300]} (the other tools "
                              "and nodes are judged as usual)"))
    return items


def _judge_report(ni, key, rep: ToolReport, fleet, baseline, th, pool: list[Measurement] | None = None) -> list[Item]:
    out: list[Item] = []
    if rep.invalid and not rep.measurements and not rep.statuses and not rep.integrity:
        return [Item(ni.node, rep.tool, key, "output", key, "node", Outcome.ERROR,
                     f"invalid measurement: {'; '.join(rep.invalid)}")]
    measurements, coverage = _subjects(ni, key, rep)
    if pool is None:
        pool = [m for m in measurements if _usable(ni, key, m)] if not rep.invalid else []
    out.extend(coverage)
    for m in measurements:
        peers = [p for p in pool if p.kind == m.kind and p.subject != m.subject]
        out.append(_judge_measurement(ni, key, rep, m, peers, fleet, baseline, th))
    for integ in rep.integrity:
        out.append(_judge_integrity(ni, key, integ, rep.invalid))
    statuses, coverage = _status_subjects(ni, rep)
    # its own id (<test>_gpus-node): a node-wide verdict of the same test keeps <test>-node
    out.extend(Item(ni.node, rep.tool, key, f"{_slug(t)}_gpus", t, "node", Outcome.ERROR, why) for t, why in coverage)
    for s in statuses:
        out.append(_judge_status(ni, key, s))
    for w in dict.fromkeys(rep.waived):
        out.append(Item(ni.node, rep.tool, key, "waived", w, w if w.isidentifier() else "test", Outcome.SKIP,
                        f"{rep.tool} waived {w}: the tool itself says the test does not apply to this system"))
    for i, why in enumerate(dict.fromkeys(rep.problems)):
        out.append(Item(ni.node, rep.tool, key, "run" if i == 0 else f"run{i + 1}", key, "node", Outcome.ERROR, why))
    return out


def _span(gpus) -> str:
    """``1-3, 5`` for GPUs 1, 2, 3, 5."""
    out, run = [], []
    for g in sorted(gpus):
        if run and g == run[-1] + 1:
            run.append(g)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [g]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(out)


def _subjects(ni: NodeInput, key: str, rep: ToolReport) -> tuple[list[Measurement], list[Item]]:
    """The report's measurements held to the node's GPUs (``ni.gpu_count``, what the probe
    listed), and an ERROR item per figure kind whose GPUs or GPU pairs the output left out:

    - one subject printed twice with different figures (a test repeated, two runs' outputs
      concatenated): contradictory -> that subject has no figure (ERROR naming both);
    - a GPU index the node does not have: contradictory (another machine's output, a phantom);
    - a GPU (a GPU pair, for a matrix) of the node absent from every figure of a kind the tool
      measures per GPU: not measured -> ERROR naming the GPUs, never a node that passes on the
      GPUs the tool happened to print."""
    n = ni.gpu_count
    seen: dict[tuple, list[Measurement]] = {}
    for m in rep.measurements:
        seen.setdefault((m.kind, m.subject), []).append(m)
    out: list[Measurement] = []
    for (kind, subject), ms in seen.items():
        m = ms[0]
        vals = list(dict.fromkeys(x.value for x in ms))
        if len(vals) > 1:
            shown = ", ".join("n/a" if v is None else _fmt(v) for v in vals[:4])
            m = replace(m, value=None, why=f"contradictory: {rep.tool} printed {subject} {len(ms)} times with "
                                              f"different figures ({shown} {m.unit}): which one holds is unknown")
        elif n and m.scope in ("gpu", "link") and any(g is not None and not 0 <= g < n for g in (m.gpu, m.peer)):
            m = replace(m, value=None, why=f"contradictory: {rep.tool} measured {subject}, but this node has "
                                              f"{n} GPU(s) (0-{n - 1}): not this node's figure")
        out.append(m)
    items: list[Item] = []
    if not n or rep.invalid:
        return out, items
    kinds: dict[tuple, tuple[str, Measurement, set]] = {}
    for m in out:
        if m.scope == "gpu" and m.gpu is not None:
            kinds.setdefault(m.kind, ("gpu", m, set()))[2].add(m.gpu)
        elif m.scope == "link" and m.gpu is not None and m.peer is not None:
            kinds.setdefault(m.kind, ("link", m, set()))[2].add((m.gpu, m.peer))
    for kind, (scope, m, got) in kinds.items():
        if scope == "gpu":
            missing = [g for g in range(n) if g not in got]
            what = f"GPU(s) {_span(missing)} of the node's {n}"
        else:
            missing = [(a, b) for a in range(n) for b in range(n) if a != b and (a, b) not in got]
            gpus = {g for pair in missing for g in pair}
            what = f"{len(missing)} of the {n * (n - 1)} GPU pairs (GPUs {_span(gpus)} of the node's {n})"
        if missing:
            it = Item(ni.node, m.tool, key, m.metric, m.label, "node", Outcome.ERROR,
                      f"not measured: {what} absent from {rep.tool}'s {m.label} figures (the tool did not "
                      "see or did not print them): nothing proves they perform", unit=m.unit, kind=kind)
            items.append(it)
    return out, items


def _judge_integrity(ni: NodeInput, key: str, integ: Integrity, invalid: list[str] | tuple = ()) -> Item:
    """Corruption seen is FAIL whatever else the output says; a clean check is PASS only from a
    run whose output is valid: "0 errors" of a run that exited non-zero, died part-way or
    contradicts itself (``invalid``) proves nothing -> ERROR naming why."""
    subj = "node" if integ.gpu is None else f"gpu{integ.gpu}"
    label = f"data integrity ({integ.tool}'s own check)"
    serial = ni.serials.get(integ.gpu, "") if integ.gpu is not None else ""
    if integ.ok is True and invalid:
        return Item(ni.node, integ.tool, key, "integrity", label, subj, Outcome.ERROR,
                    f"not checked: invalid run: {'; '.join(invalid)[:300]} ({integ.what[:100]} proves nothing)",
                    gpu=integ.gpu, serial=serial)
    if integ.ok is False:
        return Item(ni.node, integ.tool, key, "integrity", label, subj, Outcome.FAIL,
                    f"rule data_corruption: {integ.what[:400]} (FAIL whatever the throughput)", rules=["data_corruption"],
                    gpu=integ.gpu, serial=serial)
    if integ.ok is None:
        return Item(ni.node, integ.tool, key, "integrity", label, subj, Outcome.ERROR, integ.what[:400],
                    gpu=integ.gpu, serial=serial)
    return Item(ni.node, integ.tool, key, "integrity", label, subj, Outcome.PASS, integ.what[:400], gpu=integ.gpu,
                serial=serial)


def _slug(test: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in test.lower()).strip("_") or "test"


def _status_subjects(ni: NodeInput, rep: ToolReport) -> tuple[list[StatusResult], list[tuple[str, str]]]:
    """A tool's own verdicts (dcgmi diag) held to the node's GPUs, as ``_subjects`` holds figures:
    one test and GPU given two different words -> one "error" status naming both (it was a PASS
    and a FAIL item under one id); a GPU the node does not have -> "error" (not this node's);
    a test that names some of the node's GPUs but not all -> (test, why) for an ERROR item: the
    GPUs it left out were never proven."""
    n = ni.gpu_count
    seen: dict[tuple[str, int], list[StatusResult]] = {}
    for st in rep.statuses:
        seen.setdefault((st.test, st.gpu), []).append(st)
    out: list[StatusResult] = []
    for (test, gpu), ss in seen.items():
        s = ss[0]
        words = list(dict.fromkeys(x.status for x in ss))
        if len(words) > 1:
            s = replace(s, status="error", messages=(
                f"contradictory: {rep.tool} gave {test} on {'the node' if gpu < 0 else f'GPU {gpu}'} {len(ss)} "
                f"verdicts ({', '.join(w or 'none' for w in words[:4])}): which one holds is unknown",
                *[m for x in ss for m in x.messages][:4]))
        elif n and gpu >= n:
            s = replace(s, status="error", messages=(
                f"contradictory: {rep.tool} judged GPU {gpu}, but this node has {n} GPU(s) (0-{n - 1}): not this "
                "node's verdict", *s.messages))
        out.append(s)
    missing: list[tuple[str, str]] = []
    if n:
        by_test: dict[str, set[int]] = {}
        for s in out:
            if s.gpu >= 0:
                by_test.setdefault(s.test, set()).add(s.gpu)
        for test, gpus in by_test.items():
            left = [g for g in range(n) if g not in gpus]
            if left:
                missing.append((test, f"not checked: GPU(s) {_span(left)} of the node's {n} absent from "
                                      f"{rep.tool}'s {test} results: nothing proves they pass it"))
    return out, missing


def _judge_status(ni: NodeInput, key: str, s: StatusResult) -> Item:
    word = {"pass": Outcome.PASS, "fail": Outcome.FAIL, "warn": Outcome.FAIL, "skip": Outcome.SKIP,
            "not run": Outcome.SKIP}.get(s.status, Outcome.ERROR)
    subj = "node" if s.gpu < 0 else f"gpu{s.gpu}"
    slug = _slug(s.test)
    msg = f"{s.tool} {s.test}: {s.status or 'no status'}" + (f": {'; '.join(s.messages)[:500]}" if s.messages else "")
    if word is Outcome.SKIP:
        msg += " (the tool did not run this test)"
    return Item(ni.node, s.tool, key, slug, s.test, subj, word, msg,
                rules=["tool_verdict"] if word is Outcome.FAIL else [], gpu=None if s.gpu < 0 else s.gpu,
                serial=ni.serials.get(s.gpu, ""))


def _hold(thresholds: list[float], fired: list[tuple[str, str]], passed: list[str], limit: float, fires: bool,
          rule: str, why_fired: Callable[[], str], why_passed: Callable[[], str]) -> None:
    """One rule held against a figure (floor, in-node peers, fleet, baseline): ``limit`` joins the
    thresholds it had to reach; ``fires``: (``rule``, why) joins the rules that fired, else the
    why joins what it passed. Each text is formatted only when used."""
    thresholds.append(limit)
    if fires:
        fired.append((rule, why_fired()))
    else:
        passed.append(why_passed())


def _base_item(ni: NodeInput, key: str, m: Measurement) -> Item:
    return Item(ni.node, m.tool, key, m.metric, m.label, m.subject, Outcome.PASS, "", m.value, m.unit,
                gpu=m.gpu, peer=m.peer, hca=m.hca, serial=ni.serials.get(m.gpu, "") if m.gpu is not None else "",
                kind=m.kind)


def _floor(ni: NodeInput, key: str, rep: ToolReport, m: Measurement) -> tuple[Floor | None, str]:
    """(floor, why no floor applies)."""
    if m.scope == "hca":
        return hca_floor(m, ni.hca_rates.get(m.hca), ni.overrides)
    fl = floor_for(m, ni.sku, ni.overrides)
    sku = ni.sku_label or ni.sku
    if fl is None or fl.value is None:
        return None, (f"no published {sku} floor for it" if sku else "the GPU model is unknown (no single SKU)")
    if m.tool == "nccl" and not fl.site:
        nranks = rep.info.get("nranks")
        if not ni.in_node_nranks_ok or (isinstance(nranks, int) and ni.gpu_count and nranks > ni.gpu_count):
            return None, (f"the run spans more than this node ({nranks} ranks, {ni.gpu_count or '?'} GPUs here): the "
                          f"table's floor {_fmt(fl.value)} is for one node")
        ref = rep.info.get("plateau_size_b")
        if fl.ref_size_b and ref is not None and ref < fl.ref_size_b:
            return None, (f"the sweep stopped at {ref} B, below the {fl.ref_size_b} B the {sku} floor "
                          f"{_fmt(fl.value)} was measured at")
    return fl, ""


def _judge_measurement(ni, key, rep, m: Measurement, peers: list[Measurement], fleet, baseline, th) -> Item:
    it = _base_item(ni, key, m)
    invalid, desc = _validity(ni, key, m)
    it.validity = desc
    if m.value is None:
        it.outcome, it.message = Outcome.ERROR, (m.why or "not measured") + "".join(f"; {w}" for w in rep.invalid)
        return it
    if not (isinstance(m.value, (int, float)) and math.isfinite(m.value) and 0 <= abs(m.value) <= MAX_FIGURE):
        # a figure that no comparison can judge (NaN compares false: no rule would ever fire)
        it.value, it.outcome = None, Outcome.ERROR
        it.message = f"invalid figure {str(m.value)[:40]!r}: not a finite measurement (no rule can judge it)"
        return it
    if rep.invalid or invalid:
        it.outcome = Outcome.ERROR
        it.validity = f"invalid: {invalid or '; '.join(rep.invalid)}"
        it.message = f"invalid measurement: {invalid or '; '.join(rep.invalid)} ({_fmt(m.value)} {m.unit} not judged)"
        return it
    if m.unstable:
        it.outcome = Outcome.ERROR
        it.message = f"unstable measurement: {m.unstable} (no one figure to judge; re-run the test)"
        return it
    it.valid_figure = True
    up = m.higher_is_better
    fl, no_floor_why = _floor(ni, key, rep, m)
    it.floor = fl
    pv = [p.value for p in peers]
    it.node_median, it.node_peers = (statistics.median(pv), len(pv)) if pv else (None, 0)
    fs = fleet.get(fleet_key(ni.sku, key, m))
    f_med, f_n, f_nodes = fs.excluding(ni.node) if fs is not None else (None, 0, 0)
    it.fleet_median, it.fleet_n = f_med, f_n
    it.baseline = (baseline or {}).get(it.id)
    if it.baseline is not None and not (isinstance(it.baseline, (int, float)) and math.isfinite(it.baseline)
                                        and 0 < it.baseline <= MAX_FIGURE):
        it.baseline = None          # a baseline figure no comparison can use: that rule does not apply
    fired, passed, thresholds, relative, skipped = [], [], [], [], []
    if fl is not None:
        bad = m.value < fl.value if up else m.value > fl.value
        word = "floor" if up else "ceiling"
        _hold(thresholds, fired, passed, fl.value, bad, "sku_floor",
              lambda: f"{_fmt(m.value)} {m.unit} {'below' if up else 'above'} the "
                      f"{(ni.sku_label or ni.sku or 'HCA') if m.scope != 'hca' else 'HCA ' + str(m.hca)} {word} "
                      f"{_fmt(fl.value)} ({fl.source})",
              lambda: f"{word} {_fmt(fl.value)}")
    if it.node_peers >= th.min_peers:
        lim = th.peer_ratio * it.node_median if up else it.node_median / th.peer_ratio
        relative.append("in-node peers")
        _hold(thresholds, fired, passed, lim, m.value < lim if up else m.value > lim, "in_node_peers",
              lambda: f"{_fmt(m.value)} {'<' if up else '>'} {'' if up else '1/'}{th.peer_ratio:.2f} x the median "
                      f"{_fmt(it.node_median)} of {it.node_peers} in-node peers",
              lambda: f"{it.node_peers} peers median {_fmt(it.node_median)}")
    else:
        skipped.append(f"in-node peers: {it.node_peers} valid figure(s) of other subjects, {th.min_peers} needed")
    if f_med is not None and f_nodes >= th.fleet_min_nodes:
        relative.append("fleet")
        drop = (1 - m.value / f_med if up else m.value / f_med - 1) if f_med else 0.0
        z = 0.6745 * (m.value - f_med) / fs.mad if fs.mad > 0 else ((-1e9 if up else 1e9) if drop > 0 else 0.0)
        z_bad = z < -th.fleet_z if up else z > th.fleet_z
        _hold(thresholds, fired, passed, f_med * (1 - th.fleet_drop) if up else f_med * (1 + th.fleet_drop),
              drop > th.fleet_drop and z_bad, "fleet",
              lambda: f"{drop * 100:.1f}% {'below' if up else 'above'} the fleet median {_fmt(f_med)} of {f_n} on "
                      f"{f_nodes} other nodes (robust z {max(min(z, 999), -999):.1f})",
              lambda: f"fleet median {_fmt(f_med)} of {f_n}")
    else:
        skipped.append(f"fleet: {f_nodes} other node(s) of the SKU with this figure, {th.fleet_min_nodes} needed")
        if f_nodes > 0:
            passed.append(f"fleet rule needs {th.fleet_min_nodes} other nodes, {f_nodes} here")
    if it.baseline is not None:
        relative.append("baseline")
        lim = it.baseline * (1 - th.baseline_drop) if up else it.baseline * (1 + th.baseline_drop)
        _hold(thresholds, fired, passed, lim, m.value < lim if up else m.value > lim, "baseline",
              lambda: f"{abs(1 - m.value / it.baseline) * 100:.1f}% {'below' if up else 'above'} this node's "
                      f"baseline {_fmt(it.baseline)} (limit {'-' if up else '+'}{th.baseline_drop * 100:.0f}%)",
              lambda: f"baseline {_fmt(it.baseline)}")
    else:
        skipped.append("no baseline")
    it.threshold = (max(thresholds) if up else min(thresholds)) if thresholds else None
    it.rules = [r for r, _ in fired]
    notes = "; ".join(x for x in [m.note, *rep.notes] if x)
    key_hint = (f"{m.metric}.{m.engine}" if m.engine else f"{m.metric}.{m.direction}" if m.direction != "uni" else
                f"{m.metric}.{m.mode}" if m.mode and not up else m.metric)
    if fired:
        it.outcome = Outcome.FAIL
        it.message = "; ".join(f"rule {r}: {t}" for r, t in fired)
    elif fl is None and not relative:
        subject = ni.sku_label or ni.sku or "unknown GPU model"
        if m.scope == "hca":
            subject = f"HCA {m.hca}"
        it.outcome = Outcome.ERROR
        it.message = (f"no floor: {subject} {m.metric}{' ' + m.mode if m.mode else ''} "
                      f"(set perf.floors.{key_hint} in {m.unit} to judge it): {_fmt(m.value)} {m.unit} not judged; "
                      f"{no_floor_why}; " + "; ".join(skipped))
    elif fl is None:
        it.message = (f"{_fmt(m.value)} {m.unit}: no absolute floor ({no_floor_why}; set perf.floors.{key_hint}): "
                      f"judged by {' and '.join(relative)} only: " + ", ".join(passed))
    else:
        it.message = f"{_fmt(m.value)} {m.unit}: " + ", ".join(passed)
    if notes:
        it.message += f" [{notes}]"
    return it
