"""Per-test records and per-node summaries, built from pytest reports and the FleetRun.

A ``Record`` is the compact, cleaned copy of one test's ``report.nodegate`` dict (the suite
plugin's contract, docs/contributing.md): kept in memory only while its test runs (``RecordBook``),
then written as one line of results.jsonl (nodegate.reports.results) and dropped; evidence is
kept only for failures and every field is capped.

``node_info`` reads node-level facts for the summary and drift tables. Facts come from
untrusted bundles and may be missing: every access is guarded and a failure becomes the
reason text, never an exception.
"""

from __future__ import annotations

import re

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields

from ..textsafe import shown
from .text import clean, excerpt, one_line

OUTCOMES = ("pass", "fail", "skip", "error")

#: Fields copied from ``report.nodegate`` (contract order), all strings after cleaning.
FIELDS = ("node", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number",
          "vbios_version", "driver_version", "check_id", "check_name", "title", "severity",
          "expected", "observed", "message", "remediation", "bundle_dir", "action", "scope",
          "spec_source", "value", "unit", "threshold", "rule", "floor", "gpus_expected")

def param_node_gpu(nodeid: str) -> tuple[str, str] | None:
    r"""``suites/t.py::test_x[gpu01-gpu3]`` -> ("gpu01", "3"); ``...[gpu01]`` -> ("gpu01", ""); None
    without a ``[...]`` parameter at the end. The node is what lies between the first "[" and the
    last "-gpuN]" (or "]"): ``\[(.+?)(?:-gpu(\d+))?\]$`` without the regex, which backtracked
    quadratically on a test id of many "[" (a hostile node name; issue 31)."""
    if not nodeid.endswith("]"):
        return None
    i = nodeid.find("[")
    if i < 0 or i + 1 >= len(nodeid) - 1:
        return None
    inner = nodeid[i + 1:-1]
    node, sep, gpu = inner.rpartition("-gpu")
    if sep and node and gpu.isdecimal():
        return node, gpu
    return inner, ""


def gpu_slot(rec) -> str:
    """N of the ``gpu<N>`` a report shows for ``rec`` ("" for a node item): its ``gpu_index``, or for
    a GPU check's GPU nvidia-smi does not list (no index) its test id's label (checks.slots)."""
    m = param_node_gpu(rec.nodeid) if rec.gpu_index == "" and rec.scope == "gpu" else None
    return m[1] if m else rec.gpu_index


@dataclass
class Record:
    """One test's verdict. ``outcome`` is pass|fail|skip|error (the nodegate verdict when the
    report carries one, else derived from pytest's phases). ``evidence`` is kept (capped)
    only when the outcome is fail."""

    nodeid: str
    outcome: str = "pass"
    node: str = ""
    gpu_index: str = ""
    pci_bus_id: str = ""
    gpu_serial: str = ""
    gpu_uuid: str = ""
    board_part_number: str = ""
    vbios_version: str = ""
    driver_version: str = ""
    check_id: str = ""
    check_name: str = ""
    title: str = ""
    severity: str = ""
    expected: str = ""
    observed: str = ""
    message: str = ""
    remediation: str = ""
    bundle_dir: str = ""
    action: str = ""
    scope: str = ""          # "node" | "gpu" (the check's), "" for items that are not checks
    xids: str = ""           # Xid codes the kernel log shows for this GPU (or node), ","-joined
    spec_source: str = ""    # where the node's spec came from (FleetRun.spec_source)
    # the node's spec gpu.count as text ("" unset): "0" is a node without GPUs, whose per-GPU
    # checks do not apply (nodegate.engine.verdict, issue 40.8)
    gpus_expected: str = ""
    # measured items (--perf, docs/perf.md): the figure, its unit, the threshold it had to reach
    # and the rules that fired (comma-joined), empty for every other item
    value: str = ""
    unit: str = ""
    threshold: str = ""
    rule: str = ""
    floor: str = ""          # the absolute floor that judged a perf figure (table or site perf.floors)
    evidence: str = ""
    has_nodegate: bool = False

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("has_nodegate")
        return d


