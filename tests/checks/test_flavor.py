"""Kernel module flavor (checks.md "Kernel module flavor")."""

import pytest

from nodegate.facts import DriverBanner, KernelEvent, ModinfoFacts
from nodegate.outcomes import Outcome

from .fakes import VER, covers, gpu, healthy, missing, run, spec

PROP = DriverBanner("proprietary", "535.183.06", "x86_64",
                    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.06  Wed Jun 26 06:46:07 UTC 2024")


@covers("NG-FLV-001")
def test_open_flavor_as_specified_passes():
    r = run("NG-FLV-001", healthy(), spec(driver={"flavor": "open"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == f"open {VER}"


@covers("NG-FLV-001")
def test_flavor_other_than_spec_fails():
    r = run("NG-FLV-001", healthy(driver_banner=PROP), spec(driver={"flavor": "open"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "proprietary 535.183.06"


@covers("NG-FLV-001")
def test_blackwell_requires_open():
    f = healthy(driver_banner=PROP, gpus=[gpu(name="NVIDIA B200", pci_device_id="2901", architecture="Blackwell")])
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "requires the open module" in r.message


@covers("NG-FLV-001")
def test_pre_turing_requires_proprietary():
    f = healthy(gpus=[gpu(name="Tesla V100-SXM2-32GB", pci_device_id="1db5", architecture="Volta")])
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "requires the proprietary module" in r.message


@covers("NG-FLV-001")
def test_unknown_blackwell_device_uses_architecture_fallback():
    f = healthy(driver_banner=PROP, gpus=[gpu(name="NVIDIA GeForce RTX 5070 Laptop GPU", pci_device_id="2d58",
                                             architecture="Blackwell")])
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "architecture Blackwell" in r.message


@covers("NG-FLV-001")
def test_requires_open_kernel_log_line_fails():
    ev = KernelEvent("requires_open", "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2d58) installed in this "
                     "system requires use of the NVIDIA open kernel modules.", bus_id="0000:01:00.0")
    r = run("NG-FLV-001", healthy(driver_banner=PROP, kernel_events=[ev], gpus=[]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "proprietary module refused a GPU"


@covers("NG-FLV-001")
def test_module_not_loaded_is_error():
    r = run("NG-FLV-001", healthy(driver_banner=None))
    assert r.outcome is Outcome.ERROR


@covers("NG-FLV-002")
def test_on_disk_equals_loaded_passes():
    r = run("NG-FLV-002", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == f"on-disk open {VER}, loaded open {VER}"


@covers("NG-FLV-002")
def test_upgrade_awaiting_reboot_fails_naming_both():
    mi = ModinfoFacts(filename="/lib/modules/x/nvidia.ko", license="NVIDIA", version="580.95.05")
    r = run("NG-FLV-002", healthy(modinfo_nvidia=mi))
    assert r.outcome is Outcome.FAIL
    assert r.observed == f"on-disk proprietary 580.95.05, loaded open {VER}"


@covers("NG-FLV-002")
def test_modinfo_missing_is_error():
    r = run("NG-FLV-002", healthy(modinfo_nvidia=missing("modinfo_nvidia")))
    assert r.outcome is Outcome.ERROR


@covers("NG-FLV-001")
def test_flavor_gpus_unreadable_is_error_not_pass():
    # a Blackwell GPU refused by the proprietary module would be unseen: no PASS without the GPUs
    f = healthy(driver_banner=PROP, gpus=missing("gpus", "nvidia-smi failed (timeout)"))
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "nvidia-smi failed (timeout) [smi.qx]"


@covers("NG-FLV-001")
def test_flavor_mismatch_still_fails_when_gpus_unreadable():
    f = healthy(driver_banner=PROP, gpus=missing("gpus", "nvidia-smi failed (timeout)"))
    r = run("NG-FLV-001", f, spec(driver={"flavor": "open"}))
    assert r.outcome is Outcome.FAIL
    assert r.message == "driver.flavor=open but proprietary is loaded"   # the remediation is its own field


@covers("NG-FLV-002")
def test_on_disk_version_not_reported_is_error_not_pass():
    f = healthy(modinfo_nvidia=ModinfoFacts(filename="/lib/modules/x/nvidia.ko", license="Dual MIT/GPL", version=None))
    r = run("NG-FLV-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "on-disk (modinfo -F version) module version not reported: cannot compare versions"


@covers("NG-FLV-002")
def test_loaded_version_not_reported_is_error_not_pass():
    b = DriverBanner("open", None, "x86_64", "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64")
    r = run("NG-FLV-002", healthy(driver_banner=b))
    assert r.outcome is Outcome.ERROR
    assert r.message == ("loaded (/proc/driver/nvidia/version) module version not reported: cannot compare "
                         "versions")


@pytest.mark.parametrize("name, dev, arch", [("NVIDIA B200", "2901", "Blackwell"), ("NVIDIA GH200 480GB", "2342", "Hopper"),
                                             ("NVIDIA GB200", "2941", "Blackwell")])
def test_blackwell_and_grace_under_the_proprietary_module_fail_whatever_driver_flavor_says(name, dev, arch):
    # issue 39.4: NVIDIA supports Blackwell and Grace Hopper/Blackwell only with the open modules
    from nodegate.facts import DriverBanner
    b = DriverBanner("proprietary", "570.86.15", "x86_64", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15")
    f = healthy(gpus=[gpu(name=name, pci_device_id=dev, architecture=arch)], driver_banner=b,
                nvidia_module_version="570.86.15")
    for want in ("proprietary", "any"):
        r = run("NG-FLV-001", f, spec(driver={"flavor": want}))
        assert r.outcome is Outcome.FAIL, (want, r)
        assert "requires the open module" in r.message and "supported only by the open GPU kernel modules" in r.message
