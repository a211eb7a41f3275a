"""ECC mode and counters, row remapping, retired pages, recovery action (catalog "ECC and memory health")."""

from __future__ import annotations

from ..errors import EvidenceError
from ..facts import NA, RemappedRows, RetiredPages
from ..outcomes import Result
from ..spec import expectations
from . import check
from ._util import loaded_driver_version, fmt, gpu_for, gpu_label, lines, spec_or_default


def _shown(v) -> str:
    return "reported" if isinstance(v, (RemappedRows, RetiredPages)) else fmt(v)

_ONOFF = {True: "Enabled", False: "Disabled"}


def _unsupported_ecc(spec, name, what, expected, observed, keys, ev="") -> Result:
    """ECC mode unsupported on this board (N/A): SKIP when ecc.required=false, else FAIL (NG-ECC-001
    only: the one check whose subject is whether the board has ECC)."""
    if not spec.ecc.required:
        return Result.skipped(f"ecc.required=false: {what} not supported on this board", expected, observed,
                              evidence=ev, evidence_keys=keys)
    return Result.failed(expected, observed, f"{name}: {what} not supported (N/A) but ecc.required=true",
                         evidence=ev, evidence_keys=keys)


def _ecc_off_or_absent(spec, g, name, what, expected, observed, keys, ev="") -> Result | None:
    """A memory-health value the driver reports N/A because ECC is off or the board has none: name
    that cause once (NG-ECC-001 judges it) and never FAIL a second time with a wrong reason (issue
    21 items 4-5: one rule for every memory check). SKIP where the spec does not require ECC (or
    wants it disabled), else ERROR. None when ECC is on: the N/A has another cause."""
    mode = g.ecc_mode_current
    if mode is False:
        cause = "ECC disabled: see NG-ECC-001"
        if spec.ecc.mode == "disabled":
            return Result.skipped(f"ecc.mode=disabled: {what} N/A, {cause}", expected, observed, evidence=ev,
                                  evidence_keys=keys)
    elif mode is NA:
        cause = "ECC not supported on this board: see NG-ECC-001"
    else:
        return None
    if not spec.ecc.required:
        return Result.skipped(f"ecc.required=false: {what} N/A, {cause}", expected, observed, evidence=ev,
                              evidence_keys=keys)
    return Result.errored(f"{name}: {what} N/A: {cause}", expected, observed, evidence=ev, evidence_keys=keys)


@check(id="NG-ECC-001", name="ecc_mode", title="ECC mode current and pending as specified",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="nvidia-smi -e 1 (as root) and reboot/reset the GPU; pending != current means a reboot is due.",
       rule="ecc_mode_current and ecc_mode_pending equal ecc.mode (default enabled). N/A (board without ECC): "
            "SKIP naming ecc.required when it is false, else FAIL.")
