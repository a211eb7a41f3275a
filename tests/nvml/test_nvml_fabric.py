"""probe_nvml.py's issue-19 sections end to end (fake pynvml) and their mapping: NVLink per GPU,
fabric state, power limits, InfoROM, compute mode, PCIe replays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodegate.errors import ParseError
from nodegate.facts import NA
from nodegate.nvml import gpus_from_nvml_json, script_text
from nodegate.nvml.mapping import nvlinks_from_nvml_json

FAKE = Path(__file__).parent / "fake_pynvml"


def _probe(scenario: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(FAKE), FAKE_NVML_SCENARIO=scenario)
    return subprocess.run([sys.executable, "-B", "-"], input=script_text().encode(), capture_output=True, env=env,
                          timeout=60, check=True).stdout.decode()


def test_hgx_gpu_nvlinks_and_fabric_through_nvml():
    doc = _probe("nvlink")
    (nv,) = nvlinks_from_nvml_json(doc)
    assert (nv.status, nv.source, nv.bus_id, len(nv.links)) == ("ok", "nvml", "0000:00:06.0", 18)
    assert {lk.speed_gbps for lk in nv.links} == {26.562} and all(lk.active is True for lk in nv.links)
    assert nv.links[3].errors == {"replay": 0, "recovery": 0, "crc_flit": 5, "crc_data": 0}
    (g,) = gpus_from_nvml_json(doc)
    assert (g.fabric_state, g.fabric_status) == ("Completed", "Success")


def test_vm_gpu_reports_no_nvlink_and_fabric_not_supported():
    doc = _probe("h200")
    (nv,) = nvlinks_from_nvml_json(doc)
    assert (nv.status, nv.links) == ("unsupported", [])
    assert nv.message == "NVML: nvmlDeviceGetNvLinkState(link 0) NotSupported"
    (g,) = gpus_from_nvml_json(doc)
    assert (g.fabric_state, g.fabric_status) == (NA, NA)
    assert (g.power_limit_w, g.power_limit_default_w, g.inforom_image, g.compute_mode, g.pcie_replay_counter) == (
        700.0, 700.0, "G520.0282.02.02", "Default", 1)


def test_older_document_without_nvlink_sections_is_no_source():
    doc = json.loads(_probe("h200"))
    for g in doc["gpus"]:
        g.pop("nvlink")
    assert nvlinks_from_nvml_json(json.dumps(doc)) is None


def test_malformed_nvlink_section_is_a_parse_error():
    doc = json.loads(_probe("nvlink"))
    doc["gpus"][0]["nvlink"]["links"] = "eighteen"
    with pytest.raises(ParseError):
        nvlinks_from_nvml_json(json.dumps(doc))


def test_compute_mode_and_fabric_state_codes():
    doc = json.loads(_probe("nvlink"))
    doc["gpus"][0]["compute_mode"] = 3
    doc["gpus"][0]["fabric"] = {"state": 2, "status": 0}
    (g,) = gpus_from_nvml_json(json.dumps(doc))
    assert (g.compute_mode, g.fabric_state) == ("Exclusive_Process", "In Progress")
