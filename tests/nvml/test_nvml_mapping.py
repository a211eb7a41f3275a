"""nodegate.nvml.mapping: the H200 capture's NVML values, every error kind, malformed input."""

from __future__ import annotations

import copy
import json

import pytest

from nodegate.errors import ParseError
from nodegate.facts import NA, EccCounters, PcieLink, RemappedRows, RetiredPages
from nodegate.nvml import (NvmlStatus, NvmlUnavailable, gpus_from_nvml_json, nvml_field_errors,
                           nvml_init_error, nvml_status, nvml_system)
from nodegate.nvml.mapping import MAX_JSON_CHARS

from nvml_capture import capture_doc_text, dump_to_doc, capture_text


@pytest.fixture(scope="module")
def doc() -> dict:
    return dump_to_doc(json.loads(capture_text("nvml_dump.out")))


def _gpu(d: dict):
    gpus = gpus_from_nvml_json(json.dumps(d))
    assert len(gpus) == 1
    return gpus[0]


# ------------------------------------------------------------------ H200 capture values

def test_h200_identity(doc):
    g = _gpu(doc)
    assert (g.index, g.pci_bus_id, g.name, g.serial, g.uuid) == (
        0, "0000:00:06.0", "NVIDIA H200", "1650000000001", "GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a10")
    assert (g.vbios_version, g.board_part_number, g.pci_device_id, g.architecture) == (
        "96.00.A5.00.1A", "692-2G520-0282-000", "2335", "Hopper")
    assert g.source == "nvml"


def test_h200_state(doc):
    g = _gpu(doc)
    assert g.persistence_mode is True
    assert g.pstate == "P0"
    assert g.link == PcieLink(current_gen=5, max_gen=5, device_max_gen=5, host_max_gen=None,
                              current_width=16, max_width=16)
    assert g.mig_mode_current is False
    assert g.temperature_c == 35
    assert g.power_draw_w == 76.621          # nvmlDeviceGetPowerUsage 76621 mW
    assert g.gsp_firmware_version == "580.159.04"


def test_h200_clocks_event_reasons_only_gpu_idle(doc):
    g = _gpu(doc)
    assert g.clocks_event_reasons_mask == 0x1
    assert g.clocks_event_reasons == {
        "gpu_idle": True, "applications_clocks_setting": False, "sw_power_cap": False,
        "hw_slowdown": False, "sync_boost": False, "sw_thermal_slowdown": False,
        "hw_thermal_slowdown": False, "hw_power_brake_slowdown": False, "display_clocks_setting": False}


def test_h200_ecc_and_memory(doc):
    g = _gpu(doc)
    assert (g.ecc_mode_current, g.ecc_mode_pending) == (True, True)
    zero = {"sram_correctable": 0, "sram_uncorrectable": 0, "dram_correctable": 0, "dram_uncorrectable": 0}
    assert g.ecc_volatile == EccCounters(correctable_total=0, uncorrectable_total=0, by_location=zero)
    assert g.ecc_aggregate == EccCounters(correctable_total=0, uncorrectable_total=0, by_location=zero)
    assert g.remapped_rows == RemappedRows(correctable=0, uncorrectable=0, pending=False, failure=False)
    assert g.retired_pages == RetiredPages(sbe=NA, dbe=NA, pending=NA)
    # not read by the capture script -> not carried
    assert (g.sram_threshold_exceeded, g.recovery_action, g.unrepairable_memory) == (None, None, None)


def test_h200_system(doc):
    s = nvml_system(json.dumps(doc))
    assert (s.driver_version, s.nvml_version, s.cuda_driver_version) == ("580.159.04", "13.580.159.04", 13000)
    assert nvml_init_error(json.dumps(doc)) is None
    assert nvml_status(json.dumps(doc)) == NvmlStatus("ok")
    assert nvml_field_errors(json.dumps(doc)) == {}


# ------------------------------------------------------------------ value kinds

