"""Kernel modules: required set, nvidia_peermem, load order, modules-load.d (catalog "Kernel modules")."""

from __future__ import annotations

from ..outcomes import Result
from . import check
from ._util import lines, optional, spec_or_default

PEERMEM = "nvidia_peermem"
LEGACY_PEERMEM = "nv_peer_mem"


def _entry(ms, name):
    return next((m for m in ms.loaded if m.name == name), None)


def _state(ms, name) -> str:
    if name in ms.builtin:
        return "built-in"
    m = _entry(ms, name)
    return f"{m.state or 'loaded'}" if m else "absent"


def _proc_lines(ms, names) -> str:
    out = []
    for m in ms.loaded:
        if m.name in names:
            out.append(f"{m.name} {m.size if m.size is not None else '?'} "
                       f"{m.refcount if m.refcount is not None else '-'} {','.join(m.used_by) or '-'} {m.state or ''}")
    out += [f"{n} (built in: /sys/module/{n} without initstate)" for n in sorted(names) if n in ms.builtin]
    return lines(*out)


@check(id="NG-MOD-001", name="required_modules", title="Required NVIDIA kernel modules loaded",
       scope="node", severity="critical", evidence=("modules.proc", "modules.sys"),
       remediation="Load the missing modules (modprobe nvidia_uvm ...) and make them load at boot; on a compute "
                   "node nvidia_uvm is required for CUDA.",
       rule="Every module in modules.required (default nvidia, nvidia_uvm, nvidia_modeset, nvidia_drm) is Live in "
            "/proc/modules or built in (/sys/module without initstate).")
def required_modules(facts, spec) -> Result:
    spec = spec_or_default(spec)
    ms = facts.modules
    req = spec.modules.required
    states = {n: _state(ms, n) for n in req}
    bad = {n: s for n, s in states.items() if s not in ("Live", "loaded", "built-in")}
    obs = ", ".join(f"{n} {s}" for n, s in states.items())
    kw = dict(evidence=_proc_lines(ms, set(req)) or "no matching /proc/modules line",
              evidence_keys=("modules.proc", "modules.sys"))
    expected = ", ".join(req) + " Live or built in"
    if bad:
        return Result.failed(expected, obs, "modules not loaded: " + ", ".join(f"{n} ({s})" for n, s in bad.items()),
                             **kw)
    return Result.passed(expected, obs, **kw)


def _peermem_required(facts, spec) -> tuple[bool | None, str]:
    """(required?, why). None = not applicable (ignore)."""
    mode = spec.modules.peermem
    if mode == "required":
        return True, "modules.peermem=required"
    if mode in ("absent", "ignore"):
        return False, f"modules.peermem={mode}"
    ib = facts.ib_devices
    if ib:
        return True, f"modules.peermem=auto and InfiniBand devices present ({', '.join(list(ib)[:4])})"
    return False, "modules.peermem=auto and /sys/class/infiniband is empty"


def _registered(val) -> bool:
    """peermem_registered: bool, or the /sys/kernel/mm/memory_peers entries (nv_mem = registered)."""
    if isinstance(val, bool):
        return val
    return any("nv_mem" in str(k) for k in (val or []))


@check(id="NG-MOD-002", name="peermem", title="nvidia_peermem loaded and registered (GPUDirect RDMA)",
       scope="node", severity="major",
       evidence=("modules.proc", "modules.sys", "ib.devices", "peermem.registration", "modinfo.nvidia_peermem",
                 "modinfo.nv_peer_mem"),
       remediation="modprobe nvidia_peermem after ib_core and name it in /etc/modules-load.d/ so it loads at boot; "
                   "loaded but not registered: install an ib_core with the peer-memory API (MLNX_OFED/DOCA).",
       rule="modules.peermem required|auto|absent|ignore; auto = required when /sys/class/infiniband has a "
            "device. Required: nvidia_peermem (or nv_peer_mem when modules.allow_nv_peer_mem) loaded AND "
            "registered (/sys/kernel/mm/memory_peers/nv_mem/version). absent: neither loaded.")