def ecc_mode(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    keys = ("smi.qx",)
    want = spec.ecc.mode
    cur, pend = g.ecc_mode_current, g.ecc_mode_pending
    obs = f"current {_ONOFF.get(cur, fmt(cur))}, pending {_ONOFF.get(pend, fmt(pend))}"
    ev = f"ecc_mode current: {fmt(cur)}\necc_mode pending: {fmt(pend)}"
    expected = f"{want} (current and pending)"
    if cur is NA:
        return _unsupported_ecc(spec, name, "ECC mode", expected, obs, keys, ev)
    if cur is None:
        return Result.errored(f"{name}: ECC mode not reported", expected, obs, evidence=ev, evidence_keys=keys)
    if want == "any":
        return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)
    target = want == "enabled"
    bad = []
    if cur is not target:
        bad.append(f"current {_ONOFF[cur]}")
    if isinstance(pend, bool) and pend is not target:
        bad.append(f"pending {_ONOFF[pend]}")
    if bad:
        return Result.failed(expected, obs, f"{name}: ECC {', '.join(bad)}, expected {want}", evidence=ev,
                             evidence_keys=keys)
    if not isinstance(pend, bool):
        # the mode after the next reboot is unknown: current alone is no evidence that the spec holds
        return Result.errored(f"{name}: pending ECC mode {'N/A' if pend is NA else 'not reported'} "
                              "(current mode alone does not show the mode after reboot)", expected, obs,
                              evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


_REPAIR_FLAGS = ("channel_repair_pending", "tpc_repair_pending", "unrepairable_memory")


@check(id="NG-ECC-002", name="ecc_counters", title="ECC error counters below thresholds",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Drain the node and reset the GPU; uncorrectable errors that recur, or SRAM threshold exceeded / "
                   "unrepairable memory, make the GPU an RMA candidate (run field diagnostics).",
       rule="Volatile (since driver load) and aggregate (lifetime) uncorrectable totals <= ecc.max_uncorrectable_* "
            "(default 0); correctable totals <= ecc.max_correctable_* when set. SRAM threshold exceeded, "
            "channel/TPC repair pending, unrepairable memory (580+) FAIL. MIG on with the GPU-level volatile "
            "counters N/A: the sum of the MIG instances' counts. Counters N/A because ECC is off or the board has "
            "none: the cause named ('ECC disabled: see NG-ECC-001'), SKIP where ecc.required=false or "
            "ecc.mode=disabled, else ERROR (never a second FAIL next to NG-ECC-001's).")
def ecc_counters(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    e = spec.ecc
    keys = ("smi.qx",)
    limits = {("volatile", "uncorrectable"): e.max_uncorrectable_volatile,
              ("aggregate", "uncorrectable"): e.max_uncorrectable_aggregate,
              ("volatile", "correctable"): e.max_correctable_volatile,
              ("aggregate", "correctable"): e.max_correctable_aggregate}
    expected = ", ".join(f"{s} {k} <= {v}" for (s, k), v in limits.items() if v is not None) + \
        "; sram_threshold_exceeded No"
    values = {}
    counters = {"volatile": g.ecc_volatile, "aggregate": g.ecc_aggregate}
    mig_note = ""
    mig = g.mig_ecc_volatile
    if g.mig_mode_current is True and mig is not None and not isinstance(g.ecc_volatile.uncorrectable_total, int):
        # MIG on: the GPU-level volatile counters read N/A and each instance keeps its own
        # (mig_devices/ecc_error_count); their sum is the GPU's volatile count
        counters["volatile"] = mig
        mig_note = " (volatile = sum of the MIG instances' counts)"
    for scope, c in counters.items():
        values[(scope, "uncorrectable")] = c.uncorrectable_total
        values[(scope, "correctable")] = c.correctable_total
    obs = ", ".join(f"{s} {k} {fmt(v)}" for (s, k), v in values.items()) + \
        f"; sram_threshold_exceeded {fmt(g.sram_threshold_exceeded)}" + mig_note
    ev = lines(*(f"{s}.{loc}: {fmt(v)}" for s, c in counters.items() for loc, v in c.by_location.items()), obs)
    if all(v in (NA, None) for v in values.values()) and any(v is NA for v in values.values()):
        why = _ecc_off_or_absent(spec, g, name, "ECC counters", expected, obs, keys, ev)
        if why is not None:
            return why
    bad, missing = [], []
    for key, lim in limits.items():
        v = values[key]
        if not isinstance(v, int):
            if key[1] == "uncorrectable" or lim is not None:
                missing.append(f"{key[0]} {key[1]}")
            continue
        if lim is not None and v > lim:
            bad.append(f"{key[0]} {key[1]} {v} > {lim}")
    rma = False
    if g.sram_threshold_exceeded is True:
        bad.append("SRAM error threshold exceeded (RMA)")
        rma = True
    # the 580+ flags are GpuFacts attributes (parsers/_gputree.py _ecc_580, nvml/mapping.py)
    for flag in _REPAIR_FLAGS:
        if getattr(g, flag) is True:
            if flag == "unrepairable_memory":
                bad.append("unrepairable memory (RMA)")
                rma = True
            else:
                bad.append(f"{flag.replace('_', ' ')} (reset required)")
    if bad:
        return Result.failed(expected, obs, f"{name}: " + "; ".join(dict.fromkeys(bad)), evidence=ev,
                             evidence_keys=keys, details={"action": "RMA" if rma else "reset"})
    unreported = [f for f in ("sram_threshold_exceeded",) + _REPAIR_FLAGS if getattr(g, f) is None]
    if unreported:
        # reported from driver 580 on: absent there means the evidence is incomplete (ERROR, not PASS)
        ver, verr = None, None
        try:
            ver = loaded_driver_version(facts)
        except EvidenceError as err:
            verr = err
        major = ver.split(".")[0] if ver else ""
        if not (major.isdigit() and int(major) < 580):
            missing.extend(f"{f} (driver {ver or 'version unknown: ' + verr.reason} reports it from 580)"
                           for f in unreported)
    if missing:
        return Result.errored(f"{name}: counters not reported: {', '.join(missing)}", expected, obs, evidence=ev,
                              evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


def _memory_na(spec, g, ex, name, what, feature, expected, observed, ev, keys, seen="N/A") -> Result:
    """The one rule for a memory-health block the driver reports N/A or not at all (issue 21 items
    2 and 5), for row remapping (``feature`` row_remapping) and page retirement:
    ecc.required=false -> SKIP naming it; a board without the feature (SKU profile) -> SKIP naming
    memory.repair; ECC off -> the cause named once (see NG-ECC-001); a board not in the SKU
    profiles -> ERROR "unknown board"; a board that has the feature -> ERROR."""
    kw = dict(evidence=ev, evidence_keys=keys)
    if not spec.ecc.required:
        return Result.skipped(f"ecc.required=false: {what} {seen} on this board", expected, observed, **kw)
    has = getattr(ex, feature)
    if has is False:
        return Result.skipped(f"memory.repair={spec.memory.repair}: {name} {_without(ex, feature)}",
                              "not applicable", observed, **kw)
    if has is None:
        mode = g.ecc_mode_current
        hint = (" (ECC disabled on it: see NG-ECC-001)" if mode is False else
                " (it reports no ECC: see NG-ECC-001)" if mode is NA else "")
        return Result.errored(f"{name}: {what} {seen} on an unknown board ({ex.memory_repair_source}){hint}: "
                              "unknown board: add it to the SKU profiles (nodegate/data/skus.yaml memory_repair) "
                              "or set memory.repair", expected, observed, **kw)
    off = _ecc_off_or_absent(spec, g, name, what, expected, observed, keys, ev)
    if off is not None:
        return off
    return Result.errored(f"{name}: {what} {seen} on a board that has it ({ex.memory_repair_source})",
                          expected, observed, **kw)


def _without(ex, feature: str) -> str:
    try:
        src = ex.memory_repair_source
    except EvidenceError:   # a masked device id: the spec's memory.repair decided, no profile needed
        return f"is excluded by the spec (no SKU profile: {'page retirement' if feature == 'page_retirement' else 'row remapping'} not judged)"
    if feature == "row_remapping":
        return (f"uses page retirement ({src}), not row remapping" if ex.page_retirement
                else f"has no row remapper ({src})")
    return (f"uses row remapping ({src}); retired pages do not apply" if ex.row_remapping
            else f"does not retire pages ({src})")


class LazyExpectation:
    """``expectations(spec, gpu)`` computed at the first attribute read (issue 39.6): the board's
    SKU profile needs its PCI device id, and a masked or unreadable id (``[REDACTED]``) raises
    EvidenceError then, so only the verdicts that need the profile ERROR; a row-remapping block
    the driver reports, or ``ecc.required=false`` on a board without ECC, is judged without it."""

    __slots__ = ("_spec", "_gpu", "_ex")

    def __init__(self, spec, gpu):
        self._spec, self._gpu, self._ex = spec, gpu, None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if self._ex is None:
            self._ex = expectations(self._spec, self._gpu)
        return getattr(self._ex, name)


def _spec_excludes(spec, feature: str) -> bool:
    want = {"row_remapping": "row_remap", "page_retirement": "page_retirement"}[feature]
    return spec.memory.repair not in ("auto", want)


@check(id="NG-MEM-001", name="row_remapping", title="Row remapping: no failure, nothing pending, spare rows left",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Pending: drain and reset the GPU (or reboot) to activate the remap before acceptance. Failure "
                   "occurred, no spare rows, or >= 512 uncorrectable remaps: RMA the GPU.",
       rule="Boards with a row remapper (memory.repair, else the SKU profile by PCI device id): remapping "
            "failure occurred FAIL (RMA); pending FAIL (reset); bank histogram 'None' > memory.max_banks_no_spare "
            "FAIL; uncorrectable remaps >= memory.max_uncorrectable_remaps (512) FAIL. N/A or not reported: "
            "ecc.required=false -> SKIP; a board without a remapper (page retirement, GeForce without ECC) -> "
            "SKIP naming memory.repair; under MIG -> ERROR unless memory.allow_mig_unsupported_remap (SKIP); ECC "
            "off -> 'ECC disabled: see NG-ECC-001' (ERROR, SKIP with ecc.mode=disabled); a board not in the SKU "
            "profiles -> ERROR 'unknown board: add it to the SKU profiles'.")
def row_remapping(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    keys = ("smi.qx",)
    rr = g.remapped_rows
    ex = LazyExpectation(spec, g)
    expected = f"no failure, not pending, uncorrectable < {spec.memory.max_uncorrectable_remaps}, " \
               f"banks without spare rows <= {spec.memory.max_banks_no_spare}"
    if _spec_excludes(spec, "row_remapping"):
        return Result.skipped(f"memory.repair={spec.memory.repair}: {name} {_without(ex, 'row_remapping')}",
                              expected="not applicable", observed=f"remapped_rows {_shown(rr)}")
    if rr is None or rr is NA or (isinstance(rr, RemappedRows) and rr.pending is NA and rr.failure is NA):
        seen = "not reported" if rr is None else "N/A"
        ev = f"remapped_rows: {seen}"
        if g.mig_mode_current is True and rr is not None and ex.row_remapping is not False and spec.ecc.required:
            if spec.memory.allow_mig_unsupported_remap:
                return Result.skipped("memory.allow_mig_unsupported_remap=true: remapped rows N/A while MIG is "
                                      "enabled", expected, "N/A (MIG enabled)", evidence=ev, evidence_keys=keys)
            return Result.errored(f"{name}: remapped rows N/A while MIG is enabled (unsupported under MIG); set "
                                  "memory.allow_mig_unsupported_remap to accept", expected, "N/A (MIG enabled)",
                                  evidence=ev, evidence_keys=keys)
        return _memory_na(spec, g, ex, name, "remapped rows", "row_remapping", expected, seen, ev, keys, seen)
    if not isinstance(rr, RemappedRows):
        return Result.errored(f"{name}: remapped rows not reported", expected, "not reported", evidence_keys=keys)
    h = rr.histogram
    obs = (f"correctable {fmt(rr.correctable)}, uncorrectable {fmt(rr.uncorrectable)}, pending {fmt(rr.pending)}, "
           f"failure {fmt(rr.failure)}" + (", histogram " + " ".join(f"{k}={fmt(v)}" for k, v in h.items()) if h else ""))
    ev = obs.replace(", ", "\n")
    bad = []
    if rr.failure is True:
        bad.append("remapping failure occurred (RMA candidate)")
    if rr.pending is True:
        bad.append("row remapping pending (reset required)")
    if isinstance(rr.uncorrectable, int) and rr.uncorrectable >= spec.memory.max_uncorrectable_remaps:
        bad.append(f"uncorrectable remaps {rr.uncorrectable} >= {spec.memory.max_uncorrectable_remaps}")
    none = h.get("none")
    if isinstance(none, int) and none > spec.memory.max_banks_no_spare:
        bad.append(f"{none} bank(s) without spare rows > {spec.memory.max_banks_no_spare}")
    if bad:
        # only a pending remap is fixed by a reset; the rest leaves the GPU without spare rows (RMA)
        action = "reset" if bad == ["row remapping pending (reset required)"] else "RMA"
        return Result.failed(expected, obs, f"{name}: " + "; ".join(bad), evidence=ev, evidence_keys=keys,
                             details={"action": action})
    if not isinstance(rr.pending, bool) or not isinstance(rr.failure, bool):
        return Result.errored(f"{name}: remapped rows pending/failure not reported", expected, obs, evidence=ev,
                              evidence_keys=keys)
    if not isinstance(rr.uncorrectable, int) or isinstance(rr.uncorrectable, bool):
        return Result.errored(f"{name}: uncorrectable remapped rows {fmt(rr.uncorrectable)} (limit "
                              f"{spec.memory.max_uncorrectable_remaps} cannot be checked)", expected, obs,
                              evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-MEM-002", name="retired_pages", title="Retired pages below DCGM limits, none pending",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Pending: drain and reboot/reset to retire the pages. Over the limits: RMA the GPU.",
       rule="Boards that retire pages (memory.repair, else the SKU profile by PCI device id): pending FAIL; "
            "sbe+dbe retired >= memory.retired_pages_max_total (63) or dbe > memory.retired_pages_max_dbe (15) "
            "FAIL (DCGM limits). N/A or not reported: the one memory rule of NG-MEM-001 (ecc.required=false -> "
            "SKIP; a board that does not retire pages, e.g. row-remapping boards -> SKIP naming memory.repair; "
            "ECC off -> 'see NG-ECC-001'; unknown board -> ERROR 'unknown board: add it to the SKU profiles').")
def retired_pages(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    keys = ("smi.qx",)
    rp = g.retired_pages
    ex = LazyExpectation(spec, g)
    m = spec.memory
    expected = f"not pending, total < {m.retired_pages_max_total}, dbe <= {m.retired_pages_max_dbe}"
    # the total is the figure DCGM's limit is about (and what an RMA desk checks): shown when both
    # counts are numbers (issue 32: "sbe 60, dbe 3" left the desk to add them up)
    total = (f", total {rp.sbe + rp.dbe}" if isinstance(rp, RetiredPages) and isinstance(rp.sbe, int)
             and isinstance(rp.dbe, int) and not isinstance(rp.sbe, bool) else "")
    obs = (f"sbe {fmt(rp.sbe)}, dbe {fmt(rp.dbe)}{total}, pending {fmt(rp.pending)}" if isinstance(rp, RetiredPages)
           else f"retired pages {fmt(rp)}")
    if _spec_excludes(spec, "page_retirement"):
        return Result.skipped(f"memory.repair={m.repair}: {name} {_without(ex, 'page_retirement')}",
                              expected="not applicable", observed=obs)
    vals = (rp.sbe, rp.dbe, rp.pending) if isinstance(rp, RetiredPages) else ()
    if rp is None or rp is NA or (vals and all(v is NA for v in vals)):
        seen = "not reported" if rp is None else "N/A"
        return _memory_na(spec, g, ex, name, "retired pages", "page_retirement", expected, obs,
                          f"retired_pages: {obs}", keys, seen)
    if not isinstance(rp, RetiredPages) or not isinstance(rp.pending, bool) or \
            not isinstance(rp.sbe, int) or not isinstance(rp.dbe, int):
        return Result.errored(f"{name}: retired pages not fully reported ({obs})", expected, obs, evidence_keys=keys)
    bad = []
    if rp.pending:
        bad.append("page retirement pending (reboot/reset required)")
    if rp.sbe + rp.dbe >= m.retired_pages_max_total:
        bad.append(f"{rp.sbe + rp.dbe} retired pages >= {m.retired_pages_max_total}")
    if rp.dbe > m.retired_pages_max_dbe:
        bad.append(f"{rp.dbe} DBE retired pages > {m.retired_pages_max_dbe}")
    if bad:
        # pending retirements take effect at the next driver load; over DCGM's limits is an RMA
        action = "reboot" if bad == ["page retirement pending (reboot/reset required)"] else "RMA"
        return Result.failed(expected, obs, f"{name}: " + "; ".join(bad), evidence=obs, evidence_keys=keys,
                             details={"action": action})
    return Result.passed(expected, obs, evidence=obs, evidence_keys=keys)


@check(id="NG-MEM-003", name="gpu_recovery_action", title="GPU recovery action is None",
       scope="gpu", severity="critical", evidence=("smi.qx", "nvml.json"),
       remediation="Perform the reported recovery action (GPU reset, node reboot, drain and reset) and re-run.",
       rule="GPU recovery action (driver 570+) other than None FAILs with the action; a driver that does not report "
            "it (pre-570, N/A) is shown as such.")
def gpu_recovery_action(facts, spec, gpu) -> Result:
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    v = g.recovery_action
    keys = ("smi.qx",)
    ev = f"gpu_recovery_action: {fmt(v)}"
    if v is NA:
        return Result.passed("None", "N/A (not supported on this GPU)", evidence=ev, evidence_keys=keys)
    if v is None:
        # the field exists from driver 570 on (NVIDIA GPU recovery actions); absent on an older
        # driver is expected, absent on 570+ means the evidence is incomplete: ERROR, not PASS
        ver = loaded_driver_version(facts)
        major = ver.split(".")[0]
        if major.isdigit() and int(major) < 570:
            return Result.passed("None", f"not reported by driver {ver} (field added in driver 570)",
                                 evidence=ev, evidence_keys=keys)
        return Result.errored(f"{name}: recovery action not reported by driver {ver} (570+ reports it)",
                              "None", "not reported", evidence=ev, evidence_keys=keys)
    if v.strip().lower() != "none":
        return Result.failed("None", v, f"{name}: recovery action {v}", evidence=ev, evidence_keys=keys)
    return Result.passed("None", v, evidence=ev, evidence_keys=keys)
