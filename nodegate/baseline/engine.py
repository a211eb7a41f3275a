"""compare_node: read both NodeFacts, run the comparison rules, collect one NodeComparison.

Reading facts is where evidence problems surface: an EvidenceError (or a parser bug) on one
side becomes ``Unreadable`` and, for the items that needed it, an item error (ERROR), never a
silent PASS. Checks of the registry are evaluated on both bundles with the same (current)
spec; a check that raises is an ``error`` outcome, never a regression.
"""

from __future__ import annotations

from typing import Any

from ..errors import EvidenceError
from .compare import (Findings, Unreadable, check_regressions, compare_driver, compare_ecc, compare_flavor,
                      compare_kernel, compare_persistence_mode, compare_pcie, compare_presence, compare_remapped,
                      compare_values, compare_xid, match_gpus, new_gpu)
from .model import GPU_KINDS, NODE_KINDS, Change, GpuRef, NodeComparison, Regression, Row
from .spec import baseline_spec
from ..parsers.persistenced import user_from_argv as _user_arg


def read(facts, attr: str) -> Any:
    """``facts.<attr>``, or Unreadable with the reason (EvidenceError; any other exception is
    a parser bug and is reported the same way instead of crashing the gate)."""
    try:
        return getattr(facts, attr)
    except EvidenceError as e:
        return Unreadable(str(e))
    except Exception as e:  # noqa: BLE001 - one broken parser must not stop the comparison
        return Unreadable(f"internal error reading {attr}: {type(e).__name__}: {e}")


def _driver_version(facts) -> Any:
    from ..checks._util import loaded_driver_version
    try:
        return loaded_driver_version(facts)
    except EvidenceError as e:
        return Unreadable(str(e))
    except Exception as e:  # noqa: BLE001
        return Unreadable(f"internal error: {type(e).__name__}: {e}")


def _flavor(facts) -> Any:
    banner = read(facts, "driver_banner")
    if banner is None or isinstance(banner, Unreadable):
        return banner
    return banner.flavor if banner.flavor in ("open", "proprietary") else \
        Unreadable(f"flavor not recognised in {banner.raw.strip()[:200]!r}")


def persistence_config(facts) -> dict[str, Any]:
    """The persistence configuration compared across the upgrade: effective ExecStart, User=,
    DropInPaths, UnitFileState (systemctl show), the drop-ins' ExecStart= lines (files), the
    running daemon's --user. Each value or Unreadable."""
    unit = read(facts, "persistenced_unit")
    files = read(facts, "persistenced_unit_files")
    proc = read(facts, "persistenced")
    out: dict[str, Any] = {}
    if isinstance(unit, Unreadable):
        for k in ("ExecStart", "User", "DropInPaths", "UnitFileState"):
            out[k] = unit
    else:
        found = unit.load_state != "not-found"
        out["ExecStart"] = [" ".join(a) for a in unit.exec_start] if found else "unit not found"
        out["User"] = unit.user or "" if found else "unit not found"
        out["DropInPaths"] = list(unit.drop_in_paths) if found else "unit not found"
        out["UnitFileState"] = unit.unit_file_state if found else "unit not found"
    out["drop-in ExecStart lines"] = files if isinstance(files, Unreadable) else \
        {f.path: list(f.exec_start) for f in files if ".d/" in f.path}
    out["daemon --user"] = proc if isinstance(proc, Unreadable) else \
        sorted({_user_arg(p.argv) or "(no --user)" for p in proc.processes})
    return out


def _reloaded(before, after, bdrv, adrv) -> bool | None:
    """True when the driver was certainly reloaded between the two bundles (boot id or driver
    version differ); None when it cannot be told."""
    bb, ab = read(before, "boot_id"), read(after, "boot_id")
    if isinstance(bb, str) and isinstance(ab, str) and bb != ab:
        return True
    if isinstance(bdrv, str) and isinstance(adrv, str) and bdrv != adrv:
        return True
    return None


def _merge(cmp: NodeComparison, kind: str, label: str | None, f: Findings) -> None:
    cmp.regressions += f.regressions
    cmp.changes += f.changes
    for r in f.rows:
        r.kind = r.kind or kind
    cmp.rows += f.rows
    if f.errors:
        cmp.error(kind, label, "; ".join(f.errors))
    for n in f.notes:
        cmp.note(kind, label, n)


