"""Driver stack consistency and fabric manager (checks.md "Driver stack consistency")."""

from nodegate.facts import KernelEvent, LibNvml, SmiError, SmiVersion, SystemdUnit
from nodegate.outcomes import Outcome

from .fakes import covers, healthy, missing, run, spec


@covers("NG-DRV-001")
def test_driver_stack_consistent_passes():
    r = run("NG-DRV-001", healthy(), spec(driver={"version": "580.159.04"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "kernel module 580.159.04, NVML 580.159.04"


@covers("NG-DRV-001")
def test_driver_branch_spec_matches_full_version():
    r = run("NG-DRV-001", healthy(), spec(driver={"version": "580"}))
    assert r.outcome is Outcome.PASS


@covers("NG-DRV-001")
def test_driver_version_other_than_spec_fails():
    r = run("NG-DRV-001", healthy(), spec(driver={"version": "570.124.06"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "kernel module 580.159.04, NVML 580.159.04"
    assert "not the specified 570.124.06" in r.message


@covers("NG-DRV-001")
def test_userspace_nvml_differs_from_module_fails():
    f = healthy(libnvml=LibNvml("/lib/libnvidia-ml.so.1", "/lib/libnvidia-ml.so.570.124.06", "570.124.06"))
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "kernel module 580.159.04, NVML 570.124.06"


@covers("NG-DRV-001")
def test_nvml_falls_back_to_smi_version_label():
    f = healthy(libnvml=LibNvml(), smi_version=SmiVersion("580.159.04", "580.159", "580.159.04", "13.0"))
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.PASS
    assert "nvidia-smi --version" in r.evidence


@covers("NG-DRV-001")
def test_fabric_manager_version_mismatch_fails():
    r = run("NG-DRV-001", healthy(fabricmanager_version="570.124.06"))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "kernel module 580.159.04, NVML 580.159.04, fabric manager 570.124.06"


@covers("NG-DRV-001")
def test_driver_library_mismatch_fails_with_both_versions():
    err = SmiError("driver_library_mismatch", "Failed to initialize NVML: Driver/library version mismatch\n"
                   "NVML library version: 535.154", nvml_library_version="535.154")
    f = healthy(smi_error=err, nvidia_module_version="550.78", gpus=missing("gpus", "nvidia-smi failed"))
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "kernel module 550.78, NVML library 535.154"


@covers("NG-DRV-001", "NG-PCIE-001")
def test_driver_library_mismatch_makes_gpu_checks_error_naming_it():
    err = SmiError("driver_library_mismatch", "Failed to initialize NVML: Driver/library version mismatch")
    f = healthy(smi_error=err, gpus=missing("gpus", "nvidia-smi failed (driver_library_mismatch): Failed to "
                                                    "initialize NVML: Driver/library version mismatch"))
    r = run("NG-PCIE-001", f)
    assert r.outcome is Outcome.ERROR
    assert "Driver/library version mismatch" in r.message


@covers("NG-DRV-001")
def test_no_driver_communication_fails():
    err = SmiError("no_driver", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    r = run("NG-DRV-001", healthy(smi_error=err, nvidia_module_version=None, driver_banner=None))
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("nvidia-smi: NVIDIA-SMI has failed")


@covers("NG-DRV-001")
def test_nvrm_api_mismatch_in_kernel_log_fails():
    ev = KernelEvent("api_mismatch", "NVRM: API mismatch: the client has the version 535.154.05, but this kernel "
                     "module has the version 550.78.", details={"client_version": "535.154.05",
                                                                  "kernel_version": "550.78"})
    r = run("NG-DRV-001", healthy(kernel_events=[ev]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "NVRM API mismatch: client 535.154.05 vs kernel module 550.78"


@covers("NG-DRV-001")
def test_module_version_unreadable_is_error():
    f = healthy(nvidia_module_version=missing("nvidia_module_version", "command timed out"), driver_banner=None)
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.ERROR
    assert "command timed out" in r.message


@covers("NG-DRV-002")
def test_fabricmanager_auto_not_installed_skips():
    r = run("NG-DRV-002", healthy())
    assert r.outcome is Outcome.SKIP
    assert r.observed == "not installed"
    assert "fabricmanager.required=auto" in r.message


@covers("NG-DRV-002")
def test_fabricmanager_required_not_installed_fails():
    r = run("NG-DRV-002", healthy(), spec(fabricmanager={"required": True}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nv-fabricmanager not installed"


@covers("NG-DRV-002")
def test_fabricmanager_installed_but_inactive_fails():
    unit = SystemdUnit(load_state="loaded", active_state="failed", sub_state="failed", unit_file_state="enabled")
    r = run("NG-DRV-002", healthy(fabricmanager_version="580.159.04", fabricmanager_unit=unit))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "version 580.159.04, unit failed/failed, enabled"


@covers("NG-DRV-002")
def test_fabricmanager_active_passes():
    unit = SystemdUnit(load_state="loaded", active_state="active", sub_state="running", unit_file_state="enabled")
    r = run("NG-DRV-002", healthy(fabricmanager_version="580.159.04", fabricmanager_unit=unit))
    assert r.outcome is Outcome.PASS
    assert r.observed == "version 580.159.04, unit active/running, enabled"


@covers("NG-DRV-002")
def test_fabricmanager_not_required_skips_naming_key():
    r = run("NG-DRV-002", healthy(), spec(fabricmanager={"required": False}))
    assert r.outcome is Outcome.SKIP
    assert "fabricmanager.required=false" in r.message


@covers("NG-DRV-002")
def test_fabricmanager_auto_timeout_is_error_not_skip():
    f = healthy(fabricmanager_version=missing("fabricmanager_version", "command timed out on the node "
                                                                       "(timeout exit 124)"))
    r = run("NG-DRV-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "command timed out on the node (timeout exit 124) [fabricmanager.version]"


@covers("NG-DRV-002")
def test_fabricmanager_auto_unparsable_is_error_not_skip():
    f = healthy(fabricmanager_version=missing("fabricmanager_version", "nv-fabricmanager --version: no version in 'x'"))
    r = run("NG-DRV-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "nv-fabricmanager --version: no version in 'x' [fabricmanager.version]"


@covers("NG-DRV-002")
def test_fabricmanager_auto_empty_output_is_error():
    r = run("NG-DRV-002", healthy(fabricmanager_version=None))
    assert r.outcome is Outcome.ERROR
    assert r.message == "nv-fabricmanager --version printed no version [fabricmanager.version]"


@covers("NG-DRV-002")
def test_fabricmanager_auto_tool_missing_skip_names_key():
    r = run("NG-DRV-002", healthy())
    assert r.outcome is Outcome.SKIP
    assert r.message == ("fabricmanager.required=auto and fabric manager not installed "
                         "(tool missing (sh: 1: x: not found))")


@covers("NG-DRV-001")
def test_driver_stack_fabricmanager_error_is_not_swallowed():
    f = healthy(fabricmanager_version=missing("fabricmanager_version", "exit code 1: failed to connect"))
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "exit code 1: failed to connect [fabricmanager.version]"
