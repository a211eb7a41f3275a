"""GPU count and model; gpu_slots (checks.md "Inventory").

A node's GPU lists must agree (issue 17): a fake node with N GPUs has their N PCI functions
(``pci_gpus``), as a real one does."""

from nodegate.checks import GpuSlot, gpu_slots
from nodegate.facts import KernelEvent, SmiError
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
    assert "GPU 1 (0000:00:07.0) missing" in r.message


@covers("NG-PCIE-001")
def test_other_gpu_checks_on_missing_slot_are_error():
    sp = spec(gpu={"count": 2})
    r = run("NG-PCIE-001", healthy(), sp, gpu=gpu_slots(healthy(), sp)[1])
    assert r.outcome is Outcome.ERROR
    assert "GPU slot 1 not present" in r.message


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
