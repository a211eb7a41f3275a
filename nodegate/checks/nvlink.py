"""NVLink links and NVLink error counters, per GPU (issue 19 items 1-2).

Source order: NVML (``nvml.json``: nvmlDeviceGetNvLinkState / ...ErrorCounter) where the node has
it, else ``nvidia-smi nvlink -s`` / ``-e``. A GPU is matched to its NVLink block by PCI bus id
(NVML), UUID, else index.
"""

from __future__ import annotations

import re

from ..errors import EvidenceError
from ..facts import NA
from ..outcomes import Result
from ..parsers.nvlink_status import NO_NVLINK
from ..spec.links import nvlink_expectation
from . import check
from ._util import gpu_for, gpu_label, lines, optional, same_bus, skip_by_spec, spec_or_default

_GBPS_TOLERANCE = 0.0005   # nvidia-smi prints three decimals (26.562): equal within its rounding
#: nvidia-smi nvlink -s for a GPU whose links exist and are all down: 'NVML: Unable to retrieve NVLink information
#: as all links are inactive' (a real A100 SXM4, Azure/azurehpc-health-checks test data; 'inActive' on 610)
ALL_INACTIVE = re.compile(r"\ball links are inactive\b", re.I)


def _match(blocks, g):
    for b in blocks or []:
        if b.bus_id and g.pci_bus_id and same_bus(b.bus_id, g.pci_bus_id):
            return b
    for b in blocks or []:
        if b.uuid and g.uuid and b.uuid == g.uuid:
            return b
    for b in blocks or []:
        if b.index is not None and b.index == g.index and not (b.uuid and g.uuid):
            return b
    return None


def links_for(facts, g, smi_attr: str):
    """(GpuNvLinks | None, evidence key): NVML's block for ``g`` when NVML reports NVLink, else the
    nvidia-smi item ``smi_attr`` (``nvlink_status`` | ``nvlink_errors``). A GPU the output does not
    list gets None (no NVLink reported). Raises the smi item's EvidenceError when NVML has no data."""
    nv, _ = optional(facts, "nvml_nvlinks")
    block = _match(nv, g) if nv else None
    if block is not None:
        return block, "nvml.json"
    key = "smi.nvlink_status" if smi_attr == "nvlink_status" else "smi.nvlink_errors"
    return _match(getattr(facts, smi_attr), g), key


def _preconditions(spec, g, name, block, key, what: str, all_down_fails: bool = False) -> Result | None:
    """SKIP for a GPU without NVLink by spec/SKU, SKIP/ERROR for MIG, ERROR when no NVLink is
    reported or no expectation exists; None when the links can be judged."""
    ex = nvlink_expectation(spec, g)
    kw = dict(evidence_keys=(key,))
    if ex.links == 0:
        return skip_by_spec("nvlink.links", 0, f"{name} has no NVLink ({ex.source})", **kw)
    mig = (block is not None and block.status == "mig") or (
        g.mig_mode_current is True and (block is None or block.status != "ok"))
    if mig:
        why = f"{name} is in MIG mode: the driver refuses NVLink queries ({block.message if block else 'MIG enabled'})"
        if spec.nvlink.mig == "not_verified":
            return skip_by_spec("nvlink.mig", "not_verified", why, **kw)
        return Result.errored(why, f"{what} (nvlink.mig=error)", "MIG mode", **kw)
    if ex.links is None and block is not None and block.status == "none" and NO_NVLINK.search(block.message or ""):
        # no SKU profile or spec value, but the driver itself says the GPU has no NVLink (a PCIe
        # board: corpus 119, "Device does not have or support Nvlink"); links that exist but are
        # down print '<inactive>' lines instead, never this sentence
        return skip_by_spec("nvlink.links", "unset", f"{name}: the driver reports no NVLink on this GPU "
                            f"({block.message!r}; {ex.source})", **kw)
    if ex.links is None:
        return Result.errored(f"{name}: no expected NVLink count ({ex.source}): set nvlink.links (0 when the GPU "
                              "has no NVLink)", "", **kw)
    if all_down_fails and block is not None and not block.links and ALL_INACTIVE.search(block.message or ""):
        # the driver says the GPU's links exist and every one is down: evidence of the violation
        # (the links the SKU has are not up), not missing evidence. NVIDIA's own health validation
        # flags any inactive NVLink as CRITICAL (docs.nvidia.com/health-validation/reference/checks/
        # nvlink, nvlink_active: max_inactive_nvlinks 0)
        return Result.failed(f"{ex.links} links up ({ex.source})", "0 links up: all links inactive",
                             f"{name}: every NVLink is down (nvidia-smi nvlink -s: {block.message!r}); "
                             f"{ex.source} expects {ex.links} links up", **kw)
    if block is None or block.status != "ok" or not block.links:
        said = (block.message if block is not None and block.message else
                "listed no link" if block is not None else "did not list this GPU")
        src = "NVML" if key == "nvml.json" else ("nvidia-smi nvlink -s" if key.endswith("status") else "nvidia-smi nvlink -e")
        return Result.errored(f"{name}: no NVLink reported ({src} {said}); {ex.source} expects {ex.links} links: "
                              "set nvlink.links: 0 if this node's GPUs have no NVLink (VM, PCIe board)",
                              f"{ex.links} links", "no NVLink reported", **kw)
    return None


