"""GSP firmware files and per-GPU firmware version (checks.md "GSP firmware")."""

from nodegate.facts import NA, DriverBanner, FirmwareFacts
from nodegate.outcomes import Outcome

from .fakes import VER, covers, gpu, healthy, missing, run, spec

PROP = DriverBanner("proprietary", VER, "x86_64", f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {VER}")


def fw(dirs, path=""):
    return FirmwareFacts(path, VER, dirs)


@covers("NG-GSP-001")
def test_gsp_file_present_passes():
    r = run("NG-GSP-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == f"/lib/firmware/nvidia/{VER}/gsp_ga10x.bin (75000000 bytes)"


@covers("NG-GSP-001")
def test_gsp_file_under_firmware_class_path_passes():
    # capture h200-vm: firmware_class.path=/usr/local/nvidia/firmware, /lib/firmware/nvidia absent
    f = healthy(firmware=fw({f"/usr/local/nvidia/firmware/nvidia/{VER}": {"gsp_ga10x.bin": 75000000,
                                                                           "gsp_tu10x.bin": 30000000},
                             f"/lib/firmware/nvidia/{VER}": None}, "/usr/local/nvidia/firmware"))
    r = run("NG-GSP-001", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == f"/usr/local/nvidia/firmware/nvidia/{VER}/gsp_ga10x.bin (75000000 bytes)"


@covers("NG-GSP-001")
def test_gsp_file_missing_fails():
    r = run("NG-GSP-001", healthy(firmware=fw({f"/lib/firmware/nvidia/{VER}": {"gsp_tu10x.bin": 30000000}})))
    assert r.outcome is Outcome.FAIL
    assert r.observed == f"gsp_ga10x.bin not found in /lib/firmware/nvidia/{VER}"


@covers("NG-GSP-001")
def test_gsp_empty_file_first_in_search_order_fails():
    f = healthy(firmware=fw({f"/lib/firmware/updates/nvidia/{VER}": {"gsp_ga10x.bin": 0},
                             f"/lib/firmware/nvidia/{VER}": {"gsp_ga10x.bin": 75000000}}))
    r = run("NG-GSP-001", f)
    assert r.outcome is Outcome.FAIL
    assert "is empty" in r.observed


@covers("NG-GSP-001")
def test_gsp_file_follows_architecture():
    f = healthy(gpus=[gpu(name="NVIDIA A100-SXM4-80GB", pci_device_id="20b2", architecture="Ampere")],
                firmware=fw({f"/lib/firmware/nvidia/{VER}": {"gsp_ga10x.bin": 75000000}}))
    r = run("NG-GSP-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == f"gsp_tu10x.bin not found in /lib/firmware/nvidia/{VER}"


@covers("NG-GSP-001")
def test_gsp_not_in_use_with_proprietary_auto_skips():
    f = healthy(driver_banner=PROP, gpus=[gpu(gsp_firmware_version=NA)])
    r = run("NG-GSP-001", f)
    assert r.outcome is Outcome.SKIP
    assert "gsp.required=auto" in r.message


@covers("NG-GSP-001")
def test_firmware_listing_for_other_version_is_error():
    r = run("NG-GSP-001", healthy(firmware=FirmwareFacts("", "570.124.06", {})))
    assert r.outcome is Outcome.ERROR


@covers("NG-GSP-002")
def test_gsp_version_equals_driver_passes():
    r = run("NG-GSP-002", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == VER


@covers("NG-GSP-002")
def test_gsp_version_differs_fails():
    r = run("NG-GSP-002", healthy(gpus=[gpu(gsp_firmware_version="570.124.06")]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "570.124.06"


@covers("NG-GSP-002")
def test_gsp_off_with_open_module_fails():
    r = run("NG-GSP-002", healthy(gpus=[gpu(gsp_firmware_version=NA)]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "N/A (GSP off)"


@covers("NG-GSP-002")
def test_gsp_off_with_proprietary_auto_skips():
    r = run("NG-GSP-002", healthy(driver_banner=PROP, gpus=[gpu(gsp_firmware_version=NA)]))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "gsp_firmware_version N/A"


@covers("NG-GSP-002")
def test_gsp_off_with_required_true_fails():
    r = run("NG-GSP-002", healthy(driver_banner=PROP, gpus=[gpu(gsp_firmware_version=NA)]), spec(gsp={"required": True}))
    assert r.outcome is Outcome.FAIL


@covers("NG-GSP-002")
def test_pre_turing_has_no_gsp_skips():
    g = gpu(name="Tesla V100-PCIE-32GB", pci_device_id="1db6", architecture="Volta", gsp_firmware_version=NA)
    r = run("NG-GSP-002", healthy(driver_banner=PROP, gpus=[g]))
    assert r.outcome is Outcome.SKIP
    assert "Volta has no GSP" in r.message


@covers("NG-GSP-001")
def test_gsp_file_without_size_and_no_gsp_running_is_error():
    from dataclasses import replace as _r
    h = healthy()
    fw = h.firmware
    dirs = {d: ({n: None for n in files} if files else files) for d, files in fw.dirs.items()}
    g = _r(h.gpus[0], gsp_firmware_version=NA)
    r = run("NG-GSP-001", healthy(firmware=_r(fw, dirs=dirs), gpus=[g]))
    assert r.outcome is Outcome.ERROR
    assert "size is not listed" in r.message


@covers("NG-GSP-001")
def test_gsp_auto_with_proprietary_module_and_unreadable_gpus_is_error_not_skip():
    f = healthy(driver_banner=DriverBanner(flavor="proprietary", version=VER),
                gpus=missing("gpus", "nvidia-smi failed (driver_library_mismatch): Failed to initialize NVML"))
    r = run("NG-GSP-001", f)
    assert r.outcome is Outcome.ERROR
    assert "driver_library_mismatch" in r.message


# --- fail-closed paths (unknown SKU, unreported GSP version, unreadable banner) ---

UNKNOWN = dict(name="NVIDIA Future GPU", pci_device_id="ffff", architecture=None)


@covers("NG-GSP-001")
def test_gsp_unknown_gpu_uses_modinfo_firmware_list_not_pre_turing_pass():
    # healthy modinfo lists gsp_ga10x.bin and gsp_tu10x.bin; both are present -> PASS on that evidence
    r = run("NG-GSP-001", healthy(gpus=[gpu(**UNKNOWN)]))
    assert r.outcome is Outcome.PASS
    assert r.observed == (f"/lib/firmware/nvidia/{VER}/gsp_ga10x.bin (75000000 bytes); "
                          f"/lib/firmware/nvidia/{VER}/gsp_tu10x.bin (30000000 bytes)")
    assert "modinfo -F firmware nvidia" in r.expected


@covers("NG-GSP-001")
def test_gsp_unknown_gpu_with_modinfo_file_missing_fails():
    r = run("NG-GSP-001", healthy(gpus=[gpu(**UNKNOWN)],
                                  firmware=fw({f"/lib/firmware/nvidia/{VER}": {"gsp_ga10x.bin": 75000000}})))
    assert r.outcome is Outcome.FAIL
    assert r.observed == (f"/lib/firmware/nvidia/{VER}/gsp_ga10x.bin (75000000 bytes); "
                          f"gsp_tu10x.bin not found in /lib/firmware/nvidia/{VER}")


@covers("NG-GSP-001")
def test_gsp_unknown_gpu_without_modinfo_list_is_error_asking_for_sku():
    r = run("NG-GSP-001", healthy(gpus=[gpu(**UNKNOWN)], modinfo_nvidia=missing("modinfo_nvidia")))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("cannot tell which GSP firmware is needed: no GSP profile for GPU 0 ")
    assert "set gpu.sku" in r.message
    assert r.observed != "no GPU needs GSP firmware (pre-Turing)"


@covers("NG-GSP-001")
def test_gsp_known_pre_turing_needs_no_file_passes():
    g = gpu(name="Tesla V100-PCIE-32GB", pci_device_id="1db6", architecture="Volta", gsp_firmware_version=NA)
    r = run("NG-GSP-001", healthy(gpus=[g], modinfo_nvidia=missing("modinfo_nvidia")), spec(gsp={"required": True}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "no GPU needs GSP firmware (pre-Turing)"


@covers("NG-GSP-001")
def test_gsp_auto_unreadable_banner_is_error_not_skip():
    r = run("NG-GSP-001", healthy(driver_banner=missing("driver_banner", "command timed out on the node "
                                                                          "(timeout exit 124)"),
                                  gpus=[gpu(gsp_firmware_version=NA)]))
    assert r.outcome is Outcome.ERROR
    assert r.message == "command timed out on the node (timeout exit 124) [driver.proc_version]"


@covers("NG-GSP-001")
def test_gsp_auto_proprietary_and_version_not_reported_is_error_not_skip():
    r = run("NG-GSP-001", healthy(driver_banner=PROP, gpus=[gpu(gsp_firmware_version=None)]))
    assert r.outcome is Outcome.ERROR
    assert r.message == ("gsp.required=auto: gsp_firmware_version not reported for GPU 0 (0000:00:06.0, serial "
                         "1650000000001), cannot tell whether GSP is in use [smi.qx]")


@covers("NG-GSP-002")
def test_gsp_version_not_reported_with_proprietary_auto_is_error_not_skip():
    r = run("NG-GSP-002", healthy(driver_banner=PROP, gpus=[gpu(gsp_firmware_version=None)]))
    assert r.outcome is Outcome.ERROR
    assert "gsp_firmware_version not reported for GPU 0" in r.message


@covers("NG-GSP-002")
def test_gsp_auto_unknown_flavor_and_na_is_error_not_skip():
    r = run("NG-GSP-002", healthy(driver_banner=DriverBanner(None, VER, "x86_64", "NVRM version: ?"),
                                  gpus=[gpu(gsp_firmware_version=NA)]))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("gsp.required=auto: kernel module flavor unknown")


@covers("NG-GSP-002")
def test_gsp_auto_unreadable_banner_per_gpu_is_error():
    r = run("NG-GSP-002", healthy(driver_banner=missing("driver_banner", "exit code 2"),
                                  gpus=[gpu(gsp_firmware_version=NA)]))
    assert r.outcome is Outcome.ERROR
    assert r.message == "exit code 2 [driver.proc_version]"


# ---------------------------------------------------------------- issue 21 item 6: driver branches and GSP
def _on_driver(ver, files):
    banner = DriverBanner("open", ver, "x86_64", f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {ver}")
    return healthy(nvidia_module_version=ver, driver_banner=banner, gpus=[gpu(gsp_firmware_version=ver)],
                   firmware=FirmwareFacts("", ver, {f"/lib/firmware/nvidia/{ver}": files}))


@covers("NG-GSP-001")
def test_driver_before_525_ships_one_gsp_bin():
    # 515.43.04 (the first open module): a single firmware/gsp.bin (Frogging-Family/nvidia-all#131)
    r = run("NG-GSP-001", _on_driver("515.65.01", {"gsp.bin": 25000000}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "/lib/firmware/nvidia/515.65.01/gsp.bin (25000000 bytes)"


@covers("NG-GSP-001")
def test_525_branch_names_the_ga10x_file_gsp_ad10x():
    r = run("NG-GSP-001", _on_driver("525.147.05", {"gsp_ad10x.bin": 30000000, "gsp_tu10x.bin": 20000000}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "/lib/firmware/nvidia/525.147.05/gsp_ad10x.bin (30000000 bytes)"
    r = run("NG-GSP-001", _on_driver("525.147.05", {"gsp_tu10x.bin": 20000000}))
    assert r.outcome is Outcome.FAIL
    assert "gsp_ad10x.bin not found" in r.message


def test_gsp_support_table():
    from nodegate.spec.skus import gsp_support
    s = gsp_support()
    assert (s.driver_predates_gsp("460.91.03"), s.driver_predates_gsp("465.31"), s.driver_predates_gsp(None)) == \
        (True, False, False)
    assert [s.architecture_can_run(a) for a in ("Pascal", "Turing", "Hopper", "Imaginary")] == [False, True, True, None]
    assert [s.file_for_driver("gsp_ga10x.bin", v) for v in ("520.56.06", "525.60.11", "530.30.02")] == \
        ["gsp.bin", "gsp_ad10x.bin", "gsp_ga10x.bin"]
