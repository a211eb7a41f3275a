"""PCIe link: capability, trained link (busy vs idle, width vs speed), upstream ports (catalog "PCIe link")."""

from __future__ import annotations

from ..outcomes import Result
from ..spec import expectations
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, same_bus, spec_or_default
from .activity import assess, samples_for


def _num(v):
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def activity(g, samples=()) -> tuple[str, str]:
    """('busy' | 'idle' | 'mixed' | 'unknown', 'P8, GpuIdle not active'): the verdict of every
    activity signal of GpuFacts ``g`` (nodegate.checks.activity.assess)."""
    a = assess(g, samples)
    return a.state, a.describe()


def _link_str(gen, width) -> str:
    return f"Gen{fmt(gen)} x{fmt(width)}"


def _ev(g, act=None) -> str:
    lk = g.link
    return lines(f"max_link_gen: {fmt(lk.max_gen)}", f"device_max_link_gen: {fmt(lk.device_max_gen)}",
                 f"host_max_link_gen: {fmt(lk.host_max_gen)}", f"current_link_gen: {fmt(lk.current_gen)}",
                 f"max_link_width: {fmt(lk.max_width)}", f"current_link_width: {fmt(lk.current_width)}",
                 f"performance_state: {fmt(g.pstate)}",
                 f"clocks_event_reasons gpu_idle: {fmt(g.clocks_event_reasons.get('gpu_idle'))}",
                 f"activity: {act.state} ({act.evidence()})" if act is not None else None)


def _c2c_skip(spec, ex, name: str, obs: str, kw: dict) -> Result | None:
    """SKIP naming pcie.c2c for a GPU attached to its Grace CPU by NVLink-C2C (SKU profile attach:
    c2c: GH200, GB200): its host link is the C2C, not a PCIe slot (NVIDIA Grace Hopper Superchip
    architecture; GB200 NVL72), so a slot link's generation and width say nothing of it; the C2C's
    health is in the kernel log (Xid 121/159) and NVLink checks. pcie.c2c=judge, or pcie.gen/width
    in the spec, judges the link nvidia-smi reports instead. None: the check applies."""
    if not ex.c2c or spec.pcie.c2c == "judge" or spec.pcie.gen is not None or spec.pcie.width is not None:
        return None
    return Result.skipped(f"pcie.c2c=skip: {name} is attached to its Grace CPU by NVLink-C2C "
                          f"({ex.sku.name if ex.sku else 'SKU profile'}): no PCIe slot link to judge",
                          expected="pcie.c2c=skip", observed=obs, **kw)


@check(id="NG-PCIE-001", name="pcie_link_capability", title="PCIe link capability meets spec",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json"),
       # the slot's capability (wrong slot or BIOS setting) is configuration; a degraded trained
       # link of a capable slot (NG-PCIE-002) is the riser/reseat case
       action="fix configuration",
       remediation="Move the GPU to a slot/riser of the specified generation and width, or fix the BIOS link "
                   "setting (a Gen5 GPU in a Gen4 slot reports Max 4).",
       rule="max_link_gen (else max_device_link_gen) and max_link_width >= pcie.gen/pcie.width (default from the "
            "SKU profile). Host Max N/A (VMs) is never a failure by itself; a host max below the device max "
            "(a Gen5 GPU in a Gen4 slot: Max 4) FAILs naming the host as the limit. No expected link (unknown "
            "SKU, no spec) -> ERROR asking for pcie.gen/pcie.width.")
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
    if (r := _c2c_skip(spec, ex, name, obs, kw)) is not None:
        return r
    if ex.pcie_gen is None or ex.pcie_width is None:
        return Result.errored(f"{name}: no expected PCIe link ({ex.pcie_source})", "", obs, **kw)
    expected = f"{_link_str(ex.pcie_gen, ex.pcie_width)} ({ex.pcie_source})"
    if gen is None or width is None:
        return Result.errored(f"{name}: max link not reported ({obs})", expected, obs, **kw)
    if gen < ex.pcie_gen or width < ex.pcie_width:
        return Result.failed(expected, obs, f"{name}: link capability {_link_str(gen, width)} below "
                             f"{_link_str(ex.pcie_gen, ex.pcie_width)}{_capped_by(lk, gen)}", **kw)
    return Result.passed(expected, obs, **kw)


def _capped_by(lk, gen: int) -> str:
    """Which end limits the link generation, where the driver reports both (R550+ XML
    max_device_link_gen / max_host_link_gen, -q 'Device Max' / 'Host Max'; ``Max`` is the lower
    of the two): ': the GPU supports Gen5, the host (slot, riser or root port) caps it at Gen4'
    (corpus 011: an RTX PRO 6000 Blackwell in a Gen4 slot). '' when unknown (Host Max N/A in VMs)."""
    dev, host = _num(lk.device_max_gen), _num(lk.host_max_gen)
    if dev is not None and host is not None and host < dev and host == gen:
        return (f": the GPU supports Gen{dev} (max_device_link_gen), the host caps it at Gen{host} "
                "(max_host_link_gen: slot, riser or root port)")
    if dev is not None and dev == gen and (host is None or host >= dev):
        return f": the GPU itself reports Gen{dev} as its maximum (max_device_link_gen)"
    return ""


