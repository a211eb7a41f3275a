"""The four performance rules, judged per GPU, per link (GPU pair) and per HCA (docs/perf.md).

Per measurement, in order: data corruption reported for the subject = FAIL whatever the figure;
the tool's output unusable or the GPU state during the test invalid = ERROR "invalid measurement:
<why>"; then every rule that applies, each one that fires named with its numbers:

- ``sku_floor``: below the SKU table's floor (floors.py; nodegate/data/perf_floors.yaml, every
  number with its public source) or the spec's override.
- ``in_node_peers``: below ``peer_ratio`` (0.90) x the median of the same node's other subjects
  of the same kind (catches the one slow GPU with no SKU table at all).
- ``fleet``: with at least ``fleet_min_nodes`` nodes of the SKU in the run, more than
  ``fleet_drop`` (5 %, SuperBench's fail band) below the fleet median AND a robust z-score
  0.6745 (x - median) / MAD below -``fleet_z`` (3.5: Iglewicz and Hoaglin's outlier cut-off).
- ``baseline``: with ``--baseline``, more than ``baseline_drop`` (5 %) below the node's own figure
  in its last accepted bundle.

Only the same kind is ever compared (model.Measurement.kind: tool, metric, unit, engine, direction).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable

from ..outcomes import Outcome
from .floors import Floor, floor_for, hca_floor
from .model import Measurement, StatusResult, ToolReport
from .validity import GpuState

RULES = ("sku_floor", "in_node_peers", "fleet", "baseline", "data_corruption", "tool_verdict")


@dataclass(frozen=True)
class Thresholds:
    peer_ratio: float = 0.90
    fleet_drop: float = 0.05
    fleet_min_nodes: int = 10
    fleet_z: float = 3.5
    baseline_drop: float = 0.05


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
    value had to reach; ``validity``: the sampled GPU state, or why the measurement is invalid."""

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

    @property
    def id(self) -> str:
        return f"{self.key}-{self.metric}{_kind_suffix(self.kind)}-{self.subject}"


def _kind_suffix(kind: tuple) -> str:
    if len(kind) < 5:
        return ""
    return (f"-{kind[3]}" if kind[3] else "") + ("-bidir" if kind[4] == "bidir" else "")


@dataclass
class FleetStat:
    median: float
    mad: float
    n_values: int
    n_nodes: int


def fleet_key(sku, key: str, m: Measurement) -> tuple:
    return (sku, key.split(".")[0], m.scope, m.kind)


def fleet_stats(nodes: list[NodeInput]) -> dict[tuple, FleetStat]:
    """Median and MAD of every (SKU, tool, scope, kind) over every node of the run."""
    vals: dict[tuple, list[float]] = {}
    who: dict[tuple, set] = {}
    for ni in nodes:
        for key, rep in ni.reports.items():
            for m in rep.measurements:
                k = fleet_key(ni.sku, key, m)
                vals.setdefault(k, []).append(m.value)
                who.setdefault(k, set()).add(ni.node)
    out = {}
    for k, v in vals.items():
        med = statistics.median(v)
        out[k] = FleetStat(med, statistics.median(abs(x - med) for x in v), len(v), len(who[k]))
    return out


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else (f"{v:.1f}" if abs(v) < 1000 else f"{v:,.0f}")


def _validity(ni: NodeInput, key: str, m: Measurement) -> tuple[str | None, str]:
    st = ni.states.get(key) or {}
    gpus = [g for g in (m.gpu, m.peer) if g is not None]
    if m.scope == "node":
        gpus = sorted(st)
    link_matters = m.metric in ("h2d", "d2h")
    why = [f"GPU {g}: {r}" for g in gpus if g in st and (r := st[g].invalid_reason(link_matters))]
    desc = "; ".join(f"GPU {g}: {st[g].describe()}" for g in gpus[:2] if g in st)
    return ("; ".join(why) or None), desc


def _data_errors(rep: ToolReport, m: Measurement) -> list[str]:
    return [e.what for e in rep.errors if e.gpu is None or e.gpu in (m.gpu, m.peer)]


def judge_node(ni: NodeInput, fleet: dict[tuple, FleetStat], baseline: dict[str, float] | None = None,
               th: Thresholds = Thresholds()) -> list[Item]:
    """Every item of one node (pure). ``baseline``: Item.id -> the node's last accepted figure."""
    items: list[Item] = []
    for key, why in sorted(ni.problems.items()):
        items.append(Item(ni.node, key.split(".")[0], key, "tool", key, "node", Outcome.ERROR, why))
    for key, rep in sorted(ni.reports.items()):
        items.extend(_judge_report(ni, key, rep, fleet, baseline, th))
    return items


