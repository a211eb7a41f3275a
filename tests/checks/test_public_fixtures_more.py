"""More real public `nvidia-smi -q -x` outputs (tests/fixtures/smi_xml/public-*.txt, sources in PUBLIC_SOURCES.md
there): drivers 352-550, DTD v7-v12 and none, Kepler to Ada, a 4x K80 Azure VM, an 8x V100S node, mining rigs on
x1 risers, Windows boards. Each file is judged as ../shared/sweep/README.md replays them: a healthy node of the
file's driver whose PCI listing holds the file's GPUs, with a spec taken from the XML itself (GPU model and count,
PCIe gen/width as the first GPU's maximum, ECC not required where the board reports N/A). Every verdict is exact,
one letter per GPU (P PASS, F FAIL, S SKIP, E ERROR)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodegate.outcomes import Outcome

from .fakes import PUBLIC_CHECKS, covers, pci_gpus, run, spec, spec_of_report, verdict_letters
from .test_public_fixtures import node as _node
from .test_public_fixtures import report

CHECKS = PUBLIC_CHECKS


def node(name: str, gpus=None):
    f = _node(name, gpus=gpus)
    return f.but(pci_links=pci_gpus(f.gpus))


def xml_spec(name: str):
    """The sweep's spec: model and count, PCIe as the board's maximum, ECC not required where N/A."""
    return spec_of_report(report(name))


def verdicts(name: str) -> dict[str, str]:
    return verdict_letters(node(name), xml_spec(name), CHECKS)


def row(*letters: str) -> dict[str, str]:
    return dict(zip(CHECKS, letters))


#                         INV1 INV2  PCIE1  PCIE2   CLK     ECC1    ECC2    MEM1    MEM2    GSP     CFG1    CFG2    CFG3    CFG4    PER4
EXPECTED = {
    # GRID K520, 352.99, DTD v7: pre-split throttle block, no mig_mode (the driver predates MIG)
    "rai-example1": row("P", "P", "P", "S", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "P"),
    # 4x Tesla K80 in an Azure VM, 430.26: two boards, each serial on two GPUs; DBEs in the aggregate counters;
    # two VBIOS versions 2:2 (no majority); GPUs 2 and 3 idle at Gen1
    "pai-nvidia_smi_out_of_order": row("P", "PPPP", "PPPP", "PPSS", "PPPP", "PPPP", "FFPP", "SSSS", "PPPP", "SSSS",
                                       "FFFF", "PPPP", "PPPP", "PPPP", "FFFF"),
    # 2x GTX 1070, 384.66, v9, a mining rig: both on x1 risers at P2, GPU 1's slot Gen2
    "pai-nvidia_smi_sample": row("P", "PP", "PF", "FF", "PP", "SS", "SS", "SS", "SS", "SS", "PP", "PP", "PP", "PP",
                                 "FF"),
    # GT 730, 384.111, abridged by microsoft/pai (no pci link, ecc, clocks, power, vbios, compute mode elements)
    "pai-nvidia_smi_outdated_gpu": row("P", "P", "E", "E", "E", "E", "E", "S", "S", "S", "E", "E", "P", "E", "P"),
    # 2x RTX 2080 Ti, 410.73, v10: idle Gen1 x16
    "pai-nvidia_smi_sample_ecc_unsupported": row("P", "PP", "PP", "SS", "PP", "SS", "SS", "SS", "SS", "SS", "PP",
                                                 "PP", "PP", "PP", "FF"),
    # 2x GTX 1080, 460.27.04: x1 riser at P2, VBIOS 1:1, power limit raised 200 -> 216 W
    "a0s-nvidia-smi-3": row("P", "PP", "PP", "FF", "PP", "SS", "SS", "SS", "SS", "SS", "FF", "FF", "PP", "PP", "PP"),
    # Quadro P2000, 418.56, v10
    "a0s-nvidia-smi-4": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
    # 4x RTX 3090, 460.32.03: two at x8 under load, two in SW thermal slowdown, one VBIOS differs, 400 W limits
    "500farm-4-geforce-rtx-3090-460": row("P", "PPPP", "PPPP", "FPFP", "PFPF", "SSSS", "SSSS", "SSSS", "SSSS",
                                          "SSSS", "PFPP", "FFFF", "PPPP", "PPPP", "PPPP"),
    # 4x RTX 4090, 550.90.07, v12: ECC Disabled (NG-ECC-001 names it once), 600 W limits, one VBIOS differs
    "500farm-4-geforce-rtx-4090": row("P", "PPPP", "PPPP", "PPPS", "PPPP", "FFFF", "EEEE", "PPPP", "SSSS", "SSSS",
                                      "PPPF", "FFFF", "PPPP", "PPPP", "PPPP"),
    # GTX 980, 440.95.01, v10
    "500farm-geforce-gtx-980": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
    # Tesla T4, 550.90.07: a healthy datacenter board but for persistence mode
    "500farm-tesla-t4": row("P", "P", "P", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "P", "F"),
    # GTX 1050, 436.48, Windows: power management and persistence mode N/A
    "lampaa-smi_test_1": row("P", "P", "P", "S", "P", "S", "S", "S", "S", "S", "P", "E", "P", "P", "F"),
    # GT 730, 440.59: link, clocks reasons, power all N/A
    "lampaa-smi_test_5": row("P", "P", "E", "E", "E", "S", "S", "S", "S", "S", "P", "E", "P", "P", "F"),
    # Quadro P2200, 450.80.02, v11 (the first branch with mig_mode: N/A)
    "lampaa-smi_test_6": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
    # Tesla V100-PCIE-32GB, 460.39
    "datakit-v100-pcie-1card": row("P", "P", "P", "P", "P", "P", "P", "S", "P", "S", "P", "P", "P", "P", "F"),
    # 8x Tesla V100S-PCIE-32GB, 460.73.01: healthy but for persistence mode
    "datakit-v100s-8card": row("P", *(["P" * 8] * 3), "P" * 8, "P" * 8, "P" * 8, "S" * 8, "P" * 8, "S" * 8,
                               "P" * 8, "P" * 8, "P" * 8, "P" * 8, "F" * 8),
    # GTX 1050, 515.65.01, no DOCTYPE: x8 of x16 at P3 (width does not train down), power limit N/A
    "datakit-gtx-1050-1": row("P", "P", "P", "F", "P", "S", "S", "S", "S", "S", "P", "E", "P", "P", "P"),
    # 2x Tesla P100-PCIE-12GB, 375.66, DTD v8 (apache/hadoop): pre-split throttle block, utilization "33.4 %"
    "hadoop-p100-375": row("P", "PP", "PP", "PP", "PP", "PP", "PP", "SS", "PP", "SS", "PP", "PP", "PP", "PP", "FF"),
}


@covers(*CHECKS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_verdicts_of_each_real_output(name):
    assert verdicts(name) == EXPECTED[name]


# ------------------------------------------------------------------ drivers that predate MIG
@covers("NG-CFG-003")
@pytest.mark.parametrize("name,ver", [("rai-example1", "352.99"), ("hadoop-p100-375", "375.66"),
                                      ("pai-nvidia_smi_sample", "384.66"), ("a0s-nvidia-smi-4", "418.56"),
                                      ("500farm-geforce-gtx-980", "440.95.01")])
def test_driver_before_mig_has_no_mig_mode_element_and_mig_is_off(name, ver):
    # 352-440: no <mig_mode> at all (MIG arrived with R450); was ERROR "MIG mode not reported"
    f = node(name)
    assert f.gpus[0].mig_mode_current is None
    r = run("NG-CFG-003", f)
    assert r.outcome is Outcome.PASS
    assert r.observed == f"MIG not reported: the driver {ver} predates MIG (first in the 450 branch)"
    r = run("NG-CFG-003", f, spec(config={"mig": "enabled"}))
    assert r.outcome is Outcome.FAIL
    assert r.message.endswith(f"MIG cannot be enabled: the driver {ver} predates MIG (first in the 450 branch), "
                              "config.mig=enabled")


@covers("NG-CFG-003")
def test_mig_mode_element_missing_on_a_450_driver_is_still_error():
    f = node("rai-example1").but(nvidia_module_version="535.161.08")
    r = run("NG-CFG-003", f)
    assert r.outcome is Outcome.ERROR and r.message.endswith("MIG mode not reported")


# ------------------------------------------------------------------ the pre-split throttle block
@covers("NG-CLK-001")
@pytest.mark.parametrize("name", ["rai-example1", "hadoop-p100-375", "pai-nvidia_smi_sample"])
def test_pre_split_throttle_block_lists_the_later_reasons_as_not_reported_by_this_driver(name):
    # 352.99/375.66/384.66 print gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost,
    # unknown: HW Thermal, HW Power Brake and SW Thermal Slowdown did not exist yet (was ERROR "not reported")
    f = node(name)
    assert "hw_thermal_slowdown" not in f.gpus[0].clocks_event_reasons
    r = run("NG-CLK-001", f)
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("; not reported by this driver: hw_thermal_slowdown, hw_power_brake_slowdown, "
                               "sw_thermal_slowdown")


@covers("NG-CLK-001")
def test_pre_split_block_with_hw_slowdown_active_fails():
    g = report("hadoop-p100-375").gpus[0]
    g = replace(g, clocks_event_reasons={**g.clocks_event_reasons, "hw_slowdown": True})
    r = run("NG-CLK-001", node("hadoop-p100-375", gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert "active hw_slowdown" in r.message


@covers("NG-CLK-001")
def test_one_later_reason_missing_from_a_split_block_is_still_error():
    # a block that has some of the later reasons is not the pre-split format: a missing one is unreported
    g = report("500farm-tesla-t4").gpus[0]
    reasons = dict(g.clocks_event_reasons)
    del reasons["sw_thermal_slowdown"]
    r = run("NG-CLK-001", node("500farm-tesla-t4", gpus=[replace(g, clocks_event_reasons=reasons)]))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("clocks event reason(s) not reported: sw_thermal_slowdown")


# ------------------------------------------------------------------ one serial on the two GPUs of a K80
@covers("NG-INV-001", "NG-ECC-002", "NG-MEM-001")
def test_k80_board_serial_on_two_gpus_is_one_board_not_an_identity_conflict():
    # was: every per-GPU check ERROR "GPU 3 shares serial 0322416026235 with GPU 0", NG-INV-001 FAIL
    f = node("pai-nvidia_smi_out_of_order")
    assert [g.serial for g in f.gpus] == ["0322416026235", "0322116081614", "0322116081614", "0322416026235"]
    r = run("NG-INV-001", f, spec(gpu={"count": 4}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "4 GPU(s): 1580:00:00.0, 2df7:00:00.0, 4968:00:00.0, f8d6:00:00.0"
    r = run("NG-ECC-002", f, gpu=0)
    assert r.outcome is Outcome.FAIL and r.message.endswith("aggregate uncorrectable 7 > 0")
    r = run("NG-MEM-001", f, gpu=3)
    assert r.outcome is Outcome.SKIP
    assert "uses page retirement (SKU profile 102d (Tesla K80)), not row remapping" in r.message


@covers("NG-INV-001")
def test_k80_serial_shared_by_gpus_without_their_own_uuid_is_still_a_conflict():
    gs = report("pai-nvidia_smi_out_of_order").gpus
    gs = [replace(g, uuid=None) if g.index in (0, 3) else g for g in gs]
    r = run("NG-INV-001", node("pai-nvidia_smi_out_of_order", gpus=gs), spec(gpu={"count": 4}))
    assert r.outcome is Outcome.FAIL
    assert "GPU 0 shares serial 0322416026235 with GPU 3" in r.message
