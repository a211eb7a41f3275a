"""NVML JSON (``nvml.json``, written by ``probe_nvml.py``) -> facts. Pure: no I/O.

Input schema: docs/nvml.md (``"schema": "nodegate.nvml"``, ``"version": 1``). Each leaf is the
value, ``{"unsupported": true}`` (NVML_ERROR_NOT_SUPPORTED) or ``{"error": "<NVML error
name>"}``. Mapping rules (one meaning everywhere, see nodegate/facts.py):

- value -> the fact in the unit its name says (mW -> W, pciDeviceId -> 4 hex digits, ...);
- unsupported -> ``NA``; error -> ``None`` and the error listed by ``nvml_field_errors``;
- a key the document does not carry -> ``None`` (an older probe or pynvml lacked the call).

A failed ``nvmlInit()`` is not GPU data: ``nvml_status()`` classifies it (``NvmlStatus.kind``),
and ``gpus_from_nvml_json`` raises ``NvmlUnavailable`` carrying that status.

Errors raised: ``ParseError`` for anything that is not this schema (not JSON, wrong types,
unknown schema/version, over ``MAX_JSON_CHARS``); ``NvmlUnavailable`` (a NodegateError, not a
ParseError) for a recorded init error.
"""


from __future__ import annotations

from ..facts import (CLOCKS_EVENT_BITS, NA, EccCounters, GpuFacts, PcieLink, RemappedRows,
                     RetiredPages, normalize_bus_id)
# the document's names are re-exported here, where callers have always found them
from .document import (ARCHITECTURES, DRIVER_STACK_FAIL_KINDS, INIT_ERROR_KINDS, MAX_JSON_CHARS,  # noqa: F401
                       RECOVERY_ACTIONS, SCHEMA, SUPPORTED_VERSIONS, NvmlStatus, NvmlSystem,
                       NvmlUnavailable, _PSTATE_UNKNOWN, _flag, _index, _ok_doc, _opt_str, _str_or_na,
                       _sub, _val, load_nvml_json, nvml_field_errors, nvml_init_error, nvml_status,
                       nvml_system)
from . import fabric
from .fabric import nvlinks_from_nvml_json  # noqa: F401


def gpus_from_nvml_json(text: str | bytes) -> list[GpuFacts]:
    """One GpuFacts (``source="nvml"``) per GPU, in NVML index order.

    A GPU whose handle could not be obtained (e.g. NVML_ERROR_GPU_IS_LOST) is a GpuFacts with
    only ``index`` set; ``nvml_field_errors`` names the error under ``"handle"``.
    Raises NvmlUnavailable (init failed), ParseError (malformed).
    """
    doc = _ok_doc(text)
    return [_gpu(g, pos) for pos, g in enumerate(doc["gpus"])]


def _gpu(g: dict, pos: int) -> GpuFacts:
    gf = GpuFacts(index=_index(g, pos), source="nvml")
    if "handle_error" in g:
        return gf
    pci = _sub(g, "pci")
    if isinstance(pci, dict):
        bus = _val(pci, "bus_id", str)
        gf.pci_bus_id = normalize_bus_id(bus) if isinstance(bus, str) and bus.strip() else None
        dev = _val(pci, "device_id", int)
        # nvmlPciInfo_t.pciDeviceId = (device id << 16) | vendor id, e.g. 0x233510DE -> "2335"
        gf.pci_device_id = f"{(dev >> 16) & 0xFFFF:04x}" if isinstance(dev, int) else None
    gf.name = _plain_str(_val(g, "name", str))
    gf.uuid = _plain_str(_val(g, "uuid", str))
    gf.serial = _str_or_na(_val(g, "serial", str))
    gf.vbios_version = _str_or_na(_val(g, "vbios_version", str))
    gf.board_part_number = _str_or_na(_val(g, "board_part_number", str))
    arch = _val(g, "architecture", int)
    gf.architecture = ARCHITECTURES.get(arch, "Unknown") if isinstance(arch, int) else None
    gf.persistence_mode = _flag(_val(g, "persistence_mode", int))
    ps = _val(g, "pstate", int)
    gf.pstate = (f"P{ps}" if 0 <= ps <= 15 else "Unknown") if isinstance(ps, int) else None
    gf.link = _link(g)
    _clocks(g, gf)
    ecc = _sub(g, "ecc_mode")
    gf.ecc_mode_current, gf.ecc_mode_pending = _pair(ecc, "current", "pending")
    _ecc(g, gf)
    _memory_health(g, gf)
    _gsp(g, gf)
    rec = _val(g, "recovery_action", int)
    gf.recovery_action = RECOVERY_ACTIONS.get(rec, f"Unknown ({rec})") if isinstance(rec, int) else rec
    gf.mig_mode_current, _ = _pair(_sub(g, "mig_mode"), "current", "pending")
    gf.temperature_c = _val(g, "temperature_c", int)
    gf.power_draw_w = _power(g)
    _, gf.mig_mode_pending = _pair(_sub(g, "mig_mode"), "current", "pending")
    fabric.config_fields(g, gf)
    return gf


def _plain_str(v):
    # name/uuid are ``str | None`` in GpuFacts: unsupported there carries no meaning
    return v.strip() or None if isinstance(v, str) else None


def _pair(d, a: str, b: str):
    if isinstance(d, dict):
        return _flag(_val(d, a, int)), _flag(_val(d, b, int))
    return d, d