def new_node(node: str) -> NodeComparison:
    c = NodeComparison(node, presence="new")
    c.changes.append(Change("node", "presence", "absent", "present", None, None, "new node: not in the baseline"))
    c.rows.append(Row("Node", "", "absent", "present", "change", "node_presence"))
    return c


def missing_node(node: str, in_inventory: bool) -> NodeComparison:
    """Baseline-only node: FAIL of node_presence when the inventory (after --limit) names it,
    else a change (node left the fleet)."""
    c = NodeComparison(node, presence="missing" if in_inventory else "gone")
    if in_inventory:
        c.regressions.append(Regression("node_presence", "presence", "present", "absent",
                                        f"{node} is in the baseline and in the inventory but has no bundle in this "
                                        "run"))
        c.rows.append(Row("Node", "", "present", "absent", "regression", "node_presence"))
    else:
        c.changes.append(Change("node", "presence", "present", "absent", None, None,
                                "node missing from this run and not in the inventory"))
        c.rows.append(Row("Node", "", "present", "absent", "change", "node_presence"))
    return c


def compare_node(node: str, before, after, spec, *, checks: bool = True) -> NodeComparison:
    """Compare two NodeFacts of one node with the current spec. Never raises for node data."""
    from ..spec import spec_or_default
    spec = spec_or_default(spec)
    cmp = NodeComparison(node)
    bspec = baseline_spec(spec)
    bgerr = before.bundle.gather_error if getattr(before, "bundle", None) is not None else None
    agerr = after.bundle.gather_error if getattr(after, "bundle", None) is not None else None
    bgpus, agpus = read(before, "gpus"), read(after, "gpus")
    if bgerr or agerr:
        why = f"baseline bundle not gathered ({bgerr})" if bgerr else f"node not gathered now ({agerr})"
        _refs_only(cmp, bgpus, agpus)
        for k in NODE_KINDS[1:]:
            cmp.error(k, None, why)
        for ref in cmp.gpus:
            for k in GPU_KINDS:
                cmp.error(k, ref.label, why)
        return cmp
    pairs = _gpus(cmp, bgpus, agpus)
    bdrv, adrv = _driver_version(before), _driver_version(after)
    reloaded = _reloaded(before, after, bdrv, adrv)
    _merge(cmp, "driver", None, compare_driver(bdrv, adrv, spec.driver.version))
    _merge(cmp, "kernel", None, compare_kernel(read(before, "kernel_release"), read(after, "kernel_release")))
    _merge(cmp, "flavor", None, compare_flavor(_flavor(before), _flavor(after), spec.driver.flavor,
                                               "flavor" in bspec.planned))
    pf = compare_values("persistence", _zip(persistence_config(before), persistence_config(after)),
                        "persistence" in bspec.planned)
    pf.extend(compare_persistence_mode(pairs))
    _merge(cmp, "persistence", None, pf)
    bev, aev = read(before, "kernel_events"), read(after, "kernel_events")
    if isinstance(aev, Unreadable):
        cmp.error("xid", None, f"kernel log unreadable now ({aev.reason})")
    else:
        _merge(cmp, "xid", None, compare_xid(bev, aev, bspec.xid_min_severity))
    for ref, b, a in pairs:
        _merge(cmp, "gpu_missing", ref.label, compare_presence(ref, b, a))
        if a is None:
            for k in ("pcie", "ecc", "remapped_rows"):
                cmp.error(k, ref.label, f"{ref.describe()} missing now: see test_regression_gpu_missing")
            continue
        _merge(cmp, "pcie", ref.label, compare_pcie(ref, b, a, spec.pcie.idle))
        _merge(cmp, "ecc", ref.label, compare_ecc(ref, b, a, bspec.allowed_ecc_growth, reloaded))
        _merge(cmp, "remapped_rows", ref.label, compare_remapped(ref, b, a, bspec.allowed_remapped_rows_growth,
                                                                 bspec.allowed_retired_pages_growth))
    if checks:
        _check_regressions(cmp, before, after, spec, pairs)
    return cmp


def _zip(b: dict, a: dict) -> dict:
    return {k: (b.get(k), a.get(k)) for k in b}


