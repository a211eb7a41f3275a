"""Real H200 (driver 580.159.04) read by nodegate's own probe on the lent GPU machine, 2026-11-29
(device/run.sh; docs/nvml.md "Results on a real H200"). nvml.json and smi.qx come from the same
probe exec, 0.1 s apart; serial and UUID replaced. Both paths must give the same GpuFacts for every
static field both carry; only live readings (power, temperature, clocks) may differ."""

from pathlib import Path

from nodegate.nvml import gpus_from_nvml_json
from nodegate.nvml.compare import compare_gpu_facts
from nodegate.parsers.smi_xml import parse_smi_xml

HERE = Path(__file__).parent / "device_h200"


def test_real_h200_nvml_and_smi_xml_agree_on_every_static_field():
    nv = gpus_from_nvml_json((HERE / "nvml.json.out").read_text())
    xml = parse_smi_xml((HERE / "smi.qx.out").read_text()).gpus
    assert [g.pci_bus_id for g in nv] == [g.pci_bus_id for g in xml] == ["0000:00:06.0"]
    compared, diffs = compare_gpu_facts(nv[0], xml[0])
    static = [d for d in diffs if not d.live]
    assert len(compared) >= 60
    assert static == []


def test_real_h200_facts_are_what_the_node_showed():
    g = gpus_from_nvml_json((HERE / "nvml.json.out").read_text())[0]
    assert (g.name, g.serial, g.pci_device_id, g.gsp_firmware_version) == (
        "NVIDIA H200", "1650000000002", "2335", "580.159.04")
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (5, 5, 16, 16)
    assert g.ecc_mode_current is True and g.ecc_volatile.uncorrectable_total == 0
    assert g.remapped_rows.pending is False and g.remapped_rows.failure is False
    assert g.clocks_event_reasons_mask == 0x1  # GpuIdle only
