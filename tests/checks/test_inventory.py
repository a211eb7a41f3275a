"""GPU count and model; gpu_slots (checks.md "Inventory").

A node's GPU lists must agree (issue 17): a fake node with N GPUs has their N PCI functions
(``pci_gpus``), as a real one does."""

from dataclasses import replace

import pytest

from nodegate.checks import GpuSlot, gpu_slots
from nodegate.facts import NA, KernelEvent, SmiError
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, missing, pci_gpus, run, spec

EIGHT = [gpu(i, f"0000:{b}:00.0") for i, b in enumerate(("19", "3b", "4c", "5d", "9b", "bb", "cb", "db"))]


@covers("NG-INV-001")
def test_gpu_count_as_specified_passes():
    r = run("NG-INV-001", healthy(gpus=EIGHT, driver_gpus=[], pci_links=pci_gpus(EIGHT)), spec(gpu={"count": 8}))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("8 GPU(s): 0000:19:00.0, 0000:3b:00.0")


@covers("NG-INV-001")
def test_missing_gpu_without_bus_ids_names_slot():
    r = run("NG-INV-001", healthy(gpus=EIGHT[:7], driver_gpus=[], pci_links=pci_gpus(EIGHT[:7])),
            spec(gpu={"count": 8}))
    assert r.outcome is Outcome.FAIL
    assert "1 GPU(s) missing (slots gpu7" in r.message


@covers("NG-INV-001")
def test_missing_gpu_named_by_spec_bus_ids():
    buses = [g.pci_bus_id for g in EIGHT]
    r = run("NG-INV-001", healthy(gpus=EIGHT[1:], driver_gpus=[], pci_links=pci_gpus(EIGHT[1:])),
            spec(gpu={"count": 8, "bus_ids": buses}))
    assert r.outcome is Outcome.FAIL
    assert "missing: 0000:19:00.0 expected (gpu.bus_ids) but not observed" in r.observed


@covers("NG-INV-001")
def test_gpu_fallen_off_bus_without_xid_is_missing_gpu():
    ev = KernelEvent("fallen_off_bus", "NVRM: GPU 0000:db:00.0: GPU has fallen off the bus.", bus_id="0000:db:00.0")
    r = run("NG-INV-001", healthy(gpus=EIGHT[:7], kernel_events=[ev], driver_gpus=[]), spec(gpu={"count": 8}))
    assert r.outcome is Outcome.FAIL
    assert "0000:db:00.0 fell off the bus (kernel log)" in r.observed


@covers("NG-INV-001")
def test_device_handle_error_names_bus_id():
    err = SmiError("device_handle", "Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error",
                   bus_id="0000:a1:00.0", reason="Unknown Error")
    r = run("NG-INV-001", healthy(smi_error=err, gpus=missing("gpus", "nvidia-smi failed"), driver_gpus=[],
                                  pci_links=pci_gpus([gpu(0, "0000:a1:00.0")])))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "0 GPU(s); missing: 0000:a1:00.0 nvidia-smi: device handle Unknown Error"


@covers("NG-INV-001")
def test_gpu_bound_by_module_but_not_listed_is_missing():
    r = run("NG-INV-001", healthy(driver_gpus=[{"Bus Location": "0000:00:06.0"}, {"Bus Location": "0000:00:07.0"}]))
    assert r.outcome is Outcome.FAIL
    assert "0000:00:07.0 bound by the nvidia module (/proc/driver/nvidia/gpus) but not reported" in r.observed


@covers("NG-INV-001")
def test_more_gpus_than_specified_fails():
    r = run("NG-INV-001", healthy(gpus=EIGHT, driver_gpus=[]), spec(gpu={"count": 4}))
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("8 GPUs observed, 4 specified")


@covers("NG-INV-001")
def test_no_devices_found_fails():
    err = SmiError("no_devices", "No devices were found")
    r = run("NG-INV-001", healthy(smi_error=err, gpus=missing("gpus", "nvidia-smi failed"), driver_gpus=[]))
    assert r.outcome is Outcome.FAIL
    # the board is still on PCI: named as the missing GPU
    assert r.observed == ("0 GPU(s); missing: 0000:00:06.0 an NVIDIA display-class PCI function (sysfs) that "
                          "nvidia-smi/NVML does not report")


