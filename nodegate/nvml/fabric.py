"""NVML JSON -> issue 19 facts: configuration fields of GpuFacts and NVLink per GPU. Pure.

Input: the ``power_limit_mw``, ``power_limit_default_mw``, ``inforom_image``, ``compute_mode``,
``pcie_replay_counter``, ``fabric`` and ``nvlink`` leaves probe_nvml.py writes per GPU
(docs/nvml.md). Leaves follow mapping.py's rules (value, NA for unsupported, None for error/absent).
"""

from __future__ import annotations

from ..errors import ParseError
from ..facts import NA, GpuFacts, GpuNvLinks, NvLink, normalize_bus_id
from .document import _flag, _index, _ok_doc, _sub, _val

#: nvmlComputeMode_t -> the word nvidia-smi prints (nvml.h NVML_COMPUTEMODE_*; 1 = the removed
#: EXCLUSIVE_THREAD mode).
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}

#: nvmlGpuFabricState_t -> nvidia-smi's words (nvml.h NVML_GPU_FABRIC_STATE_*; 0 = not supported).
FABRIC_STATES = {1: "Not Started", 2: "In Progress", 3: "Completed"}


def _watts(v):
    return v / 1000.0 if isinstance(v, int) else v


def config_fields(g: dict, gf: GpuFacts) -> None:
    """Power limits (mW -> W), InfoROM image, compute mode, PCIe replay counter, fabric state."""
    gf.power_limit_w = _watts(_val(g, "power_limit_mw", int))
    gf.power_limit_default_w = _watts(_val(g, "power_limit_default_mw", int))
    inf = _val(g, "inforom_image", str)
    gf.inforom_image = (inf.strip() or NA) if isinstance(inf, str) else inf
    cm = _val(g, "compute_mode", int)
    gf.compute_mode = COMPUTE_MODES.get(cm, f"Unknown ({cm})") if isinstance(cm, int) else cm
    gf.pcie_replay_counter = _val(g, "pcie_replay_counter", int)
    fab = _sub(g, "fabric")
    if isinstance(fab, dict):
        st, status = _val(fab, "state", int), _val(fab, "status", int)
        gf.fabric_state = (FABRIC_STATES.get(st, NA) if isinstance(st, int) else st)
        if gf.fabric_state is NA:
            gf.fabric_status = NA
        elif isinstance(status, int):
            # nvmlReturn_t: 0 = NVML_SUCCESS; other codes are kept as numbers (their names need pynvml)
            gf.fabric_status = "Success" if status == 0 else f"NVML error {status}"
        else:
            gf.fabric_status = status
    elif fab is NA:
        gf.fabric_state = gf.fabric_status = NA


def nvlinks_from_nvml_json(text) -> list[GpuNvLinks] | None:
    """Per GPU with an ``nvlink`` section: GpuNvLinks(source="nvml"); None when no GPU carries one
    (an older probe, or nvidia-ml-py without the NVLink calls). Raises NvmlUnavailable/ParseError."""
    doc = _ok_doc(text)
    out: list[GpuNvLinks] = []
    for pos, g in enumerate(doc["gpus"]):
        nv = g.get("nvlink")
        if not isinstance(nv, dict):
            continue
        pci = g.get("pci") if isinstance(g.get("pci"), dict) else {}
        bus = _val(pci, "bus_id", str)
        name, uuid = _val(g, "name", str), _val(g, "uuid", str)
        r = GpuNvLinks(index=_index(g, pos), name=name if isinstance(name, str) else None,
                       uuid=uuid if isinstance(uuid, str) else None,
                       bus_id=normalize_bus_id(bus) if isinstance(bus, str) and bus.strip() else None,
                       source="nvml")
        speed = _val(nv, "speed_mbps", int)
        links = nv.get("links")
        if not isinstance(links, list):
            raise ParseError("nvml.json: nvlink.links is not a list")
        for ln in links:
            if not isinstance(ln, dict) or not isinstance(ln.get("link"), int):
                raise ParseError("nvml.json: an nvlink link is not an object with an integer 'link'")
            state = _flag(_val(ln, "state", int))
            errs = ln.get("errors") if isinstance(ln.get("errors"), dict) else {}
            r.links.append(NvLink(link=ln["link"], active=state,
                                  speed_gbps=speed / 1000.0 if isinstance(speed, int) and state is True else None,
                                  errors={k: _val(errs, k, int) for k in errs}))
        if r.links:
            r.status = "ok"
        else:
            first = nv.get("first") if isinstance(nv.get("first"), dict) else {}
            r.status = "unsupported" if first.get("unsupported") else "none"
            r.message = "NVML: nvmlDeviceGetNvLinkState(link 0) " + (
                "NotSupported" if first.get("unsupported") else str(first.get("error") or "no link"))
        out.append(r)
    return out or None
