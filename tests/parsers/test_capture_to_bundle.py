"""tools/capture_to_bundle.py turns the H200 capture into a bundle NodeFacts reads correctly,
and the committed sample inventories/samples/h200-vm/ is that output."""

import importlib.util
from pathlib import Path

import pytest

from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.errors import EvidenceError

REPO = Path(__file__).resolve().parents[2]
CAP = REPO / "tests" / "captures" / "h200-vm-580.159.04"   # copy of ../shared/captures
SAMPLE = REPO / "inventories" / "samples" / "h200-vm"


def _tool():
    spec = importlib.util.spec_from_file_location("capture_to_bundle", REPO / "tools" / "capture_to_bundle.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def facts(tmp_path_factory) -> NodeFacts:
    out = tmp_path_factory.mktemp("bundles")
    d = _tool().build(CAP).write(out)
    return NodeFacts(Bundle.load(d))


def test_sample_bundle_equals_tool_output(facts):
    for f in sorted(facts.bundle.path.glob("*")):
        if f.name != "meta.json":
            assert (SAMPLE / f.name).read_bytes() == f.read_bytes(), f.name


def test_identity_and_driver_stack(facts):
    assert (facts.node, facts.kernel_release, facts.hostname) == ("h200-vm", "6.18.44-fc-v657-gpu", "vm")
    assert (facts.driver_banner.flavor, facts.driver_banner.version) == ("open", "580.159.04")
    assert facts.nvidia_module_version == "580.159.04"
    assert facts.libnvml.version == "580.159.04"
    assert (facts.smi_version.driver_version, facts.smi_version.nvml_version) == ("580.159.04", "580.159")
    assert facts.smi_error is None


def test_modules_builtin_ib_core_and_dash_columns(facts):
    m = facts.modules
    assert [(e.name, e.refcount, e.position) for e in m.loaded] == [("nvidia_uvm", None, 0), ("nvidia", None, 1)]
    assert m.builtin == {"ib_core", "mlx5_core", "mlx5_ib"}
    assert m.is_present("ib_core") and not m.is_present("nvidia_peermem")


@pytest.mark.parametrize("attr", ["modinfo_nvidia", "modinfo_peermem", "dkms", "persistenced_unit",
                                  "fabricmanager_version", "fabricmanager_unit", "boot_id"])
def test_missing_tools_are_evidence_errors(facts, attr):
    with pytest.raises(EvidenceError):
        getattr(facts, attr)


def test_gpu_facts(facts):
    (g,) = facts.gpus
    assert facts.gpu_source == "smi_xml"
    assert (g.index, g.pci_bus_id, g.pci_device_id, g.name) == (0, "0000:00:06.0", "2335", "NVIDIA H200")
    assert (g.link.current_gen, g.link.current_width, g.link.max_gen, g.link.max_width) == (5, 16, 5, 16)
    assert str(g.link.host_max_gen) == "N/A"
    assert (g.ecc_mode_current, g.ecc_volatile.uncorrectable_total, g.ecc_aggregate.correctable_total) == (True, 0, 0)
    assert (g.remapped_rows.pending, g.remapped_rows.failure, g.remapped_rows.histogram["max"]) == (False, False, 3072)
    assert (g.gsp_firmware_version, g.recovery_action, g.persistence_mode) == ("580.159.04", "None", True)


def test_persistence_legacy_and_no_daemon(facts):
    assert facts.persistenced.processes == [] and facts.persistenced_unit_files == []
    assert [e.kind for e in facts.kernel_events if e.kind != "other"] == ["loading_banner", "persistence_legacy"]
    assert facts.kernel_log_source == "dmesg"


def test_firmware_under_firmware_class_path(facts):
    fw = facts.firmware
    assert fw.search_path == "/usr/local/nvidia/firmware"
    assert fw.find("gsp_ga10x.bin") == ("/usr/local/nvidia/firmware/nvidia/580.159.04", None)
    assert fw.dirs["/lib/firmware/nvidia/580.159.04"] is None


def test_pcie_sysfs_and_ib(facts):
    assert [(l.bdf, l.role, l.current_gen, l.current_width) for l in facts.pci_links] == [("0000:00:06.0", "gpu", 5, 16)]
    assert facts.ib_devices == [] and facts.peermem_registered is False
    assert facts.clocks_samples[0][0].clocks_event_reasons_mask == 0x1
