"""Pure comparison rules: baseline facts vs current facts -> Findings (changes, regressions).

Every function takes fact objects (nodegate.facts dataclasses, or values read from NodeFacts)
of the baseline (``b``) and of this run (``a``) and returns a ``Findings``; none does I/O or
reads a bundle. ``engine.compare_node`` reads the facts (turning EvidenceError into item
errors) and calls these. The rules (docs/baseline.md):

- GPUs are matched by UUID, then serial, then PCI bus id (``match_gpus``); a baseline GPU
  with no match is missing (regression ``gpu_missing``); matched by bus id with another
  serial/UUID = replaced (change); a GPU only seen now = new (change).
- PCIe: ``max_link_gen``/``max_link_width``/``max_device_link_gen`` lower than before is a
  regression. ``current_link_gen``/``current_link_width`` lower than before is a regression
  while the GPU is busy (P0, GpuIdle not active) or when ``pcie.idle: fail``; at idle it is a
  change (links power down at idle, checks.md "PCIe link"); activity unknown -> ERROR.
- ECC totals: growth above ``baseline.allowed_ecc_growth`` is a regression. Volatile counters
  restart at driver load (nvidia-smi -q: "Volatile ... since the last driver load"), so when
  the driver was reloaded (boot id or driver version changed) or the counter went down, the
  whole current value is growth; aggregate (lifetime, InfoROM) growth is after - before.
- Remapped rows (correctable + uncorrectable) / retired pages (sbe + dbe) grown beyond
  ``baseline.allowed_*_growth`` (default 0) is a regression.
- Kernel log: an event of Xid severity >= ``baseline.xid_min_severity`` (default critical;
  nodegate/data/xid.yaml) or of a failing kind (fallen off the bus, RmInitAdapter, GSP boot,
  ...) whose (kind, Xid, bus id) did not occur in the baseline log is a regression.
- Flavor changed: regression unless the spec asks for the new flavor (``driver.flavor``) or
  lists ``flavor`` in ``baseline.planned``. Driver version change: change, planned when it
  matches ``driver.version``. Kernel change: change.
- Persistence configuration (effective ExecStart, User=, DropInPaths, UnitFileState, drop-in
  ExecStart lines, the daemon's --user) changed: regression unless ``baseline.planned``
  lists ``persistence``; persistence mode Enabled -> Disabled on a GPU: regression.
- Checks: a check (same spec) that PASSes on the baseline and FAILs now is a regression.

One module because the regression rules above are one table read together: each kind's rule sits
beside the others it must not contradict (docs/baseline.md lists them in this order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..facts import NA, GpuFacts, RemappedRows, RetiredPages, normalize_bus_id
from .model import Change, GpuRef, Regression, Row
from .spec import BaselineSpec, EccGrowth

SEVERITY_RANK = {"info": 0, "minor": 1, "major": 2, "critical": 3}


class Unreadable:
    """A fact that could not be read (EvidenceError): ``reason`` says why."""

    def __init__(self, reason: str):
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unreadable({self.reason!r})"


@dataclass
class Findings:
    """Result of one rule: regressions and changes found, table rows, ``errors`` (the item
    cannot be evaluated) and ``notes`` (what was not compared, shown in the message)."""

    regressions: list[Regression] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def extend(self, other: "Findings") -> "Findings":
        for n in ("regressions", "changes", "rows", "errors", "notes"):
            getattr(self, n).extend(getattr(other, n))
        return self


# ---------------------------------------------------------------------------- values
def jv(v: Any) -> Any:
    """JSON-ready value: NA -> "N/A", Unreadable -> {"unreadable": reason}, tuples -> lists."""
    if v is NA:
        return "N/A"
    if isinstance(v, Unreadable):
        return {"unreadable": v.reason}
    if isinstance(v, (list, tuple)):
        return [jv(x) for x in v]
    if isinstance(v, dict):
        return {str(k): jv(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def show(v: Any) -> str:
    """Human-readable value for tables and messages."""
    if v is NA:
        return "N/A"
    if v is None:
        return "not reported"
    if isinstance(v, Unreadable):
        return f"unreadable ({v.reason})"
    if isinstance(v, bool):
        return "Yes" if v else "No"
    if isinstance(v, (list, tuple)):
        return "; ".join(show(x) for x in v) or "(none)"
    if isinstance(v, dict):
        return ", ".join(f"{k} {show(x)}" for k, x in v.items()) or "(none)"
    return str(v)


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _real_id(v) -> str | None:
    """A usable serial/UUID: a non-empty string that is not N/A or all zeros."""
    if not isinstance(v, str):
        return None
    s = v.strip()
    if not s or s.upper() in ("N/A", "[N/A]", "UNKNOWN") or set(s) <= {"0"}:
        return None
    return s.lower()


def _row(field_: str, gpu: GpuRef | None, before, after, status: str | None = None) -> Row:
    b, a = show(before), show(after)
    if status is None:
        status = "unknown" if isinstance(before, Unreadable) or isinstance(after, Unreadable) else \
            ("same" if b == a else "change")
    return Row(field_, gpu.label if gpu else "", b, a, status)


# ---------------------------------------------------------------------------- GPUs
def match_gpus(before: list[GpuFacts], after: list[GpuFacts]) -> tuple[list[tuple[GpuRef, GpuFacts, GpuFacts | None]],
                                                                     list[GpuFacts]]:
    """Pair each baseline GPU with the current GPU of the same UUID, else serial, else PCI
    bus id (each pass over all GPUs before the next, so a bus-id match never takes a GPU that
    moved). Returns ([(ref, before gpu, after gpu or None)], current GPUs without a baseline)."""
    pairs: dict[int, tuple[GpuFacts, str]] = {}
    used: set[int] = set()
    keys = (("uuid", lambda g: _real_id(g.uuid)), ("serial", lambda g: _real_id(g.serial)),
            ("bus_id", lambda g: normalize_bus_id(g.pci_bus_id) if g.pci_bus_id else None))
    for how, key in keys:
        for i, b in enumerate(before):
            kb = key(b)
            if i in pairs or kb is None:
                continue
            for j, a in enumerate(after):
                if j not in used and key(a) == kb:
                    pairs[i] = (a, how)
                    used.add(j)
                    break
    out = []
    for i, b in enumerate(before):
        a, how = pairs.get(i, (None, ""))
        idx = b.index if b.index is not None else i
        ref = GpuRef(index=idx, pci_bus_id=b.pci_bus_id, serial=_s(b.serial), uuid=b.uuid,
                     after_index=(a.index if a is not None and a.index is not None else
                                  (after.index(a) if a is not None else None)),
                     after_bus_id=a.pci_bus_id if a is not None else None, matched_by=how)
        out.append((ref, b, a))
    return out, [a for j, a in enumerate(after) if j not in used]


def _s(v) -> str | None:
    return None if v is None else str(v)


def compare_presence(ref: GpuRef, b: GpuFacts, a: GpuFacts | None) -> Findings:
    """gpu_missing: the baseline GPU is not among the current GPUs (no UUID/serial/bus id
    match). Identity changes of a matched GPU are changes (replaced, moved, VBIOS)."""
    f = Findings()
    if a is None:
        f.regressions.append(Regression("gpu_missing", "gpu", _ident(b), None,
                                        f"{ref.describe()} (UUID {b.uuid or 'unknown'}) was present on the baseline "
                                        "and is missing now (no GPU with its UUID, serial or bus id)", ref))
        f.rows.append(_row("GPU", ref, _ident_s(b), "missing", "regression"))
        return f
    f.rows.append(_row("GPU serial", ref, b.serial, a.serial))
    if ref.matched_by == "bus_id" and (_real_id(b.uuid) != _real_id(a.uuid) or _real_id(b.serial) != _real_id(a.serial)):
        f.changes.append(Change("gpu_serial", "serial", _ident(b), _ident(a), ref, None,
                                f"GPU at {a.pci_bus_id} replaced (serial/UUID differ)"))
    if b.pci_bus_id and a.pci_bus_id and normalize_bus_id(b.pci_bus_id) != normalize_bus_id(a.pci_bus_id):
        f.changes.append(Change("gpu_moved", "pci_bus_id", b.pci_bus_id, a.pci_bus_id, ref, None,
                                f"same GPU (by {ref.matched_by}) at another PCI bus id"))
    f.rows.append(_row("VBIOS", ref, b.vbios_version, a.vbios_version))
    if show(b.vbios_version) != show(a.vbios_version):
        f.changes.append(Change("vbios", "vbios_version", jv(b.vbios_version), jv(a.vbios_version), ref, None,
                                "VBIOS changed (firmware update)"))
    return f


def _ident(g: GpuFacts) -> dict:
    return {"index": g.index, "pci_bus_id": g.pci_bus_id, "serial": jv(g.serial), "uuid": g.uuid}


def _ident_s(g: GpuFacts) -> str:
    return f"{g.pci_bus_id or '?'} serial {show(g.serial)}"


def new_gpu(a: GpuFacts) -> Findings:
    f = Findings()
    f.changes.append(Change("gpu_new", "gpu", None, _ident(a), None, None,
                            f"GPU {a.index} ({a.pci_bus_id}) not in the baseline"))
    f.rows.append(Row("GPU (new)", f"now gpu{a.index}", "absent", _ident_s(a), "change"))
    return f


# ---------------------------------------------------------------------------- PCIe
_CAP_FIELDS = (("max_gen", "max_link_gen"), ("max_width", "max_link_width"), ("device_max_gen", "max_device_link_gen"))
_CUR_FIELDS = (("current_gen", "current_link_gen"), ("current_width", "current_link_width"))


def _link_s(lk) -> str:
    return f"Gen{show(lk.current_gen)} x{show(lk.current_width)} (max Gen{show(lk.max_gen)} x{show(lk.max_width)})"


def compare_pcie(ref: GpuRef, b: GpuFacts, a: GpuFacts, pcie_idle: str = "not_verified") -> Findings:
    """Capability lower -> regression; trained link lower -> regression when busy or
    ``pcie_idle == 'fail'``, change at idle, error when activity is unknown."""
    from ..checks.pcie import activity  # the checks' busy/idle rule (nodegate/checks/activity.py)
    f = Findings()
    bl, al = b.link, a.link
    compared = 0
    for attr, name in _CAP_FIELDS:
        bv, av = _int(getattr(bl, attr)), _int(getattr(al, attr))
        if bv is None or av is None:
            continue
        compared += 1
        if av < bv:
            f.regressions.append(Regression("pcie", name, bv, av, f"{ref.describe()}: {name} {av} below the "
                                            f"baseline's {bv} (link capability lowered)", ref))
    state, desc = activity(a)
    for attr, name in _CUR_FIELDS:
        bv, av = _int(getattr(bl, attr)), _int(getattr(al, attr))
        if bv is None or av is None:
            continue
        compared += 1
        if av >= bv:
            continue
        what = f"{ref.describe()}: {name} {av} below the baseline's {bv}"
        if state == "busy" or pcie_idle == "fail":
            why = "while busy" if state == "busy" else f"at {desc} and pcie.idle=fail"
            f.regressions.append(Regression("pcie", name, bv, av, f"{what} {why} ({desc})", ref))
        elif state in ("idle", "mixed"):   # mixed evidence: unverified at idle, as in NG-PCIE-002
            f.changes.append(Change("link", name, bv, av, ref, None,
                                    f"trained link lower at idle ({desc}); idle links power down "
                                    "(pcie.idle=not_verified): verify under load"))
        else:
            f.errors.append(f"{what}; cannot tell busy from idle ({desc})")
    if compared == 0:
        f.errors.append(f"{ref.describe()}: no PCIe link value reported on both sides "
                        f"(baseline {_link_s(bl)}, now {_link_s(al)})")
    status = "regression" if f.regressions else None
    f.rows.append(_row("PCIe link", ref, _link_s(bl), _link_s(al), status))
    if status is None and _link_s(bl) != _link_s(al) and not any(c.kind == "link" for c in f.changes):
        f.changes.append(Change("link", "link", _link_s(bl), _link_s(al), ref, None, "link values differ"))
    return f


# ---------------------------------------------------------------------------- ECC
def ecc_growth(scope: str, before: int, after: int, reloaded: bool | None) -> int:
    """New errors between the two snapshots. Volatile counters restart at driver load: after a
    reload (or when the counter went down, which proves one) every current error is new."""
    if scope == "volatile" and (reloaded or after < before):
        return after
    return after - before


def compare_ecc(ref: GpuRef, b: GpuFacts, a: GpuFacts, allowed: EccGrowth, reloaded: bool | None) -> Findings:
    """Volatile and aggregate correctable/uncorrectable totals vs ``allowed`` growth."""
    f = Findings()
    compared = 0
    for scope in ("volatile", "aggregate"):
        bc, ac = getattr(b, f"ecc_{scope}"), getattr(a, f"ecc_{scope}")
        for kind in ("uncorrectable", "correctable"):
            bv, av = getattr(bc, f"{kind}_total"), getattr(ac, f"{kind}_total")
            name = f"ecc.{scope}.{kind}"
            f.rows.append(_row(f"ECC {scope} {kind}", ref, bv, av))
            if _int(bv) is None or _int(av) is None:
                if bv is NA and av is NA:
                    f.notes.append(f"{name} unsupported (N/A) on both sides")
                elif _int(av) is not None or _int(bv) is not None:
                    f.errors.append(f"{ref.describe()}: {name} baseline {show(bv)}, now {show(av)}: not comparable")
                continue
            compared += 1
            grown = ecc_growth(scope, bv, av, reloaded)
            limit = getattr(allowed, kind)
            if limit is not None and grown > limit:
                f.regressions.append(Regression("ecc", name, bv, av, f"{ref.describe()}: {scope} {kind} ECC errors "
                                                f"{bv} -> {av} (+{grown} new) > baseline.allowed_ecc_growth."
                                                f"{kind}={limit}", ref))
                f.rows[-1].status = "regression"
            elif bv != av:
                note = f"+{grown} new" if grown > 0 else ("counter restarted (driver reload)" if scope == "volatile"
                                                          else "lifetime counter decreased (InfoROM reset or GPU swap)")
                f.changes.append(Change("ecc", name, bv, av, ref, None, note))
    if compared == 0 and not f.errors and not f.notes:
        f.errors.append(f"{ref.describe()}: ECC totals not reported on either side")
    return f


# ---------------------------------------------------------------------------- memory repair
def compare_remapped(ref: GpuRef, b: GpuFacts, a: GpuFacts, allowed_rows: int = 0, allowed_pages: int = 0) -> Findings:
    """Remapped rows (correctable + uncorrectable) and retired pages (sbe + dbe) growth."""
    f = Findings()
    compared = 0
    brr, arr = b.remapped_rows, a.remapped_rows
    if isinstance(brr, RemappedRows) and isinstance(arr, RemappedRows):
        bt = _pair(brr.correctable, brr.uncorrectable)
        at = _pair(arr.correctable, arr.uncorrectable)
        bd = {"correctable": jv(brr.correctable), "uncorrectable": jv(brr.uncorrectable)}
        ad = {"correctable": jv(arr.correctable), "uncorrectable": jv(arr.uncorrectable)}
        if bt is not None and at is not None:
            compared += 1
            status = None
            if sum(at) - sum(bt) > allowed_rows:
                f.regressions.append(Regression("remapped_rows", "remapped_rows", bd, ad, f"{ref.describe()}: remapped "
                                                f"rows {show(bd)} -> {show(ad)} (+{sum(at) - sum(bt)}) > "
                                                f"baseline.allowed_remapped_rows_growth={allowed_rows}", ref))
                status = "regression"
            elif at != bt:
                f.changes.append(Change("remapped_rows", "remapped_rows", bd, ad, ref, None, "remapped rows differ"))
            f.rows.append(_row("Remapped rows", ref, bd, ad, status))
        else:
            f.errors.append(f"{ref.describe()}: remapped rows counts not reported (baseline {show(bd)}, now {show(ad)})")
    elif (brr is NA or brr is None) and (arr is NA or arr is None):
        f.notes.append("remapped rows not supported on both sides")
    else:
        f.errors.append(f"{ref.describe()}: remapped rows reported on one side only (baseline {show_rr(brr)}, "
                        f"now {show_rr(arr)})")
    brp, arp = b.retired_pages, a.retired_pages
    if isinstance(brp, RetiredPages) and isinstance(arp, RetiredPages):
        bt, at = _pair(brp.sbe, brp.dbe), _pair(arp.sbe, arp.dbe)
        if bt is not None and at is not None:
            compared += 1
            bd, ad = {"sbe": bt[0], "dbe": bt[1]}, {"sbe": at[0], "dbe": at[1]}
            status = None
            if sum(at) - sum(bt) > allowed_pages:
                f.regressions.append(Regression("remapped_rows", "retired_pages", bd, ad, f"{ref.describe()}: retired "
                                                f"pages {show(bd)} -> {show(ad)} > "
                                                f"baseline.allowed_retired_pages_growth={allowed_pages}", ref))
                status = "regression"
            elif at != bt:
                f.changes.append(Change("retired_pages", "retired_pages", bd, ad, ref, None, "retired pages differ"))
            f.rows.append(_row("Retired pages", ref, bd, ad, status))
    if not compared and not f.errors and not f.notes:
        f.errors.append(f"{ref.describe()}: neither remapped rows nor retired pages reported")
    return f


def show_rr(v) -> str:
    return "reported" if isinstance(v, RemappedRows) else show(v)


def _pair(x, y) -> tuple[int, int] | None:
    return (x, y) if _int(x) is not None and _int(y) is not None else None


# ---------------------------------------------------------------------------- kernel log
def _fail_kinds() -> dict[str, str]:
    from ..checks.kernel_log import FAIL_KINDS
    return FAIL_KINDS


def _xid_info(x: int):
    from ..spec.xid import xid_info
    return xid_info(x)


def event_signature(ev) -> tuple[str, int | None, str | None]:
    """(kind, Xid, bus id without function): what "the same event" means across boots."""
    bus = normalize_bus_id(ev.bus_id).rsplit(".", 1)[0] if ev.bus_id else None
    return ev.kind, ev.xid, bus


def event_severity(ev) -> str | None:
    """Xid severity from nodegate/data/xid.yaml; failing non-Xid kinds are critical; others None."""
    if ev.kind == "xid" and ev.xid is not None:
        i = _xid_info(ev.xid)
        return i.severity if i is not None else "critical"   # not in the catalog: never below the floor
    if ev.kind in _fail_kinds():
        return "critical"
    return None


def _event_desc(ev) -> str:
    if ev.kind == "xid" and ev.xid is not None:
        i = _xid_info(ev.xid)
        d = f"Xid {ev.xid} ({i.name}; {i.severity})" if i is not None else f"Xid {ev.xid} (not in the catalog)"
    else:
        d = _fail_kinds().get(ev.kind, ev.kind)
    return d + (f" at {ev.bus_id}" if ev.bus_id else "")


def compare_xid(before_events, after_events, min_severity: str = "critical") -> Findings:
    """New kernel-log events (signature absent from the baseline log) at or above
    ``min_severity`` -> regression; new lower-severity Xids -> change. ``before_events`` may be
    Unreadable: then new-ness cannot be decided and any qualifying event is an error."""
    f = Findings()
    floor = SEVERITY_RANK[min_severity]
    seen = None if isinstance(before_events, Unreadable) else {event_signature(e) for e in before_events}
    grouped: dict[tuple, list] = {}
    for ev in after_events:
        sev = event_severity(ev)
        if sev is None:
            continue
        grouped.setdefault(event_signature(ev), []).append(ev)
    for sig, evs in grouped.items():
        ev = evs[0]
        sev = event_severity(ev)
        desc = _event_desc(ev) + (f" x{len(evs)}" if len(evs) > 1 else "")
        if seen is not None and sig in seen:
            continue
        if SEVERITY_RANK[sev] >= floor:
            if seen is None:
                f.errors.append(f"{desc} in the kernel log; the baseline log is unreadable "
                                f"({before_events.reason}): cannot tell whether it is new")
                continue
            f.regressions.append(Regression("xid", "kernel_log", None, ev.text[:500], f"new in the kernel log: {desc}"))
            f.rows.append(Row("Kernel log", "", "absent", desc, "regression"))
        else:
            f.changes.append(Change("xid", "kernel_log", None, ev.text[:500], None, None, f"new {desc}"))
            f.rows.append(Row("Kernel log", "", "absent", desc, "change"))
    if seen is None:
        f.notes.append(f"baseline kernel log unreadable ({before_events.reason})")
    return f


# ---------------------------------------------------------------------------- node level
def compare_driver(before: Any, after: Any, spec_version: str | None) -> Findings:
    """Driver version change: planned when it matches the spec's ``driver.version``."""
    from ..checks._util import version_matches
    f = Findings()
    if isinstance(before, str) and isinstance(after, str) and before != after:
        planned = bool(spec_version) and version_matches(spec_version, after)
        note = (f"planned: spec driver.version={spec_version}" if planned else
                f"not planned: spec driver.version={spec_version or 'not set'}")
        f.changes.append(Change("driver", "driver_version", before, after, None, planned, note))
        f.rows.append(_row("Driver", None, before, after, "planned" if planned else "change"))
    else:
        f.rows.append(_row("Driver", None, before, after))
    return f