def _refs_only(cmp: NodeComparison, bgpus, agpus) -> None:
    src = bgpus if isinstance(bgpus, list) else agpus if isinstance(agpus, list) else []
    cmp.gpus = [GpuRef(g.index if g.index is not None else i, g.pci_bus_id, None if g.serial is None else str(g.serial),
                       g.uuid) for i, g in enumerate(src)] or [GpuRef(0)]


def _gpus(cmp: NodeComparison, bgpus, agpus) -> list:
    """Pairs (ref, before, after) of the GPU items; errors for every GPU item when either GPU
    list is unreadable (labels then come from whichever side is readable)."""
    if isinstance(bgpus, list) and isinstance(agpus, list):
        pairs, new = match_gpus(bgpus, agpus)
        cmp.gpus = [p[0] for p in pairs]
        for a in new:
            _merge(cmp, "gpu_missing", None, new_gpu(a))
        if not cmp.gpus:
            cmp.gpus = [GpuRef(0)]
            for k in GPU_KINDS:
                cmp.error(k, "gpu0", "no GPU on the baseline: nothing to compare per GPU")
        return pairs
    _refs_only(cmp, bgpus, agpus)
    why = "; ".join(f"{side} GPUs unreadable ({v.reason})" for side, v in (("baseline", bgpus), ("current", agpus))
                    if isinstance(v, Unreadable))
    for ref in cmp.gpus:
        for k in GPU_KINDS:
            cmp.error(k, ref.label, why)
    cmp.note("persistence", None, f"persistence mode not compared: {why}")
    cmp.note("checks", None, f"GPU checks not compared: {why}")
    return []


def evaluate_checks(facts, spec, slots: list[tuple[str, Any]]) -> dict[tuple[str, str | None], tuple[str, str]]:
    """{(check id, GPU label or None): (outcome, message)} for every registry check; GPU checks
    for each (label, GpuSlot). A check that raises is ``error`` (never a regression)."""
    from .. import checks as ng_checks
    out: dict[tuple[str, str | None], tuple[str, str]] = {}
    for cid, c in ng_checks.load_all().items():
        targets = [(None, None)] if c.scope == "node" else slots
        for label, slot in targets:
            try:
                r = ng_checks.evaluate(cid, facts, spec, slot)
                out[(cid, label)] = (r.outcome.value, r.message)
            except Exception as e:  # noqa: BLE001 - a crashing check is an error, not a verdict
                out[(cid, label)] = ("error", f"check raised {type(e).__name__}: {e}")
    return out


def _check_regressions(cmp: NodeComparison, before, after, spec, pairs) -> None:
    from .. import checks as ng_checks
    bslots = [(ref.label, ng_checks.GpuSlot(b.index if b.index is not None else ref.index, b.pci_bus_id))
              for ref, b, a in pairs if a is not None]
    aslots = [(ref.label, ng_checks.GpuSlot(a.index if a.index is not None else ref.index, a.pci_bus_id))
              for ref, b, a in pairs if a is not None]
    bres, ares = evaluate_checks(before, spec, bslots), evaluate_checks(after, spec, aslots)
    refs = {ref.label: ref for ref, _, _ in pairs}
    reg = ng_checks.load_all()
    for cid, label in check_regressions({k: v[0] for k, v in bres.items()}, {k: v[0] for k, v in ares.items()}):
        c = reg[cid]
        ref = refs.get(label) if label else None
        where = f" on {ref.describe()}" if ref else ""
        msg = ares[(cid, label)][1].split(" Remediation:")[0]
        cmp.regressions.append(Regression("checks", f"{cid}" + (f"[{label}]" if label else ""), "pass", "fail",
                                          f"{cid} {c.name}{where} passed on the baseline and fails now: {msg}"))
        cmp.rows.append(Row(f"Check {cid} {c.name}", label or "", "pass", "fail", "regression", "checks"))
    improved = [k for k, v in bres.items() if v[0] == "fail" and ares.get(k, ("",))[0] == "pass"]
    for cid, label in improved:
        cmp.changes.append(Change("check", cid + (f"[{label}]" if label else ""), "fail", "pass",
                                  refs.get(label) if label else None, None, f"{reg[cid].name} fixed"))
