"""The cross-node phase's rows as nodegate items: one ``XnItem`` per node, job, fault, cable
and one for the phase itself, each with the Result it asserts and the record fields the
engine's one constructor (``nodegate.engine.item_record``) takes. Pure: no pytest, no I/O.

Items and their outcomes (docs/crossnode.md "In the nodegate run"):

============  ==========  ================================================================
kind          check id    owner (``node``) and outcome
============  ==========  ================================================================
node          NG-XN-001   the node: cleared PASS, confirmed_faulty FAIL; suspect, not_used,
                          untested ERROR (fail closed: never accepted on what was not measured)
job           NG-XN-002   no node ("" : the fabric's): the job's verdict (three rules)
fault         NG-XN-003   ``hca``/``cable``: the HCA's node; ``path``: each end's node (one
                          item per end); ``boundary``: no node; always FAIL
cable         NG-XN-004   the node of ``node_end`` when it is a node of the run, else no node;
                          the cable row's verdict (Stage A)
phase         NG-XN-005   no node: PASS when nothing stopped or limited the phase, else ERROR
                          naming each error (launcher missing, a file that does not parse)
============  ==========  ================================================================

``items(result, nodes, why_not=...)`` -> ``list[XnItem]``; ``result`` None (the phase did not
run: ``why_not`` says why) gives an ERROR node item per node and an ERROR phase item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..outcomes import Outcome, Result
from .model import CableRow, FaultRow, JobRow, NodeRow, NodeState, PhaseResult

#: kind -> (check id, check name, title, severity)
CHECKS = {
    "node": ("NG-XN-001", "crossnode_node", "cross-node: the node cleared in jobs across nodes", "critical"),
    "job": ("NG-XN-002", "crossnode_job", "cross-node job (NCCL across nodes, perftest per HCA)", "major"),
    "fault": ("NG-XN-003", "crossnode_fault", "cross-node fault below the node (HCA, cable, path, link)",
              "critical"),
    "cable": ("NG-XN-004", "crossnode_cable", "cable as planned (Stage A: state, neighbour, rate, rail)", "major"),
    "phase": ("NG-XN-005", "crossnode_phase", "cross-node phase ran to the end", "major"),
}
#: where each item's evidence is documented
DOC = "docs/crossnode.md"

_REMEDIATION = {
    "node": ("Drain the node: it failed again with a distinct known-good partner (or an HCA of it is at fault); "
             "reseat its HCAs and cables, check its per-node results and the job evidence, re-run nodegate "
             "--crossnode; if it persists, RMA the failing part"),
    "hca": "Replace the HCA (RMA: its port GUID names it); reseat its cable first if the cable map shows a problem",
    "cable": "Reseat or replace the cable named by both ends (node HCA port <-> switch port), then re-run",
    "path": ("Reseat or replace the cables on this path (both ends named; the nodes passed with every other "
             "partner), then re-run"),
    "boundary": "Inspect the links and switches between the two groups named (the nodes of each group pass alone)",
    "job": "See the job's evidence (command, stdout, stderr, rc) and the node and fault items it led to",
    "cable_row": "Recable as planned (the row names both ends and where the cable lands now)",
    "phase": "Fix what the error names (install the launcher, correct the file), then re-run nodegate --crossnode",
}
#: the action each failing kind names (nodegate.reports.actions: RMA is the vendor's, the rest the site's)
ACTIONS = {"node": "reseat", "hca": "RMA", "cable": "reseat", "path": "reseat", "cable_row": "reseat"}


@dataclass
class XnItem:
    """One item: ``kind`` (a key of CHECKS), ``key`` (its test id suffix: node, job id,
    ``<node>-<fault id>``, ``<node end>``, run id), ``node`` (the node whose verdict it joins,
    "" for the fabric's), the Result, remediation and action, and the record's ``extra``
    fields (value, unit, threshold, rule for a job) and ``ident`` (an HCA's GUID as its serial)."""

    kind: str
    key: str
    node: str
    result: Result
    remediation: str = ""
    action: str = ""
    extra: dict = field(default_factory=dict)
    evidence_dir: str = ""

    @property
    def check(self) -> tuple[str, str, str, str]:
        return CHECKS[self.kind]


def _fmt(v) -> str:
    if v is None:
        return ""
    return f"{v:g}" if isinstance(v, float) else str(v)


def node_item(name: str, row: NodeRow | None, res: PhaseResult | None, why_not: str = "") -> XnItem:
    """The node's roll-up: cleared PASS, confirmed_faulty FAIL, anything else ERROR."""
    if row is None:
        why = why_not or ("the cross-node phase has no row for this node" if res is not None
                          else "the cross-node phase did not run")
        return XnItem("node", name, name, Result.errored(f"not judged across nodes: {why}",
                                                         expected="cleared in a cross-node job"),
                      _REMEDIATION["phase"])
    jobs = ", ".join(row.jobs[:8]) + (f" and {len(row.jobs) - 8} more" if len(row.jobs) > 8 else "")
    observed = f"{row.state.value}" + (f" (jobs {jobs})" if jobs else "") + (
        f"; faults {', '.join(row.faults)}" if row.faults else "")
    msg = f"{row.state.value}: {row.why}"
    exp = "cleared in a cross-node job that passed every rule"
    if row.state is NodeState.CLEARED:
        return XnItem("node", name, name, Result.passed(exp, observed, msg))
    if row.state is NodeState.CONFIRMED_FAULTY:
        return XnItem("node", name, name, Result.failed(exp, observed, msg), _REMEDIATION["node"], ACTIONS["node"])
    return XnItem("node", name, name, Result.errored(f"not judged across nodes: {msg}", exp, observed),
                  _REMEDIATION["phase"])


def job_item(job: JobRow) -> XnItem:
    """One job: its verdict, the figure and the rule that decided it."""
    where = ", ".join(job.hcas) if job.hcas else ", ".join(job.hosts)
    rail = f" rail {job.rail}" if job.rail is not None else ""
    observed = (f"{job.metric} {_fmt(job.value)} {job.unit}".strip() if job.value is not None
                else f"{job.metric or job.payload}: no figure") + f" (rc {job.rc})"
    exp = f"{job.rule}" if job.rule else "every rule passes"
    msg = (f"{job.stage} round {job.round}, {job.payload} on {where}{rail} via {job.launcher or '?'} "
           f"({job.duration_s:g}s): {job.message}"
           + (f"; suspects {', '.join(job.suspects)}" if job.suspects else ""))
    extra = {"value": _fmt(job.value), "unit": job.unit, "threshold": _fmt(job.threshold), "rule": job.rule}
    r = Result(job.verdict if job.verdict in (Outcome.PASS, Outcome.FAIL) else Outcome.ERROR, exp, observed, msg,
               evidence=" ".join(job.command)[:2000])
    if r.outcome is Outcome.ERROR:
        r.message = f"could not judge the job: {msg}"
    return XnItem("job", job.job_id, "", r, _REMEDIATION["job"], extra=extra, evidence_dir=job.evidence)


def fault_items(f: FaultRow, nodes: set[str]) -> list[XnItem]:
    """One FAIL item per node the fault names (``hca``/``cable``: the HCA's; ``path``: both
    ends'), or one fabric item (``boundary``, or ends that are no node of the run)."""
    a, b = f.end_a.split(":", 1)[0], f.end_b.split(":", 1)[0]
    if f.kind in ("hca", "cable"):
        owners = [a] if a in nodes else []
    elif f.kind == "path":
        owners = [n for n in dict.fromkeys((a, b)) if n in nodes]
    else:
        owners = []
    end_b = f.end_b or ("switch port unknown" if f.kind in ("hca", "cable") else "?")
    hca = f.end_a.split(":", 1)[1] if ":" in f.end_a else ""
    # "mlx5_1 port 1": the HCA device as nodegate.reports.parts reads it
    part = f"HCA {hca} port 1" + (f" (port GUID {f.guid})" if f.guid else "") if hca and f.kind in ("hca", "cable") else ""
    observed = f"{f.kind} {f.end_a} <-> {end_b}" + (f"; cables: {'; '.join(f.cables)}" if f.cables else "")
    msg = f"{f.fault_id} {f.kind} at fault: {f.end_a} <-> {end_b}: {f.why}" + (f" [{part}]" if part else "") + (
        f"; cable map: {f.static}" if f.static else "") + f" (jobs {', '.join(f.jobs[:8])})"
    res = Result.failed("every HCA, cable and path carries the rated traffic", observed, msg)
    rem = _REMEDIATION.get(f.kind, _REMEDIATION["boundary"])
    act = ACTIONS.get(f.kind, "")
    extra = {"guid": f.guid, "part_location": f"{f.end_a} <-> {end_b}"}
    if not owners:
        return [XnItem("fault", f.fault_id, "", res, rem, act, extra)]
    return [XnItem("fault", f"{n}-{f.fault_id}", n, res, rem, act, extra) for n in owners]


def cable_item(c: CableRow, nodes: set[str]) -> XnItem:
    """One Stage A cable row, owned by its node when ``node_end`` names a node of the run."""
    node = c.node_end.split(":", 1)[0]
    owner = node if node in nodes else ""
    observed = c.observed or "as planned"
    msg = f"{c.node_end} <-> {c.switch_end}: {c.problem or 'as planned'}" + (
        f" ({c.observed})" if c.observed and c.problem else "") + (f" [{c.source}]" if c.source else "")
    exp = c.expected or "as planned"
    if c.verdict is Outcome.PASS:
        r = Result.passed(exp, observed, msg)
    elif c.verdict is Outcome.FAIL:
        r = Result.failed(exp, observed, msg)
    else:
        r = Result.errored(f"cable not compared: {msg}", exp, observed)
    key = c.node_end if owner else f"{c.node_end}-{c.switch_end}"
    return XnItem("cable", key, owner, r, _REMEDIATION["cable_row"] if c.verdict is Outcome.FAIL else "",
                  ACTIONS["cable_row"] if c.verdict is Outcome.FAIL else "",
                  {"guid": c.guid, "part_location": f"{c.node_end} <-> {c.switch_end}"})


def phase_item(res: PhaseResult | None, why_not: str = "") -> XnItem:
    """The phase itself: PASS when nothing stopped or limited it, else ERROR naming each error."""
    key = (res.run_id if res is not None else "") or "not-run"
    if res is None:
        return XnItem("phase", key, "", Result.errored(f"the cross-node phase did not run: {why_not or 'unknown'}"),
                      _REMEDIATION["phase"])
    what = (f"{len(res.jobs)} jobs in {len(res.rounds)} rounds, {len(res.nodes)} nodes, {len(res.cables)} cables, "
            f"{len(res.faults)} faults" + (" (replayed: nothing launched)" if res.replayed else "")
            + f"; evidence {res.evidence}")
    if res.errors:
        return XnItem("phase", key, "", Result.errored("; ".join(res.errors[:10]) + f" ({what})",
                                                      "the phase runs every stage", what), _REMEDIATION["phase"],
                      evidence_dir=res.evidence)
    if not res.jobs and res.nodes:
        # nothing launched or judged (fewer than two usable nodes): not a phase that ran to the end
        why = next((n.why for n in res.nodes if n.state is NodeState.UNTESTED and n.why), "") or "no usable node pair"
        return XnItem("phase", key, "", Result.errored(f"no cross-node job ran: {why} ({what})",
                                                      "the phase runs every stage", what), _REMEDIATION["phase"],
                      evidence_dir=res.evidence)
    return XnItem("phase", key, "", Result.passed("the phase runs every stage", what, f"ran: {what}"),
                  evidence_dir=res.evidence)


def items(res: PhaseResult | None, nodes: list[str], why_not: str = "") -> list[XnItem]:
    """Every item of the run: a node item per node of ``nodes`` (the run's, in order), then the
    jobs, the faults, the cables and the phase item. Keys are unique per kind (a repeated key
    gets ``#2``...)."""
    names = set(nodes)
    rows = {}
    if res is not None:
        rows = {r.node: r for r in res.nodes}
    out = [node_item(n, rows.get(n), res, why_not) for n in nodes]
    if res is not None:
        out += [job_item(j) for j in res.jobs]
        for f in res.faults:
            out += fault_items(f, names)
        out += [cable_item(c, names) for c in res.cables]
    out.append(phase_item(res, why_not))
    seen: dict[tuple[str, str], int] = {}
    for it in out:
        k = (it.kind, it.key)
        seen[k] = seen.get(k, 0) + 1
        if seen[k] > 1:
            it.key = f"{it.key}#{seen[k]}"
    return out


_ID_BAD = re.compile(r"[^A-Za-z0-9_.:/@+-]")


def item_id(it: XnItem) -> str:
    """The pytest id of an item: its key with anything outside a safe alphabet escaped (node
    names are untrusted; pytest shows ids in the terminal and the reports)."""
    return _ID_BAD.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 256 else "?", it.key)[:200]