def _pytest_outcome(report) -> str | None:
    """pytest phase outcome -> nodegate outcome; None while undecided (passed setup)."""
    when, out = getattr(report, "when", "call"), getattr(report, "outcome", "")
    if out == "skipped":
        return "skip"
    if out == "failed":
        return "fail" if when == "call" else "error"
    if out == "passed" and when == "call":
        return "pass"
    return None


def _first_line(report) -> str:
    text = getattr(report, "longreprtext", "") or ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def nodegate_dict(report) -> dict | None:
    ng = getattr(report, "nodegate", None)
    return ng if isinstance(ng, dict) else None


def attach_nodegate(rep, info: dict) -> None:
    """Put a check's ``info`` dict on its phase report as ``rep.nodegate`` (what ``nodegate_dict``
    reads), and give a FAIL's call report one readable line, ``[check id] message``, instead of
    pytest's assertion dump. Used by the suite, baseline and burn-in plugins' makereport."""
    rep.nodegate = info
    if rep.when == "call" and rep.failed and info["outcome"] == "fail":
        # pytest prints it (failure section, short summary): node text, control characters escaped
        rep.longrepr = shown(f"[{info['check_id']}] {info['message']}")


class RecordBook:
    """The records of the tests running now. ``update(report)`` takes every phase report
    (setup, call, teardown) of every test; ``finish(nodeid)`` hands a finished test's record
    over (to be written) and forgets it, so the book never holds the whole run."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}
        # nodeid -> the report.nodegate dict last copied into its record: the suite plugin gives
        # setup, call and teardown the same dict, which is then copied (cleaned) once, not 3 times
        self._filled_from: dict[str, dict] = {}
        # a folded item's test id -> its GPUs' record ids (the records written at its teardown)
        self._parts: dict[str, list[str]] = {}

    def update(self, report) -> Record | None:
        """Take one phase report. A folded GPU check's report (its nodegate dict has ``parts``:
        one record per GPU, each with its ``nodeid``, nodegate.engine.fold) updates each GPU's
        record as one item per GPU would (the first is returned)."""
        nodeid = getattr(report, "nodeid", None)
        if not nodeid or getattr(report, "when", None) is None:
            return None
        ng = nodegate_dict(report)
        parts = ng.get("parts") if ng is not None else None
        if parts:
            ids = self._parts.get(nodeid)
            if ids is not None and len(ids) == len(parts) and self._filled_from.get(ids[0]) is parts[0]:
                # a later phase of the same folded report dict: every GPU's record was filled
                # from it. A call report, or a teardown that did not fail, changes none of them
                # (what _update would do: nothing, or forget the fill); 2 of its 3 phases skip
                # the loop over its GPUs (~5 % of a 256-node replay's CPU, docs/performance.md)
                if report.when == "call" or (report.when == "teardown" and not report.failed):
                    if report.when == "teardown":
                        for pid in ids:
                            self._filled_from.pop(pid, None)
                    return self.records.get(ids[0])
            else:
                ids = self._parts[nodeid] = [str(p.get("nodeid") or nodeid) for p in parts]
            got = [self._update(pid, report, p) for pid, p in zip(ids, parts)]
            return got[0]
        return self._update(nodeid, report, ng)

    def _update(self, nodeid: str, report, ng: dict | None) -> Record:
        rec = self.records.get(nodeid)
        if rec is None:
            rec = self.records[nodeid] = Record(nodeid=clean(nodeid, 500))
            m = param_node_gpu(nodeid)
            if m:   # fallback identity until a report carries the nodegate dict
                rec.node = one_line(m[0], 300)
                rec.gpu_index = m[1]
        py = _pytest_outcome(report)
        if ng is not None:
            if self._filled_from.get(nodeid) is not ng:
                _fill(rec, ng)
                self._filled_from[nodeid] = ng
        elif py is not None and not rec.has_nodegate:
            rec.outcome = py
            if py in ("fail", "error"):   # e.g. a check that crashed before its verdict
                rec.message = one_line(_first_line(report), 500)
        if py == "error" and report.when == "teardown" and rec.outcome == "pass":
            rec.outcome = "error"
        if report.when == "teardown":
            self._filled_from.pop(nodeid, None)
        return rec

    def finish(self, nodeid: str) -> Record | None:
        """The record of ``nodeid`` (its teardown was reported), removed from the book."""
        self._filled_from.pop(nodeid, None)
        return self.records.pop(nodeid, None)

    def finish_test(self, nodeid: str) -> list[Record]:
        """The records of the test ``nodeid`` (its teardown was reported), removed from the book:
        one per GPU of a folded item, else its one record (none when it has no record)."""
        ids = self._parts.pop(nodeid, None) or [nodeid]
        return [r for r in (self.finish(i) for i in ids) if r is not None]

    def __iter__(self):
        return iter(self.records.values())

    def __len__(self) -> int:
        return len(self.records)

    def by_node(self) -> dict[str, list[Record]]:
        out: dict[str, list[Record]] = {}
        for r in self.records.values():
            out.setdefault(r.node, []).append(r)
        return out


#: (field, cap, newlines kept) of each FIELDS entry, as ``_fill`` cleans it: the identifiers one
#: line of at most 300 characters, the texts (expected, observed, message, remediation) ``clean``
#: with newlines, the rest one line of at most 2,000
_FILL = tuple((f, 300 if f in ("node", "check_id", "severity", "gpu_index", "bundle_dir") else 2000,
               f in ("expected", "observed", "message", "remediation")) for f in FIELDS)


def _fill(rec: Record, ng: dict) -> None:
    """Copy ``ng`` (a report.nodegate dict: untrusted text) into ``rec``, every field cleaned and
    capped (``_FILL``). A printable str within its cap is taken as is: ``text.clean``'s own fast
    path, inlined (one call fewer for ~26 fields of each of the 50,944 records of a 256-node
    replay; ``_fill`` was 1.1 s of a 30 s profiled 64-node replay, docs/performance.md "Issue 40.5")."""
    d = rec.__dict__
    for f, limit, lines in _FILL:
        v = ng.get(f)
        if v is None:
            continue
        if v.__class__ is str and len(v) <= limit and v.isprintable():
            d[f] = v   # what clean/one_line return for it: no control character, nothing cut
        else:
            d[f] = clean(v, limit) if lines else one_line(v, limit)
    out = str(ng.get("outcome", "")).lower()
    if out in OUTCOMES:
        rec.outcome = out
    xids = ng.get("xids")
    if isinstance(xids, (list, tuple)):
        rec.xids = ",".join(str(int(x)) for x in xids if isinstance(x, int) or str(x).isdigit())
    rec.has_nodegate = True
    rec.evidence = excerpt(ng.get("evidence", "")) if rec.outcome == "fail" else ""


# ---------------------------------------------------------------------------- node level
@dataclass
class NodeInfo:
    """Node-level facts for the summary and drift tables; ``None`` = unknown, and
    ``problems`` maps the field to why it is unknown (gather error, evidence error)."""

    node: str
    gather_status: str = "ok"          # "ok" or the gather error text
    gather_s: float | None = None
    driver_version: str | None = None
    flavor: str | None = None
    kernel: str | None = None
    vbios: str | None = None           # distinct VBIOS versions, ", "-joined
    gpu_model: str | None = None       # "NVIDIA H200" or "A x4, B x4" when mixed
    gpu_count: int | None = None
    # system identity from DMI (dmi.id: /sys/class/dmi/id); the serial needs root (--sudo):
    # unreadable or not collected -> the text says so (``dmi_text``), never a guess
    system_vendor: str | None = None
    system_model: str | None = None
    system_serial: str | None = None
    spec_source: str = ""              # FleetRun.spec_source[node] (where the node's spec came from)
    #: the spec keys that turned checks off, each with the file that set it (issue 37.5), "; "-joined
    spec_off: str = ""
    bundle_dir: str = ""
    # issue 19 (drift of firmware and configuration): distinct values over the node's GPUs, ", "-joined
    inforom: str | None = None
    power_limit: str | None = None     # enforced power limit, e.g. "700 W"
    mig_mode: str | None = None        # "Disabled", "Enabled", "N/A"
    compute_mode: str | None = None
    problems: dict[str, str] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    # filled by the reports from the results (nodegate.reports.status)
    status: str = ""                   # accepted | need action | not evaluated
    expected_items: int | None = None  # items collected for the node before deselection
    not_evaluated: str = ""            # why, when status is "not evaluated" (reports.render)
    worst_severity: str = ""
    action: str = ""
    problem: str = ""                  # the worst finding and its fix, one line (reports.render)

    @property
    def evaluated(self) -> bool:
        """Whether any check of the node was judged (a run interrupted before its items ran,
        or items deselected, leaves a gathered node unjudged: never "healthy")."""
        return any(self.counts[k] for k in ("pass", "fail", "skip", "error"))

    @property
    def has_problem(self) -> bool:
        return self.gather_status != "ok" or bool(self.counts["fail"] or self.counts["error"]) or not self.evaluated

    @property
    def status_text(self) -> str:
        """The node's gather column: the gather error, NOT EVALUATED, or "ok"."""
        if self.gather_status != "ok":
            return self.gather_status
        if self.not_evaluated:
            return self.not_evaluated
        return "ok" if self.evaluated else "NOT EVALUATED (gathered, no check judged)"


