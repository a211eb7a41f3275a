"""Issue 39.5: ``nvidia-smi -q -d <SECTIONS>`` prints only the sections asked for. A check whose
section is absent is ERROR "section not collected", never a FAIL of "model None"; a check whose
section is there is judged. Real outputs: the H200 node's own `-q -d PERFORMANCE`, `-q -d ECC` and
`-q -d ROW_REMAPPER` captures (tests/fixtures/smi_text/h200_580_d_*.txt, driver 580.159.04)."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.outcomes import Outcome
from nodegate.parsers.smi_text import parse_smi_text

from .fakes import healthy, run, spec

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "smi_text"


def node(section: str):
    rep = parse_smi_text((FIX / f"h200_580_d_{section}.txt").read_text())
    return healthy(gpus=rep.gpus, driver_gpus=[]).without("clocks_samples")


@pytest.mark.parametrize("section", ["performance", "ecc", "row_remapper"])
def test_the_model_check_on_a_sectioned_output_is_error_section_not_collected(section):
    r = run("NG-INV-002", node(section), spec(gpu={"model": "H200"}))
    assert r.outcome is Outcome.ERROR, r
    assert "name: section not collected" in r.message and "no 'Product Name' section" in r.message
    assert "None" not in r.message


def test_what_the_section_holds_is_judged():
    assert run("NG-MEM-001", node("row_remapper")).outcome is Outcome.PASS
    r = run("NG-MEM-001", node("performance"))
    assert r.outcome is Outcome.ERROR and "remapped_rows: section not collected" in r.message
    assert run("NG-ECC-001", node("ecc")).outcome is Outcome.PASS
    r = run("NG-PCIE-001", node("ecc"))
    assert r.outcome is Outcome.ERROR and "section not collected" in r.message and "'PCI' section" in r.message