@check(id="NG-PCIE-002", name="pcie_link_trained", title="PCIe link trained at spec",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json", "smi.clocks_samples"),
       remediation="Drain the node, reseat the GPU or replace the riser/cable, check the slot (a narrow link is a "
                   "slot, riser or bifurcation fault); verify the speed again under load.",
       rule="current_link_gen/current_link_width >= spec (pcie.gen/width, SKU profile, else the GPU's own max) -> "
            "PASS. Width below spec FAILs at any activity (link width does not train down for power; speed "
            "does), unless pcie.width_at_idle=not_verified and the GPU is idle. Speed below spec: busy -> FAIL; "
            "idle (links power down; Gen1 at P8 is common) -> SKIP with the observed state when "
            "pcie.idle=not_verified (default), FAIL when pcie.idle=fail. Busy/idle from every signal (P-state, "
            "GpuIdle, utilisation, graphics clock vs its maximum, the probe's further samples); signals that "
            "disagree leave the link unverified at idle: SKIP under not_verified, ERROR under fail, never FAIL "
            "or PASS. No signal at all -> ERROR.")
def pcie_link_trained(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    ex = expectations(spec, g)
    name = gpu_label(g, gpu)
    lk = g.link
    act = assess(g, samples_for(facts, g))
    kw = dict(evidence=_ev(g, act), evidence_keys=("smi.qx",))
    egen, ewidth, src = ex.pcie_gen, ex.pcie_width, ex.pcie_source
    if egen is None or ewidth is None:
        egen, ewidth, src = _num(lk.max_gen), _num(lk.max_width), "the GPU's max link (no spec/SKU value)"
    cur_gen, cur_w = _num(lk.current_gen), _num(lk.current_width)
    desc = act.describe()
    obs = f"{_link_str(lk.current_gen, lk.current_width)} at {desc}"
    if (r := _c2c_skip(spec, ex, name, obs, kw)) is not None:
        return r
    if egen is None or ewidth is None:
        return Result.errored(f"{name}: no expected PCIe link ({ex.pcie_source})", "", obs, **kw)
    expected = f"{_link_str(egen, ewidth)} ({src})"
    if cur_gen is None or cur_w is None:
        return Result.errored(f"{name}: current link not reported", expected, obs, **kw)
    if cur_gen >= egen and cur_w >= ewidth:
        return Result.passed(expected, obs, **kw)
    if cur_w < ewidth:
        return _narrow(spec, act, name, cur_gen, cur_w, egen, ewidth, expected, obs, kw)
    below = f"{name}: trained link {_link_str(cur_gen, cur_w)} below {_link_str(egen, ewidth)}"
    state = act.state
    if state == "busy":
        return Result.failed(expected, obs, f"{below} while busy ({desc})", **kw)
    if state == "idle":
        if spec.pcie.idle == "fail":
            return Result.failed(expected, obs, f"{below} at idle ({desc}) and pcie.idle=fail", **kw)
        return Result.skipped(f"pcie.idle=not_verified: {below} at idle ({desc}); idle links power down, verify "
                              "under load", expected, obs, **kw)
    if state == "mixed":
        why = f"the activity evidence disagrees ({act.evidence()})"
        if spec.pcie.idle == "fail":
            return Result.errored(f"{below}; cannot tell busy from idle: {why} (pcie.idle=fail needs a clear "
                                  "state)", expected, obs, **kw)
        return Result.skipped(f"pcie.idle=not_verified: {below}; {why}: unverified at idle, verify under load",
                              expected, obs, **kw)
    return Result.errored(f"{below}; cannot tell busy from idle ({desc})", expected, obs, **kw)


def _narrow(spec, act, name, cur_gen, cur_w, egen, ewidth, expected, obs, kw) -> Result:
    """Width below spec. The driver lowers the link *speed* at low P-states; the width is set
    when the link trains and does not step down for power (issue 21: a GPU at x8 of x16 sits in
    a bifurcated slot or on a bad riser whatever it is doing). A narrower slot is a spec
    decision: set pcie.width."""
    what = f"{name}: trained link width x{cur_w} below x{ewidth} (Gen{cur_gen}, expected {_link_str(egen, ewidth)})"
    if spec.pcie.width_at_idle == "not_verified" and act.state in ("idle", "mixed"):
        return Result.skipped(f"pcie.width_at_idle=not_verified: {what} at {act.describe()}", expected, obs, **kw)
    return Result.failed(expected, obs, f"{what} at {act.describe()}; link width does not train down at idle: "
                         "check the slot, riser and bifurcation (or set pcie.width for a narrower slot)", **kw)


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


