"""Evaluation: a node's facts, its spec and the selected (check, GPU) pairs -> one result each.

``evaluate(facts, spec, selection, node=NodeContext(...)) -> list[ItemResult]`` is the pure core
every run mode's items go through (issue 40 item 1): the pytest item (nodegate.session.verdicts)
selects a (check, GPU) pair, asks ``evaluate_item`` for its result and presents it (PASS/FAIL in
the test body, ERROR in setup, SKIP); it decides nothing itself. Imports no pytest, gatherer,
terminal or report (pyproject.toml's import contracts).

What a run mode knows about a node before any item (a spec that did not validate, a bundle not
read, a node not gathered, another node answering for the same machine) is a ``NodeContext``,
decided once per node by the caller; an item of such a node is ERROR naming why, never judged
from evidence that is not its node's (docs/checks.md, outcome semantics).

Each ``ItemResult`` carries the record every report reads (``record``: the ``report.nodegate``
contract of docs/contributing.md, keys ``RECORD_KEYS``) and the JUnit ``<properties>``
(``properties``: ``PROP_KEYS`` in that order, remediation only on FAIL and ERROR).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

from .. import checks as ng_checks
from ..outcomes import Outcome, Result
from ..dotted import holds_path, spec_get
from ..textsafe import shown
from .identity import missing_gpu_identity, xids_by_bus, xids_for
from .remedy import error_remediation

#: JUnit <properties> of every nodegate item, in this order (docs/contributing.md); spec_source:
#: where the node's spec came from (nodegate.specsource)
PROP_KEYS = ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid",
             "expected", "observed", "remediation", "spec_source")

#: the check whose item compares every node of the run (NG-INV-003): it reports clashes itself
IDENTITY_CHECK = "NG-INV-003"


@dataclass(frozen=True)
class NodeContext:
    """What the run mode established about a node before any of its items, once per node.

    ``spec_error``: why its spec did not validate; ``refused``: why its bundle was not read
    (bundle meta ``status`` refused: its ``error``); ``gather_error``: why it was not gathered
    (transport or probe); ``clash``: the message of another node of the run answering for the
    same machine (``clash_message``); ``bundle_dir``, ``spec_source``: shown in every report;
    ``gpus_collected_from_spec``: the per-GPU items were collected from ``gpu.count`` before the
    node was gathered (tests alongside the gathering), so GPUs beyond it have no item;
    ``spec_origin(key) -> file``: the file that set a spec key (inventory group_vars/host_vars,
    ``--spec FILE``), "" when none; ``spec_raw``: the node's own spec as written (which keys
    it sets)."""

    node: str
    spec_error: str | None = None
    refused: str | None = None
    gather_error: str | None = None
    clash: str | None = None
    bundle_dir: str = ""
    spec_source: str = ""
    gpus_collected_from_spec: bool = False
    spec_raw: dict = field(default_factory=dict)
    spec_origin: Callable[[str], str] | None = None


@dataclass
class ItemResult:
    """One selected (check, GPU) pair's outcome: ``result`` (printable: control characters of
    node output escaped), ``record`` (the reports' dict), ``properties`` (JUnit name/value
    pairs), ``remediation`` (what the record says to do), ``spec_note`` (`` [spec K set in F]``
    of a SKIP, "" otherwise) and ``surplus`` (GPUs the node reports when some lie beyond
    ``gpu.count``, else None: the caller records it for the run's summary)."""

    check: ng_checks.CheckDef
    slot: object
    result: Result
    record: dict
    properties: list
    remediation: str
    spec_note: str = ""
    surplus: int | None = None


def clash_message(groups) -> str | None:
    """The ERROR message of every item of a node that shares its boot or machine id with other
    nodes of the run (``FleetRun.identity_groups``), or None without a clash. Each group once,
    bounded (ClashGroup.phrase): a message per item naming all N-1 copies made the reports
    quadratic in the nodes (issue 31, item 9). Also the perf and burn-in phases' (issue 37.9)."""
    if not groups:
        return None
    many = any(g.count > 1 for g in groups)
    return ("not evaluated: " + "; ".join(g.phrase() for g in groups)
            + f": one machine answered for {'all of them' if many else 'both'}, so this node's evidence cannot "
            "be attributed to it (NG-INV-003)")


def printable(res: Result) -> Result:
    """``res`` with its expected, observed and message text safe to print: pytest writes them
    itself (failure sections, the short summary, skip reasons, assertion messages), and they
    carry node output (docs/security.md). Control characters are shown escaped."""
    m, e, o = shown(res.message), shown(res.expected), shown(res.observed)
    if m is res.message and e is res.expected and o is res.observed:
        return res
    return replace(res, message=m, expected=e, observed=o)


def surplus_gpus(facts, spec, res: Result) -> tuple[Result, int | None]:
    """gpu_count while the tests ran alongside gathering: per-GPU items were collected from
    gpu.count, so a GPU beyond it has none. Never silent: a FAIL says so, and a SKIP (gpu_count
    turned off in checks.skip) becomes ERROR naming the GPUs whose checks did not run.
    Returns (result, the node's GPU count when some lie beyond gpu.count, else None)."""
    want = spec_get(spec, "gpu.count")
    try:
        gpus = facts.gpus
        extra = [g for g in gpus if g.index is not None and want and g.index >= int(want)]
    except Exception:  # noqa: BLE001 - unreadable GPUs: gpu_count's own result says so
        return res, None
    if not extra:
        return res, None
    names = ", ".join(f"gpu{g.index} ({g.pci_bus_id or 'bus id unknown'})" for g in extra)
    why = (f"the node reports {len(extra)} GPU(s) beyond gpu.count {want}: {names}; their per-GPU "
           "checks were not collected (run with --gather-first, or correct gpu.count)")
    if res.outcome is Outcome.FAIL:
        return replace(res, message=f"{res.message}; {why}"), len(gpus)
    return Result.errored(why, expected=res.expected or f"{want} GPU(s)", evidence_keys=("smi.qx",)), len(gpus)


def gpu_identity(facts, slot) -> dict:
    """Index, bus id, serial, UUID, part number and VBIOS of the item's GPU ("" where unknown).
    ``gpu_index`` is nvidia-smi's index of the GPU (what NVML numbers it); a GPU nvidia-smi does
    not show has none ("": null in results.jsonl; its item label ``gpu<N>`` follows the present
    GPUs' indices, checks.slots) and is named by its bus id and its other evidence
    (nodegate.engine.identity): its UUID and VBIOS. The driver's Device Minor is not an index of
    nvidia-smi's numbering (the missing GPU's /dev/nvidia3 while nvidia-smi numbers another GPU 3)."""
    ident = {"gpu_index": "", "pci_bus_id": "", "gpu_serial": "", "gpu_uuid": "",
             "board_part_number": "", "vbios_version": ""}
    if slot is None:
        return ident
    ident["gpu_index"] = str(slot.index) if getattr(slot, "present", True) else ""
    ident["pci_bus_id"] = slot.pci_bus_id or ""
    found = False
    try:
        gpus = facts.gpus
        # the GPU at this index and bus id first: two GPUs may report one bus id (issue 17)
        order = sorted(gpus, key=lambda g: (g.index != slot.index, g.pci_bus_id != slot.pci_bus_id))
        for g in order:
            if (slot.pci_bus_id and g.pci_bus_id == slot.pci_bus_id) or (not slot.pci_bus_id and g.index == slot.index):
                ident.update(pci_bus_id=g.pci_bus_id or "", gpu_serial=_s(g.serial), gpu_uuid=_s(g.uuid),
                             board_part_number=_s(g.board_part_number), vbios_version=_s(g.vbios_version))
                found = True
                break
    except Exception:  # noqa: BLE001 - identity is best effort; the check reports the error
        pass
    if not found and not getattr(slot, "present", True):
        other = missing_gpu_identity(facts, slot.pci_bus_id)
        other.pop("gpu_name", None)
        ident.update(other)
    return ident


def _s(v) -> str:
    return "" if v is None else str(v)


def driver_version(facts) -> str:
    """The loaded nvidia module's version (``NodeFacts.nvidia_module_version``), "" when it
    cannot be read or there are no facts (``facts`` None: a node not in memory)."""
    try:
        v = facts.nvidia_module_version
    except Exception:  # noqa: BLE001
        return ""
    return str(v) if v else ""


#: a spec key a SKIP message names: ``kernel_log.enabled=false: ...``, ``memory.repair=auto: ...``,
#: ``checks.skip lists NG-KLOG-001: ...``
_SKIP_KEY = re.compile(r"\b([a-z][a-z0-9_]{0,40}(?:\.[a-z0-9_]{1,40}){1,4})(?==|\b is\b| set\b| lists\b)")


def spec_off_note(node: NodeContext, message: str) -> str:
    """`` [spec kernel_log.enabled set in /site/host_vars/n1.yml]``: where the spec value that made
    this check SKIP was set (issue 37.5: a spec that turns checks off is shown with its source
    file in every report: the SKIP message reaches the terminal (-rs), HTML, JUnit and
    results.jsonl). Only keys the node's own spec sets (a default needs no file); the file from
    ``node.spec_origin`` (the inventory's group_vars/host_vars, Ansible's order, the last one
    kept by the merge), else the run's spec source (``--spec FILE``); "" when none."""
    raw = node.spec_raw or {}
    keys = [k for k in dict.fromkeys(_SKIP_KEY.findall(message[:300])) if holds_path(raw, k.split("."))]
    notes = []
    for k in keys[:3]:
        f = ""
        if node.spec_origin is not None:
            try:
                f = node.spec_origin(k) or ""
            except Exception:  # noqa: BLE001 - naming the file is best effort; the skip stands
                f = ""
        f = f or node.spec_source or ""
        if f:
            notes.append(f"spec {k} set in {f}")
    return f" [{'; '.join(notes)}]" if notes else ""


#: GPU identity keys of a record ("" where unknown or for a node item)
IDENT_KEYS = ("gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid", "board_part_number", "vbios_version")


def item_record(node: str, res: Result, *, check_id: str, check_name: str, title: str, severity: str,
                remediation: str, scope: str = "", ident: dict | None = None, driver_version: str | None = None,
                action: str = "", bundle_dir: str = "", spec_source: str = "", gpus_expected: str = "",
                extra: dict | None = None) -> dict:
    """THE record of one item's result, the ``report.nodegate`` contract every report reads
    (docs/contributing.md; nodegate.reports.records.Record): one constructor for the suite's
    checks (``evaluate_item``) and for every phase's items (site checks, --baseline regressions,
    --burn-in rules, --perf figures), so a phase cannot drift from the others' shape.

    ``ident``: the GPU identity (``IDENT_KEYS``, plus ``driver_version`` and ``xids`` when known);
    ``extra``: a phase's own keys (a perf figure's value, unit, threshold, rule, floor)."""
    ident = dict(ident or {})
    out = {"node": node, **{k: str(ident.get(k, "") or "") for k in IDENT_KEYS},
           "driver_version": driver_version if driver_version is not None else str(ident.get("driver_version", "") or "")}
    if "xids" in ident:
        out["xids"] = ident["xids"]
    out.update({"check_id": check_id, "check_name": check_name, "title": title, "severity": severity,
                "scope": scope, "expected": res.expected, "observed": res.observed, "message": res.message,
                "evidence": res.evidence, "remediation": remediation, "outcome": res.outcome.value,
                "action": action, "bundle_dir": bundle_dir, "spec_source": spec_source,
                "gpus_expected": gpus_expected})
    if extra:
        out.update(extra)
    return out


def precondition(node: NodeContext, check_id: str, unresolved: str | None = None) -> Result | None:
    """The ERROR every item of the node gets before any evidence is judged, or None."""
    if node.spec_error:
        return Result.errored(f"spec error: {node.spec_error}")
    if node.refused is not None:
        return Result.errored(f"bundle not read: {node.refused}", evidence_keys=())
    if node.gather_error:
        return Result.errored(f"node not gathered: {node.gather_error}", evidence_keys=())
    if node.clash and check_id != IDENTITY_CHECK:
        return Result.errored(node.clash, evidence_keys=("meta.boot_id", "meta.machine_id"))
    if unresolved:
        return Result.errored(unresolved, evidence_keys=("smi.qx",))
    return None


def evaluate_item(node: NodeContext, facts, spec, check_id: str, slot=None, *, unresolved: str | None = None,
                  cache: dict | None = None) -> ItemResult:
    """One selected (check, GPU slot) of a node -> its ItemResult.

    ``facts``: the node's NodeFacts (nodegate.collect); ``spec``: its validated Spec;
    ``slot``: the GpuSlot of a per-GPU check, None for a node check; ``unresolved``: why the
    slot an item was collected for matches no GPU of the node (an ERROR); ``cache``: a dict the
    caller keeps per node (GPU identity, driver version, Xids: the same for the ~30 items of a
    node). Raises KeyError for a check id the catalog does not declare."""
    cdef = ng_checks.load_all()[check_id]
    cache = {} if cache is None else cache
    surplus = None
    res = precondition(node, check_id, unresolved)
    if res is None:
        # the same check on the same facts, computed ahead (``check_results``, in the prefetching
        # process: nodegate.fleetrun.prefetch), else now; taken once
        ahead = getattr(facts, "checked", None)
        res = ahead.pop((check_id, slot), None) if ahead else None
        if res is None:
            res = ng_checks.evaluate(check_id, facts, spec, slot)
        if node.gpus_collected_from_spec and cdef.name == "gpu_count":
            res, surplus = surplus_gpus(facts, spec, res)
    spec_note = spec_off_note(node, res.message) if res.outcome is Outcome.SKIP else ""
    if spec_note:
        res = replace(res, message=res.message + spec_note)
    res = printable(res)
    key = None if slot is None else (slot.index, slot.pci_bus_id)
    idents = cache.setdefault("gpus", {})
    ident = idents.get(key)
    if ident is None:
        ident = idents[key] = gpu_identity(facts, slot)
        if "driver" not in cache:
            cache["driver"] = driver_version(facts)
        ident["driver_version"] = cache["driver"]
        if "xids" not in cache:
            cache["xids"] = xids_by_bus(facts) if facts is not None and not node.gather_error else {}
        ident["xids"] = xids_for(cache["xids"], None if slot is None else (ident["pci_bus_id"] or None))
    # an ERROR proves nothing about the node: its remediation says how to obtain the evidence,
    # never the check's FAIL text (nodegate.engine.remedy)
    remediation = error_remediation(res.message) if res.outcome is Outcome.ERROR else cdef.remediation
    record = item_record(node.node, res, check_id=cdef.id, check_name=cdef.name, title=cdef.title,
                         severity=cdef.severity, scope=cdef.scope, remediation=remediation, ident=ident,
                         action=(res.details.get("action") or cdef.action) if res.outcome is Outcome.FAIL else "",
                         bundle_dir=node.bundle_dir, spec_source=node.spec_source,
                         gpus_expected=_gpus_expected(spec))
    # JUnit <properties>: remediation only where it applies (FAIL, ERROR); "" on PASS and SKIP
    # (docs/reports.md; it was 21 % of junit.xml's bytes, most of them on passed tests)
    props = [(k, record[k]) for k in PROP_KEYS]
    if res.outcome in (Outcome.PASS, Outcome.SKIP):
        props[PROP_KEYS.index("remediation")] = ("remediation", "")
    if spec_note:   # JUnit <property name="spec_set_in">: the spec key that turned this check off, and its file
        props.append(("spec_set_in", spec_note.strip(" []")))
    return ItemResult(cdef, slot, res, record, props, remediation, spec_note, surplus)


def check_results(facts, spec) -> dict:
    """``{(check id, GpuSlot or None): Result}``: ``checks.evaluate`` of every check of the
    catalog on every GPU slot of the node (``checks.gpu_slots``), what ``evaluate_item`` asks
    for first, computed ahead (nodegate.fleetrun.prefetch's child hands them over with the
    facts). Every rule is a function of the node's facts and spec alone, but the node identity
    check (it compares the run's other nodes: left out). A rule that raises is left out too."""
    out: dict = {}
    try:
        slots = ng_checks.gpu_slots(facts, spec)
    except Exception:  # noqa: BLE001 - then the items compute every result themselves
        return out
    for cid, c in ng_checks.load_all().items():
        if cid == IDENTITY_CHECK:
            continue
        for slot in ([None] if c.scope == "node" else slots):
            try:
                out[(cid, slot)] = ng_checks.evaluate(cid, facts, spec, slot)
            except Exception:  # noqa: BLE001
                pass
    return out


def _gpus_expected(spec) -> str:
    """The spec's gpu.count as text ("" unset): the records say whether the node has GPUs at all."""
    n = spec_get(spec, "gpu.count")
    return "" if n is None else str(n)


def evaluate(facts, spec, selection, node: NodeContext, *, cache: dict | None = None) -> list[ItemResult]:
    """Every selected (check id, GPU slot or None) pair of one node -> its ItemResult, in order.

    The node-level form of ``evaluate_item`` (the same code path): what a caller without
    pytest uses (bench/, tools/, the engine's tests) and what a pytest item does for its one pair."""
    cache = {} if cache is None else cache
    return [evaluate_item(node, facts, spec, check_id, slot, cache=cache) for check_id, slot in selection]