def _fmt_speed(x: float) -> str:
    return f"{x:g}"


@check(id="NG-NVL-001", name="nvlink_links", title="Every NVLink up at the SKU's speed",
       scope="gpu", severity="critical", evidence=("smi.nvlink_status", "nvml.json", "smi.qx"),
       remediation="Drain the node; reset the GPU (or reboot) and check again; a link that stays down or slow: "
                   "reseat the GPU/baseboard, check the NVLink/NVSwitch tray and cables, then RMA.",
       rule="Every NVLink the SKU has (nvlink.links, else the SKU profile: A100 SXM 12 x 25 GB/s, H100/H200 SXM "
            "18 x 26.562 GB/s, B200 18 x 50 GB/s, B300 18 x 53.125 GB/s) is up (not <inactive>) at least at the "
            "per-link speed. nvlink.links=0 (PCIe boards, VMs) -> SKIP; MIG mode (driver refuses NVLink queries) "
            "-> SKIP when nvlink.mig=not_verified (default), ERROR when error; no NVLink reported or no expected "
            "count -> ERROR, never PASS; the driver's 'all links are inactive' with an expected count -> FAIL; without a spec/SKU count, the driver's own 'Device does not have or support "
            "Nvlink' -> SKIP naming nvlink.links. Source: NVML where the node has it, else nvidia-smi nvlink -s.")