def compare_kernel(before: Any, after: Any) -> Findings:
    """Kernel release change: always a change (the checks verify the modules of the new one)."""
    f = Findings()
    if isinstance(before, str) and isinstance(after, str) and before != after:
        f.changes.append(Change("kernel", "kernel_release", before, after, None, None, "kernel changed"))
    f.rows.append(_row("Kernel", None, before, after))
    return f


def compare_flavor(before: Any, after: Any, spec_flavor: str, planned: bool) -> Findings:
    """Loaded module flavor (open/proprietary; /proc/driver/nvidia/version). ``before``/
    ``after`` are the flavor strings, None when the module was not loaded, or Unreadable."""
    f = Findings()
    if isinstance(before, Unreadable) or isinstance(after, Unreadable):
        f.errors.append(f"flavor unreadable (baseline {show(before)}, now {show(after)})")
        f.rows.append(_row("Flavor", None, before, after))
        return f
    if before is None or after is None:
        if before != after:
            f.errors.append(f"nvidia module not loaded {'now' if after is None else 'on the baseline'} "
                            f"(baseline {show(before)}, now {show(after)}): flavor not comparable")
        else:
            f.notes.append("nvidia module loaded on neither side")
        f.rows.append(_row("Flavor", None, before, after))
        return f
    if before == after:
        f.rows.append(_row("Flavor", None, before, after))
        return f
    if planned or spec_flavor == after:
        why = "baseline.planned lists flavor" if planned else f"spec driver.flavor={spec_flavor}"
        f.changes.append(Change("flavor", "flavor", before, after, None, True, f"planned: {why}"))
        f.rows.append(_row("Flavor", None, before, after, "planned"))
    else:
        f.regressions.append(Regression("flavor", "flavor", before, after,
                                        f"kernel module flavor changed {before} -> {after} but the spec does not ask "
                                        f"for it (driver.flavor={spec_flavor}, baseline.planned without flavor)"))
        f.rows.append(_row("Flavor", None, before, after, "regression"))
    return f


