"""Real `nvidia-smi -q` / `--version` / table outputs of utkuozdemir/nvidia_gpu_exporter's captures (idle and under
load) and leptonai/gpud's test data (tests/fixtures/smi_{text,version,summary}/public-{utk,gpud}-*.txt; sources in
tests/fixtures/smi_xml/PUBLIC_SOURCES.md): H100 and H200 VMs at 590.48.01 with and without MIG, L40S 595.80, RTX 2080
SUPER / 4080 SUPER at 595.71.05 and the first 610 branch (610.57.04), where nvidia-smi renames its version labels
("KMD Version", "CUDA UMD Version", the old ones kept with a deprecation note) and nests the power limits under
"GPU Ceiling Power Limit". Judged as test_public_text_fixtures.py judges thamada/gls's outputs: a healthy node of the
file's driver holding its GPUs, spec from the output itself. One letter per GPU (P PASS, F FAIL, S SKIP, E ERROR)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.facts import DriverBanner, SmiReport
from nodegate.outcomes import Outcome
from nodegate.parsers import parse
from nodegate.parsers.smi_text import parse_smi_text

from .fakes import PUBLIC_CHECKS, covers, node_of_smi_text, healthy, missing, pci_gpus, run, spec_of_report, verdict_letters

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CHECKS = PUBLIC_CHECKS


def report(name: str):
    return parse_smi_text((FIX / "smi_text" / f"public-utk-{name}.txt").read_text())


def node(name: str):
    return node_of_smi_text(report(name))


def row(*letters: str) -> dict[str, str]:
    return dict(zip(CHECKS, letters))


ALL_PASS = row("P", "P", "P", "P", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "P")
#: MIG on: remapped rows N/A under MIG is ERROR unless the spec allows it (checks.md "ECC and memory health"),
#: and NG-CFG-003 FAILs the spec's default config.mig=disabled
MIG = row("P", "P", "P", "P", "P", "P", "P", "E", "S", "P", "P", "P", "F", "P", "P")
#: GeForce without ECC (spec: ecc.required false, as the sweep spec reads N/A), persistence mode Disabled
GEFORCE_IDLE = row("P", "P", "P", "S", "P", "S", "S", "S", "S", "P", "P", "P", "P", "P", "F")
GEFORCE_LOAD = row("P", "P", "P", "P", "P", "S", "S", "S", "S", "P", "P", "P", "P", "P", "F")

EXPECTED = {
    #                INV1 INV2 PCIE1 PCIE2 CLK  ECC1 ECC2 MEM1 MEM2 GSP  CFG1 CFG2 CFG3 CFG4 PER4
    "h100-590.48.01-idle": ALL_PASS,
    "h100-590.48.01-load": ALL_PASS,
    "h100-mig-590.48.01-idle": MIG,
    "h100-mig-590.48.01-load": MIG,
    "h200-590.48.01-idle": ALL_PASS,
    "h200-590.48.01-load": ALL_PASS,
    "h200-mig-590.48.01-load": MIG,
    # L40S, 595.80, idle: persistence mode Disabled
    "l40s-595.80-idle": row("P", "P", "P", "P", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "F"),
    # idle: Gen1 x16 at P8 with GpuIdle active -> SKIP (pcie.idle=not_verified); under load Gen3/Gen4 x16
    "rtx2080super-595.71.05-idle": GEFORCE_IDLE,
    "rtx2080super-595.71.05-load": GEFORCE_LOAD,
    # 610.57.04: NG-GSP-002 read 'GSP firmware 610.57.04 != driver 610.57.04 [Deprecated; ...]' (FAIL) where the
    # driver version came from nvidia-smi's header, and NG-CFG-002 'default power limit not reported' (ERROR)
    "rtx2080super-610.57.04-idle": GEFORCE_IDLE,
    "rtx2080super-610.57.04-load": GEFORCE_LOAD,
    "rtx4080super-595.71.05-idle": GEFORCE_IDLE,
    "rtx4080super-595.71.05-load": GEFORCE_LOAD,
}


@covers(*CHECKS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_verdicts_of_each_real_capture(name):
    assert verdict_letters(node(name), spec_of_report(report(name)), CHECKS) == EXPECTED[name]


def test_every_capture_parses_without_a_field_error():
    assert {n: g.field_errors for n in EXPECTED for g in report(n).gpus if g.field_errors} == {}


@pytest.mark.parametrize("state", ["idle", "load"])
def test_610_header_versions_are_read_by_label_without_the_deprecation_note(state):
    # 'Driver Version : 610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]'
    rep = report(f"rtx2080super-610.57.04-{state}")
    assert (rep.driver_version, rep.cuda_version) == ("610.57.04", "13.3")


@covers("NG-DRV-001")
def test_610_driver_stack_from_the_q_header_passes():
    # a converted nvidia-bug-report (or any run without libnvidia-ml and --version): nvidia-smi -q's header is the
    # userspace version; it read '610.57.04 [Deprecated; ...]' and FAILed as a mismatch with the 610.57.04 module
    rep = report("rtx2080super-610.57.04-load")
    f = node("rtx2080super-610.57.04-load").but(
        nvidia_module_version="610.57.04", libnvml=missing("libnvml"), smi_version=missing("smi_version"),
        driver_banner=DriverBanner("open", "610.57.04", "x86_64", "NVRM version: 610.57.04"),
        smi_key="smi.q", smi_report=rep)
    r = run("NG-DRV-001", f, spec_of_report(rep))
    assert r.outcome is Outcome.PASS, r.message


@covers("NG-CFG-002")
@pytest.mark.parametrize("state", ["idle", "load"])
def test_610_power_limits_under_gpu_ceiling_power_limit_are_read(state):
    # 610 nests Current/Requested/Default Power Limit under 'GPU Ceiling Power Limit' (beside 'GPU Base Power')
    (g,) = report(f"rtx2080super-610.57.04-{state}").gpus
    assert (g.power_limit_w, g.power_limit_default_w) == (250.0, 250.0)
    r = run("NG-CFG-002", node(f"rtx2080super-610.57.04-{state}"), spec_of_report(report(f"rtx2080super-610.57.04-{state}")))
    assert r.outcome is Outcome.PASS, r.message


def test_610_version_labels_new_label_decides_in_any_order():
    text = (FIX / "smi_version" / "public-utk-rtx2080super-610.57.04.txt").read_text()
    for t in (text, "\n".join(reversed(text.splitlines())) + "\n"):
        v = parse("smi_version", t)
        assert (v.driver_version, v.cuda_version, v.nvml_version) == ("610.57.04", "13.3", "610.57")
    v = parse("smi_version", (FIX / "smi_version" / "public-utk-l40s-595.80.txt").read_text())
    assert (v.driver_version, v.cuda_version) == ("595.80", "13.2")


@covers("NG-DRV-001")
def test_610_driver_stack_from_nvidia_smi_version_passes():
    # no resolved libnvidia-ml: nvidia-smi --version is the userspace version ('DRIVER version : Deprecated, see
    # "KMD version" instead' must never be taken for it, whatever the order of the lines)
    text = (FIX / "smi_version" / "public-utk-rtx2080super-610.57.04.txt").read_text()
    for t in (text, "\n".join(reversed(text.splitlines())) + "\n"):
        f = healthy(nvidia_module_version="610.57.04", libnvml=missing("libnvml"),
                    smi_version=parse("smi_version", t))
        r = run("NG-DRV-001", f, spec_of_report(report("rtx2080super-610.57.04-load")))
        assert r.outcome is Outcome.PASS, r.message


def test_table_header_and_two_word_compute_mode():
    # 610's table header 'KMD Version: 610.57.04     CUDA UMD Version: 13.3'; gpud's 525.125.06 GeForce row
    # 'ERR!  38C  P5  49W / 450W | ... | 0%   E. Process |' (the row was dropped: P-state, power, temperature lost)
    rep = parse("smi_summary", (FIX / "smi_summary" / "public-utk-rtx2080super-610.57.04-load.txt").read_text())
    assert (rep.driver_version, rep.cuda_version, rep.gpus[0].pstate) == ("610.57.04", "13.3", "P2")
    rep = parse("smi_summary", (FIX / "smi_summary" /
                                "public-gpud-geforce-525.125.06-err-fan-exclusive-process.txt").read_text())
    (g,) = rep.gpus
    assert (g.pstate, g.temperature_c, g.power_draw_w, g.power_limit_w, g.compute_mode) == \
        ("P5", 38, 49.0, 450.0, "Exclusive_Process")


@covers("NG-NVL-001")
def test_h200_vm_nvlink_s_18_links_at_26_562_pass():
    links = parse("nvlink_status", (FIX / "nvlink_status" / "public-utk-h200-590.48.01-18-links.txt").read_text())
    (g,) = links
    assert (g.status, len(g.links), {l.speed_gbps for l in g.links}) == ("ok", 18, {26.562})
    f = node("h200-590.48.01-idle").but(nvlink_status=links)
    assert run("NG-NVL-001", f, spec_of_report(report("h200-590.48.01-idle"))).outcome is Outcome.PASS


@covers("NG-NVL-001")
def test_geforce_all_links_inactive_is_no_reading_not_a_pass():
    # a GeForce RTX 2080 SUPER (an NVLink bridge connector, no bridge): 'NVML: Unable to retrieve Nvlink information
    # as all links are inActive'. The catalog has no NVLink rule: nodegate asks for nvlink.links (no SKU profile)
    links = parse("nvlink_status", (FIX / "nvlink_status" /
                                    "public-utk-rtx2080super-610.57.04-all-links-inactive.txt").read_text())
    (g,) = links
    assert (g.status, g.links) == ("unsupported", [])
    f = node("rtx2080super-610.57.04-load").but(nvlink_status=links, nvlink_errors=links)
    r = run("NG-NVL-001", f, spec_of_report(report("rtx2080super-610.57.04-load")))
    assert r.outcome is Outcome.ERROR and "set nvlink.links" in r.message


def csv_node(name: str):
    gs = parse("smi_csv", (FIX / "smi_csv" / f"public-utk-{name}.txt").read_text())
    sp = spec_of_report(SmiReport(gpus=gs))
    return healthy(gpus=gs, driver_gpus=[], gpu_source="smi_csv", pci_links=pci_gpus(gs)).without("clocks_samples"), sp


@covers("NG-CFG-002", "NG-CFG-004", "NG-GSP-002")
@pytest.mark.parametrize("name,letters", [
    # INV1 INV2 PCIE1 PCIE2 CLK ECC1 ECC2 MEM1 MEM2 GSP CFG1 CFG2 CFG3 CFG4 PER4. ECC-002 ERROR: the query has no
    # 580+ repair flags (altkeys: documented); GSP-002 ERROR: no query field gives the GSP firmware version
    ("h200-590.48.01-load", "PPPPPPEPSEPPPPP"),
    ("rtx2080super-610.57.04-load", "PPPPPSSSSEPPPPF"),
])
def test_query_gpu_csv_of_a_real_capture(name, letters):
    # compute_mode, enforced.power.limit and power.default_limit were in the row and never read: NG-CFG-002 and
    # NG-CFG-004 ERRORed 'not reported'
    f, sp = csv_node(name)
    (g,) = f.gpus
    assert (g.compute_mode, g.power_limit_w == g.power_limit_default_w) == ("Default", True)
    assert "".join(verdict_letters(f, sp, CHECKS).values()) == letters
