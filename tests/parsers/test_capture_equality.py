"""smi_q.out (nvidia-smi -q) and smi_qx.out (nvidia-smi -q -x) of the same H200 give the same
GpuFacts for every field both carry. Excluded: ``source`` (names the form) and the sampled
readings ``temperature_c``/``power_draw_w``/``graphics_clock_mhz`` (the two commands ran ~0.1 s apart:
36 C vs 35 C, 405 vs 375 MHz)."""

import dataclasses
from pathlib import Path

import pytest

from nodegate.facts import GpuFacts
from nodegate.parsers.smi_text import parse_smi_text
from nodegate.parsers.smi_xml import parse_smi_xml

CAP = Path(__file__).resolve().parents[1] / "captures" / "h200-vm-580.159.04"   # the repo's copy
SAMPLED = {"source", "temperature_c", "power_draw_w", "graphics_clock_mhz"}


@pytest.fixture(scope="module")
def pair():
    x = parse_smi_xml((CAP / "smi_qx.out").read_text())
    t = parse_smi_text((CAP / "smi_q.out").read_text())
    return x, t


FIELDS = [f.name for f in dataclasses.fields(GpuFacts)]


@pytest.mark.parametrize("name", [f for f in FIELDS if f not in SAMPLED])
def test_text_and_xml_agree(pair, name):
    x, t = pair
    assert getattr(t.gpus[0], name) == getattr(x.gpus[0], name)


def test_headers_agree(pair):
    x, t = pair
    assert (t.driver_version, t.cuda_version, t.attached_gpus) == (x.driver_version, x.cuda_version, x.attached_gpus)
    assert len(t.gpus) == len(x.gpus) == 1


def test_both_carry_the_mission_fields(pair):
    x, _ = pair
    g = x.gpus[0]
    assert (g.pci_bus_id, g.pci_device_id, g.architecture) == ("0000:00:06.0", "2335", "Hopper")
    assert (g.link.current_gen, g.link.max_gen, g.link.device_max_gen, g.link.current_width) == (5, 5, 5, 16)
    assert g.link.host_max_gen is not None and str(g.link.host_max_gen) == "N/A"
    assert [k for k, v in g.clocks_event_reasons.items() if v] == ["gpu_idle"]


def test_filtered_d_outputs_agree_with_full(pair):
    x, _ = pair
    g = x.gpus[0]
    ecc = parse_smi_text((CAP / "smi_q_ecc.out").read_text()).gpus[0]
    rr = parse_smi_text((CAP / "smi_q_rowremap.out").read_text()).gpus[0]
    perf = parse_smi_text((CAP / "smi_q_perf.out").read_text()).gpus[0]
    assert (ecc.ecc_volatile, ecc.ecc_aggregate, ecc.sram_threshold_exceeded) == (g.ecc_volatile, g.ecc_aggregate, False)
    assert rr.remapped_rows == g.remapped_rows
    assert (perf.pstate, perf.clocks_event_reasons) == (g.pstate, g.clocks_event_reasons)