def compare_values(kind: str, fields: dict[str, tuple[Any, Any]], planned: bool) -> Findings:
    """Generic configuration comparison (persistence): a field readable on both sides that
    differs -> regression (change when ``planned``); unreadable on one side -> error; on both
    -> note."""
    f = Findings()
    for name, (bv, av) in fields.items():
        bu, au = isinstance(bv, Unreadable), isinstance(av, Unreadable)
        if bu and au:
            f.notes.append(f"{name} not compared ({bv.reason})")
            f.rows.append(_row(name, None, bv, av, "unknown"))
            continue
        if bu or au:
            f.errors.append(f"{name}: baseline {show(bv)}, now {show(av)}")
            f.rows.append(_row(name, None, bv, av, "unknown"))
            continue
        if jv(bv) == jv(av):
            f.rows.append(_row(name, None, bv, av, "same"))
        elif planned:
            f.changes.append(Change(kind, name, jv(bv), jv(av), None, True, f"planned: baseline.planned lists {kind}"))
            f.rows.append(_row(name, None, bv, av, "planned"))
        else:
            f.regressions.append(Regression(kind, name, jv(bv), jv(av),
                                            f"{name} changed: {show(bv)} -> {show(av)}"))
            f.rows.append(_row(name, None, bv, av, "regression"))
    return f


