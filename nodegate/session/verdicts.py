"""Evaluating a suite item's check in setup, and what its reports carry.

``evaluate(item, p)`` waits for the item's node when it is still being gathered, runs the check
(``nodegate.checks.evaluate``), records the report info (``state.RESULT_KEY``: the
``report.nodegate`` contract of docs/contributing.md) and JUnit properties, then fails the setup
(ERROR) or skips (SKIP); PASS and FAIL go to the test body.
"""

from __future__ import annotations

import re

from dataclasses import replace

import pytest

from .. import checks as ng_checks
from ..bundle import REFUSED
from ..outcomes import Outcome, Result, asserted
from ..inventory import holds_path
from ..run import RUN_KEY, FleetRun
from ..reports.remedy import error_remediation
from ..textsafe import shown
from .identity import missing_gpu_identity, xids_by_bus, xids_for
from .items import IDENTITY_CHECK, VerdictParam, node_slots
from .state import IDENT_KEY, RESULT_KEY, spec_get
from .terminal import wait_ticker

#: JUnit <properties> of every nodegate item, in this order (docs/contributing.md); spec_source:
#: where the node's spec came from (nodegate.session.specfile)
PROP_KEYS = ("node", "check_id", "severity", "gpu_index", "pci_bus_id", "gpu_serial", "gpu_uuid",
             "expected", "observed", "remediation", "spec_source")


def node_cache(config) -> dict:
    """Per-run cache of what every item of a node (or GPU) shares: ``("gpus", node)``: GPU
    identity per slot key (``None`` for the node's own items), ``("slots", node)``: the node's
    slots by index, ``("driver", node)``, ``("xids", node)``, ``("identity", node)``. Facts are
    immutable once parsed, so one lookup serves the ~30 items of a node instead of one per item.
    Keyed by node so that releasing a node (nodegate.session.release) drops its entries in
    O(1), not by scanning every node's (which made a 4,096-node run quadratic)."""
    c = config.stash.get(IDENT_KEY, None)
    if c is None:
        c = config.stash[IDENT_KEY] = {}
    return c


def surplus_gpus(run: FleetRun, node: str, res: Result) -> Result:
    """gpu_count while the tests ran alongside gathering: per-GPU items were collected from
    gpu.count, so a GPU beyond it has none. Never silent: a FAIL says so, and a SKIP (gpu_count
    turned off in checks.skip) becomes ERROR naming the GPUs whose checks did not run."""
    want = spec_get(run.spec.get(node), "gpu.count")
    try:
        extra = [g for g in run.facts[node].gpus if g.index is not None and want and g.index >= int(want)]
    except Exception:  # noqa: BLE001 - unreadable GPUs: gpu_count's own result says so
        return res
    if not extra:
        return res
    run.surplus[node] = len(run.facts[node].gpus)
    names = ", ".join(f"gpu{g.index} ({g.pci_bus_id or 'bus id unknown'})" for g in extra)
    why = (f"the node reports {len(extra)} GPU(s) beyond gpu.count {want}: {names}; their per-GPU "
           "checks were not collected (run with --gather-first, or correct gpu.count)")
    if res.outcome is Outcome.FAIL:
        return replace(res, message=f"{res.message}; {why}")
    return Result.errored(why, expected=res.expected or f"{want} GPU(s)", evidence_keys=("smi.qx",))


def resolve_slot(run: FleetRun, node: str, slot, cache: dict):
    """A per-GPU item collected from gpu.count before its node was gathered -> (the slot
    ``gpu_slots`` gives for that index now that the node is in, None), or (slot, why) when the
    node reports no GPU at that index (indices that skip one: the item ERRORs, naming them)."""
    key = ("slots", node)
    by_index = cache.get(key)
    if by_index is None:
        by_index = cache[key] = {s.index: s for s in node_slots(run, node)}
    got = by_index.get(slot.index)
    if got is not None:
        return got, None
    return slot, (f"gpu{slot.index}: the node reports no GPU at index {slot.index} "
                  f"(indices {sorted(by_index)}; gpu.count {spec_get(run.spec.get(node), 'gpu.count')})")


def printable(res: Result) -> Result:
    """``res`` with its expected, observed and message text safe to print: pytest writes them
    itself (failure sections, the short summary, skip reasons, assertion messages), and they
    carry node output (docs/security.md). Control characters are shown escaped."""
    m, e, o = shown(res.message), shown(res.expected), shown(res.observed)
    if m is res.message and e is res.expected and o is res.observed:
        return res
    return replace(res, message=m, expected=e, observed=o)


