"""Every corpus file's expected_verdict, through the real parsers and the check rules.

The corpus (tests/corpus/, copies of ../shared/corpus/) holds single command outputs; each test
parses the file with nodegate.parsers, puts the facts into a healthy FakeFacts (tests/checks/fakes.py)
in place of the facts that output stands for, and evaluates the checks the verdict names. Spec
assumptions follow ../shared/corpus/README.md (standard link per GPU family, catalog defaults).
Where a header's wording and the catalog differ, the test follows the catalog and says why.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from nodegate.checks import load_all
from nodegate.checks._util import gpu_label
from nodegate.facts import (GpuFacts, ModuleState, PciFunction, PcieLink, PersistencedFacts, SystemdUnit,
                            UnitFile)
from nodegate.outcomes import Outcome
from nodegate.parsers import corpus_sections, parse, parse_corpus_file
from nodegate.parsers.proc_version import parse_banner_line

from .fakes import DROPIN, covers, healthy, missing, run, spec

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
GEN3 = {"pcie": {"gen": 3, "width": 16}}
GPU_CHECKS = [c.id for c in load_all().values() if c.scope == "gpu"]


def path(num: str) -> Path:
    hits = sorted(CORPUS.glob(f"{num}-*.txt"))
    assert len(hits) == 1, num
    return hits[0]


def sections(num: str, form: str | None = None) -> list:
    """Parsed facts of the file's sections (optionally only those of one form)."""
    return [parse(s.form, s.text) for s in corpus_sections(path(num)) if form is None or s.form == form]


def verdict(num: str) -> str:
    return parse_corpus_file(path(num))[0]["expected_verdict"]


def gpu_facts(num: str) -> list[GpuFacts]:
    out = []
    for s in corpus_sections(path(num)):
        r = parse(s.form, s.text)
        out += r.gpus if hasattr(r, "gpus") else r if s.form == "smi_csv" else []
    return out


def smi_node(num: str, **changes):
    """Healthy node whose GPUs are the file's (no repeated clocks samples in a single output)."""
    gs = gpu_facts(num)
    return healthy(gpus=gs, driver_gpus=[], **changes).without("clocks_samples")


def outcomes(check_id, facts, sp=None, n=None):
    n = len(facts.gpus) if n is None else n
    return [run(check_id, facts, sp, gpu=i).outcome for i in range(n)]


@covers("NG-CLK-001", "NG-PCIE-001", "NG-PCIE-002")
def test_001_h100x8_hw_slowdown_power_brake_clocks_fail_all_8_pcie_pass():
    f = smi_node("001")
    assert len(f.gpus) == 8
    assert outcomes("NG-CLK-001", f) == [Outcome.FAIL] * 8
    r = run("NG-CLK-001", f, gpu=3)
    assert r.observed.startswith("active: hw_slowdown, hw_power_brake_slowdown")
    assert outcomes("NG-PCIE-001", f) == [Outcome.PASS] * 8
    assert outcomes("NG-PCIE-002", f) == [Outcome.PASS] * 8
    assert "clocks FAIL on all 8 GPUs" in verdict("001")


@covers("NG-MEM-001", "NG-MEM-002", "NG-ECC-002")
def test_003_a10_remapped_rows_pending_fails_retired_pages_not_applicable():
    f = smi_node("003", nvidia_module_version="535.129.03")  # the file's driver (580+ flags not expected)
    r = run("NG-MEM-001", f)
    assert r.outcome is Outcome.FAIL
    assert "row remapping pending (reset required)" in r.message
    # catalog: pending = FAIL (the header's "or WARN" has no outcome here); failure No -> no RMA wording
    assert "RMA candidate" not in r.message.split("Remediation:")[0]
    r = run("NG-MEM-002", f)
    assert r.outcome is Outcome.SKIP       # Retired Pages N/A on Ampere: not applicable, not an error
    assert run("NG-ECC-002", f).outcome is Outcome.PASS


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-MEM-001", "NG-ECC-001")
def test_005_titanv_volta_gen1_idle():
    f = smi_node("005")
    assert run("NG-PCIE-001", f, spec(**GEN3)).outcome is Outcome.PASS
    r = run("NG-PCIE-002", f, spec(**GEN3))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "Gen1 x16 at P8, GpuIdle active"
    assert run("NG-CLK-001", f).outcome is Outcome.PASS
    # 'Remapped Rows : N/A' scalar on Volta: page retirement GPU -> not applicable
    assert run("NG-MEM-001", f).outcome is Outcome.SKIP
    # ECC N/A: unsupported on this board. Catalog: SKIP only when the spec says ECC is not required.
    assert run("NG-ECC-001", f, spec(ecc={"required": False})).outcome is Outcome.SKIP
    assert run("NG-ECC-001", f).outcome is Outcome.FAIL


@covers("NG-PCIE-001", "NG-PCIE-002")
def test_006_h100x8_lspci_gen5x16_pass_on_all_8():
    links = sections("006", "lspci")[0]
    assert len(links) == 8
    gs = [GpuFacts(index=i, pci_bus_id=l.bdf if l.bdf.count(":") == 2 else f"0000:{l.bdf}", name="H100 SXM5",
                   pci_device_id="2330", pstate=None,
                   link=PcieLink(current_gen=l.sta_gen, max_gen=l.cap_gen, current_width=l.sta_width,
                                 max_width=l.cap_width)) for i, l in enumerate(links)]
    f = healthy(gpus=gs, driver_gpus=[])
    assert not any(l.downgraded for l in links)
    assert outcomes("NG-PCIE-001", f) == [Outcome.PASS] * 8
    assert outcomes("NG-PCIE-002", f) == [Outcome.PASS] * 8


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-ECC-001")
def test_007_quadro_p400_xml_no_doctype():
    f = smi_node("007")
    assert run("NG-PCIE-001", f, spec(**GEN3)).outcome is Outcome.PASS
    r = run("NG-PCIE-002", f, spec(**GEN3))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "Gen1 x16 at P8, GpuIdle active"
    assert run("NG-CLK-001", f).outcome is Outcome.PASS   # clocks_throttle_reason_* read
    assert run("NG-ECC-001", f, spec(ecc={"required": False})).outcome is Outcome.SKIP