def _judge_report(ni, key, rep: ToolReport, fleet, baseline, th) -> list[Item]:
    out: list[Item] = []
    if rep.invalid and not rep.measurements and not rep.statuses:
        return [Item(ni.node, rep.tool, key, "output", key, "node", Outcome.ERROR,
                     f"invalid measurement: {'; '.join(rep.invalid)}")]
    covered = set()
    for m in rep.measurements:
        it = _judge_measurement(ni, key, rep, m, [x for x in rep.measurements if x.kind == m.kind and x is not m],
                                fleet, baseline, th)
        covered.update(g for g in (m.gpu, m.peer) if g is not None)
        out.append(it)
    for e in rep.errors:
        if e.gpu is None and not rep.measurements or e.gpu is not None and e.gpu not in covered:
            subj = "node" if e.gpu is None else f"gpu{e.gpu}"
            out.append(Item(ni.node, rep.tool, key, "data", "data corruption", subj, Outcome.FAIL,
                            f"rule data_corruption: {e.what}", rules=["data_corruption"], gpu=e.gpu,
                            serial=ni.serials.get(e.gpu, "") if e.gpu is not None else ""))
    for s in rep.statuses:
        out.append(_judge_status(ni, key, s))
    for w in dict.fromkeys(rep.waived):
        out.append(Item(ni.node, rep.tool, key, "waived", w, w if w.isidentifier() else "test", Outcome.SKIP,
                        f"{rep.tool} waived {w}: the tool itself says the test does not apply to this system"))
    return out


def _judge_status(ni: NodeInput, key: str, s: StatusResult) -> Item:
    word = {"pass": Outcome.PASS, "fail": Outcome.FAIL, "warn": Outcome.FAIL,
            "skip": Outcome.SKIP, "not run": Outcome.SKIP}.get(s.status, Outcome.ERROR)
    subj = "node" if s.gpu < 0 else f"gpu{s.gpu}"
    slug = "".join(c if c.isalnum() else "_" for c in s.test.lower()).strip("_") or "test"
    msg = f"{s.tool} {s.test}: {s.status}" + (f": {'; '.join(s.messages)[:500]}" if s.messages else "")
    if word is Outcome.SKIP:
        msg += " (the tool did not run this test)"
    return Item(ni.node, s.tool, key, slug, s.test, subj, word, msg,
                rules=["tool_verdict"] if word is Outcome.FAIL else [], gpu=None if s.gpu < 0 else s.gpu,
                serial=ni.serials.get(s.gpu, ""))


def _hold(thresholds: list[float], fired: list[tuple[str, str]], passed: list[str], limit: float, fires: bool,
          rule: str, why_fired: Callable[[], str], why_passed: Callable[[], str]) -> None:
    """One rule held against a figure (floor, in-node peers, fleet, baseline): ``limit`` joins the
    thresholds it had to reach; ``fires``: (``rule``, why) joins the rules that fired, else the
    why joins what it passed. Each text is formatted only when used (the baseline's divides by
    the baseline figure)."""
    thresholds.append(limit)
    if fires:
        fired.append((rule, why_fired()))
    else:
        passed.append(why_passed())