def identity_clash(config, run: FleetRun, node: str, cache: dict, check_id: str) -> str | None:
    """Why every item of ``node`` is ERROR because another node of the run is the same machine
    (same boot id or machine id), or None. Decided once per node, from what is known before its
    items run: every node when the run gathered them all first (replay, --gather-first, xdist);
    while the tests run alongside the gathering, the nodes at the node's own address (waited for
    here: the common mistake, two inventory names for one host), so the verdicts never depend
    on which node arrived first. The node_identity item (NG-INV-003, run last, after every node)
    reports every clash in all modes."""
    if check_id == IDENTITY_CHECK and run.overlapped:
        if run.streaming:   # every node in, their ids known, none merged (bounded memory)
            run.ids_of_every_node(wait_ticker(config, run))
            return None
        for n in run.order:   # compares the whole run: every node in
            run.wait(n, wait_ticker(config, run))
        return None
    key = ("identity", node)
    if key in cache:
        return cache[key]
    among = None
    if run.overlapped:
        among = run.address_twins.get(node, [])
        for t in among:
            run.wait(t, wait_ticker(config, run))
    groups = run.identity_groups(node, among=among) if among is None or among else []
    msg = clash_message(groups)
    cache[key] = msg
    return msg


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


def gpu_identity(run: FleetRun, node: str, slot) -> dict:
    """Index, bus id, serial, UUID, part number and VBIOS of the item's GPU ("" where unknown).
    A GPU nvidia-smi does not show is named by its other evidence (nodegate.session.identity):
    the driver's Device Minor as its index, its UUID and VBIOS."""
    ident = {"gpu_index": "", "pci_bus_id": "", "gpu_serial": "", "gpu_uuid": "",
             "board_part_number": "", "vbios_version": ""}
    if slot is None:
        return ident
    ident["gpu_index"] = str(slot.index)
    ident["pci_bus_id"] = slot.pci_bus_id or ""
    found = False
    try:
        gpus = run.facts[node].gpus
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
        other = missing_gpu_identity(run.facts[node], slot.pci_bus_id)
        other.pop("gpu_name", None)
        ident.update(other)
    return ident


def _s(v) -> str:
    return "" if v is None else str(v)


def driver_version(run: FleetRun, node: str) -> str:
    """The loaded nvidia module's version, "" when it cannot be read."""
    try:
        v = run.facts[node].nvidia_module_version
    except Exception:  # noqa: BLE001
        return ""
    return str(v) if v else ""


