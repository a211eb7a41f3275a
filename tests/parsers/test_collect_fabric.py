"""NodeFacts' issue-19 properties (nodegate/collect_fabric.py): exit-code semantics per key."""

import pytest

from nodegate.errors import EvidenceError

from .test_collect import nf

MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 535.154\n"


def test_nvlink_items_name_nvidia_smis_own_error():
    with pytest.raises(EvidenceError, match=r"nvidia-smi failed \(driver_library_mismatch\)"):
        nf(smi__nvlink_status=(MISMATCH, 18)).nvlink_status
    with pytest.raises(EvidenceError, match="tool missing"):
        nf(smi__nvlink_errors=("", 127, "nvidia-smi: command not found\n")).nvlink_errors
    assert nf(smi__nvlink_status="").nvlink_status == []      # rc 0, nothing printed (a VM)


def test_ibstat_missing_is_none_but_failing_is_error():
    assert nf(ib__ibstat=("", 127, "ibstat: command not found\n")).ibstat_ports is None
    with pytest.raises(EvidenceError):
        nf(ib__ibstat=("", 1, "ibpanic: can't open UMAD port\n")).ibstat_ports
    with pytest.raises(EvidenceError, match="evidence not collected: ib.ibstat"):
        nf().ibstat_ports


def test_uptime_nvswitch_aer_ib_and_fm_log():
    f = nf(meta__uptime="3600.25 7000.00\n", pci__nvswitch="nvswitches: 0\n", pci__aer="gpus: 0\n",
           ib__ports="", fabricmanager__log="# fabric manager not installed\n")
    assert (f.uptime_s, f.nvswitches, f.pci_aer, f.ib_ports, f.fabricmanager_log) == (3600.25, [], [], [], [])
    with pytest.raises(EvidenceError, match="empty output"):
        nf(meta__uptime="").uptime_s
    with pytest.raises(EvidenceError, match="output unparsable"):
        nf(pci__nvswitch="== 0000:83:00.0 device 0x22a3 class 0x068000\nnvswitches: 4\n").nvswitches


def test_nvml_without_nvlink_section_or_unusable_is_no_source():
    assert nf().nvml_nvlinks is None
    assert nf(nvml__json='{"schema": "nodegate.nvml", "init_error": "PYNVML_MISSING"}').nvml_nvlinks is None
