"""probe_nvml.py end to end without a GPU: the fake pynvml (tests/nvml/fake_pynvml) returns the
H200 capture's values; the script's JSON is then mapped. Also: local collection, no pynvml."""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from nodegate.errors import EvidenceError
from nodegate.facts import NA
from nodegate.nvml import (collect_local_nvml, gpus_from_nvml_json, local_nvml_item,
                           nvml_field_errors, nvml_status, script_text)

FAKE = Path(__file__).parent / "fake_pynvml"


def run_script(scenario: str = "h200", *, fake: Path = FAKE, extra_args=()) -> dict:
    env = dict(os.environ, PYTHONPATH=str(fake), FAKE_NVML_SCENARIO=scenario)
    cp = subprocess.run([sys.executable, "-B", *extra_args, "-"], input=script_text().encode(),
                        capture_output=True, env=env, timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert cp.stderr == b""
    assert cp.stdout.count(b"\n") == 1          # one JSON document, one line
    return json.loads(cp.stdout)


def test_h200_document_shape():
    d = run_script()
    assert (d["schema"], d["version"], d["device_count"]) == ("nodegate.nvml", 1, 1)
    assert d["system"] == {"driver_version": "580.159.04", "nvml_version": "13.580.159.04",
                           "cuda_driver_version": 13000}
    g = d["gpus"][0]
    assert g["pci"] == {"bus_id": "00000000:00:06.0", "device_id": 590680286, "subsystem_id": 415174878}
    assert g["pcie"] == {"current_gen": 5, "max_gen": 5, "gpu_max_gen": 5, "current_width": 16, "max_width": 16}
    assert g["clocks_event_reasons"] == {"current": 1, "supported": 511}
    assert g["ecc"]["volatile"] == {"correctable_total": 0, "uncorrectable_total": 0, "dram_correctable": 0,
                                    "dram_uncorrectable": 0, "sram_correctable": 0, "sram_uncorrectable": 0}
    assert g["retired_pages"] == {"multiple_single_bit": {"unsupported": True},
                                  "double_bit": {"unsupported": True}, "pending": {"unsupported": True}}
    assert g["row_remapper_histogram"] == {"max": 3072, "high": 0, "partial": 0, "low": 0, "none": 0}
    assert g["gsp_firmware"] == {"mode": {"enabled": 1, "default": 1}, "version": "580.159.04"}
    assert (g["board_part_number"], g["recovery_action"], g["power_instant_mw"]) == ("692-2G520-0282-000", 0, 77070)
    assert g["sram_ecc_status"]["threshold_exceeded"] == 0


def test_h200_mapped_facts():
    g = gpus_from_nvml_json(json.dumps(run_script()))[0]
    assert (g.pci_bus_id, g.pci_device_id, g.architecture, g.pstate) == ("0000:00:06.0", "2335", "Hopper", "P0")
    assert g.remapped_rows.histogram == {"max": 3072, "high": 0, "partial": 0, "low": 0, "none": 0}
    assert (g.recovery_action, g.sram_threshold_exceeded, g.power_draw_w) == ("None", False, 77.07)
    assert g.ecc_aggregate.by_location["sram_uncorrectable_parity"] == 0


def test_hw_slowdown_bits():
    g = gpus_from_nvml_json(json.dumps(run_script("hw_slowdown")))[0]
    assert g.clocks_event_reasons_mask == 0x88
    active = sorted(k for k, v in g.clocks_event_reasons.items() if v is True)
    assert active == ["hw_power_brake_slowdown", "hw_slowdown"]


def test_geforce_not_supported_values():
    d = run_script("geforce")
    assert d["gpus"][0]["ecc_mode"] == {"unsupported": True}
    g = gpus_from_nvml_json(json.dumps(d))[0]
    assert (g.ecc_mode_current, g.ecc_volatile.correctable_total, g.remapped_rows) == (NA, NA, NA)
    assert (g.serial, g.gsp_firmware_version, g.recovery_action, g.sram_threshold_exceeded) == (NA, NA, NA, NA)
    assert nvml_field_errors(json.dumps(d)) == {}


def test_old_pynvml_falls_back_to_throttle_names():
    d = run_script("old")
    g0 = d["gpus"][0]
    assert g0["clocks_event_reasons"] == {"current": 1, "supported": 511}
    assert g0["pcie"]["gpu_max_gen"] == {"error": "NVML_ERROR_FUNCTION_NOT_FOUND"}
    assert g0["sram_ecc_status"] == {"error": "PYNVML_FUNCTION_MISSING", "message": "c_nvmlEccSramErrorStatus_v1_t"}
    g = gpus_from_nvml_json(json.dumps(d))[0]
    assert (g.link.device_max_gen, g.sram_threshold_exceeded, g.recovery_action) == (None, None, None)
    assert nvml_field_errors(json.dumps(d))[0]["pcie.gpu_max_gen"] == "NVML_ERROR_FUNCTION_NOT_FOUND"


def test_gpu_lost_second_handle():
    d = run_script("gpu_lost")
    assert d["gpus"][1] == {"index": 1, "handle_error": "NVML_ERROR_GPU_IS_LOST"}
    assert [g.pci_bus_id for g in gpus_from_nvml_json(json.dumps(d))] == ["0000:00:06.0", None]


@pytest.mark.parametrize("scenario,error,kind", [
    ("driver_not_loaded", "NVML_ERROR_DRIVER_NOT_LOADED", "no_driver"),
    ("library_not_found", "NVML_ERROR_LIBRARY_NOT_FOUND", "library_not_found"),
    ("mismatch", "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "driver_library_mismatch"),
    ("no_permission", "NVML_ERROR_NO_PERMISSION", "no_permission"),
])
def test_init_errors_exit_zero_with_json(scenario, error, kind):
    d = run_script(scenario)
    assert (d["init_error"], "gpus" in d) == (error, False)
    st = nvml_status(json.dumps(d))
    assert (st.kind, st.error) == (kind, error)


def test_pynvml_missing():
    # -S: no site-packages, so neither the venv's nvidia-ml-py nor any other pynvml
    d = run_script(fake=Path("/nonexistent"), extra_args=("-S",))
    assert d["init_error"] == "PYNVML_MISSING"
    assert nvml_status(json.dumps(d)).kind == "pynvml_missing"


def test_no_bytecode_left_behind(tmp_path):
    fake = tmp_path / "site"
    shutil.copytree(FAKE, fake)
    run_script(fake=fake)
    assert sorted(p.name for p in fake.iterdir()) == ["pynvml.py"]


def test_script_is_python36_syntax():
    src = script_text()
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    fstrings = [t.string[:20] for t in toks if t.type == tokenize.STRING
                and "f" in t.string.split(t.string[-1])[0].lower()]
    assert fstrings == []
    assert not any(t.type == getattr(tokenize, "FSTRING_START", -1) for t in toks)
    tree = ast.parse(src)
    assert not any(isinstance(n, ast.NamedExpr) for n in ast.walk(tree))   # no walrus (3.8)
    imported = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            imported |= {a.name for a in n.names}
        elif isinstance(n, ast.ImportFrom):
            imported.add(n.module)
    # self-contained: stdlib of 3.6 plus pynvml (importlib.metadata is tried, 3.8+, guarded)
    assert imported == {"ctypes", "json", "os", "platform", "sys", "pynvml", "importlib.metadata"}


def test_collect_local_real_pynvml_without_driver():
    # this machine has nvidia-ml-py but no NVIDIA driver: libnvidia-ml.so.1 is missing
    st = nvml_status(collect_local_nvml(timeout_s=60))
    assert (st.kind, st.error) == ("library_not_found", "NVML_ERROR_LIBRARY_NOT_FOUND")


def test_collect_local_timeout_and_missing_interpreter(tmp_path):
    slow = tmp_path / "slowpy"
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(0o755)
    with pytest.raises(EvidenceError, match="timed out"):
        collect_local_nvml(timeout_s=0.5, python=str(slow))
    item = local_nvml_item(timeout_s=0.5, python=str(slow))
    assert (item.key, item.rc, item.status) == ("nvml.json", None, "timeout")
    item = local_nvml_item(python=str(tmp_path / "absent"))
    assert (item.rc, item.status) == (127, "ok")
    with pytest.raises(EvidenceError, match="could not start"):
        collect_local_nvml(python=str(tmp_path / "absent"))


OLD_PYTHONS = [Path(f"/root/.pyenv/versions/{v}/bin/python") for v in ("3.6.15", "3.7.16")]


@pytest.mark.parametrize("py", OLD_PYTHONS, ids=lambda p: p.parts[-3])
def test_script_runs_on_old_python(py):
    # nodes with an old system python3 (CentOS 7 era 3.6): same JSON as on 3.11
    if not os.access(py, os.X_OK):   # absent, or under a directory this user cannot enter
        pytest.skip(f"{py} not installed on this machine")
    env = dict(os.environ, PYTHONPATH=str(FAKE), FAKE_NVML_SCENARIO="h200")
    cp = subprocess.run([str(py), "-B", "-"], input=script_text().encode(), capture_output=True,
                        env=env, timeout=60, check=True)
    old = json.loads(cp.stdout)
    new = run_script()
    for d in (old, new):
        d.pop("python"), d.pop("pynvml_version")
    assert old == new
