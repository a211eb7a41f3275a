"""PCIe link: capability, trained link (busy vs idle), upstream ports (catalog "PCIe link")."""

from __future__ import annotations

from ..outcomes import Result
from ..spec import expectations
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, same_bus, spec_or_default


def _num(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def activity(g) -> tuple[str, str]:
    """('busy' | 'idle' | 'unknown', description). Idle = GpuIdle active, or P8 or deeper with GpuIdle not
    explicitly inactive; busy = GpuIdle explicitly not active; anything else is unknown."""
    idle = g.clocks_event_reasons.get("gpu_idle")
    if idle is None and _num(g.clocks_event_reasons_mask) is not None:
        idle = bool(g.clocks_event_reasons_mask & 0x1)
    idle_s = "GpuIdle active" if idle is True else "GpuIdle not active" if idle is False else "GpuIdle unknown"
    desc = f"{g.pstate or 'P-state unknown'}, {idle_s}"
    # idle only on evidence: GpuIdle active, or a deep P-state (P8..P15) the idle flag does not contradict
    if idle is True or (_pstate_num(g.pstate) is not None and _pstate_num(g.pstate) >= 8 and idle is not False):
        return "idle", desc
    if idle is False:  # the driver says the GPU is not idle: busy rules, whatever the P-state
        return "busy", desc
    return "unknown", desc


def _pstate_num(p):
    if isinstance(p, str) and len(p) > 1 and p[0] in "Pp" and p[1:].isdigit():
        return int(p[1:])
    return None


def _link_str(gen, width) -> str:
    return f"Gen{fmt(gen)} x{fmt(width)}"


def _ev(g) -> str:
    lk = g.link
    return lines(f"max_link_gen: {fmt(lk.max_gen)}", f"device_max_link_gen: {fmt(lk.device_max_gen)}",
                 f"host_max_link_gen: {fmt(lk.host_max_gen)}", f"current_link_gen: {fmt(lk.current_gen)}",
                 f"max_link_width: {fmt(lk.max_width)}", f"current_link_width: {fmt(lk.current_width)}",
                 f"performance_state: {fmt(g.pstate)}",
                 f"clocks_event_reasons gpu_idle: {fmt(g.clocks_event_reasons.get('gpu_idle'))}")


@check(id="NG-PCIE-001", name="pcie_link_capability", title="PCIe link capability meets spec",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       remediation="Move the GPU to a slot/riser of the specified generation and width, or fix the BIOS link "
                   "setting (a Gen5 GPU in a Gen4 slot reports Max 4).",
       rule="max_link_gen (else max_device_link_gen) and max_link_width >= pcie.gen/pcie.width (default from the "
            "SKU profile). Host Max N/A (VMs) is never a failure by itself. No expected link (unknown SKU, no "
            "spec) -> ERROR asking for pcie.gen/pcie.width.")
def pcie_link_capability(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    ex = expectations(spec, g)
    name = gpu_label(g, gpu)
    lk = g.link
    gen = _num(lk.max_gen) if _num(lk.max_gen) is not None else _num(lk.device_max_gen)
    width = _num(lk.max_width)
    obs = _link_str(gen if gen is not None else lk.max_gen, lk.max_width) + " max"
    kw = dict(evidence=_ev(g), evidence_keys=("smi.qx",))
    if ex.pcie_gen is None or ex.pcie_width is None:
        return Result.errored(f"{name}: no expected PCIe link ({ex.pcie_source})", "", obs, **kw)
    expected = f"{_link_str(ex.pcie_gen, ex.pcie_width)} ({ex.pcie_source})"
    if gen is None or width is None:
        return Result.errored(f"{name}: max link not reported ({obs})", expected, obs, **kw)
    if gen < ex.pcie_gen or width < ex.pcie_width:
        return Result.failed(expected, obs, f"{name}: link capability {_link_str(gen, width)} below "
                             f"{_link_str(ex.pcie_gen, ex.pcie_width)}", **kw)
    return Result.passed(expected, obs, **kw)


@check(id="NG-PCIE-002", name="pcie_link_trained", title="PCIe link trained at spec",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       remediation="Drain the node, reseat the GPU or replace the riser/cable, check the slot; verify again under "
                   "load.",
       rule="current_link_gen/current_link_width >= spec (pcie.gen/width, SKU profile, else the GPU's own max) -> "
            "PASS. Below while busy (P0 and GpuIdle not active) -> FAIL. Below while idle (links power down; "
            "Gen1 at P8 is common) -> SKIP with the observed state when pcie.idle=not_verified (default), "
            "FAIL when pcie.idle=fail.")
def pcie_link_trained(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    ex = expectations(spec, g)
    name = gpu_label(g, gpu)
    lk = g.link
    kw = dict(evidence=_ev(g), evidence_keys=("smi.qx",))
    egen, ewidth, src = ex.pcie_gen, ex.pcie_width, ex.pcie_source
    if egen is None or ewidth is None:
        egen, ewidth, src = _num(lk.max_gen), _num(lk.max_width), "the GPU's max link (no spec/SKU value)"
    cur_gen, cur_w = _num(lk.current_gen), _num(lk.current_width)
    state, desc = activity(g)
    obs = f"{_link_str(lk.current_gen, lk.current_width)} at {desc}"
    if egen is None or ewidth is None:
        return Result.errored(f"{name}: no expected PCIe link ({ex.pcie_source})", "", obs, **kw)
    expected = f"{_link_str(egen, ewidth)} ({src})"
    if cur_gen is None or cur_w is None:
        return Result.errored(f"{name}: current link not reported", expected, obs, **kw)
    if cur_gen >= egen and cur_w >= ewidth:
        return Result.passed(expected, obs, **kw)
    below = f"{name}: trained link {_link_str(cur_gen, cur_w)} below {_link_str(egen, ewidth)}"
    if state == "busy":
        return Result.failed(expected, obs, f"{below} while busy ({desc})", **kw)
    if state == "idle":
        if spec.pcie.idle == "fail":
            return Result.failed(expected, obs, f"{below} at idle ({desc}) and pcie.idle=fail", **kw)
        return Result.skipped(f"pcie.idle=not_verified: {below} at idle ({desc}); idle links power down, verify "
                              "under load", expected, obs, **kw)
    return Result.errored(f"{below}; cannot tell busy from idle ({desc})", expected, obs, **kw)


def _sysfs_str(link) -> str:
    return f"Gen{fmt(link.current_gen)} x{fmt(link.current_width)} (max Gen{fmt(link.max_gen)} x{fmt(link.max_width)})"


@check(id="NG-PCIE-003", name="pcie_upstream_link", title="Upstream PCIe ports not below the GPU link",
       scope="gpu", severity="major", evidence=("pci.sysfs", "smi.qx"),
       remediation="Reseat or replace the riser/cable or PCIe switch board between the GPU and the root port; check "
                   "the switch's BIOS/firmware link settings.",
       rule="Where sysfs is readable, every upstream port of the GPU (switch ports, root port) trained at least "
            "the GPU's current link (gen and width); a port below it FAILs naming the port, a port whose link is unreadable "
            "ERRORs (PASS without upstream ports only for a bare root bus). sysfs speeds 2.5..64 "
            "GT/s = Gen1..Gen6. pcie.check_upstream=false -> SKIP.")
def pcie_upstream_link(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    if not spec.pcie.check_upstream:
        return Result.skipped("pcie.check_upstream=false", expected="pcie.check_upstream=false")
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    links = facts.pci_links
    bus = g.pci_bus_id or getattr(gpu, "pci_bus_id", None)
    own = next((l for l in links if l.role == "gpu" and same_bus(l.bdf, bus, function=True)), None)
    ups = [l for l in links if l.role == "upstream" and same_bus(l.upstream_of, bus, function=True)]
    keys = ("pci.sysfs", "smi.qx")
    ev = lines(*(f"{l.bdf} {l.role}: {_sysfs_str(l)}" for l in ([own] if own else []) + ups))
    gen = own.current_gen if own and own.current_gen else _num(g.link.current_gen)
    width = own.current_width if own and own.current_width else _num(g.link.current_width)
    expected = f"upstream ports >= GPU link Gen{fmt(gen)} x{fmt(width)}"
    if own is None and not ups:
        return Result.errored(f"{name}: GPU function {bus} not in the sysfs link listing", expected,
                              evidence_keys=keys)
    readable = [l for l in ups if _num(l.current_gen) is not None and _num(l.current_width) is not None]
    # a sysfs root bus directory (pciDDDD:BB, the host bridge) is not a port and has no link to train;
    # every real upstream port (a PCI function) must have a readable link
    unreadable = [l for l in ups if l not in readable and not str(l.bdf).startswith("pci")]
    if unreadable:  # a port whose link cannot be read could be the one trained below the GPU
        return Result.errored(f"{name}: upstream port link unreadable: " + ", ".join(
            f"{l.bdf} Gen{fmt(l.current_gen)} x{fmt(l.current_width)}" for l in unreadable), expected,
            "; ".join(f"{l.bdf} Gen{fmt(l.current_gen)} x{fmt(l.current_width)}" for l in ups),
            evidence=ev, evidence_keys=keys)
    if not readable:
        return Result.passed(expected, "no upstream port with link attributes (GPU below a root complex or in a VM)",
                             evidence=ev, evidence_keys=keys)
    if gen is None or width is None:
        return Result.errored(f"{name}: GPU current link unreadable", expected, evidence=ev, evidence_keys=keys)
    bad = [l for l in readable if l.current_gen < gen or l.current_width < width]
    obs = "; ".join(f"{l.bdf} Gen{l.current_gen} x{l.current_width}" for l in readable)
    if bad:
        return Result.failed(expected, obs, f"{name}: upstream port " + ", ".join(
            f"{l.bdf} trained Gen{l.current_gen} x{l.current_width}" for l in bad)
            + f" below the GPU link Gen{gen} x{width}", evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