def _judge_measurement(ni, key, rep, m: Measurement, peers: list[Measurement], fleet, baseline, th) -> Item:
    it = Item(ni.node, m.tool, key, m.metric, m.label, m.subject, Outcome.PASS, "", m.value, m.unit,
              gpu=m.gpu, peer=m.peer, hca=m.hca, serial=ni.serials.get(m.gpu, "") if m.gpu is not None else "",
              kind=m.kind)
    it.floor = hca_floor(ni.hca_rates.get(m.hca), ni.overrides) if m.scope == "hca" else \
        floor_for(m, ni.sku, ni.overrides)
    pv = [p.value for p in peers]
    it.node_median, it.node_peers = (statistics.median(pv), len(pv)) if pv else (None, 0)
    fs = fleet.get(fleet_key(ni.sku, key, m))
    if fs is not None:
        it.fleet_median, it.fleet_n = fs.median, fs.n_values
    it.baseline = (baseline or {}).get(it.id)
    invalid, desc = _validity(ni, key, m)
    it.validity = desc
    bad = _data_errors(rep, m)
    if bad:
        it.outcome, it.rules = Outcome.FAIL, ["data_corruption"]
        it.message = f"rule data_corruption: {'; '.join(bad)[:400]} (FAIL whatever the figure: {_fmt(m.value)} {m.unit})"
        return it
    if rep.invalid or invalid:
        it.outcome = Outcome.ERROR
        it.validity = f"invalid: {invalid or '; '.join(rep.invalid)}"
        it.message = f"invalid measurement: {invalid or '; '.join(rep.invalid)} ({_fmt(m.value)} {m.unit} not judged)"
        return it
    fired, passed, thresholds = [], [], []
    fl = it.floor
    if fl is not None and fl.value is not None:
        ref = rep.info.get("plateau_size_b")
        if m.tool == "nccl" and not ni.in_node_nranks_ok and fl.source != "spec perf.floors":
            passed.append(f"floor {_fmt(fl.value)} not applied: the run spans more than this node")
        elif fl.ref_size_b and ref is not None and ref < fl.ref_size_b:
            passed.append(f"floor {_fmt(fl.value)} not applied: the sweep stopped at {ref} B, below the "
                          f"{fl.ref_size_b} B it was measured at")
        else:
            _hold(thresholds, fired, passed, fl.value, m.value < fl.value, "sku_floor",
                  lambda: f"{_fmt(m.value)} {m.unit} below the {ni.sku_label or ni.sku} floor "
                          f"{_fmt(fl.value)} ({fl.source})",
                  lambda: f"floor {_fmt(fl.value)}")
    if it.node_median is not None:
        lim = th.peer_ratio * it.node_median
        _hold(thresholds, fired, passed, lim, m.value < lim, "in_node_peers",
              lambda: f"{_fmt(m.value)} < {th.peer_ratio:.2f} x the median "
                      f"{_fmt(it.node_median)} of {it.node_peers} in-node peers",
              lambda: f"{it.node_peers} peers median {_fmt(it.node_median)}")
    if fs is not None and fs.n_nodes >= th.fleet_min_nodes:
        drop = 1 - m.value / fs.median if fs.median else 0.0
        z = 0.6745 * (m.value - fs.median) / fs.mad if fs.mad > 0 else (-1e9 if drop > 0 else 0.0)
        _hold(thresholds, fired, passed, fs.median * (1 - th.fleet_drop), drop > th.fleet_drop and z < -th.fleet_z,
              "fleet",
              lambda: f"{drop * 100:.1f}% below the fleet median {_fmt(fs.median)} of {fs.n_values} "
                      f"on {fs.n_nodes} nodes (robust z {max(z, -999):.1f})",
              lambda: f"fleet median {_fmt(fs.median)} of {fs.n_values}")
    elif fs is not None:
        passed.append(f"fleet rule needs {th.fleet_min_nodes} nodes, {fs.n_nodes} here")
    if it.baseline is not None:
        lim = it.baseline * (1 - th.baseline_drop)
        _hold(thresholds, fired, passed, lim, m.value < lim, "baseline",
              lambda: f"{(1 - m.value / it.baseline) * 100:.1f}% below this node's baseline "
                      f"{_fmt(it.baseline)} (limit -{th.baseline_drop * 100:.0f}%)",
              lambda: f"baseline {_fmt(it.baseline)}")
    it.threshold = max(thresholds) if thresholds else None
    it.rules = [r for r, _ in fired]
    notes = "; ".join(rep.notes)
    if fired:
        it.outcome = Outcome.FAIL
        it.message = "; ".join(f"rule {r}: {t}" for r, t in fired)
    elif not thresholds and not ni.sku:
        # the GPU model is unknown: no floor can even be looked up ("UNKNOWN without the SKU" in the
        # shared samples' verdicts, e.g. nvbandwidth's README matrix of unnamed GPUs)
        it.outcome = Outcome.ERROR
        it.message = (f"{_fmt(m.value)} {m.unit}: nothing to judge it against (unknown SKU, no in-node peer, "
                      f"fleet under {th.fleet_min_nodes} nodes, no baseline; set perf.floors)"
                      + "".join(f"; {p}" for p in passed))
    elif not thresholds:
        # a known SKU with no published floor for this figure (all_gather, a multi-node run, a sweep
        # that stopped below the floor's size): a valid, uncorrupted measurement PASSes, marked
        # uncertain, as the published samples' verdicts have it ("PASS (uncertain; no floor)",
        # shared/perf/README.md 302, 303, 305, 307); perf.floors or --baseline make it relative
        it.message = (f"{_fmt(m.value)} {m.unit}: uncertain: no published {ni.sku_label or ni.sku} floor for "
                      f"this figure, no in-node peer, fleet under {th.fleet_min_nodes} nodes, no baseline; "
                      f"valid and uncorrupted (set perf.floors to judge it)"
                      + "".join(f"; {p}" for p in passed))
    else:
        it.message = f"{_fmt(m.value)} {m.unit}: " + ", ".join(passed)
    if notes:
        it.message += f" [{notes}]"
    return it
