"""Cross-check: nvml_dump.out and smi_qx.out were read from the same H200 at the same moment;
the NVML path and the nvidia-smi XML path must give identical facts for every field both carry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from nodegate.facts import NA
from nodegate.nvml import gpus_from_nvml_json, script_text
from nodegate.nvml.compare import FieldDiff, compare_gpu_facts, pair_by_bus_id
from nodegate.parsers.smi_xml import parse_smi_xml

from nvml_capture import capture_doc_text, capture_text

FAKE = Path(__file__).parent / "fake_pynvml"

# Fields both paths carry for the capture (the capture script did not read the histogram,
# SRAM status, repair flags, recovery action; NVML has no "Host Max" generation).
CAPTURE_COMPARED = {
    "index", "pci_bus_id", "name", "serial", "uuid", "vbios_version", "board_part_number",
    "pci_device_id", "architecture", "persistence_mode", "pstate",
    "link.current_gen", "link.max_gen", "link.device_max_gen", "link.current_width", "link.max_width",
    *(f"clocks_event_reasons.{n}" for n in (
        "gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
        "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clocks_setting")),
    "ecc_mode_current", "ecc_mode_pending",
    *(f"ecc_{s}.{f}" for s in ("volatile", "aggregate") for f in ("correctable_total", "uncorrectable_total")),
    *(f"ecc_{s}.by_location.{k}" for s in ("volatile", "aggregate")
      for k in ("dram_correctable", "dram_uncorrectable", "sram_correctable")),
    "remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending",
    "remapped_rows.failure", "retired_pages.sbe", "retired_pages.dbe", "retired_pages.pending",
    "gsp_firmware_version", "mig_mode_current", "temperature_c", "power_draw_w",
    # issue 19: configuration and PCIe replays, read by both paths
    "mig_mode_pending", "inforom_image", "compute_mode", "power_limit_w", "pcie_replay_counter",
}


def smi_gpu():
    rep = parse_smi_xml(capture_text("smi_qx.out"))
    assert len(rep.gpus) == 1
    return rep.gpus[0]


def test_capture_nvml_equals_smi_xml():
    nvml = gpus_from_nvml_json(capture_doc_text())[0]
    compared, diffs = compare_gpu_facts(nvml, smi_gpu())
    assert set(compared) == CAPTURE_COMPARED
    # The one difference is a definition, not a mapping error: nvmlDeviceGetPowerUsage is the
    # 1 s average on Ampere+ (NVML API reference), the XML's instant_power_draw is instant.
    # Instant power through NVML (field NVML_FI_DEV_POWER_INSTANT) is what the probe reads.
    assert diffs == [FieldDiff("power_draw_w", 76.621, 77.07, live=True)]


def test_fake_probe_run_equals_smi_xml_on_every_common_field():
    # probe_nvml.py end to end (fake pynvml with the capture's values, plus the calls the
    # capture script skipped, valued from smi_qx.out): identical on everything both carry
    env = dict(os.environ, PYTHONPATH=str(FAKE), FAKE_NVML_SCENARIO="h200")
    cp = subprocess.run([sys.executable, "-B", "-"], input=script_text().encode(),
                        capture_output=True, env=env, timeout=60, check=True)
    nvml = gpus_from_nvml_json(cp.stdout)[0]
    compared, diffs = compare_gpu_facts(nvml, smi_gpu())
    assert diffs == []
    extra = set(compared) - CAPTURE_COMPARED
    assert extra == {
        "remapped_rows.histogram.max", "remapped_rows.histogram.high", "remapped_rows.histogram.partial",
        "remapped_rows.histogram.low", "remapped_rows.histogram.none", "recovery_action",
        "sram_threshold_exceeded", "channel_repair_pending", "tpc_repair_pending", "unrepairable_memory",
        *(f"ecc_{s}.by_location.sram_uncorrectable_{p}" for s in ("volatile", "aggregate")
          for p in ("parity", "secded")),
        *(f"ecc_aggregate.by_location.aggregate_uncorrectable_sram_sources.{k}"
          for k in ("sram_l2", "sram_sm", "sram_microcontroller", "sram_pcie", "sram_other")),
        # issue 19: calls the capture script did not make (default power limit, fabric info; N/A in this VM)
        "power_limit_default_w", "fabric_state", "fabric_status",
    }


def test_compare_reports_a_real_difference_and_pairs_by_bus_id():
    nvml = gpus_from_nvml_json(capture_doc_text())[0]
    smi = smi_gpu()
    smi.link.max_gen = 4               # e.g. a mapping bug or a different GPU
    smi.ecc_mode_pending = NA
    _, diffs = compare_gpu_facts(nvml, smi, ignore=("source", "power_draw_w"))
    assert diffs == [FieldDiff("link.max_gen", 5, 4), FieldDiff("ecc_mode_pending", True, NA)]
    pairs = pair_by_bus_id([nvml], [smi])
    assert [(b, left is nvml, right is smi) for b, left, right in pairs] == [("0000:00:06.0", True, True)]


def test_capture_dump_is_the_capture_schema():
    # guard: the converter reads the capture script's own format, not ours
    raw = json.loads(capture_text("nvml_dump.out"))
    assert raw["devices"][0]["nvmlDeviceGetPowerUsage"] == {"ok": 76621}


def _bundle_dir(root: Path, node: str, items: dict[str, str]) -> Path:
    d = root / node
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"node": node, "status": "ok"}))
    for key, text in items.items():
        (d / f"{key}.out").write_text(text)
        (d / f"{key}.rc").write_text("0\n")
    return d


def test_device_compare_script_on_h200_bundles(tmp_path):
    # device/run.sh's comparison step, on bundles built from the capture (no GPU needed):
    # run 1 holds nvml.json (fake H200 through probe_nvml.py) and smi.qx; run 2 only smi.qx
    env = dict(os.environ, PYTHONPATH=str(FAKE), FAKE_NVML_SCENARIO="h200")
    nv = subprocess.run([sys.executable, "-B", "-"], input=script_text().encode(), capture_output=True,
                        env=env, timeout=60, check=True).stdout.decode()
    xml = capture_text("smi_qx.out")
    _bundle_dir(tmp_path / "nvml", "h200", {"nvml.json": nv, "smi.qx": xml})
    _bundle_dir(tmp_path / "smi", "h200", {"smi.qx": xml})
    root = Path(__file__).resolve().parents[2]
    cp = subprocess.run([sys.executable, str(root / "device" / "compare.py"), str(tmp_path / "nvml"),
                         str(tmp_path / "smi"), str(tmp_path / "compare")],
                        capture_output=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(root)))
    assert cp.returncode == 0, cp.stdout.decode() + cp.stderr.decode()
    res = json.loads((tmp_path / "compare.json").read_text())
    assert res["gpu_source"] == {"nvml_run": "nvml", "smi_run": "smi_xml"}
    assert res["static_mismatches_same_bundle"] == 0
    assert res["same_bundle"][0]["diffs"] == []
    assert res["driver_versions"] == {"nvml": "580.159.04", "smi_xml": "580.159.04"}
    assert (tmp_path / "compare.txt").read_text().splitlines()[-1] == (
        "RESULT: 0 static mismatch(es) between NVML and nvidia-smi on the same bundle")