class NodeInfoStore(Mapping):
    """node name -> ``NodeInfo`` of the nodes released so far (``RunReports.infos``), each kept
    as one JSON string until the reports read it at the end.

    A node's NodeInfo is built when its evidence is dropped, in the middle of its shard, among
    that shard's short-lived objects; kept as it is (the dataclass, its ``problems`` dict and
    ``counts`` Counter, ~20 strings) those objects stay scattered over the heap to the end of
    the run, one node's worth in every shard. One string a node instead: its fields are str,
    int, float, None, a dict of str and a Counter of str, which JSON gives back as they were
    (tests/reports/test_records.py). A ``Mapping`` plus ``store[node] = info``; every read (``[]``,
    ``get``, ``items``) returns a new NodeInfo: the reports fill one and keep it (nodegate.reports.render); a change to it is not stored back."""

    __slots__ = ("_packed",)

    def __init__(self):
        self._packed: dict[str, str] = {}

    @staticmethod
    def pack(info: NodeInfo) -> str:
        # not dataclasses.asdict: it rebuilds a Counter from (key, count) pairs, counting the pairs
        # (json writes the Counter and the problems dict as the JSON objects they are)
        return json.dumps({f.name: getattr(info, f.name) for f in fields(NodeInfo)}, separators=(",", ":"))

    @staticmethod
    def unpack(text: str) -> NodeInfo:
        d = json.loads(text)
        d["counts"] = Counter(d["counts"])
        return NodeInfo(**d)

    def __setitem__(self, node: str, info: NodeInfo) -> None:
        self._packed[node] = self.pack(info)

    def __getitem__(self, node: str) -> NodeInfo:
        return self.unpack(self._packed[node])

    def __contains__(self, node) -> bool:
        return node in self._packed

    def __len__(self) -> int:
        return len(self._packed)

    def __iter__(self):
        return iter(self._packed)