def nvlink_links(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    ex = nvlink_expectation(spec, g)
    if ex.links == 0:
        return skip_by_spec("nvlink.links", 0, f"{name} has no NVLink ({ex.source})")
    block, key = links_for(facts, g, "nvlink_status")
    pre = _preconditions(spec, g, name, block, key, "NVLinks up", all_down_fails=True)
    if pre is not None:
        return pre
    want = f"{ex.links} links up" + (f" at >= {_fmt_speed(ex.gbps)} GB/s" if ex.gbps else "") + f" ({ex.source})"
    down = [lk.link for lk in block.links if lk.active is False]
    unknown = [lk.link for lk in block.links if lk.active is not True and lk.active is not False]
    up = [lk for lk in block.links if lk.active is True]
    slow = [lk for lk in up if ex.gbps and (lk.speed_gbps is None or lk.speed_gbps + _GBPS_TOLERANCE < ex.gbps)]
    speeds = sorted({lk.speed_gbps for lk in up if lk.speed_gbps is not None})
    obs = f"{len(up)}/{len(block.links)} links up" + (f" at {', '.join(_fmt_speed(s) for s in speeds)} GB/s" if speeds else "")
    ev = lines(*(f"Link {lk.link}: " + ("<inactive>" if lk.active is False else
                                        f"{_fmt_speed(lk.speed_gbps)} GB/s" if lk.speed_gbps is not None else str(lk.active))
                 for lk in block.links))
    kw = dict(evidence=ev, evidence_keys=(key,))
    problems = []
    if down:
        problems.append(f"link{'s' if len(down) > 1 else ''} {', '.join(map(str, down))} <inactive>")
    if slow:
        problems.append(", ".join(f"link {lk.link} at {_fmt_speed(lk.speed_gbps) if lk.speed_gbps is not None else '?'} GB/s"
                                  for lk in slow) + f" below {_fmt_speed(ex.gbps)} GB/s")
    if len(up) < ex.links and not down and not unknown:
        problems.append(f"only {len(up)} of {ex.links} links reported")
    if problems:
        return Result.failed(want, obs, f"{name}: " + "; ".join(problems), **kw)
    if unknown:
        return Result.errored(f"{name}: link state unreadable for links {', '.join(map(str, unknown))}", want, obs, **kw)
    if len(up) < ex.links:
        return Result.failed(want, obs, f"{name}: only {len(up)} of {ex.links} links up", **kw)
    return Result.passed(want, obs, **kw)


_COUNTERS = (("replay", ("replay",), "max_replay_errors"), ("recovery", ("recovery",), "max_recovery_errors"),
             ("CRC", ("crc", "crc_flit", "crc_data"), "max_crc_errors"))


@check(id="NG-NVL-002", name="nvlink_errors", title="NVLink error counters below thresholds",
       scope="gpu", severity="major", evidence=("smi.nvlink_errors", "nvml.json", "smi.qx"),
       remediation="Drain the node; reset the GPU and watch the counters under load (dcgmi diag -r 2); errors "
                   "that return on the same link: reseat the GPU/NVSwitch tray, then RMA.",
       rule="Per link: replay errors <= nvlink.max_replay_errors, recovery errors <= nvlink.max_recovery_errors, "
            "CRC (flit + data) errors <= nvlink.max_crc_errors; defaults 0 (DCGM's health watch fails on any replay "
            "or recovery error and warns on any CRC error; Meta GCM's check-dcgmi nvlink tolerates 0). Counters "
            "from NVML (nvmlDeviceGetNvLinkErrorCounter) where the node has it, else nvidia-smi nvlink -e. Same "
            "SKIP/ERROR preconditions as NG-NVL-001; no counter reported -> ERROR.")
def nvlink_errors(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    ex = nvlink_expectation(spec, g)
    if ex.links == 0:
        return skip_by_spec("nvlink.links", 0, f"{name} has no NVLink ({ex.source})")
    block, key = links_for(facts, g, "nvlink_errors")
    pre = _preconditions(spec, g, name, block, key, "NVLink error counters")
    if pre is not None:
        return pre
    limits = {label: getattr(spec.nvlink, attr) for label, _, attr in _COUNTERS}
    want = "per link: " + ", ".join(f"{label} <= {n}" for label, n in limits.items())
    totals = {label: 0 for label, _, _ in _COUNTERS}
    bad, read = [], 0
    for lk in block.links:
        for label, names, _ in _COUNTERS:
            vals = [lk.errors.get(n) for n in names if isinstance(lk.errors.get(n), int)]
            if not vals:
                continue
            read += 1
            n = sum(vals)
            totals[label] += n
            if n > limits[label]:
                bad.append(f"link {lk.link} {label} {n}")
    obs = f"{len(block.links)} links: " + ", ".join(f"{label} {n}" for label, n in totals.items())
    ev = lines(*(f"Link {lk.link}: " + ", ".join(f"{k} {'N/A' if v is NA else v}" for k, v in lk.errors.items())
                 for lk in block.links if any(v not in (0, None) for v in lk.errors.values())))
    kw = dict(evidence=ev or f"all {len(block.links)} links: every counter 0", evidence_keys=(key,))
    if bad:
        return Result.failed(want, obs, f"{name}: NVLink errors above threshold: " + "; ".join(bad[:12])
                             + (f" (+{len(bad) - 12} more)" if len(bad) > 12 else ""), **kw)
    if not read:
        seen = sorted({k for lk in block.links for k in lk.errors})
        raise EvidenceError(key, f"{name}: no NVLink replay/recovery/CRC error counter reported"
                            + (f" (counters seen: {', '.join(seen[:8])})" if seen else ""))
    return Result.passed(want, obs, **kw)