@covers("NG-INV-002")
def test_model_substring_matches():
    r = run("NG-INV-002", healthy(), spec(gpu={"model": "H200"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "NVIDIA H200 (device id 2335, SKU profile H200)"


@covers("NG-INV-002")
def test_model_list_any_matches():
    assert run("NG-INV-002", healthy(), spec(gpu={"model": ["H100", "h200"]})).outcome is Outcome.PASS


@covers("NG-INV-002")
def test_wrong_model_fails_naming_gpu():
    r = run("NG-INV-002", healthy(), spec(gpu={"model": "H100"}))
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("GPU 0 (0000:00:06.0, serial 1650000000001): model 'NVIDIA H200' is not 'H100'")


@covers("NG-INV-002")
def test_missing_slot_fails_as_missing_gpu():
    sp = spec(gpu={"count": 2, "bus_ids": ["0000:00:06.0", "0000:00:07.0"]})
    slots = gpu_slots(healthy(), sp)
    assert slots == [GpuSlot(0, "0000:00:06.0"), GpuSlot(1, "0000:00:07.0", present=False)]
    r = run("NG-INV-002", healthy(), sp, gpu=slots[1])
    assert r.outcome is Outcome.FAIL
    assert r.observed == "absent"
    assert "GPU 0000:00:07.0 (gpu1, not listed by nvidia-smi) missing" in r.message


@covers("NG-INV-002")
def test_missing_gpu_without_bus_ids_is_named_by_the_driver_and_labelled_after_the_present_gpus():
    # nvidia-smi numbers the seven GPUs it lists 0..6 (the one at 0000:9b:00.0 is its GPU 3); the
    # driver bound the eighth, 0000:5d:00.0 (/proc/driver/nvidia/gpus, Device Minor 3): it is
    # named by that bus id, and its label gpu7 is no present GPU's index (checks.slots)
    present = [replace(g, index=i) for i, g in enumerate(EIGHT[:3] + EIGHT[4:])]
    f = healthy(gpus=present, driver_gpus=[{"Bus Location": "0000:5d:00.0", "Device Minor": "3"}],
                pci_links=pci_gpus(present))
    sp = spec(gpu={"count": 8})
    slots = gpu_slots(f, sp)
    assert slots[:7] == [GpuSlot(i, g.pci_bus_id) for i, g in enumerate(present)]
    assert slots[7] == GpuSlot(7, "0000:5d:00.0", present=False)
    r = run("NG-INV-002", f, sp, gpu=slots[7])
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("GPU 0000:5d:00.0 (gpu7, not listed by nvidia-smi) missing")
    r = run("NG-PCIE-001", f, sp, gpu=slots[7])
    assert r.outcome is Outcome.ERROR
    assert "GPU 0000:5d:00.0 (gpu7, not listed by nvidia-smi) not present on the node" in r.message


@covers("NG-PCIE-001")
def test_other_gpu_checks_on_missing_slot_are_error():
    sp = spec(gpu={"count": 2})
    r = run("NG-PCIE-001", healthy(), sp, gpu=gpu_slots(healthy(), sp)[1])
    assert r.outcome is Outcome.ERROR
    assert "GPU gpu1 (bus id unknown, not listed by nvidia-smi) not present" in r.message


def test_gpu_slots_unreadable_gpus_uses_spec_count():
    f = healthy(gpus=missing("gpus", "nvidia-smi failed"))
    assert gpu_slots(f, spec(gpu={"count": 3})) == [GpuSlot(0), GpuSlot(1), GpuSlot(2)]
    assert gpu_slots(f, spec()) == [GpuSlot(0)]


def test_gpu_slots_in_index_order():
    f = healthy(gpus=[gpu(1, "0000:3b:00.0"), gpu(0, "0000:19:00.0")])
    assert [s.index for s in gpu_slots(f, spec())] == [0, 1]


@covers("NG-DRV-001")
def test_checks_skip_by_id_or_name():
    sp = spec(checks={"skip": ["NG-DRV-001", "pcie_link_trained"]})
    r = run("NG-DRV-001", healthy(), sp)
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("checks.skip lists NG-DRV-001")
    assert run("NG-PCIE-002", healthy(), sp).outcome is Outcome.SKIP


@covers("NG-INV-001")
def test_count_unset_kernel_log_unreadable_is_error():
    f = healthy(kernel_events=missing("kernel_events", "Operation not permitted"))
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == ("gpu.count not set and a lost GPU cannot be ruled out: could not read kernel.log: "
                         "Operation not permitted")
    assert r.observed == "1 GPU(s): 0000:00:06.0; unread: kernel.log: Operation not permitted"


@covers("NG-INV-001")
def test_count_unset_driver_gpus_unreadable_is_error():
    r = run("NG-INV-001", healthy(driver_gpus=missing("driver_gpus", "No such file or directory")))
    assert r.outcome is Outcome.ERROR
    assert "could not read driver.gpus_information: No such file or directory" in r.message


@covers("NG-INV-001")
def test_count_set_kernel_log_unreadable_still_passes_on_count():
    f = healthy(kernel_events=missing("kernel_events", "Operation not permitted"))
    assert run("NG-INV-001", f, spec(gpu={"count": 1})).outcome is Outcome.PASS


# ---------------------------------------------------------------------------- lists that disagree (issue 17)
from nodegate.facts import SmiReport  # noqa: E402

TWO = [gpu(0, "0000:19:00.0"), gpu(1, "0000:3b:00.0")]


def _two(**changes):
    return healthy(**{"gpus": TWO, "driver_gpus": [], "pci_links": pci_gpus(TWO), **changes})


@covers("NG-INV-001")
@pytest.mark.parametrize("count", [None, 2], ids=["count_unset", "count_2"])
def test_attached_count_above_the_listed_gpus_fails(count):
    f = _two(smi_report=SmiReport(driver_version="580.159.04", attached_gpus=3, gpus=TWO))
    r = run("NG-INV-001", f, spec(gpu={"count": count}) if count else spec())
    assert r.outcome is Outcome.FAIL
    assert "nvidia-smi reports 3 attached GPU(s) but lists 2" in r.message
    assert "nvidia-smi reports 3 attached GPU(s) but lists 2" in r.observed


@covers("NG-INV-001")
def test_attached_count_equal_to_the_listed_gpus_passes():
    f = _two(smi_report=SmiReport(driver_version="580.159.04", attached_gpus=2, gpus=TWO))
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == "2 GPU(s): 0000:19:00.0, 0000:3b:00.0"


@covers("NG-INV-001")
@pytest.mark.parametrize("count", [None, 2], ids=["count_unset", "count_2"])
def test_pci_function_nvidia_smi_does_not_list_is_a_missing_gpu(count):
    f = _two(pci_links=pci_gpus(TWO + [gpu(2, "0000:4c:00.0")]))
    r = run("NG-INV-001", f, spec(gpu={"count": count}) if count else spec())
    assert r.outcome is Outcome.FAIL
    assert ("missing: 0000:4c:00.0 an NVIDIA display-class PCI function (sysfs) that nvidia-smi/NVML does not "
            "report") in r.observed


@covers("NG-INV-001")
def test_listed_gpu_without_its_pci_function_fails():
    r = run("NG-INV-001", _two(pci_links=pci_gpus(TWO[:1])))
    assert r.outcome is Outcome.FAIL
    assert r.message == ("2 GPU(s), but the node's GPU lists disagree: listed but without an NVIDIA PCI function "
                         "in sysfs: 0000:3b:00.0")


@covers("NG-INV-001")
def test_count_unset_pci_unreadable_is_error():
    r = run("NG-INV-001", _two(pci_links=missing("pci_links", "Permission denied")))
    assert r.outcome is Outcome.ERROR
    assert "could not read pci.sysfs: Permission denied" in r.message


# ---------------------------------------------------------------------------- GPUs that share an identity
@covers("NG-INV-001", "NG-INV-002", "NG-MEM-001")
@pytest.mark.parametrize("field,value,label", [
    ("pci_bus_id", "0000:19:00.0", "PCI bus id 0000:19:00.0"),
    ("serial", "1650000000001", "serial 1650000000001"),
    ("uuid", "GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a10", "UUID gpu-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a10"),
], ids=["bus_id", "serial", "uuid"])
def test_two_gpus_with_one_identity_error_on_both_and_fail_the_count(field, value, label):
    # GPU 1 is the bad one (17 uncorrectable errors) but reports GPU 0's identity: before, a check
    # matched by bus id judged GPU 0's facts for it and PASSed
    from nodegate.facts import EccCounters
    g0 = gpu(0, "0000:19:00.0")
    g1 = replace(gpu(1, "0000:3b:00.0", ecc_volatile=EccCounters(0, 17, {"dram_uncorrectable": 17})),
                 **{field: value if field != "uuid" else value})
    if field == "serial":
        # a serial is the board's (NVML nvmlDeviceGetSerial): shared by GPUs with their own UUIDs and bus ids it
        # is one multi-GPU board (test_one_board_serial_on_two_gpus_is_no_conflict); without a UUID to tell
        # them apart it is a conflict
        g1 = replace(g1, uuid=None)
    g2 = gpu(2, "0000:4c:00.0")
    gs = [g0, g1, g2]
    f = healthy(gpus=gs, driver_gpus=[], pci_links=pci_gpus(gs))
    sp = spec(gpu={"count": 3})
    r = run("NG-INV-001", f, sp)
    assert r.outcome is Outcome.FAIL
    assert f"GPU 0 shares {label} with GPU 1" in r.message and f"GPU 1 shares {label} with GPU 0" in r.message
    slots = gpu_slots(f, sp)
    assert [s.index for s in slots] == [0, 1, 2]
    for check_id in ("NG-INV-002", "NG-MEM-001"):
        outs = [run(check_id, f, sp, gpu=s) for s in slots]
        assert [o.outcome for o in outs] == [Outcome.ERROR, Outcome.ERROR, Outcome.PASS], check_id
        assert outs[1].message.startswith(f"GPU 1 shares {label} with GPU 0: this GPU's evidence cannot be told apart")


@covers("NG-INV-001", "NG-MEM-001")
def test_one_board_serial_on_two_gpus_is_no_conflict():
    # Tesla K80/M60/M10, GRID K520: nvidia-smi prints the board's serial for each GPU of the board (NVML
    # nvmlDeviceGetSerial: "the globally unique board serial number associated with this device's board");
    # each GPU has its own UUID and bus id (tests/checks/test_public_fixtures_more.py: microsoft/pai's 4x K80)
    gs = [gpu(0, "0000:19:00.0"), gpu(1, "0000:3b:00.0", serial="1650000000001", uuid="GPU-other")]
    f = healthy(gpus=gs, driver_gpus=[], pci_links=pci_gpus(gs))
    sp = spec(gpu={"count": 2})
    assert run("NG-INV-001", f, sp).outcome is Outcome.PASS
    assert [run("NG-MEM-001", f, sp, gpu=s).outcome for s in gpu_slots(f, sp)] == [Outcome.PASS, Outcome.PASS]


@covers("NG-INV-001")
@pytest.mark.parametrize("serial", [NA, None, "0000000000000", "N/A"], ids=["NA", "none", "zeros", "n_a_text"])
def test_serials_that_identify_nothing_are_no_conflict(serial):
    gs = [gpu(0, "0000:19:00.0", serial=serial), gpu(1, "0000:3b:00.0", serial=serial)]
    r = run("NG-INV-001", healthy(gpus=gs, driver_gpus=[], pci_links=pci_gpus(gs)), spec(gpu={"count": 2}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "2 GPU(s): 0000:19:00.0, 0000:3b:00.0"


@covers("NG-INV-001")
def test_two_gpus_with_one_index_error():
    gs = [gpu(0, "0000:19:00.0"), gpu(0, "0000:3b:00.0", serial="s2", uuid="GPU-2")]
    f = healthy(gpus=gs, driver_gpus=[], pci_links=pci_gpus(gs))
    r = run("NG-INV-001", f, spec(gpu={"count": 2}))
    assert r.outcome is Outcome.FAIL
    assert "GPU 0 shares index 0 with GPU 0" in r.message
    assert {run("NG-PCIE-001", f, spec(), gpu=s).outcome for s in gpu_slots(f, spec())} == {Outcome.ERROR}


@covers("NG-INV-001")
def test_without_sysfs_the_lspci_alternative_key_is_the_pci_list():
    # a converted nvidia-bug-report has lspci -vvv (pci.lspci_vvv) instead of the probe's pci.sysfs
    from nodegate.facts import LspciLink
    alt = [LspciLink("0000:19:00.0", display=True), LspciLink("0000:3b:00.0", display=True),
           LspciLink("0000:4c:00.0", display=True), LspciLink("0000:4c:00.1", description="Audio device")]
    f = _two(lspci_links=alt).without("pci_links")
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "missing: 0000:4c:00.0 an NVIDIA display-class PCI function (lspci -vvv) that nvidia-smi/NVML" in r.observed
    assert run("NG-INV-001", _two(lspci_links=alt[:2]).without("pci_links")).outcome is Outcome.PASS