def _try(info: NodeInfo, name: str, fn):
    try:
        return fn()
    except Exception as e:  # untrusted input: any failure becomes the reason shown
        info.problems[name] = one_line(f"{type(e).__name__}: {e}", 300)
        return None


def node_info(node: str, bundle=None, facts=None, records: list[Record] = ()) -> NodeInfo:
    """Build the summary row of one node. ``bundle`` (nodegate.bundle.Bundle) gives the gather
    status (``Bundle.gather_error``, meta ``gather_s``/``duration_s``); ``facts``
    (nodegate.collect.NodeFacts) gives ``driver_banner`` (version, flavor),
    ``nvidia_module_version``, ``kernel_release`` and ``gpus`` (name, vbios_version).
    ``records`` give counts and a fallback driver version / VBIOS (report.nodegate)."""
    info = NodeInfo(node=one_line(node, 300))
    for r in records:
        info.counts[r.outcome] += 1
        if r.outcome == "fail":
            info.counts[f"fail_{r.severity or 'unknown'}"] += 1
    if bundle is not None:
        ge = _try(info, "gather", lambda: bundle.gather_error)
        if ge:
            info.gather_status = one_line(ge, 500)
        meta = getattr(bundle, "meta", {}) or {}
        secs = meta.get("gather_s", meta.get("duration_s")) if isinstance(meta, dict) else None
        info.gather_s = secs if isinstance(secs, (int, float)) else None
    elif facts is None and not records:
        info.gather_status = "not gathered"
    if facts is not None and info.gather_status == "ok":
        _facts_into(info, facts)
        _dmi_into(info, facts)
    if info.driver_version is None:
        info.driver_version = next((r.driver_version for r in records if r.driver_version), None)
    if info.vbios is None:
        vb = sorted({r.vbios_version for r in records if r.vbios_version})
        info.vbios = ", ".join(vb) if vb else None
    return info