def test_not_supported_is_na_and_error_is_none(doc):
    d = copy.deepcopy(doc)
    g0 = d["gpus"][0]
    g0["ecc_mode"] = {"unsupported": True}
    g0["ecc"]["volatile"]["correctable_total"] = {"unsupported": True}
    g0["serial"] = {"unsupported": True}
    g0["remapped_rows"] = {"unsupported": True}
    g0["temperature_c"] = {"error": "NVML_ERROR_NO_PERMISSION"}
    g0["clocks_event_reasons"]["current"] = {"unsupported": True}
    g = _gpu(d)
    assert (g.ecc_mode_current, g.ecc_mode_pending) == (NA, NA)
    assert g.ecc_volatile.correctable_total is NA
    assert g.serial is NA
    assert g.remapped_rows is NA
    assert g.temperature_c is None
    assert g.clocks_event_reasons_mask is NA
    assert set(g.clocks_event_reasons.values()) == {NA}
    assert nvml_field_errors(json.dumps(d)) == {0: {"temperature_c": "NVML_ERROR_NO_PERMISSION"}}


def test_unsupported_reason_bit_is_na(doc):
    d = copy.deepcopy(doc)
    d["gpus"][0]["clocks_event_reasons"] = {"current": 0x88, "supported": 0x1FF & ~0x80}
    g = _gpu(d)
    assert g.clocks_event_reasons_mask == 0x88
    assert g.clocks_event_reasons["hw_slowdown"] is True
    assert g.clocks_event_reasons["hw_power_brake_slowdown"] is NA
    assert g.clocks_event_reasons["gpu_idle"] is False


def test_gsp_disabled_reads_na(doc):
    d = copy.deepcopy(doc)
    d["gpus"][0]["gsp_firmware"] = {"mode": {"enabled": 0, "default": 0}, "version": ""}
    assert _gpu(d).gsp_firmware_version is NA


def test_sram_status_histogram_recovery_and_instant_power(doc):
    d = copy.deepcopy(doc)
    g0 = d["gpus"][0]
    g0["sram_ecc_status"] = {"volatile_correctable": 0, "volatile_uncorrectable_parity": 1,
                             "volatile_uncorrectable_secded": 2, "aggregate_correctable": 0,
                             "aggregate_uncorrectable_parity": 3, "aggregate_uncorrectable_secded": 4,
                             "aggregate_uncorrectable_sources": {"sram_l2": 7, "sram_sm": 0},
                             "threshold_exceeded": 1}
    g0["row_remapper_histogram"] = {"max": 3070, "high": 1, "partial": 0, "low": 0, "none": 1}
    g0["recovery_action"] = 4
    g0["repair_status"] = {"channel_repair_pending": 1, "tpc_repair_pending": 0}
    g0["unrepairable_memory"] = 0
    g0["power_instant_mw"] = 77070
    g = _gpu(d)
    assert g.ecc_volatile.by_location["sram_uncorrectable_parity"] == 1
    assert g.ecc_volatile.by_location["sram_uncorrectable_secded"] == 2
    assert g.ecc_aggregate.by_location["sram_uncorrectable_secded"] == 4
    assert g.ecc_aggregate.by_location["aggregate_uncorrectable_sram_sources.sram_l2"] == 7
    assert g.sram_threshold_exceeded is True
    assert g.remapped_rows.histogram == {"max": 3070, "high": 1, "partial": 0, "low": 0, "none": 1}
    assert g.recovery_action == "Drain and Reset"
    assert (g.channel_repair_pending, g.tpc_repair_pending, g.unrepairable_memory) == (True, False, False)
    assert g.power_draw_w == 77.07


