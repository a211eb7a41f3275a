"""ECC counters that contradict themselves are unreadable, never a sum of whatever is there:
a second (zeroed) ECC block, a counter given twice, a negative count, a counter nested in another
element make the GPU's ECC facts ERROR (``field_errors``), while the intact block still sums."""

from __future__ import annotations

import pytest

from nodegate.parsers.smi_xml import parse_smi_xml

VOL = ("<volatile><sram_correctable>0</sram_correctable><sram_uncorrectable_parity>0</sram_uncorrectable_parity>"
       "<sram_uncorrectable_secded>0</sram_uncorrectable_secded><dram_correctable>0</dram_correctable>"
       "<dram_uncorrectable>{dram}</dram_uncorrectable>{extra}</volatile>")
AGG = VOL.replace("volatile", "aggregate")


def _xml(errs: str) -> str:
    return ('<nvidia_smi_log><driver_version>580.159.04</driver_version><attached_gpus>1</attached_gpus>'
            '<gpu id="00000000:19:00.0"><product_name>NVIDIA H200</product_name>'
            f"<ecc_mode><current_ecc>Enabled</current_ecc><pending_ecc>Enabled</pending_ecc></ecc_mode>{errs}</gpu>"
            "</nvidia_smi_log>")


def _gpu(errs: str):
    return parse_smi_xml(_xml(errs)).gpus[0]


def test_the_intact_block_sums_its_uncorrectable_counts():
    g = _gpu("<ecc_errors>" + VOL.format(dram=2, extra="") + AGG.format(dram=2, extra="") + "</ecc_errors>")
    assert not g.field_errors
    assert g.ecc_volatile.uncorrectable_total == 2


@pytest.mark.parametrize("errs, why", [
    ("<ecc_errors>" + VOL.format(dram=0, extra="") + "</ecc_errors><ecc_errors>" + VOL.format(dram=2, extra="")
     + "</ecc_errors>", "ecc_errors given more than once"),
    ("<ecc_errors>" + VOL.format(dram=2, extra="<dram_uncorrectable>0</dram_uncorrectable>") + "</ecc_errors>",
     "dram_uncorrectable given more than once"),
    ("<ecc_errors>" + VOL.format(dram=-2, extra="") + "</ecc_errors>", "negative error count -2"),
    ("<ecc_errors>" + VOL.format(dram=0, extra="<x><dram_uncorrectable>2</dram_uncorrectable></x>")
     + "</ecc_errors>", "a counter with child elements"),
], ids=["second-block", "counter-twice", "negative", "nested"])
def test_contradictory_counters_are_unreadable(errs, why):
    g = _gpu(errs)
    assert any(why in e for e in g.field_errors.values()), g.field_errors