def _facts_into(info: NodeInfo, facts) -> None:
    banner = _try(info, "driver", lambda: facts.driver_banner)
    if banner is not None:
        info.flavor = _s(getattr(banner, "flavor", None))
        info.driver_version = _s(getattr(banner, "version", None))
    if info.driver_version is None:
        info.driver_version = _s(_try(info, "driver", lambda: facts.nvidia_module_version))
    info.kernel = _s(_try(info, "kernel", lambda: facts.kernel_release))
    gpus = _try(info, "gpus", lambda: list(facts.gpus))
    if gpus is not None:
        info.gpu_count = len(gpus)
        names = Counter(_s(getattr(g, "name", None)) or "?" for g in gpus)
        if len(names) == 1:
            info.gpu_model = next(iter(names))
        elif names:
            info.gpu_model = ", ".join(f"{n} x{c}" for n, c in sorted(names.items()))
        vb = sorted({_s(getattr(g, "vbios_version", None)) or "?" for g in gpus})
        info.vbios = ", ".join(vb) if vb else None
        from .drift import gpu_config_values
        gpu_config_values(info, gpus)


def _dmi_into(info: NodeInfo, facts) -> None:
    """System vendor, model and serial from ``facts.dmi`` (nodegate.parsers.dmi.DmiFacts): each
    the value, or the reason it is unknown (``DmiFacts.text``)."""
    try:
        dmi = facts.dmi
    except Exception as e:  # untrusted input: the reason is the cell's text, never a guess
        why = getattr(e, "reason", None) or f"{type(e).__name__}: {e}"
        info.problems["dmi"] = one_line(why, 300)
        info.system_vendor = info.system_model = info.system_serial = one_line(f"unknown: {why}", 300)
        return
    info.system_vendor = _s(dmi.text("sys_vendor"))
    info.system_model = _s(dmi.text("product_name"))
    info.system_serial = _s(dmi.text("product_serial"))


def _s(v) -> str | None:
    """A fact value as a cleaned one-line string; None stays None (unknown)."""
    if v is None:
        return None
    return one_line(v, 300) or None


#: "[spec <key> set in <file>]" at the end of a SKIP message (nodegate.engine.evaluate.spec_off_note)
SPEC_OFF_NOTE = re.compile(r"\[(spec [^\]]{1,400} set in [^\]]{1,400})\]$")


def spec_off_of(recs) -> str:
    """The distinct spec-off notes of a node's SKIP records, "; "-joined (at most 1,000 chars)."""
    return "; ".join(dict.fromkeys(m.group(1) for r in recs if r.outcome == "skip"
                                   for m in [SPEC_OFF_NOTE.search(r.message or "")] if m))[:1000]
