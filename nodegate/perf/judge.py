"""A node's bundle -> ``NodeInput`` (rules.py), and the whole run's items (``judge_run``).

Reads only bundle items (``perf.*``) and the probe's facts (GPU names for the SKU, serials, HCA
port rates), so ``--replay`` and ``--baseline`` re-judge without a network. A tool the spec asked
for that is missing (rc 127), timed out, was interrupted, or never ran is a ``problem`` (ERROR
naming it); a non-zero exit status makes its figures invalid (ERROR) except for tools whose exit
status carries no meaning (gpu_burn exits 0 even when every GPU is FAULTY; dcgmi exits non-zero
when a test fails and says which in its JSON).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..bundle import Bundle
from ..errors import EvidenceError
from ..outcomes import Outcome
from .extract import extract
from ..perfmodel.floors import sku_for, sku_name
from .locate import localise
from .rules import Item, NodeInput, Thresholds, fleet_stats, judge_node
from .spec import PerfSpec
from .validity import gpu_states

_TOOL_KEY = re.compile(r"^perf\.(?:(before|after)\.)?(nvbandwidth|nccl|dcgmi|gpu_burn|ib_write_bw|ib_read_bw|ib_send_bw|"
                       r"ib_write_lat|ib_read_lat|ib_send_lat|dcgmproftester|builtin|command)"
                       r"(?:\.([A-Za-z0-9_.-]{1,64}?))?$")
#: tools whose exit status carries no verdict: gpu_burn exits 0 even when every GPU is FAULTY
#: (wilicc/gpu-burn issue 12), dcgmi exits non-zero when a test fails and says which in its output
_RC_MEANINGLESS = ("gpu_burn", "dcgmi")


@dataclass
class NodeContext:
    """What judging needs from the probe's facts (taken once; facts may be released later)."""

    gpu_names: dict[int, str]
    serials: dict[int, str]
    hca_rates: dict[str, float]


def node_context(facts) -> NodeContext:
    names, serials, rates = {}, {}, {}
    try:
        for i, g in enumerate(facts.gpus):
            idx = g.index if isinstance(g.index, int) else i
            names[idx] = str(g.name or "")
            serials[idx] = str(g.serial or "") if isinstance(g.serial, str) else ""
    except Exception:  # noqa: BLE001 - no GPU facts: no SKU (the peer and fleet rules still apply)
        pass
    try:
        for p in facts.ib_ports or []:
            if p.rate_gbps:
                rates.setdefault(p.device, float(p.rate_gbps))
    except Exception:  # noqa: BLE001 - no port rates: no ib_write_bw floor
        pass
    return NodeContext(names, serials, rates)


def run_record(b: Bundle, label: str = "") -> dict | None:
    """The phase's run record (``perf.run`` / ``perf.<label>.run``: the controller's JSON of the
    exec: status, tests, events), None when the bundle has none. Present but unusable (not JSON,
    nested past the decoder's depth, not an object, an item in error): ``{"status":
    "unreadable", "error": why}``, so its tools' figures ERROR naming it instead of the run
    being taken for one without --perf."""
    key = f"perf.{label}.run" if label else "perf.run"
    if not b.has(key):
        return None
    try:
        v = json.loads(b.text(key))
    except (ValueError, RecursionError, EvidenceError) as e:   # RecursionError: deep nesting (json's decoder)
        return {"status": "unreadable", "error": f"{key} unreadable: {type(e).__name__}: {str(e)[:200]}"}
    return v if isinstance(v, dict) else {"status": "unreadable", "error": f"{key} is not a JSON object"}


def node_input(b: Bundle, ctx: NodeContext, spec: PerfSpec, label: str = "") -> NodeInput:
    skus = {sku_for(n) for n in ctx.gpu_names.values() if n}
    sku = skus.pop() if len(skus) == 1 else None   # mixed GPUs: no single SKU floor
    ni = NodeInput(b.node, sku, sku_name(sku) if sku else "", gpu_count=len(ctx.gpu_names) or None,
                   hca_rates=dict(ctx.hca_rates), serials=dict(ctx.serials), overrides=dict(spec.floors))
    rec = run_record(b, label)
    if b.gather_error:
        ni.problems["perf"] = f"node not gathered: {b.gather_error}"
        return ni
    if rec is None:
        ni.problems["perf"] = "no performance evidence in the bundle (perf.run missing: run with --perf)"
        return ni
    status = rec.get("status")
    if status == "unreadable":   # run_record: the phase's own record is unusable: nothing is judged on it
        ni.problems["perf"] = str(rec.get("error"))
        return ni
    found = set()
    for key in sorted(b.items):
        m = _TOOL_KEY.match(key)
        if not m or (m.group(1) or "") != label or key.endswith((".state", ".run", ".tools")):
            continue
        tool, hca = m.group(2), m.group(3)
        short = f"{tool}.{hca}" if hca else tool
        found.add(tool)
        ev = b.get(key)
        if ev.rc == 127:
            ni.problems[short] = f"{tool}: tool missing: {(ev.err_text or ev.text).strip()[:300] or 'not found'}"
            continue
        if ev.status != "ok" or ev.rc is None:
            ni.problems[short] = f"{tool}: output {ev.status} ({ev.why or 'deadline or interruption'})"
            continue
        try:
            rep = extract(tool, ev.text, hca=hca, hint=_hint(b, label, tool, hca))
        except Exception as e:  # noqa: BLE001 - a parser bug on hostile output: this tool ERRORs, nothing else
            ni.problems[short] = f"{tool}: internal error reading its output: {type(e).__name__}: {str(e)[:300]}"
            continue
        if ev.rc != 0 and tool not in _RC_MEANINGLESS:
            evs = rec.get("events") if isinstance(rec.get("events"), list) else []
            stopped = any(isinstance(e, dict) and e.get("name") == "stop" and e.get("key") == key for e in evs)
            rep.invalid.append(f"{tool} stopped at the deadline (perf.timeout_s)" if stopped else
                               f"{tool} exit status {ev.rc}: {(ev.err_text or '').strip()[:200]}")
        ni.reports[short] = rep
        st = f"{key}.state"
        if b.has(st):
            ni.states[short] = gpu_states(b.text(st))
        nr = rep.info.get("nranks")
        if tool == "nccl" and isinstance(nr, int) and ni.gpu_count and nr > ni.gpu_count:
            ni.in_node_nranks_ok = False
    for t in (rec.get("tests") if isinstance(rec.get("tests"), list) else [])[:64]:
        if t not in found and isinstance(t, str):
            ni.problems[t] = (f"{t}: not run (the phase ended: {status}"
                              f"{': ' + str(rec.get('error'))[:200] if rec.get('error') else ''})")
    return ni