def _link(g: dict) -> PcieLink:
    p = g.get("pcie")
    if not isinstance(p, dict):
        return PcieLink()
    # Max = nvmlDeviceGetMaxPcieLinkGeneration ("possible with this device and system");
    # Device Max = nvmlDeviceGetGpuMaxPcieLinkGeneration. NVML has no separate host maximum.
    return PcieLink(current_gen=_val(p, "current_gen", int), max_gen=_val(p, "max_gen", int),
                    device_max_gen=_val(p, "gpu_max_gen", int), host_max_gen=None,
                    current_width=_val(p, "current_width", int), max_width=_val(p, "max_width", int))


def _clocks(g: dict, gf: GpuFacts) -> None:
    """Bitmask (nvmlClocksEventReason* bits, facts.CLOCKS_EVENT_BITS) -> canonical names.
    A reason outside the supported mask is NA (the driver cannot report it)."""
    c = g.get("clocks_event_reasons")
    if not isinstance(c, dict):
        return
    cur = _val(c, "current", int)
    sup = _val(c, "supported", int)
    gf.clocks_event_reasons_mask = cur
    if cur is None:
        return
    for name, bit in CLOCKS_EVENT_BITS.items():
        if cur is NA or (isinstance(sup, int) and not sup & bit):
            gf.clocks_event_reasons[name] = NA
        else:
            gf.clocks_event_reasons[name] = bool(cur & bit)


def _ecc(g: dict, gf: GpuFacts) -> None:
    e = g.get("ecc")
    sram = _sub(g, "sram_ecc_status")
    for scope in ("volatile", "aggregate"):
        d = e.get(scope) if isinstance(e, dict) else None
        ec = EccCounters()
        if isinstance(d, dict):
            ec.correctable_total = _val(d, "correctable_total", int)
            ec.uncorrectable_total = _val(d, "uncorrectable_total", int)
            for key in ("sram_correctable", "sram_uncorrectable", "dram_correctable", "dram_uncorrectable"):
                if key in d:
                    ec.by_location[key] = _val(d, key, int)
        if isinstance(sram, dict):
            # nvmlEccSramErrorStatus_v1_t: the 570+ parity / SEC-DED split of SRAM uncorrectable
            for part in ("uncorrectable_parity", "uncorrectable_secded"):
                k = f"{scope}_{part}"
                if k in sram:
                    ec.by_location[f"sram_{part}"] = _val(sram, k, int)
        setattr(gf, f"ecc_{scope}", ec)
    if isinstance(sram, dict):
        gf.sram_threshold_exceeded = _flag(_val(sram, "threshold_exceeded", int))
        src = _sub(sram, "aggregate_uncorrectable_sources")
        if isinstance(src, dict):
            for k in src:
                gf.ecc_aggregate.by_location[f"aggregate_uncorrectable_sram_sources.{k}"] = _val(src, k, int)
    elif sram is NA:
        gf.sram_threshold_exceeded = NA


def _memory_health(g: dict, gf: GpuFacts) -> None:
    rep = _sub(g, "repair_status")
    gf.channel_repair_pending, gf.tpc_repair_pending = _pair(rep, "channel_repair_pending",
                                                             "tpc_repair_pending")
    gf.unrepairable_memory = _flag(_val(g, "unrepairable_memory", int))
    rr = _sub(g, "remapped_rows")
    if isinstance(rr, dict):
        r = RemappedRows(correctable=_val(rr, "correctable", int),
                         uncorrectable=_val(rr, "uncorrectable", int),
                         pending=_flag(_val(rr, "pending", int)),
                         failure=_flag(_val(rr, "failure", int)))
        hist = _sub(g, "row_remapper_histogram")
        if isinstance(hist, dict):
            r.histogram = {k: _val(hist, k, int) for k in ("max", "high", "partial", "low", "none")
                           if k in hist}
        elif hist is NA:
            r.histogram = {k: NA for k in ("max", "high", "partial", "low", "none")}
        gf.remapped_rows = r
    else:
        gf.remapped_rows = rr  # NA (pre-Ampere, MIG with instances) or None
    rp = g.get("retired_pages")
    if isinstance(rp, dict):
        gf.retired_pages = RetiredPages(sbe=_val(rp, "multiple_single_bit", int),
                                        dbe=_val(rp, "double_bit", int),
                                        pending=_flag(_val(rp, "pending", int)))


def _gsp(g: dict, gf: GpuFacts) -> None:
    gsp = g.get("gsp_firmware")
    if not isinstance(gsp, dict):
        return
    mode = _sub(gsp, "mode")
    ver = _str_or_na(_val(gsp, "version", str))
    # GSP off: nvidia-smi prints N/A for gsp_firmware_version; NVML returns an empty string
    if isinstance(mode, dict) and _val(mode, "enabled", int) == 0:
        ver = NA
    gf.gsp_firmware_version = ver


def _power(g: dict):
    """Watts. Instant power (NVML_FI_DEV_POWER_INSTANT, what nvidia-smi 570+ prints first),
    else nvmlDeviceGetPowerUsage (1 s average on Ampere+ except GA100)."""
    for key in ("power_instant_mw", "power_usage_mw"):
        v = _val(g, key, int)
        if isinstance(v, int):
            return v / 1000.0
        if v is NA and key == "power_usage_mw":
            return NA
    return None
