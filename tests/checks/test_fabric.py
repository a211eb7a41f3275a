"""NG-FAB-001 (fabric state), NG-NVSW-001 (NVSwitch count), SXid lines (NG-LOG-001) and the fabric
manager log in NG-DRV-002: one test per rule and per trap."""

from nodegate.facts import NA, FmLogEvent, KernelEvent, PciFunction, SysfsLink, SystemdUnit
from nodegate.outcomes import Outcome
from nodegate.parsers import parse

from .fakes import covers, gpu, healthy, missing, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR


def hgx(n=8, state="Completed", status="Success", switches=4, model=("2330", "NVIDIA H100 80GB HBM3", "Hopper"),
        **kw):
    dev, name, arch = model
    gs = [gpu(i, bus=f"0000:{0x19 + i:02x}:00.0", name=name, pci_device_id=dev, architecture=arch,
              fabric_state=state, fabric_status=status) for i in range(n)]
    sw = [PciFunction(f"0000:{0x83 + k:02x}:00.0", "0x22a3", "0x068000") for k in range(switches)]
    kw.setdefault("gpus", gs)
    return healthy(driver_gpus=[], nvswitches=sw, **kw)


@covers("NG-FAB-001")
def test_completed_success_passes_on_every_gpu():
    f = hgx()
    assert [run("NG-FAB-001", f, gpu=i).outcome for i in range(8)] == [P] * 8
    assert run("NG-FAB-001", f).observed == "state Completed, status Success"


@covers("NG-FAB-001")
def test_in_progress_and_not_started_fail():
    for state in ("In Progress", "Not Started"):
        r = run("NG-FAB-001", hgx(state=state, status=NA))
        assert r.outcome is F
        assert f"fabric state {state}" in r.message and "802" in r.message


@covers("NG-FAB-001")
def test_completed_with_an_error_status_or_unhealthy_fails():
    assert run("NG-FAB-001", hgx(status="NVML error 999")).outcome is F
    f = hgx()
    for g in f.gpus:
        g.fabric_health = "Unhealthy"
    r = run("NG-FAB-001", f)
    assert r.outcome is F and "fabric health Unhealthy" in r.message


@covers("NG-FAB-001")
def test_not_reported_behind_nvswitch_is_error():
    assert run("NG-FAB-001", hgx(state=None, status=None)).outcome is E
    assert run("NG-FAB-001", hgx(state=NA, status=NA)).outcome is E


@covers("NG-FAB-001")
def test_pre_hopper_and_no_nvswitch_skip_by_auto_and_required_true_forces_it():
    a100 = hgx(state=NA, status=NA, switches=6, model=("20b2", "NVIDIA A100-SXM4-80GB", "Ampere"))
    r = run("NG-FAB-001", a100)
    assert r.outcome is S and "Hopper and later" in r.message
    vm = healthy()  # one H200, no NVSwitch: the SKU expects none for one GPU
    r = run("NG-FAB-001", vm)
    assert r.outcome is S and r.message.startswith("fabric.required=auto: no NVSwitch on this node")
    assert run("NG-FAB-001", vm, spec(fabric={"required": True})).outcome is E
    assert run("NG-FAB-001", hgx(state="In Progress"), spec(fabric={"required": False})).outcome is S


@covers("NG-FAB-001")
def test_missing_nvswitches_still_require_the_fabric_on_an_hgx_board():
    # all NVSwitches gone: the SKU still expects four for eight GPUs, so the fabric state is judged
    r = run("NG-FAB-001", hgx(state="Not Started", status=NA, switches=0))
    assert r.outcome is F


@covers("NG-FAB-001", "NG-DRV-002")
def test_stale_completed_with_failed_fabric_manager_is_the_fabric_manager_check_fail():
    failed = SystemdUnit(load_state="loaded", active_state="failed", sub_state="failed", unit_file_state="enabled")
    log = [FmLogEvent("version_mismatch", "fabric manager NVIDIA GPU driver interface version 530.30.02 don't match "
                      "with driver version 530.41.03.", {"fm_version": "530.30.02", "driver_version": "530.41.03"})]
    f = hgx(fabricmanager_version="580.159.04", fabricmanager_unit=failed, fabricmanager_log=log)
    assert run("NG-FAB-001", f).outcome is P
    r = run("NG-DRV-002", f)
    assert r.outcome is F and "530.30.02 don't match with driver version 530.41.03" in r.message