def peermem(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if spec.modules.peermem == "ignore":
        return Result.skipped("modules.peermem=ignore: peer-memory module not checked",
                              expected="modules.peermem=ignore")
    ms = facts.modules
    keys = ("modules.proc", "modules.sys", "ib.devices", "peermem.registration")
    loaded = {n: ms.is_present(n) for n in (PEERMEM, LEGACY_PEERMEM)}
    obs_mods = f"{PEERMEM} {_state(ms, PEERMEM)}, {LEGACY_PEERMEM} {_state(ms, LEGACY_PEERMEM)}"
    ev = _proc_lines(ms, {PEERMEM, LEGACY_PEERMEM, "ib_core"})
    if spec.modules.peermem == "absent":
        present = [n for n, v in loaded.items() if v]
        if present:
            return Result.failed("no peer-memory module loaded", obs_mods,
                                 f"modules.peermem=absent but {', '.join(present)} loaded", evidence=ev,
                                 evidence_keys=keys)
        return Result.passed("no peer-memory module loaded", obs_mods, evidence=ev, evidence_keys=keys)
    required, why = _peermem_required(facts, spec)
    allow_legacy = spec.modules.allow_nv_peer_mem
    if loaded[LEGACY_PEERMEM] and not allow_legacy:
        return Result.failed(f"{PEERMEM} (nv_peer_mem not allowed)", obs_mods,
                             "legacy nv_peer_mem loaded but modules.allow_nv_peer_mem=false", evidence=ev,
                             evidence_keys=keys)
    if not required:
        return Result.skipped(f"{why}: peer-memory module not required", expected=why, observed=obs_mods,
                              evidence=ev, evidence_keys=keys)
    expected = f"{PEERMEM}{' or nv_peer_mem' if allow_legacy else ''} loaded and registered ({why})"
    active = loaded[PEERMEM] or (allow_legacy and loaded[LEGACY_PEERMEM])
    if not active:
        on_disk = []
        for attr, n in (("modinfo_peermem", PEERMEM), ("modinfo_nv_peer_mem", LEGACY_PEERMEM)):
            mi, _ = optional(facts, attr)
            if mi is not None and mi.filename:
                on_disk.append(f"{n} {mi.version or ''} on disk ({mi.filename})".replace("  ", " "))
        extra = f"; installed but not loaded: {', '.join(on_disk)} (missing modules-load.d entry?)" if on_disk else ""
        return Result.failed(expected, obs_mods + extra, f"no peer-memory module loaded{extra}", evidence=ev,
                             evidence_keys=keys + ("modinfo.nvidia_peermem", "modinfo.nv_peer_mem"))
    reg = facts.peermem_registered
    if not _registered(reg):
        return Result.failed(expected, f"{obs_mods}; not registered with ib_core (no memory_peers/nv_mem)",
                             "peer-memory module loaded but not registered with ib_core (no peer-memory API)",
                             evidence=lines(ev, f"memory_peers: {reg!r}"), evidence_keys=keys)
    return Result.passed(expected, f"{obs_mods}; registered", evidence=lines(ev, f"memory_peers: {reg!r}"),
                         evidence_keys=keys)


def _loaded_before(ms, a: str, b: str) -> bool | None:
    """True when a loaded before b. /proc/modules lists the most recent first; built in = first."""
    if a in ms.builtin:
        return True
    if b in ms.builtin:
        return False
    ea, eb = _entry(ms, a), _entry(ms, b)
    if ea is None or eb is None:
        return None
    return ea.position > eb.position


@check(id="NG-MOD-003", name="module_load_order", title="Kernel modules loaded in dependency order",
       scope="node", severity="minor", evidence=("modules.proc", "modules.sys"),
       remediation="Unload and reload the modules in order (or reboot); declare a softdep in modprobe.d when the "
                   "order is not a symbol dependency.",
       rule="For each modules.order pair (a, b) with b loaded, a loaded before b: /proc/modules lists the most "
            "recent first, a built-in module counts as loaded first; refcount/users columns '- -' are not "
            "parsed as integers. No pair applicable -> SKIP naming modules.order.")
def module_load_order(facts, spec) -> Result:
    spec = spec_or_default(spec)
    ms = facts.modules
    pairs = spec.modules.order
    expected = "; ".join(f"{a} before {b}" for a, b in pairs)
    bad, checked, na = [], [], []
    for a, b in pairs:
        if not ms.is_present(b):
            na.append(f"{b} not loaded")
            continue
        if not ms.is_present(a):
            bad.append(f"{b} loaded without {a}")
            continue
        ok = _loaded_before(ms, a, b)
        (checked if ok else bad).append(f"{a} before {b}" if ok else f"{b} loaded before {a}")
    names = {n for p in pairs for n in p}
    obs = "; ".join(bad + checked) or "no ordered pair loaded"  # violations first: the RMA sheet shows them
    kw = dict(evidence=_proc_lines(ms, names), evidence_keys=("modules.proc", "modules.sys"))
    if bad:
        return Result.failed(expected, obs, "module load order wrong: " + "; ".join(bad), **kw)
    if not checked:  # nothing verified: no modules.order pair has its later module loaded
        why = "no pairs configured" if not pairs else "no ordered pair applies (" + ", ".join(sorted(set(na))) + ")"
        return Result.skipped(f"modules.order: {why}", expected, obs, **kw)
    return Result.passed(expected, obs + (f" (not applicable: {', '.join(sorted(set(na)))})" if na else ""), **kw)


@check(id="NG-MOD-004", name="peermem_modules_load_d", title="Peer-memory module listed in modules-load.d",
       scope="node", severity="minor", evidence=("modules.load_d", "ib.devices"),
       remediation="echo nvidia_peermem > /etc/modules-load.d/nvidia-peermem.conf (the fix for 'missing after "
                   "reboot').",
       rule="When the peer-memory module is required (NG-MOD-002 rules) and modules.load_d_required, a "
            "modules-load.d file (/etc, /run, /usr/local/lib, /usr/lib) or /etc/modules names nvidia_peermem "
            "(or nv_peer_mem when allowed). File order is not load order (systemd loads them in parallel).")
def peermem_modules_load_d(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if not spec.modules.load_d_required:
        return Result.skipped("modules.load_d_required=false", expected="modules.load_d_required=false")
    if spec.modules.peermem in ("ignore", "absent"):
        return Result.skipped(f"modules.peermem={spec.modules.peermem}: peer-memory module not required",
                              expected=f"modules.peermem={spec.modules.peermem}")
    required, why = _peermem_required(facts, spec)
    if not required:
        return Result.skipped(f"{why}: peer-memory module not required", expected=why)
    wanted = {PEERMEM} | ({LEGACY_PEERMEM} if spec.modules.allow_nv_peer_mem else set())
    load_d = facts.modules_load_d
    hits = [(f, m) for f, mods in load_d.items() for m in mods if m.replace("-", "_") in wanted]
    expected = " or ".join(sorted(wanted)) + " in a modules-load.d file"
    keys = ("modules.load_d", "ib.devices")
    if not hits:
        files = ", ".join(load_d) or "no modules-load.d files"
        return Result.failed(expected, f"not listed ({files})", f"{' / '.join(sorted(wanted))} not in modules-load.d",
                             evidence=lines(*(f"== {f}: {' '.join(m)}" for f, m in load_d.items())),
                             evidence_keys=keys)
    return Result.passed(expected, ", ".join(f"{m} in {f}" for f, m in hits),
                         evidence=lines(*(f"{f}: {m}" for f, m in hits)), evidence_keys=keys)