def evaluate(item, p: VerdictParam) -> None:
    """Evaluate the item's check (waiting for its node when it is still being gathered), record
    what the reports need, and fail (ERROR) or skip (SKIP) the setup; PASS/FAIL go to the test."""
    check_id, node, slot, provisional = p.check_id, p.node, p.slot, p.provisional
    run: FleetRun = item.config.stash[RUN_KEY]
    cdef = ng_checks.load_all()[check_id]
    # tests run while gathering: this node's first item waits for it; a released node (bounded
    # memory) is read again, for its node_identity item only the ids (FleetRun.bundle_for)
    light = check_id == IDENTITY_CHECK
    b = run.bundles.get(node)
    if b is None or (not light and node in run._light):
        b = run.bundle_for(node, light=light, tick=wait_ticker(item.config, run))
    cache = node_cache(item.config)
    clash = identity_clash(item.config, run, node, cache, check_id)
    unresolved = None
    if provisional:
        slot, unresolved = resolve_slot(run, node, slot, cache)
    if run.spec_errors.get(node):
        res = Result.errored(f"spec error: {run.spec_errors[node]}")
    elif b.meta.get("status") == REFUSED:
        res = Result.errored(f"bundle not read: {b.meta.get('error', '')}", evidence_keys=())
    elif b.gather_error:
        res = Result.errored(f"node not gathered: {b.gather_error}", evidence_keys=())
    elif clash and check_id != IDENTITY_CHECK:
        res = Result.errored(clash, evidence_keys=("meta.boot_id", "meta.machine_id"))
    elif unresolved:
        res = Result.errored(unresolved, evidence_keys=("smi.qx",))
    else:
        res = ng_checks.evaluate(check_id, run.facts[node], run.spec[node], slot)
        if run.overlapped and cdef.name == "gpu_count":
            res = surplus_gpus(run, node, res)
    spec_note = spec_off_note(item.config, run, node, res.message, cache) if res.outcome is Outcome.SKIP else ""
    if spec_note:
        res = replace(res, message=res.message + spec_note)
    res = printable(res)
    key = None if slot is None else (slot.index, slot.pci_bus_id)
    idents = cache.get(("gpus", node))
    if idents is None:
        idents = cache[("gpus", node)] = {}
    ident = idents.get(key)
    if ident is None:
        ident = idents[key] = gpu_identity(run, node, slot)
        ident["driver_version"] = cache.setdefault(("driver", node), driver_version(run, node))
        xids = cache.get(("xids", node))
        if xids is None:
            xids = cache[("xids", node)] = xids_by_bus(run.facts[node]) if not b.gather_error else {}
        ident["xids"] = xids_for(xids, None if slot is None else (ident["pci_bus_id"] or None))
    # an ERROR proves nothing about the node: its remediation says how to obtain the evidence,
    # never the check's FAIL text (nodegate.reports.remedy)
    remediation = error_remediation(res.message) if res.outcome is Outcome.ERROR else cdef.remediation
    info = {"node": node, **ident, "check_id": cdef.id,
            "check_name": cdef.name, "title": cdef.title, "severity": cdef.severity, "scope": cdef.scope,
            "expected": res.expected, "observed": res.observed, "message": res.message,
            "evidence": res.evidence, "remediation": remediation, "outcome": res.outcome.value,
            "action": (res.details.get("action") or cdef.action) if res.outcome is Outcome.FAIL else "",
            "bundle_dir": str(b.path or ""), "spec_source": run.spec_source.get(node, "")}
    item.stash[RESULT_KEY] = info
    # JUnit <properties>: remediation only where it applies (FAIL, ERROR); "" on PASS and SKIP
    # (docs/reports.md; it was 21 % of junit.xml's bytes, most of them on passed tests)
    props = [(k, info[k]) for k in PROP_KEYS]
    if res.outcome in (Outcome.PASS, Outcome.SKIP):
        props[PROP_KEYS.index("remediation")] = ("remediation", "")
    item.user_properties.extend(props)
    if spec_note:   # JUnit <property name="spec_set_in">: the spec key that turned this check off, and its file
        item.user_properties.append(("spec_set_in", spec_note.strip(" []")))
    p.result = asserted(res, remediation)
    if res.outcome is Outcome.ERROR:
        pytest.fail(f"[{cdef.id}] could not evaluate: {res.message}", pytrace=False)   # printable()
    if res.outcome is Outcome.SKIP:
        pytest.skip(f"[{cdef.id}] {res.message}")


#: a spec key a SKIP message names: ``kernel_log.enabled=false: ...``, ``memory.repair=auto: ...``,
#: ``checks.skip lists NG-KLOG-001: ...``
_SKIP_KEY = re.compile(r"\b([a-z][a-z0-9_]{0,40}(?:\.[a-z0-9_]{1,40}){1,4})(?==|\b is\b| set\b| lists\b)")


def spec_off_note(config, run, node: str, message: str, cache: dict) -> str:
    """`` [spec kernel_log.enabled set in /site/host_vars/n1.yml]``: where the spec value that made
    this check SKIP was set (issue 37.5: a spec that turns checks off is shown with its source
    file in every report: the SKIP message reaches the terminal (-rs), HTML, JUnit and
    results.jsonl). Only keys the node's own spec sets (a default needs no file); the files come
    from the inventory (``Inventory.spec_origins``: group_vars/host_vars, Ansible's order, the
    last one kept by the merge), else the run's spec source (``--spec FILE``); "" when none."""
    raw = run.spec_raw.get(node) or {}
    keys = [k for k in dict.fromkeys(_SKIP_KEY.findall(message[:300])) if holds_path(raw, k.split("."))]
    if not keys:
        return ""
    from .state import INVENTORY_KEY
    inv = config.stash.get(INVENTORY_KEY, None)
    notes = []
    for k in keys[:3]:
        ck = ("spec_origin", node, k)
        if ck not in cache:
            files = []
            if inv is not None:
                try:
                    files = inv.spec_origins(node, k)
                except Exception:  # noqa: BLE001 - naming the file is best effort; the skip stands
                    files = []
            cache[ck] = files[-1] if files else (run.spec_source.get(node, "") or "")
        if cache[ck]:
            notes.append(f"spec {k} set in {cache[ck]}")
    return f" [{'; '.join(notes)}]" if notes else ""