def _hint(b: Bundle, label: str, tool: str, suffix: str | None) -> str | None:
    """What the spec ran, from the phase's own ``perf.tools`` record (``tool all_reduce_perf:
    /usr/bin/all_reduce_perf``): the nccl-tests binary; for dcgmproftester the test id is the key's
    suffix (``t1004``). Used by extract only where the output agrees with it."""
    if tool == "dcgmproftester":
        return suffix
    if tool != "nccl":
        return None
    key = f"perf.{label}.tools" if label else "perf.tools"
    if not b.has(key):
        return None
    for ln in b.text(key).splitlines()[:64]:
        if m := re.match(r"^tool (\S{1,200}_perf): ", ln):
            return m.group(1).rsplit("/", 1)[-1]
    return None


def judge_run(inputs: list[NodeInput], baselines: dict[str, dict[str, float]] | None = None,
              th: Thresholds | None = None, th_by_node: dict[str, Thresholds] | None = None) -> dict[str, list[Item]]:
    """Every node's items: fleet statistics over ``inputs``, then each node's rules and localisation.
    An exception while judging one node is contained to that node (issue 37 item 2)."""
    try:
        fs = fleet_stats(inputs)
    except Exception:  # noqa: BLE001 - no fleet rule rather than no verdicts (each item says fleet: 0 nodes)
        fs = {}
    out = {}
    for ni in inputs:
        t = (th_by_node or {}).get(ni.node) or th or Thresholds()
        try:
            items = judge_node(ni, fs, (baselines or {}).get(ni.node), t)
            items.extend(localise(items))
        except Exception as e:  # noqa: BLE001 - one node's evidence never stops the others
            items = [Item(ni.node, "perf", "perf", "judging", "perf", "node", Outcome.ERROR,
                          f"internal error judging this node's performance evidence: {type(e).__name__}: "
                          f"{str(e)[:300]}")]
        out[ni.node] = items
    return out


def thresholds(spec: PerfSpec) -> Thresholds:
    t = spec.thresholds
    return Thresholds(t.peer_ratio, t.fleet_drop, t.fleet_min_nodes, t.fleet_z, t.baseline_drop, t.min_peers)


def baseline_label(b: Bundle, label: str = "") -> str | None:
    """The perf phase of baseline bundle ``b`` that this run's ``label`` phase is compared with: the
    same phase where ``b`` has it, else a plain ``--perf`` run's, else the other phase of a
    ``--perf --burn-in`` run (a bundle holds either ``perf.run`` or ``perf.before/after.run``). None:
    no perf evidence. Without this a baseline taken by the before/after recipe (docs/perf.md) had no
    ``perf.run`` and the baseline rule silently never applied (tests/perf/test_perf_burnin.py)."""
    for lab in dict.fromkeys((label, "", "before", "after")):
        if run_record(b, lab) is not None:
            return lab
    return None


def baseline_figures(b: Bundle, ctx: NodeContext, spec: PerfSpec, label: str = "") -> dict[str, float]:
    """Item id -> figure of the node's last accepted bundle (only items that PASSed there), from
    its perf phase ``label`` ("" a plain --perf run, "before"/"after" the burn-in's)."""
    ni = node_input(b, ctx, spec, label)
    if "perf" in ni.problems:
        return {}
    items = judge_node(ni, {}, None, thresholds(spec))
    # a valid figure that PASSed, or had nothing to be judged against there ("no floor"): never
    # an invalid, unstable or unmeasured one, nor one that FAILed
    return {i.id: i.value for i in items if i.valid_figure and i.outcome.value in ("pass", "error")}
