"""Real public `nvidia-smi -a` (= -q) text outputs (tests/fixtures/smi_text/public-gls-*.txt: thamada/gls, an
nvidia-smi simulator that replays captured outputs; sources in tests/fixtures/smi_xml/PUBLIC_SOURCES.md): Kepler to
Blackwell, drivers 470-570, GH200, H200, 8x H100 SXM, 2x H100 NVL, 4x A100 with a pending row remap, an 8x V100 VM
whose driver prints 'Host Max : Unknown Error'. Judged as ../shared/sweep/README.md replays a foreign output: a healthy
node of the file's driver whose PCI listing holds the file's GPUs, spec from the output itself (model, count, PCIe
as the first GPU's maximum, ECC not required where N/A). One letter per GPU (P PASS, F FAIL, S SKIP, E ERROR)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.facts import NA
from nodegate.outcomes import Outcome
from nodegate.parsers.smi_text import parse_smi_text

from .fakes import PUBLIC_CHECKS, covers, node_of_smi_text, run, spec, spec_of_report, verdict_letters

TXT = Path(__file__).resolve().parents[1] / "fixtures" / "smi_text"
CHECKS = PUBLIC_CHECKS


def report(name: str):
    return parse_smi_text((TXT / f"public-gls-{name}.txt").read_text())


def node(name: str):
    return node_of_smi_text(report(name))


def own_spec(name: str):
    return spec_of_report(report(name))


def verdicts(name: str) -> dict[str, str]:
    return verdict_letters(node(name), own_spec(name), CHECKS)


def row(*letters: str) -> dict[str, str]:
    return dict(zip(CHECKS, letters))


EXPECTED = {
    #                INV1 INV2 PCIE1 PCIE2 CLK  ECC1 ECC2 MEM1 MEM2 GSP  CFG1 CFG2 CFG3 CFG4 PER4
    # A10, 550.90.12: idle Gen1 at P8
    "A10": row("P", "P", "P", "S", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "P"),
    # 4x A100-SXM4-80GB, 555.42.02: GPU 1 has a row remap pending (drain and reset before acceptance)
    "A100SXMx4": row("P", "PPPP", "PPPP", "PPPP", "PPPP", "PPPP", "PPPP", "PFPP", "SSSS", "PPPP", "PPPP", "PPPP",
                     "PPPP", "PPPP", "PPPP"),
    # GH200 480GB, 550.127.05: NVLink-C2C shows as Gen4 x1; one aggregate DRAM uncorrectable (remapped); the GPU's
    # current power limit 700 W under its 900 W default (module power capping)
    "GH200": row("P", "P", "P", "P", "P", "P", "F", "P", "S", "P", "P", "F", "P", "P", "P"),
    # GeForce GTX 680 (Kepler), 470.256.02: link, clocks event reasons, power limits N/A
    "GTX680": row("P", "P", "E", "E", "E", "S", "S", "S", "S", "S", "P", "E", "P", "P", "F"),
    "H100NVLx2": row("P", "PP", "PP", "PP", "PP", "PP", "PP", "PP", "SS", "PP", "PP", "PP", "PP", "PP", "PP"),
    "H100SXMx8": row("P", *(["P" * 8] * 7), "S" * 8, *(["P" * 8] * 6)),
    "H200": row("P", "P", "P", "P", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "P"),
    # L4, 550.90.07: x8 of x16 at P8 (width does not train down at idle)
    "L4": row("P", "P", "P", "F", "P", "P", "P", "P", "S", "P", "P", "P", "P", "P", "P"),
    # 2x RTX 4060 Ti (x8 boards), 550.54.14: GPU 0 at x4 under load
    "RTX4060Ti": row("P", "PP", "PP", "FP", "PP", "SS", "SS", "PP", "SS", "SS", "PP", "PP", "PP", "PP", "FF"),
    # RTX 5090, 570.124.06: x8 of x16 at P8
    "RTX5090": row("P", "P", "P", "F", "P", "S", "S", "S", "S", "P", "P", "P", "P", "P", "P"),
    # 8x V100-SXM2-16GB VM, 550.127.05: 'Host Max : Unknown Error' (was ERROR 'output unparsable' on both PCIe
    # checks of every GPU); two VBIOS versions 4:4
    "V100_x8": row("P", *(["P" * 8] * 6), "S" * 8, "P" * 8, "S" * 8, "F" * 8, *(["P" * 8] * 4)),
    # the other outputs of thamada/gls: no check but ECC (workstation/GeForce Ada boards with ECC Disabled: NG-ECC-001
    # names it once) and persistence mode disagrees with the catalog
    "A40x10": row("P", *(["P" * 10] * 2), "S" * 10, *(["P" * 10] * 4), "S" * 10, *(["P" * 10] * 6)),
    "L40S": row("P", "P", "P", "S", "P", "P", "P", "P", "S", "S", "P", "P", "P", "P", "P"),
    "RTX2000Ada": row("P", "P", "P", "S", "P", "F", "E", "P", "S", "S", "P", "P", "P", "P", "P"),
    "RTX3070": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
    "RTX3080": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
    "RTX3090": row("P", "PP", "PP", "SS", "PP", "SS", "SS", "SS", "SS", "PP", "PP", "PP", "PP", "PP", "PP"),
    "RTX4000Ada": row("P", "P", "P", "S", "P", "F", "E", "P", "S", "S", "P", "P", "P", "P", "P"),
    "RTX4090": row("P", "P" * 8, "P" * 8, "S" * 8, "P" * 8, "F" * 8, "E" * 8, "P" * 8, "S" * 8, "S" * 8,
                   *(["P" * 8] * 5)),
    "RTX6000Ada_x8": row("P", "P" * 8, "P" * 8, "S" * 8, "P" * 8, "F" * 8, "E" * 8, "P" * 8, "S" * 8, "S" * 8,
                         *(["P" * 8] * 5)),
    "RTX_A6000_x9": row("P", *(["P" * 9] * 2), "S" * 9, *(["P" * 9] * 4), "S" * 9, "S" * 9, *(["P" * 9] * 5)),
    "GTX1050Ti": row("P", "P", "P", "P", "P", "S", "S", "S", "S", "S", "P", "P", "P", "P", "F"),
}


@covers(*CHECKS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_verdicts_of_each_real_text_output(name):
    assert verdicts(name) == EXPECTED[name]


def test_every_public_text_fixture_parses_without_a_field_error():
    # (an `nvidia-smi -q -d <SECTIONS>` output, e.g. public-nhc-*-d-page-retirement, voids the sections it lacks)
    bad = {p.stem: errs for p in sorted(TXT.glob("public-*.txt")) for g in parse_smi_text(p.read_text()).gpus
           if (errs := {k: v for k, v in g.field_errors.items() if not v.startswith("section not collected")})}
    assert bad == {}


@covers("NG-PCIE-001", "NG-PCIE-002")
def test_host_max_unknown_error_is_an_unknown_field_not_an_unparsable_link():
    g = report("V100_x8").gpus[0]
    assert g.link.host_max_gen is NA and g.link.max_gen == 3 and g.link.max_width == 16
    r = run("NG-PCIE-001", node("V100_x8"), spec(gpu={"count": 8}))
    assert r.outcome is Outcome.PASS and r.observed == "Gen3 x16 max"


@covers("NG-PCIE-001", "NG-PCIE-002")
def test_gh200_c2c_link_is_not_judged_as_a_slot_by_its_sku_profile():
    r = run("NG-PCIE-001", node("GH200"), spec(gpu={"count": 1}))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("pcie.c2c=skip: GPU 0 (0000:dd:00.0, serial 1654523007052) is attached to its Grace "
                                "CPU by NVLink-C2C (GH200)")