@covers("NG-PCIE-002", "NG-ECC-002", "NG-MEM-002")
def test_008_tesla_t4_busy_width_x8_fails():
    f = smi_node("008", nvidia_module_version="515.105.01")  # the file's driver (580+ flags not expected)
    r = run("NG-PCIE-002", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen3 x8 at P0, GpuIdle not active"
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
    assert run("NG-ECC-002", f).outcome is Outcome.PASS
    r = run("NG-MEM-002", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == "sbe 0, dbe 0, total 0, pending No"


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001")
def test_009_quadro_p2000_v12_throttle_naming_idle_skip():
    f = smi_node("009")
    assert run("NG-PCIE-001", f, spec(**GEN3)).outcome is Outcome.PASS
    # The header's "trained link SKIP (idle P8 ... Gen1 x8 is not verifiable at idle)" predates issue 21
    # (item 7), which wins: the speed drops at idle, the width does not. Gen1 alone would SKIP; x8 of a
    # x16 board FAILs at any activity (corpus 118 states the same rule for an A10G at P8).
    r = run("NG-PCIE-002", f, spec(**GEN3))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen1 x8 at P8, GpuIdle active"
    assert "trained link width x8 below x16" in r.message
    # the speed at idle on its own is still unverified: a x8 slot named in the spec leaves Gen1 at P8 a SKIP
    r = run("NG-PCIE-002", f, spec(pcie={"gen": 3, "width": 8}))
    assert r.outcome is Outcome.SKIP
    assert run("NG-CLK-001", f).outcome is Outcome.PASS


@covers("NG-PCIE-002", "NG-ECC-002", "NG-MEM-001", "NG-CLK-001")
def test_010_a100_mig_remapped_rows_na_error_unless_allowed():
    f = smi_node("010", nvidia_module_version="535.54.03")  # the file's driver (580+ flags not expected)
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
    assert run("NG-PCIE-002", f).outcome is Outcome.PASS
    assert run("NG-ECC-002", f).outcome is Outcome.PASS
    r = run("NG-MEM-001", f)
    assert r.outcome is Outcome.ERROR
    assert r.observed == "N/A (MIG enabled)"
    assert run("NG-MEM-001", f, spec(memory={"allow_mig_unsupported_remap": True})).outcome is Outcome.SKIP
    assert run("NG-CLK-001", f).outcome is Outcome.PASS


@covers("NG-CLK-001")
def test_013_v100_c4130_throttle_power_brake_fails():
    f = smi_node("013")
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("active: hw_slowdown, hw_power_brake_slowdown")


def _dkms_node(num, kver, module_version):
    dk = sections(num, "dkms")[0]
    return healthy(dkms=dk, kernel_release=kver, nvidia_module_version=module_version, driver_banner=None,
                   installed_kernels={e.kernel: True for e in dk.entries if e.kernel})


@covers("NG-DKMS-001", "NG-DKMS-002")
def test_014_dkms_comma_format_three_kernels_pass_for_running_kernel():
    dk = sections("014", "dkms")[0]
    kernels = sorted({e.kernel for e in dk.entries if e.module == "nvidia"})
    assert len(kernels) == 3
    for k in kernels:
        f = _dkms_node("014", k, "396.45")
        r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
        assert r.outcome is Outcome.PASS
        assert r.observed == f"nvidia/396.45, {k}, x86_64: installed"
        assert run("NG-DKMS-002", f, spec(driver={"install": "dkms"})).outcome is Outcome.PASS
    # not "any installed line": a fourth kernel is not covered
    assert run("NG-DKMS-001", _dkms_node("014", "4.99.0-1.fc28.x86_64", "396.45"),
               spec(driver={"install": "dkms"})).outcome is Outcome.FAIL


@covers("NG-DKMS-001")
def test_015_dkms_error_missing_dkms_conf_fails():
    f = _dkms_node("015", "4.17.14-202.fc28.x86_64", "396.45")
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("dkms status error: Error! Could not locate dkms.conf file.")


@covers("NG-DKMS-001")
def test_016_dkms_slash_format_passes():
    f = _dkms_node("016", "6.5.0-060500rc5-generic", "535.86.05")
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia/535.86.05, 6.5.0-060500rc5-generic, x86_64: installed"


@covers("NG-DKMS-001")
def test_018_dkms_diff_warning_and_intended_version_only_built_fails():
    dk = sections("018", "dkms")[0]
    kver = next(e.kernel for e in dk.entries if e.module == "nvidia")
    f = _dkms_node("018", kver, None)
    r = run("NG-DKMS-001", f, spec(driver={"install": "dkms", "version": "440.31"}))
    assert r.outcome is Outcome.FAIL
    assert "no installed nvidia/440.31" in r.message
    assert "Diff between built and installed module" in r.message


@covers("NG-DRV-001", "NG-ECC-001")
def test_020_nvml_driver_library_mismatch_fails_and_gpu_checks_error():
    err = sections("020", "smi_error")[0]
    f = healthy(smi_error=err, nvidia_module_version=None, driver_banner=None,
                gpus=missing("gpus", f"nvidia-smi failed ({err.kind}): {err.message}"))
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "kernel module not reported, NVML library 535.154"
    r = run("NG-ECC-001", f)
    assert r.outcome is Outcome.ERROR
    assert "Driver/library version mismatch" in r.message


@covers("NG-DRV-001", "NG-LOG-001")
def test_021_nvrm_api_mismatch_journal_fails():
    f = healthy(kernel_events=sections("021", "kernel_log")[0])
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "NVRM API mismatch: client 535.154.05 vs kernel module 550.78"
    assert run("NG-LOG-001", f).outcome is Outcome.FAIL


@covers("NG-FLV-001", "NG-LOG-001")
def test_022_proprietary_module_refuses_blackwell_fails():
    # header says "driver check": the catalog puts it under flavor (requires open) and kernel log
    f = healthy(kernel_events=sections("022", "kernel_log")[0], gpus=[], driver_gpus=[])
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "refuses GPU 0000:01:00.0" in r.message
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "RmInitAdapter failed" in r.observed


@covers("NG-LOG-001", "NG-INV-001")
def test_023_rtx3090_rminitadapter_gsp_failure_fails_for_98():
    f = healthy(kernel_events=sections("023", "kernel_log")[0], gpus=[], driver_gpus=[])
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "RmInitAdapter failed (GPU could not be initialised) at 0000:98:00.0" in r.observed
    assert "GSP firmware failed to boot" in r.observed
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "0000:98:00.0 failed to initialise" in r.observed


@covers("NG-LOG-001")
def test_024_rtx5080_wpr2_rminitadapter_xid120_fails():
    f = healthy(kernel_events=sections("024", "kernel_log")[0], gpus=[], driver_gpus=[])
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "Xid 120 (GSP Error" in r.observed


@covers("NG-FLV-001", "NG-FLV-002", "NG-INV-001")
def test_026_open_515_license_and_banner_agree_device_handle_not_found():
    mi = sections("026", "modinfo")[0]
    banner = sections("026", "proc_version")[0]
    assert banner.flavor == "open"
    f = healthy(modinfo_nvidia=mi, driver_banner=replace(banner, version=mi.version or banner.version))
    # the corpus modinfo section carries the license but no version line: flavors agree (no FAIL),
    # but on-disk = loaded version cannot be shown -> ERROR, never PASS
    assert mi.version is None
    r = run("NG-FLV-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.message == "on-disk (modinfo -F version) module version not reported: cannot compare versions"
    assert run("NG-FLV-002", f.but(modinfo_nvidia=replace(mi, version=banner.version))).outcome is Outcome.PASS
    assert run("NG-FLV-001", f, spec(driver={"flavor": "open"})).outcome is Outcome.PASS
    err = parse("smi_error", parse_corpus_file(path("026"))[1])
    r = run("NG-INV-001", healthy(smi_error=err, gpus=missing("gpus", "nvidia-smi failed"), driver_gpus=[]))
    assert r.outcome is Outcome.FAIL
    assert "0000:d8:00.0 nvidia-smi: device handle Not Found" in r.observed


@covers("NG-MOD-001", "NG-MOD-002", "NG-FLV-001")
def test_027_open_515_lsmod_without_uvm_fails():
    mods = sections("027", "lsmod")[0]
    banner = sections("027", "proc_version")[0]
    f = healthy(modules=ModuleState(loaded=mods), driver_banner=banner)
    r = run("NG-MOD-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia loaded, nvidia_uvm absent, nvidia_modeset loaded, nvidia_drm loaded"
    assert run("NG-MOD-002", f, spec(modules={"peermem": "required"})).outcome is Outcome.FAIL
    assert run("NG-FLV-001", f, spec(driver={"flavor": "open"})).outcome is Outcome.PASS


@covers("NG-FLV-001")
def test_028_proprietary_banner_bottlerocket():
    banner = sections("028", "proc_version")[0]
    assert (banner.flavor, banner.version) == ("proprietary", "535.183.06")
    f = healthy(driver_banner=banner, gpus=[GpuFacts(index=0, pci_bus_id="0000:00:1e.0", name="NVIDIA A10G",
                                                     pci_device_id="2237", architecture="Ampere")])
    r = run("NG-FLV-001", f, spec(driver={"flavor": "proprietary"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "proprietary 535.183.06"
    assert run("NG-FLV-001", f, spec(driver={"flavor": "open"})).outcome is Outcome.FAIL


@covers("NG-INV-001", "NG-LOG-001", "NG-MOD-002")
def test_029_xid79_fallen_off_bus_device_handle_fails():
    err = sections("029", "smi_error")[0]
    events = sections("029", "kernel_log")[0]
    mods = sections("029", "lsmod")[0]
    f = healthy(smi_error=err, gpus=missing("gpus", "nvidia-smi failed"), kernel_events=events, driver_gpus=[],
                modules=ModuleState(loaded=mods))
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.FAIL
    assert "0000:a1:00.0 nvidia-smi: device handle Unknown Error" in r.observed
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "Xid 79 (GPU has fallen off the bus" in r.observed
    # nvidia_peermem absent: FAIL only if GPUDirect RDMA is required
    assert run("NG-MOD-002", f).outcome is Outcome.SKIP
    assert run("NG-MOD-002", f, spec(modules={"peermem": "required"})).outcome is Outcome.FAIL


@covers("NG-LOG-002")
def test_031_xid48_63_94_on_19_fails_that_gpu_only():
    events = sections("031", "kernel_log")[0]
    gs = [GpuFacts(index=0, pci_bus_id="0000:19:00.0", name="NVIDIA H100 80GB HBM3", pci_device_id="2330"),
          GpuFacts(index=1, pci_bus_id="0000:3b:00.0", name="NVIDIA H100 80GB HBM3", pci_device_id="2330")]
    f = healthy(gpus=gs, kernel_events=events, driver_gpus=[])
    r = run("NG-LOG-002", f, gpu=0)
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("Xid 48 (Double Bit ECC Error")
    assert "cross-check NG-MEM-001/NG-MEM-002" in r.message
    # Xid 94 (contained) is app-level per the header ("not fatal by itself"); the catalog's fail set includes
    # it and nodegate follows the catalog. The GPU FAILs on 48/63 either way:
    r2 = run("NG-LOG-002", f, spec(kernel_log={"xid_fail": [48, 63, 64, 74, 79, 95]}), gpu=0)
    assert r2.outcome is Outcome.FAIL
    assert run("NG-LOG-002", f, gpu=1).outcome is Outcome.PASS
    # nvidia-peermem 'invalid context' lines are noise: no node-wide failure
    assert run("NG-LOG-001", f).outcome is Outcome.PASS


@covers("NG-MOD-002")
def test_032_lsmod_peermem_bound_to_ib_core_passes():
    mods = sections("032", "lsmod")[0]
    ib_core = next(m for m in mods if m.name == "ib_core")
    assert "nvidia_peermem" in ib_core.used_by
    f = healthy(modules=ModuleState(loaded=mods), ib_devices=["mlx5_0"], peermem_registered=True)
    r = run("NG-MOD-002", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == "nvidia_peermem loaded, nv_peer_mem absent; registered"


@covers("NG-MOD-002")
def test_033_empty_lsmod_grep_peermem_absent_fails_when_required():
    mods = [m for part in sections("033", "lsmod") for m in part]
    assert mods == []
    f = healthy(modules=ModuleState(loaded=mods), ib_devices=[f"mlx5_{i}" for i in range(8)], modinfo_peermem=None)
    r = run("NG-MOD-002", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "nvidia_peermem absent, nv_peer_mem absent"


@covers("NG-MOD-002", "NG-MOD-004")
def test_034_legacy_nv_peer_mem_installed_not_loaded_fails():
    mi = sections("034", "modinfo")[0]
    f = healthy(modules=ModuleState(loaded=[]), ib_devices=["mlx5_0"], modinfo_peermem=None, modinfo_nv_peer_mem=mi,
                modules_load_d={})
    sp = spec(modules={"allow_nv_peer_mem": True})
    r = run("NG-MOD-002", f, sp)
    assert r.outcome is Outcome.FAIL
    assert "installed but not loaded: nv_peer_mem 1.0-8 on disk" in r.observed
    assert run("NG-MOD-004", f, sp).outcome is Outcome.FAIL


@covers("NG-PER-001", "NG-PER-002")
def test_035_unit_with_short_u_flag_inactive_dead_fails():
    unit_file = sections("035", "unit_text")[0]
    status = sections("035", "systemctl_status")[0]
    r = run("NG-PER-001", healthy(persistenced_unit=status))
    assert r.outcome is Outcome.FAIL
    assert "daemon not running: inactive/dead" in r.message
    # '-u <user>' is accepted like '--user <user>' (same ExecStart moved into a proper drop-in)
    cmd = unit_file.exec_start[-1]
    f = healthy(persistenced_unit_files=[UnitFile(DROPIN, ["", cmd])],
                persistenced_unit=replace(healthy().persistenced_unit, exec_start=[cmd.split()]))
    assert run("NG-PER-002", f).outcome is Outcome.PASS


@covers("NG-PER-001", "NG-PER-003")
def test_037_gh200_nonroot_daemon_fails_and_root_is_recorded_exception():
    text = parse_corpus_file(path("037"))[1]
    assert re.search(r"auto_online_blocks: Permission denied", text)
    assert "status=1/FAILURE" in text
    gh = GpuFacts(index=0, pci_bus_id="0009:01:00.0", name="NVIDIA GH200 480GB", pci_device_id="2342")
    # the unit as systemd leaves it after this journal (Control process exited, status=1/FAILURE)
    failed = SystemdUnit(load_state="loaded", active_state="failed", sub_state="failed", unit_file_state="enabled",
                         result="exit-code")
    f = healthy(gpus=[gh], driver_gpus=[], persistenced_unit=failed, persistenced=PersistencedFacts([], None, False))
    r = run("NG-PER-001", f)
    assert r.outcome is Outcome.FAIL
    assert "run it as root (persistence.user: root)" in r.message


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-MEM-002",
        "NG-MEM-003")
def test_038_h100_csv_all_fields_all_checks_pass():
    f = smi_node("038")
    for cid in ("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-ECC-001", "NG-MEM-001", "NG-MEM-003"):
        assert run(cid, f).outcome is Outcome.PASS, cid
    # --query-gpu has no channel/TPC repair pending or unrepairable memory fields, which driver 580+
    # reports: this evidence cannot show them, so NG-ECC-002 is ERROR (not evaluated), never PASS
    r = run("NG-ECC-002", f)
    assert r.outcome is Outcome.ERROR, r.message
    assert "channel_repair_pending" in r.message and "unrepairable_memory" in r.message
    # retired pages '[N/A]' on Hopper: not applicable (row remapping), which is the catalog's meaning of "pass"
    assert run("NG-MEM-002", f).outcome is Outcome.SKIP


@covers("NG-ECC-002", "NG-MEM-002", "NG-PCIE-002", "NG-CLK-001")
def test_040_v100_pcie_470_throttle_naming_retired_page_sbe_passes():
    f = smi_node("040", nvidia_module_version="470.129.06")  # the file's driver (580+ flags not expected)
    r = run("NG-ECC-002", f)
    assert r.outcome is Outcome.PASS
    assert "aggregate correctable 3" in r.observed
    r = run("NG-MEM-002", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == "sbe 1, dbe 0, total 1, pending No"
    assert run("NG-PCIE-002", f).outcome is Outcome.PASS
    assert run("NG-CLK-001", f).outcome is Outcome.PASS


@covers("NG-FLV-002", "NG-DKMS-001")
def test_042_modinfo_proprietary_545_dkms_vermagic_matches():
    mi = sections("042", "modinfo")[0]
    kver = mi.vermagic.split()[0]
    assert kver == "6.2.0-39-generic"
    prop = parse_banner_line(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {mi.version}  Sun Nov 11 2023")
    f = healthy(modinfo_nvidia=mi, driver_banner=prop, kernel_release=kver, dkms=missing("dkms"),
                nvidia_module_version=mi.version)
    assert run("NG-FLV-002", f).outcome is Outcome.PASS
    r = run("NG-DKMS-001", f)
    assert r.outcome is Outcome.PASS
    assert f"nvidia/{mi.version}/gsp_tu10x.bin" in mi.firmware


@covers("NG-FLV-001", "NG-FLV-002")
def test_043_modinfo_proprietary_580_akmod_path():
    mi = sections("043", "modinfo")[0]
    assert "/extra/" in mi.filename
    prop = parse_banner_line(f"NVRM version: NVIDIA UNIX x86_64 Kernel Module  {mi.version}  Sun Nov 11 2025")
    f = healthy(modinfo_nvidia=mi, driver_banner=prop, kernel_release=mi.filename.split("/")[3], dkms=missing("dkms"),
                gpus=[GpuFacts(index=0, pci_bus_id="0000:01:00.0", name="NVIDIA GeForce GTX 1060 6GB",
                               pci_device_id="1c03", architecture="Pascal")])
    assert run("NG-FLV-002", f).outcome is Outcome.PASS
    assert run("NG-FLV-001", f).outcome is Outcome.PASS
    blackwell = f.but(gpus=[GpuFacts(index=0, pci_bus_id="0000:01:00.0", name="NVIDIA B200", pci_device_id="2901",
                                     architecture="Blackwell")])
    assert run("NG-FLV-001", blackwell).outcome is Outcome.FAIL


@covers("NG-LOG-001")
def test_045_probe_not_called_nouveau_owns_3_v100_fails():
    f = healthy(kernel_events=sections("045", "kernel_log")[0])
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "probe routine not called" in r.observed


@covers("NG-PCIE-003")
def test_046_sysfs_upstream_switch_x8_below_gpu_x16_fails():
    links = [l for part in sections("046", "sysfs_tail") for l in part]
    by = {l.bdf: l for l in links}
    gpu_bdf, port_bdf = "0000:03:00.0", "0000:01:00.0"
    # format reference (AMD): roles as the probe would frame them
    f = healthy(gpus=[GpuFacts(index=0, pci_bus_id=gpu_bdf, name="(format reference)", pci_device_id="2330",
                               link=PcieLink(current_gen=5, max_gen=5, current_width=16, max_width=16))],
                pci_links=[replace(by[gpu_bdf], role="gpu"), replace(by[port_bdf], role="upstream", upstream_of=gpu_bdf)],
                driver_gpus=[])
    r = run("NG-PCIE-003", f)
    assert r.outcome is Outcome.FAIL
    assert "upstream port 0000:01:00.0 trained Gen4 x8 below the GPU link Gen5 x16" in r.message


@covers("NG-CLK-001", "NG-ECC-002")
@pytest.mark.parametrize("num", ["047", "048"])
def test_047_048_query_gpu_csv_na_fields_no_check_fails(num):
    f = smi_node(num)
    results = {cid: run(cid, f, spec(**GEN3)) for cid in GPU_CHECKS}
    assert [cid for cid, r in results.items() if r.outcome is Outcome.FAIL] == []


@covers("NG-FLV-001", "NG-INV-001", "NG-LOG-001")
def test_050_h100_hgx_boot_dmesg_proprietary_8_gpus_no_errors():
    events = sections("050", "kernel_log")[0]
    banner = parse_banner_line(next(e.text for e in events if e.kind == "loading_banner"))
    assert (banner.flavor, banner.version) == ("proprietary", "550.90.07")
    buses = [e.bus_id for e in events if e.kind == "drm_initialized"]
    gs = [GpuFacts(index=i, pci_bus_id=b, name="NVIDIA H100 80GB HBM3", pci_device_id="2330")
          for i, b in enumerate(buses)]
    # a dmesg excerpt: no sysfs listing beside it (the fake's one-GPU pci.sysfs would contradict it)
    f = healthy(kernel_events=events, driver_banner=banner, gpus=gs, driver_gpus=[]).without("pci_links")
    assert run("NG-FLV-001", f, spec(driver={"flavor": "proprietary"})).outcome is Outcome.PASS
    r = run("NG-INV-001", f, spec(gpu={"count": 8}))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("8 GPU(s): 0000:19:00.0")
    assert run("NG-LOG-001", f).outcome is Outcome.PASS


# ----------------------------------------------------------------------------------- corpus 101-122 (issue 19)
HGX_BUSES = ["0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0", "0000:9b:00.0", "0000:bb:00.0",
             "0000:cb:00.0", "0000:db:00.0"]   # HGX H100 layout (corpus 050); 101's GPU4 is 9b


def _gpus(buses, name, device_id, arch, **kw):
    return [GpuFacts(index=i, pci_bus_id=b, name=name, pci_device_id=device_id, architecture=arch,
                     uuid=f"GPU-00000000-0000-0000-0000-{i:012x}", **kw) for i, b in enumerate(buses)]


def _from_nvlink_headers(blocks, device_id, arch):
    """GpuFacts named after nvidia-smi nvlink -s headers (index, name, UUID), as -q -x would list them."""
    return [GpuFacts(index=b.index, pci_bus_id=f"0000:{0x10 + b.index:02x}:00.0", name=b.name, uuid=b.uuid,
                     pci_device_id=device_id, architecture=arch) for b in blocks]


@covers("NG-LOG-002", "NG-LOG-001")
def test_101_xid119_gsp_rpc_timeout_fails_9b_only_and_history_rows_are_not_xids():
    events = sections("101", "kernel_log")[0]
    assert [e.xid for e in events if e.kind == "xid"] == [119] * 5    # 5 Xid lines, no history-table row
    f = healthy(kernel_events=events, gpus=_gpus(HGX_BUSES, "NVIDIA H100 80GB HBM3", "2330", "Hopper"), driver_gpus=[])
    assert outcomes("NG-LOG-002", f) == [Outcome.PASS] * 4 + [Outcome.FAIL] + [Outcome.PASS] * 3
    r = run("NG-LOG-002", f, gpu=4)
    # the Xid catalog's words (issue 39.1: nodegate/data/xid.yaml, immediate action RESET_GPU)
    assert r.observed.startswith("Xid 119 (GSP RPC Timeout; major; action: RESET_GPU)") and "x5" in r.observed
    assert run("NG-LOG-001", f).outcome is Outcome.PASS       # every event is the GPU's; 'clocksource' is noise
    assert "FAIL for 0000:9b:00" in verdict("101")


@covers("NG-NVL-001")
def test_106_a100x8_nvlink_12_links_at_25_pass_on_all_8():
    blocks = sections("106", "nvlink_status")[0]
    assert [len(b.links) for b in blocks] == [12] * 8 and {lk.speed_gbps for b in blocks for lk in b.links} == {25.0}
    gs = _from_nvlink_headers(blocks, "20b2", "Ampere")
    f = healthy(gpus=gs, driver_gpus=[], nvlink_status=blocks)
    assert outcomes("NG-NVL-001", f) == [Outcome.PASS] * 8
    assert run("NG-NVL-001", f, gpu=7).observed == "12/12 links up at 25 GB/s"
    # the failure form of the same output: one link <inactive>
    bad = parse("nvlink_status", parse_corpus_file(path("106"))[1].replace("Link 9: 25 GB/s", "Link 9: <inactive>", 1))
    r = run("NG-NVL-001", f.but(nvlink_status=bad), gpu=0)
    assert r.outcome is Outcome.FAIL and "link 9 <inactive>" in r.message
    assert "PASS on all 8 GPUs" in verdict("106")


@covers("NG-NVL-001", "NG-INV-001")
def test_108_b300x7_nvlink_18_at_53125_pass_and_the_node_misses_a_gpu():
    blocks = sections("108", "nvlink_status")[0]
    assert len(blocks) == 7 and all(len(b.links) == 18 for b in blocks)
    f = healthy(gpus=_from_nvlink_headers(blocks, "3182", "Blackwell"), driver_gpus=[], nvlink_status=blocks)
    assert outcomes("NG-NVL-001", f) == [Outcome.PASS] * 7
    assert run("NG-NVL-001", f).expected == "18 links up at >= 53.125 GB/s (SKU profile 3182 (B300 SXM6 AC))"
    r = run("NG-INV-001", f, spec(gpu={"count": 8}))
    assert r.outcome is Outcome.FAIL and r.observed.startswith("7 GPU(s)")
    # the same speeds on an H100 profile would pass too (a minimum), on an A100 profile the count differs
    assert "gpu-count FAIL" in verdict("108")


def _fabric_snapshot(num, which):
    """Corpus 110 as NodeFacts: the summary table's 8 H100 (persistence Off), the lspci NVSwitch bridges, and
    GPU 0's fabric state from the ``which``-th `nvidia-smi -q -i 0 | grep Fabric` snapshot."""
    summary = sections(num, "smi_summary")[0]
    fabric = sections(num, "smi_text")[which].gpus[0]
    gs = [replace(g, pci_device_id="2330", architecture="Hopper",
                  fabric_state=fabric.fabric_state if g.index == 0 else "Completed",
                  fabric_status=fabric.fabric_status if g.index == 0 else "Success") for g in summary.gpus]
    bridges = [PciFunction(f"0000:{lk.bdf[5:]}" if lk.bdf.count(":") == 2 else lk.bdf, "0x22a3", "0x068000")
               for lk in sections(num, "lspci")[0] if "NVSwitch" in lk.description]
    return healthy(gpus=gs, driver_gpus=[], nvswitches=bridges, persistenced=PersistencedFacts([], None, False))


@covers("NG-FAB-001", "NG-NVSW-001", "NG-DRV-002", "NG-PER-004")
def test_110_h100x8_fabric_in_progress_fails_then_completed_passes_persistence_off_fails():
    before, after = _fabric_snapshot("110", 0), _fabric_snapshot("110", 1)
    r = run("NG-FAB-001", before, gpu=0)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "state In Progress, status N/A" and "802" in r.message   # N/A: not registered yet
    r = run("NG-FAB-001", after, gpu=0)
    assert (r.outcome, r.observed) == (Outcome.PASS, "state Completed, status Success")   # judge by the latest
    assert run("NG-NVSW-001", before).outcome is Outcome.PASS     # 4 GH100 NVSwitch bridges for 8 GPUs
    # the fabric manager was not running before its journal shows it starting (CUDA 802)
    stopped = before.but(fabricmanager_version="570.133.20",
                         fabricmanager_unit=SystemdUnit(load_state="loaded", active_state="inactive", sub_state="dead",
                                                        unit_file_state="enabled"))
    assert run("NG-DRV-002", stopped).outcome is Outcome.FAIL
    fm = sections("110", "fabricmanager_log")[0]
    assert [e.kind for e in fm if e.kind != "other"] == ["pre_nvl5", "configured"]
    assert outcomes("NG-PER-004", before) == [Outcome.FAIL] * 8    # Persistence-M Off on all 8
    assert "second snapshot PASS" in verdict("110")


@covers("NG-DRV-001", "NG-DRV-002")
def test_113_fabric_manager_driver_interface_mismatch_fails():
    (ev,) = sections("113", "fabricmanager_log")[0]
    assert (ev.kind, ev.details) == ("version_mismatch", {"fm_version": "530.30.02", "driver_version": "530.41.03"})
    failed = SystemdUnit(load_state="loaded", active_state="failed", sub_state="failed", unit_file_state="enabled")
    f = healthy(nvidia_module_version="530.41.03", driver_banner=None, libnvml=replace(healthy().libnvml, version="530.41.03"),
                fabricmanager_version=ev.details["fm_version"], fabricmanager_unit=failed, fabricmanager_log=[ev])
    r = run("NG-DRV-001", f)
    assert r.outcome is Outcome.FAIL      # same branch, different point release: not equal
    assert r.observed == "kernel module 530.41.03, NVML 530.41.03, fabric manager 530.30.02"
    r = run("NG-DRV-002", f)
    assert r.outcome is Outcome.FAIL and "interface version 530.30.02 don't match with driver version 530.41.03" in r.message
    assert "FM version must equal the driver version exactly" in verdict("113")


@covers("NG-IB-001", "NG-IB-002", "NG-IB-003")
def test_115_ibstat_8_ndr_ib_active_3_ethernet_down_passes():
    ports = sections("115", "ibstat")[0]
    assert [p.device for p in ports][:5] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2"]   # lexical, kept
    rails = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    gs = _gpus(HGX_BUSES, "NVIDIA H100 80GB HBM3", "2330", "Hopper")
    sp = spec(ib={"ports": 8, "rate_gbps": 400, "firmware": "28.39.1002", "gpu_hca": dict(enumerate(rails))})
    # ibstat as the only source (no sysfs listing), then the same ports read from sysfs
    for f in (healthy(gpus=gs, driver_gpus=[], ib_ports=[], ibstat_ports=ports),
              healthy(gpus=gs, driver_gpus=[], ib_ports=ports, ibstat_ports=None)):
        r = run("NG-IB-001", f, sp)
        assert r.outcome is Outcome.PASS, r.message
        assert r.observed == "8/8 port(s) Active/LinkUp at 400 Gb/s; 4 Ethernet-layer ignored"
        assert outcomes("NG-IB-002", f, sp) == [Outcome.PASS] * 8
        assert run("NG-IB-003", f, sp).outcome is Outcome.PASS     # the Ethernet functions' 22.38 not judged
    # "any port Down -> FAIL" would be wrong here; naming an Ethernet function makes it count
    f = healthy(ib_ports=ports, ibstat_ports=None)
    assert run("NG-IB-001", f, spec(ib={"devices": rails + ["mlx5_2"]})).outcome is Outcome.FAIL
    assert "infiniband check PASS" in verdict("115")


@covers("NG-LOG-002", "NG-LOG-001")
def test_117_xid13_xid43_application_faults_pass_with_the_events_shown():
    events = sections("117", "kernel_log")[0]
    assert {e.xid for e in events if e.kind == "xid"} == {13, 43}
    f = healthy(kernel_events=events, gpus=[GpuFacts(index=0, pci_bus_id="0000:38:00.0", name="NVIDIA H100 80GB HBM3",
                                                      pci_device_id="2330")], driver_gpus=[])
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.PASS      # nodegate has no WARN: application faults are informational, not FAIL
    assert "informational: Xid 13 (Graphics Engine Exception; minor;" in r.observed
    assert "Xid 43 (GPU stopped processing; info; action: IGNORE) at 0000:38:00.0 x3" in r.observed   # the catalog's
    assert run("NG-LOG-001", f).outcome is Outcome.PASS
    assert "application faults" in verdict("117")


@covers("NG-PER-004", "NG-MEM-001", "NG-MEM-002", "NG-ECC-002", "NG-PCIE-001", "NG-CFG-002", "NG-CFG-003",
        "NG-CFG-004", "NG-PCIERR-001")
def test_118_a10g_xml_v11_persistence_off_fails_memory_passes():
    f = smi_node("118", nvidia_module_version="515.105.01", persistenced=PersistencedFacts([], None, False),
                 pci_aer=[], uptime_s=3600.0)
    (g,) = f.gpus
    assert g.pci_device_id == "0000"      # masked 000000DE: no SKU profile is looked up from it
    assert run("NG-PER-004", f).outcome is Outcome.FAIL
    r = run("NG-MEM-001", f)
    assert r.outcome is Outcome.PASS and "none=0" in r.observed    # 'none 0 bank(s)' with max 192 is normal
    assert run("NG-MEM-002", f).outcome is Outcome.SKIP            # retired pages N/A on Ampere
    assert run("NG-ECC-002", f).outcome is Outcome.PASS
    assert run("NG-PCIE-001", f, spec(pcie={"gen": 4, "width": 16})).outcome is Outcome.PASS
    # the issue-19 checks on the same XML: 300/300 W, MIG N/A (not supported: disabled), Default, 0 replays
    assert run("NG-CFG-002", f).outcome is Outcome.PASS
    assert run("NG-CFG-003", f).observed == "MIG current N/A (not supported), pending N/A (not supported)"
    assert run("NG-CFG-004", f).outcome is Outcome.PASS
    assert run("NG-PCIERR-001", f, spec(pcie={"errors": "not_verified"})).outcome is Outcome.SKIP   # no AER listing
    assert "persistence check FAIL" in verdict("118")


@covers("NG-PCIE-002")
def test_118_a10g_x8_width_at_idle_fails_when_the_profile_expects_x16():
    # issue 21's pcie.py: a datacenter board's width does not downshift at idle (Gen1 at P8 alone is fine)
    f = smi_node("118", nvidia_module_version="515.105.01")
    r = run("NG-PCIE-002", f, spec(pcie={"gen": 4, "width": 16}))
    assert r.outcome is Outcome.FAIL and "x8" in r.observed


@covers("NG-NVL-001", "NG-NVL-002", "NG-INV-001", "NG-CFG-003")
def test_120_h100_mig_nvlink_refused_skips_one_gpu_mig_fails_policy():
    (g,) = sections("120", "smi_list")[0]
    assert (g.index, g.mig_mode_current) == (0, True)    # four MIG lines, one physical GPU
    (block,) = sections("120", "nvlink_status")[0]
    assert block.status == "mig"
    gf = GpuFacts(index=0, pci_bus_id="0000:00:06.0", name=g.name, uuid=g.uuid, pci_device_id="2330",
                  architecture="Hopper", mig_mode_current=True, mig_mode_pending=True)
    f = healthy(gpus=[gf], driver_gpus=[], nvlink_status=[block], nvlink_errors=[block])
    r = run("NG-NVL-001", f)
    assert r.outcome is Outcome.SKIP and "MIG mode" in r.message   # not FAIL ('links down'), not PASS
    assert run("NG-NVL-002", f).outcome is Outcome.SKIP
    assert run("NG-NVL-001", f, spec(nvlink={"mig": "error"})).outcome is Outcome.ERROR
    assert run("NG-INV-001", f, spec(gpu={"count": 1})).outcome is Outcome.PASS
    assert run("NG-CFG-003", f).outcome is Outcome.FAIL      # the acceptance profile requires MIG disabled
    assert run("NG-CFG-003", f, spec(config={"mig": "enabled"})).outcome is Outcome.PASS
    assert "MIG-mode policy check FAIL" in verdict("120")


@covers("NG-LOG-001", "NG-LOG-002")
def test_122_a100x8_talos_xid74_154_119_and_sxid24007_fail():
    events = sections("122", "kernel_log")[0]
    buses = ["0000:07:00.0", "0000:0b:00.0", "0000:48:00.0", "0000:4c:00.0", "0000:88:00.0", "0000:8b:00.0",
             "0000:c8:00.0", "0000:cb:00.0"]
    f = healthy(kernel_events=events, gpus=_gpus(buses, "NVIDIA A100-SXM4-80GB", "20b2", "Ampere"), driver_gpus=[])
    assert outcomes("NG-LOG-002", f) == [Outcome.PASS, Outcome.FAIL, Outcome.FAIL] + [Outcome.PASS] * 5
    r = run("NG-LOG-002", f, gpu=2)
    assert "Xid 74 (NVLink Error on NVLink 8; critical;" in r.observed
    assert "Xid 154 (GPU Recovery Action Changed; major; action: GPU Reset Required)" in r.observed   # the catalog's
    r = run("NG-LOG-002", f, gpu=1)
    assert r.observed.startswith("Xid 119 (GSP RPC Timeout;")     # the banner line, mapped to 0b's GPU line
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "SXid 24007 (not in nodegate's SXid table; fatal;" in r.message and "on nvidia-nvswitch1" in r.message
    assert "SXid 24007 on NVSwitch 0000:aa:00.0" in verdict("122")


# ------------------------------------------------------------------ corpus grown: 002, 004, 011, 012, 036, 039, 116,
# 119, 121 (each kind with its traps; nodegate has no WARN: a header's WARN is the catalog's outcome, said per test)
GEFORCE = {"ecc": {"required": False, "mode": "any"}}   # a GeForce fleet's spec: ECC neither required nor judged


@covers("NG-CLK-001", "NG-PCIE-001", "NG-PCIE-002")
def test_002_h100x8_power_brake_under_a_not_active_parent_fails_one_gpu_host_max_na_passes():
    f = smi_node("002", nvidia_module_version="535.183.01")   # the file's driver (580+ flags not expected)
    # The header names GPU 00000000:64:00.0; the output prints these reasons in 00000000:75:00.0's block (the
    # third GPU, minor number 2; 64:00.0 reads Idle Active like the six others): the test follows the output.
    assert "00000000:64:00.0" in verdict("002")
    assert outcomes("NG-CLK-001", f) == [Outcome.PASS] * 2 + [Outcome.FAIL] + [Outcome.PASS] * 5
    r = run("NG-CLK-001", f, gpu=2)
    assert r.observed.startswith("active: hw_power_brake_slowdown, sw_thermal_slowdown;")
    assert r.message.startswith("GPU 2 (0000:75:00.0, serial ") and "active hw_power_brake_slowdown" in r.message
    # the power brake on its own (SW Thermal cleared, parent 'HW Slowdown' still Not Active) FAILs too
    g = f.gpus[2]
    alone = replace(g, clocks_event_reasons={**g.clocks_event_reasons, "sw_thermal_slowdown": False})
    r = run("NG-CLK-001", f.but(gpus=f.gpus[:2] + [alone] + f.gpus[3:]), gpu=2)
    assert (r.outcome, r.observed.split(";")[0]) == (Outcome.FAIL, "active: hw_power_brake_slowdown")
    # 'Host Max : N/A' on all 8 is never a PCIe failure
    assert outcomes("NG-PCIE-001", f) == [Outcome.PASS] * 8
    assert outcomes("NG-PCIE-002", f) == [Outcome.PASS] * 8


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-MEM-002")
def test_004_rtx4090x8_gen1_at_p8_is_not_degradation_ecc_not_applicable_on_geforce():
    f = smi_node("004", nvidia_module_version="535.154.05")
    assert outcomes("NG-PCIE-001", f) == [Outcome.PASS] * 8     # Max Gen4 x16: the RTX 4090's standard link
    # header: "PASS for all 8 if the checker compares Max gen/width or re-reads under load; a naive 'Current <
    # Max' check would falsely FAIL the 3 idle GPUs". The catalog's outcome for a link below spec at idle is SKIP
    # with the observed state (pcie.idle=not_verified, default), as for corpus 005/007 and bug report 202
    S, P = Outcome.SKIP, Outcome.PASS
    assert outcomes("NG-PCIE-002", f) == [P, P, P, P, S, S, P, S]
    assert [run("NG-PCIE-002", f, gpu=i).observed for i in (4, 5, 7)] == ["Gen1 x16 at P8, GpuIdle active"] * 3
    assert run("NG-PCIE-002", f, gpu=0).observed == "Gen4 x16 at P2, GpuIdle not active"
    # the re-read under load: the same GPU trained Gen4 x16 at P2 PASSes
    g = f.gpus[4]
    busy = replace(g, pstate="P2", link=replace(g.link, current_gen=4),
                   clocks_event_reasons={**g.clocks_event_reasons, "gpu_idle": False})
    assert run("NG-PCIE-002", f.but(gpus=f.gpus[:4] + [busy] + f.gpus[5:]), gpu=4).outcome is Outcome.PASS
    # ECC: the RTX 4090 reports ECC Disabled (capable, off), its counters N/A and its row remapper (0 rows). The
    # header's "ECC/remap N/A = not applicable" is a GeForce fleet's spec: ECC not required, any mode
    assert outcomes("NG-ECC-001", f, spec(**GEFORCE)) == [Outcome.PASS] * 8
    assert outcomes("NG-ECC-002", f, spec(**GEFORCE)) == [Outcome.SKIP] * 8
    assert outcomes("NG-MEM-001", f, spec(**GEFORCE)) == [Outcome.PASS] * 8    # remapped rows reported: 0
    assert outcomes("NG-MEM-002", f, spec(**GEFORCE)) == [Outcome.SKIP] * 8    # no page retirement (row remap)
    # under the default (datacenter) spec ECC Disabled is the FAIL it is for any board
    assert run("NG-ECC-001", f).message.endswith("ECC current Disabled, pending Disabled, expected enabled")


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001")
def test_011_rtx_pro_6000_gen5_gpu_in_a_gen4_slot_fails_capability_gen1_idle_is_not_a_failure():
    f = smi_node("011", nvidia_module_version="590.44.01")
    r = run("NG-PCIE-001", f)
    assert (r.outcome, r.observed) == (Outcome.FAIL, "Gen4 x16 max")
    assert r.expected.startswith("Gen5 x16 (SKU profile 2bb4 (RTX PRO 6000 Blackwell Max-Q Workstation Edition))")
    assert r.message.endswith("link capability Gen4 x16 below Gen5 x16: the GPU supports Gen5 (max_device_link_gen), "
                              "the host caps it at Gen4 (max_host_link_gen: slot, riser or root port)")
    # a site that accepts the Gen4 slot says so: PASS
    assert run("NG-PCIE-001", f, spec(pcie={"gen": 4, "width": 16})).outcome is Outcome.PASS
    # Gen1 at P8 (0 %, 180 of 3090 MHz; GpuIdle Not Active as workstation boards report it): unverified, not FAIL
    r = run("NG-PCIE-002", f)
    assert (r.outcome, r.observed) == (Outcome.SKIP, "Gen1 x16 at P8, GpuIdle not active")
    # the v13-only counters are read and shown (history), the snapshot decides
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.PASS
    assert "clocks_event_reasons_counters (since driver load): sw_power_cap 25483 s, sync_boost 0 us" in r.evidence


@covers("NG-CLK-001", "NG-PCIE-002", "NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-INV-002")
def test_012_rtx3090_sw_power_cap_at_idle_passes_with_a_note():
    f = smi_node("012", nvidia_module_version="590.44.01")
    r = run("NG-CLK-001", f)
    # header: "PASS-with-note": nodegate's PASS carries the note in its message
    assert (r.outcome, r.observed.split(";")[0]) == (Outcome.PASS, "active: none of the fail reasons")
    assert r.message.startswith("note: sw_power_cap active: the software power-scaling limiter")
    # only the HW slowdowns (and SW thermal, the catalog's default set) FAIL
    g = f.gpus[0]
    braked = replace(g, clocks_event_reasons={**g.clocks_event_reasons, "hw_power_brake_slowdown": True})
    assert run("NG-CLK-001", f.but(gpus=[braked])).outcome is Outcome.FAIL
    r = run("NG-PCIE-002", f)
    assert (r.outcome, r.observed) == (Outcome.SKIP, "Gen1 x16 at P8, GpuIdle not active")
    # serial N/A tolerated: the GPU is named by index and bus id, the model check reads the name
    r = run("NG-INV-002", f, spec(gpu={"model": "RTX 3090"}))
    assert r.outcome is Outcome.PASS
    assert "GPU 0 (0000:09:00.0, serial N/A)" in run("NG-ECC-001", f).message
    for cid in ("NG-ECC-001", "NG-ECC-002", "NG-MEM-001"):
        assert run(cid, f, spec(**GEFORCE)).outcome is Outcome.SKIP, cid


@covers("NG-PER-002")
def test_036_dropin_reset_then_one_command_is_valid_a_root_daemon_fails_the_non_root_policy():
    uf = sections("036", "unit_text")[0]
    cmd = uf.exec_start[1]
    frag = healthy().persistenced_unit_files[0]
    f = healthy(persistenced_unit_files=[frag, UnitFile(DROPIN, uf.exec_start, text=uf.text)],
                persistenced_unit=replace(healthy().persistenced_unit, exec_start=[cmd.split()]))
    # header: "valid drop-in ... WARN if policy requires running as a non-root --user". nodegate has no WARN: the
    # catalog's default policy (the daemon runs as persistence.user, not root) makes the missing --user a FAIL,
    # and that is the only problem: the blank ExecStart= is a reset, not a second command
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert r.message == "drop-in command runs as root (no --user), expected --user nvidia-persistenced"
    assert r.observed == ("drop-in ExecStart lines ['', '/usr/bin/nvidia-persistenced --verbose']; effective "
                          "ExecStart: /usr/bin/nvidia-persistenced --verbose")
    # a site whose policy is a root daemon: PASS (no persistence flag = the daemon's default --persistence-mode)
    assert run("NG-PER-002", f, spec(persistence={"user": "root", "allow_root": True})).outcome is Outcome.PASS
    # the same command without the reset: the shape FAILs, and the unit files resolve to two commands
    r = run("NG-PER-002", f.but(persistenced_unit_files=[frag, UnitFile(DROPIN, [cmd])]),
            spec(persistence={"user": "root", "allow_root": True}))
    assert r.outcome is Outcome.FAIL
    assert "does not reset ExecStart= with an empty assignment first" in r.message
    assert "the unit files resolve to 2 ExecStart= commands (Type=forking allows one" in r.message


@covers("NG-PCIE-001", "NG-PCIE-002", "NG-CLK-001", "NG-MEM-001", "NG-ECC-001", "NG-ECC-002")
def test_039_h200_mig_590_wide_layout_pcie_throttle_pass_remapped_rows_na_under_mig_not_pass():
    f = smi_node("039", nvidia_module_version="590.48.01")
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
    r = run("NG-PCIE-002", f)
    assert (r.outcome, r.observed) == (Outcome.PASS, "Gen5 x16 at P0, GpuIdle active")
    assert run("NG-CLK-001", f).outcome is Outcome.PASS
    # header: "UNKNOWN/skip, not PASS or crash"; catalog: 'N/A' as a scalar under MIG = unsupported, ERROR unless
    # the spec allows it (then SKIP naming the key), as for corpus 010
    r = run("NG-MEM-001", f)
    assert (r.outcome, r.observed) == (Outcome.ERROR, "N/A (MIG enabled)")
    r = run("NG-MEM-001", f, spec(memory={"allow_mig_unsupported_remap": True}))
    assert r.outcome is Outcome.SKIP and r.message.startswith("memory.allow_mig_unsupported_remap")
    assert run("NG-ECC-001", f).outcome is Outcome.PASS
    assert run("NG-ECC-002", f).outcome is Outcome.PASS     # 590's repair flags read from the column-56 layout


@covers("NG-IB-001", "NG-IB-002", "NG-IB-003")
def test_116_ibstat_partial_output_then_ibpanic_exit_255_is_error_not_pass():
    from nodegate.errors import EvidenceError
    from tests.parsers.test_collect import nf
    body = parse_corpus_file(path("116"))[1]
    ports = sections("116", "ibstat")[0]
    assert len(ports) == 8
    with pytest.raises(EvidenceError) as ei:
        nf(ib__ibstat=(body, 255)).ibstat_ports
    err = ei.value
    sp = spec(ib={"ports": 8, "rate_gbps": 200, "firmware": "20.41.1000", "gpu_hca": {0: "mlx5_0"}})
    # ibstat the only source, or sysfs beside it listing the same 8 healthy ports: the failed run is ERROR
    for f in (healthy(ib_ports=[], ibstat_ports=err), healthy(ib_ports=ports, ibstat_ports=err)):
        for cid in ("NG-IB-001", "NG-IB-002", "NG-IB-003"):
            r = run(cid, f, sp)
            assert r.outcome is Outcome.ERROR, cid
            assert r.message.startswith("ibstat failed (exit code 255: ibpanic: [1400444] main: stat of IB device "
                                        "'mlx5_8' failed: No such file or directory); partial output before it "
                                        "stopped, not judged: 8 CA(s), 8 port(s): 8 Active/LinkUp at 200 Gb/s"), cid
    # the panic in stdout (streams merged) with exit 0 is the same failure
    with pytest.raises(EvidenceError, match=r"ibstat failed \(exit code 0: ibpanic: "):
        nf(ib__ibstat=(body, 0)).ibstat_ports
    # the same 8 stanzas from an ibstat that finished: PASS at HDR 200
    r = run("NG-IB-001", healthy(ib_ports=[], ibstat_ports=ports), sp)
    assert (r.outcome, r.observed) == (Outcome.PASS, "8/8 port(s) Active/LinkUp at 200 Gb/s")
    assert "ibstat probe ERROR" in verdict("116")


@covers("NG-NVL-001", "NG-NVL-002", "NG-FAB-001", "NG-DRV-002", "NG-PER-004", "NG-PCIE-001", "NG-PCIE-002",
        "NG-CLK-001", "NG-MEM-001", "NG-MEM-002", "NG-ECC-002")
def test_119_l40s_595_no_nvlink_skips_persistence_off_fails_the_rest_passes():
    gs = gpu_facts("119")
    blocks = sections("119", "nvlink_status")[0]
    f = healthy(gpus=gs, driver_gpus=[], nvlink_status=blocks, nvlink_errors=blocks,
                nvidia_module_version="595.80").without("clocks_samples")
    r = run("NG-NVL-001", f)
    assert (r.outcome, r.message) == (Outcome.SKIP, f"nvlink.links=0: {gpu_label(gs[0])} has no NVLink (SKU profile "
                                                    "26b9 (L40S))")
    # a PCIe board without a SKU profile (RTX 6000 Ada, 26b1): the driver's own sentence decides, never FAIL
    other = f.but(gpus=[replace(gs[0], pci_device_id="26b1", name="NVIDIA RTX 6000 Ada Generation")])
    for cid in ("NG-NVL-001", "NG-NVL-002"):
        r = run(cid, other)
        assert r.outcome is Outcome.SKIP, cid
        assert r.message.startswith("nvlink.links=unset: ") and "'Device does not have or support Nvlink'" in r.message
    assert run("NG-FAB-001", f).outcome is Outcome.SKIP       # Fabric N/A: Ada reports no fabric state
    assert run("NG-DRV-002", f).outcome is Outcome.SKIP       # no fabric manager on a PCIe node
    r = run("NG-PER-004", f)
    assert (r.outcome, r.observed) == (Outcome.FAIL, "persistence mode Disabled")
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS      # Gen4 x16 = the L40S maximum, Host Max N/A
    assert run("NG-PCIE-002", f).observed == "Gen4 x16 at P0, GpuIdle not active"
    assert run("NG-PCIE-002", f).outcome is Outcome.PASS
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.PASS and "sw_power_cap 205 s" in r.evidence    # the counter is history
    assert run("NG-MEM-001", f).outcome is Outcome.PASS
    assert run("NG-ECC-002", f).outcome is Outcome.PASS
    assert run("NG-MEM-002", f).outcome is Outcome.SKIP       # retired pages N/A: a row-remapping board
    # T.Limit trap: the temperature read is 'GPU Current Temp' (54 C); no check compares it with the T.Limit
    # headroom values (-5 C shutdown, -2 C slowdown offsets), so no thermal FAIL can come from them
    assert gs[0].temperature_c == 54
    assert [cid for cid in GPU_CHECKS if run(cid, f).outcome is Outcome.FAIL] == ["NG-PER-004"]


@covers("NG-INV-001", "NG-NVSW-001")
def test_121_gb200_tray_four_gpus_pass_no_local_nvswitch_skips():
    from nodegate.altkeys import gpus_from_lspci
    links = sections("121", "lspci")[0]
    gs = gpus_from_lspci(links)
    switches = [PciFunction(l.bdf, None, "0x068000") for l in links
                if l.description.startswith("Bridge:") and "NVIDIA" in l.description]
    assert switches == []
    f = healthy(gpus=gs, driver_gpus=[], nvswitches=switches, lspci_links=links).without("pci_links")
    r = run("NG-INV-001", f, spec(gpu={"count": 4}))
    assert r.outcome is Outcome.PASS
    # the ASPEED BMC's VGA function is not a GPU; PCI domains above 0000 are kept
    assert r.observed.startswith("4 GPU(s): 0008:01:00.0, 0009:01:00.0, 0018:01:00.0, 0019:01:00.0")
    # unnamed 'Device 2941' is GB200 (skus.yaml): its NVLink switches are in the NVL72 switch trays
    r = run("NG-NVSW-001", f)
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("nvswitch.count unset and SKU profile 2941 (GB200) nvswitches: external: ")
    r = run("NG-NVSW-001", f.but(nvswitches=[PciFunction("0008:02:00.0", "0x22a3", "0x068000")]))
    assert r.outcome is Outcome.FAIL
    assert run("NG-NVSW-001", f, spec(nvswitch={"count": 0})).outcome is Outcome.PASS   # the spec still wins
    assert "NVSwitch-presence check SKIP" in verdict("121")


def test_every_corpus_file_has_a_verdict_test():
    """Each tests/corpus/NNN-*.txt is named (by its number) in a test of this module."""
    src = Path(__file__).read_text()
    named = set(re.findall(r'"(\d{3})"', src))
    files = {p.name[:3] for p in CORPUS.glob("*.txt")}
    assert files, "tests/corpus is empty"
    assert files - named == set()
