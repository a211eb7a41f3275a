"""NodeFacts: exit-code semantics per key, EvidenceError reasons, gpu source selection."""

import pytest

from nodegate.bundle import Bundle, Evidence
from nodegate.collect import NodeFacts
from nodegate.errors import EvidenceError
from nodegate.facts import SmiError

XML = ('<?xml version="1.0" ?>\n<nvidia_smi_log><driver_version>550.54.15</driver_version>'
       '<gpu id="00000000:19:00.0"><product_name>NVIDIA H100</product_name></gpu></nvidia_smi_log>\n')


def nf(**items) -> NodeFacts:
    ev = {}
    for key, spec in items.items():
        key = key.replace("__", ".")
        out, rc, err = (tuple(spec) + (0, "")[len(spec) - 1:])[:3] if isinstance(spec, tuple) else (spec, 0, "")
        ev[key] = Evidence(key, out.encode(), err.encode(), rc)
    return NodeFacts(Bundle(node="n1", items=ev, meta={"status": "ok"}))


def test_tool_missing_is_evidence_error_naming_tool():
    with pytest.raises(EvidenceError, match="tool missing .dkms: command not found"):
        nf(dkms__status=("", 127, "dkms: command not found\n")).dkms


def test_timeout_is_evidence_error():
    with pytest.raises(EvidenceError, match="timed out"):
        nf(dkms__status=("", 124)).dkms


def test_not_collected_is_evidence_error():
    with pytest.raises(EvidenceError, match="evidence not collected: kernel.log"):
        nf().kernel_events


def test_unparsable_is_evidence_error():
    with pytest.raises(EvidenceError, match="output unparsable"):
        nf(dkms__status="garbage\n").dkms


def test_dkms_error_on_stderr_kept_as_errors():
    d = nf(dkms__status=("", 1, "Error! Could not locate dkms.conf file.\nFile: /var/lib/dkms/x does not exist.\n")).dkms
    assert d.entries == [] and d.errors[0].startswith("Error! Could not locate dkms.conf file.")


@pytest.mark.parametrize("key,rc,attr,expected", [
    ("modules.nvidia_version", 1, "nvidia_module_version", None),
    ("driver.proc_version", 1, "driver_banner", None),
    ("modules.load_d", 1, "modules_load_d", {}),
    ("persistenced.unit_files", 1, "persistenced_unit_files", []),
    ("persistenced.passwd", 2, "persistenced_user", None),
    ("driver.gpus_information", 1, "driver_gpus", []),
], ids=["module_not_loaded", "no_proc_version", "no_modules_load_d", "no_unit_files", "user_unknown", "no_bound_gpus"])
def test_no_data_exit_codes(key, rc, attr, expected):
    assert getattr(nf(**{key.replace(".", "__"): ("", rc, "cat: x: No such file or directory")}), attr) == expected


def test_modinfo_module_not_on_disk_is_none():
    assert nf(modinfo__nvidia_peermem=("", 1, "modinfo: ERROR: Module nvidia_peermem not found.\n")).modinfo_peermem is None


def test_kernels_installed_without_lib_modules_is_empty():
    assert nf(kernels__installed=("", 2, "/lib/modules: No such file or directory\n")).installed_kernels == {}


def test_kernel_log_permission_denied_is_error():
    with pytest.raises(EvidenceError, match="Operation not permitted"):
        nf(kernel__log=("", 1, "dmesg: read kernel buffer failed: Operation not permitted\n")).kernel_events


def test_smi_mismatch_exposed_and_gpus_raise_naming_it():
    n = nf(smi__qx=("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.154\n", 18))
    assert n.smi_error == SmiError("driver_library_mismatch", "Failed to initialize NVML: Driver/library version mismatch",
                                   nvml_library_version="535.154")
    with pytest.raises(EvidenceError, match=r"nvidia-smi failed \(driver_library_mismatch\)"):
        n.gpus


def test_smi_unknown_failure_is_other_error():
    n = nf(smi__qx=("", 3, "something odd\n"))
    assert (n.smi_error.kind, n.smi_error.message) == ("other", "something odd")


def test_smi_missing_tool_is_evidence_error_not_smi_error():
    with pytest.raises(EvidenceError, match="tool missing"):
        nf(smi__qx=("", 127, "nvidia-smi: command not found")).smi_error


def test_gpus_from_smi_xml_when_no_nvml():
    n = nf(smi__qx=XML)
    assert (n.gpu_source, [g.pci_bus_id for g in n.gpus], n.smi_driver_version) == ("smi_xml", ["0000:19:00.0"], "550.54.15")


def test_gpus_fall_back_to_smi_when_nvml_json_unusable():
    n = nf(smi__qx=XML, nvml__json="{not json")
    assert n.gpu_source == "smi_xml"


def test_systemctl_show_missing_unit_is_a_fact():
    assert nf(systemd__persistenced_show="LoadState=not-found\nActiveState=inactive\n").persistenced_unit.load_state == "not-found"


def test_peermem_registered_from_nv_mem_version():
    assert nf(peermem__registration="/sys/kernel/mm/memory_peers/nv_mem/version: 1.0\n").peermem_registered is True
    assert nf(peermem__registration="").peermem_registered is False


def test_clocks_samples_indexed_by_gpu():
    s = nf(smi__clocks_samples="0, 00000000:19:00.0, P0, 0x0000000000000088\n# sample 2\n"
                                "0, 00000000:19:00.0, P0, 0x0000000000000001\n").clocks_samples
    assert [x[0].clocks_event_reasons_mask for x in s] == [0x88, 0x1]