def test_handle_error_gpu_keeps_index_only(doc):
    d = copy.deepcopy(doc)
    d["gpus"].append({"index": 1, "handle_error": "NVML_ERROR_GPU_IS_LOST"})
    gpus = gpus_from_nvml_json(json.dumps(d))
    assert [g.index for g in gpus] == [0, 1]
    assert (gpus[1].pci_bus_id, gpus[1].name, gpus[1].source) == (None, None, "nvml")
    assert nvml_field_errors(json.dumps(d)) == {1: {"handle": "NVML_ERROR_GPU_IS_LOST"}}


def test_zero_gpus(doc):
    d = copy.deepcopy(doc)
    d["device_count"], d["gpus"] = 0, []
    assert gpus_from_nvml_json(json.dumps(d)) == []


# ------------------------------------------------------------------ init errors

INIT_CASES = [
    ("NVML_ERROR_DRIVER_NOT_LOADED", "no_driver", True),
    ("NVML_ERROR_LIBRARY_NOT_FOUND", "library_not_found", True),
    ("NVML_ERROR_LIB_RM_VERSION_MISMATCH", "driver_library_mismatch", True),
    ("NVML_ERROR_NO_PERMISSION", "no_permission", False),
    ("PYNVML_MISSING", "pynvml_missing", False),
    ("NVML_ERROR_UNKNOWN", "other", False),
]


@pytest.mark.parametrize("name,kind,fails", INIT_CASES)
def test_init_error_kinds(name, kind, fails):
    text = json.dumps({"schema": "nodegate.nvml", "version": 1, "init_error": name, "message": "m"})
    assert nvml_init_error(text) == name
    st = nvml_status(text)
    assert (st.kind, st.error, st.usable, st.fails_driver_stack) == (kind, name, False, fails)
    with pytest.raises(NvmlUnavailable) as ei:
        gpus_from_nvml_json(text)
    assert ei.value.status == st
    with pytest.raises(NvmlUnavailable):
        nvml_system(text)


def test_mismatch_message_names_both_versions():
    text = json.dumps({"schema": "nodegate.nvml", "version": 1,
                       "init_error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
                       "message": "NVMLError_LibRmVersionMismatch: RM has detected an NVML/RM version mismatch.",
                       "library_version": "535.154.05", "kernel_module_version": "550.78"})
    assert nvml_status(text).describe() == (
        "Driver/library version mismatch: userspace NVML and the loaded kernel module differ "
        "(reboot or reload the modules) [NVML_ERROR_LIB_RM_VERSION_MISMATCH] "
        "(NVML library 535.154.05, kernel module 550.78)")


def test_minimal_pynvml_missing_document():
    # a bare {"init_error": "PYNVML_MISSING"} (no schema/version) is accepted
    assert nvml_status('{"init_error": "PYNVML_MISSING"}').kind == "pynvml_missing"


# ------------------------------------------------------------------ malformed

@pytest.mark.parametrize("text", [
    "", "   \n", "not json", "[1, 2]", '"x"', "{\"schema\": \"other\", \"version\": 1, \"gpus\": []}",
    '{"schema": "nodegate.nvml", "version": 99, "gpus": []}',
    '{"schema": "nodegate.nvml", "version": 1}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": {}}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [1]}',
    '{"schema": "nodegate.nvml", "version": 1, "init_error": 5}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": "0"}]}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": 0, "temperature_c": "35"}]}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": 0, "persistence_mode": true}]}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": 0, "name": 7}]}',
    '{"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": 0, "pci": [1]}]}',
    '[' * 100000 + ']' * 100000,
])
def test_malformed_raises_parse_error(text):
    with pytest.raises(ParseError):
        gpus_from_nvml_json(text)


def test_size_cap():
    text = '{"schema": "nodegate.nvml", "version": 1, "gpus": [], "pad": "' + "x" * MAX_JSON_CHARS + '"}'
    with pytest.raises(ParseError, match="cap"):
        nvml_init_error(text)


def test_truncated_probe_output_is_parse_error():
    with pytest.raises(ParseError, match="not JSON"):
        gpus_from_nvml_json(capture_doc_text()[:500])