def compare_persistence_mode(pairs: list[tuple[GpuRef, GpuFacts, GpuFacts | None]]) -> Findings:
    """Per GPU persistence mode: Enabled -> not Enabled is a regression (kind persistence)."""
    f = Findings()
    for ref, b, a in pairs:
        if a is None:
            continue
        bv, av = _mode(b.persistence_mode), _mode(a.persistence_mode)
        if bv == "Enabled" and av != "Enabled":
            f.regressions.append(Regression("persistence", "persistence_mode", "Enabled", show(av),
                                            f"{ref.describe()}: persistence mode Enabled -> {show(av)}", ref))
            f.rows.append(_row("Persistence mode", ref, "Enabled", av, "regression"))
        else:
            f.rows.append(_row("Persistence mode", ref, bv, av))
            if show(bv) != show(av):
                f.changes.append(Change("persistence", "persistence_mode", jv(bv), jv(av), ref, None,
                                        "persistence mode changed"))
    return f


def _mode(v):
    return {True: "Enabled", False: "Disabled"}.get(v, v) if isinstance(v, bool) else v


def check_regressions(before: dict[tuple[str, str | None], str], after: dict[tuple[str, str | None], str]) -> list[
        tuple[str, str | None]]:
    """Keys (check id, GPU label or None) whose outcome is ``pass`` before and ``fail`` now."""
    return [k for k, v in before.items() if v == "pass" and after.get(k) == "fail"]


def wants(bspec: BaselineSpec, kind: str) -> bool:
    return kind in bspec.planned