@covers("NG-NVSW-001")
def test_hgx_h100_four_and_a100_six_pass():
    r = run("NG-NVSW-001", hgx())
    assert r.outcome is P and r.expected == "4 NVSwitch(es) (SKU profile 2330 (H100 80GB HBM3) for 8 GPU(s))"
    a100 = hgx(switches=6, model=("20b2", "NVIDIA A100-SXM4-80GB", "Ampere"))
    assert run("NG-NVSW-001", a100).outcome is P


@covers("NG-NVSW-001")
def test_missing_or_extra_nvswitch_fails():
    r = run("NG-NVSW-001", hgx(switches=3))
    assert r.outcome is F and r.message.startswith("NVSwitch missing: 3 of 4 present")
    assert run("NG-NVSW-001", hgx(switches=5)).outcome is F


@covers("NG-NVSW-001")
def test_count_follows_spec_gpu_count_single_gpu_and_pcie_boards():
    # spec gpu.count is the board as designed: a GPU lost from the bus does not change the expectation
    r = run("NG-NVSW-001", hgx(n=7, switches=4), spec(gpu={"count": 8}))
    assert r.outcome is P
    assert run("NG-NVSW-001", healthy()).outcome is P          # one H200: 0 expected
    a10 = healthy(gpus=[gpu(0, name="NVIDIA A10", pci_device_id="2236", architecture="Ampere")], driver_gpus=[])
    assert run("NG-NVSW-001", a10).expected.startswith("0 NVSwitch(es)")


@covers("NG-NVSW-001")
def test_unknown_expectation_is_error_and_spec_count_wins():
    b200 = hgx(switches=0, model=("2901", "NVIDIA B200", "Blackwell"))
    r = run("NG-NVSW-001", b200)
    assert r.outcome is E and "set nvswitch.count" in r.message
    assert run("NG-NVSW-001", b200, spec(nvswitch={"count": 0})).outcome is P
    assert run("NG-NVSW-001", hgx(n=6), spec()).outcome is E   # 6 H100: not a board the SKU lists


@covers("NG-NVSW-001")
def test_gpus_unreadable_falls_back_to_sysfs_device_ids():
    links = [SysfsLink(f"0000:{0x19 + i:02x}:00.0", "gpu", None, "0x2330", 5, 16, 5, 16) for i in range(8)]
    f = hgx(gpus=missing("gpus", "nvidia-smi failed (driver_library_mismatch)"), pci_links=links)
    assert run("NG-NVSW-001", f).outcome is P


@covers("NG-LOG-001")
def test_sxid_lines_are_judged_with_their_own_catalog():
    text = ("[  100.000001] nvidia-nvswitch0: SXid (PCI:0000:83:00.0): 20034, Fatal, Link 28 LTSSM Fault Up\n"
            "[  100.000002] nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12021, Non-fatal, single bit ECC error\n")
    f = hgx(kernel_events=parse("kernel_log", text))
    r = run("NG-LOG-001", f)
    assert r.outcome is F
    assert "SXid 20034 (LTSSM Fault Up; fatal;" in r.message and "on nvidia-nvswitch0" in r.message
    assert "SXid 12021 (Single bit ECC error; non-fatal; action: none: the NVSwitch corrects it) on nvidia-nvswitch1" \
        in r.observed   # informational
    benign = hgx(kernel_events=parse("kernel_log", text.splitlines()[1] + "\n"))
    assert run("NG-LOG-001", benign).outcome is P


@covers("NG-LOG-001")
def test_unknown_sxid_fails_unless_its_line_says_non_fatal():
    fatal = "[  1.0] nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 99999, Severity 1 Engine instance 00 Sub-engine instance 00\n"
    assert run("NG-LOG-001", hgx(kernel_events=parse("kernel_log", fatal))).outcome is F
    silent = "[  1.0] nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 99999, Engine instance 00\n"
    assert run("NG-LOG-001", hgx(kernel_events=parse("kernel_log", silent))).outcome is F
    nonfatal = "[  1.0] nvidia-nvswitch2: SXid (PCI:0000:85:00.0): 99999, Severity 0 Engine instance 00\n"
    assert run("NG-LOG-001", hgx(kernel_events=parse("kernel_log", nonfatal))).outcome is P


@covers("NG-LOG-001")
def test_events_kind_sxid_keeps_the_function_of_the_bdf():
    ev = parse("kernel_log", "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 Engine instance 12\n")[0]
    assert (ev.kind, ev.bus_id, ev.details["sxid"], ev.details["fatal"]) == ("sxid", "0000:aa:00.0", "24007", "yes")
    assert isinstance(ev, KernelEvent)
