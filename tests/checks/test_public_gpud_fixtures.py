"""leptonai/gpud's test data not used before (tests/fixtures/{ibstat,lspci}/public-gpud-*.txt; sources in
tests/fixtures/smi_xml/PUBLIC_SOURCES.md): ibstat of an 8x HDR A100 node and an 8x NDR H100 node (each with an
Ethernet bond function), and `lspci -nn` of an Azure 8x A100 SXM4 VM (six NVSwitch bridges, PCI domains) and of a
QEMU VM with one A10."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.altkeys import gpus_from_lspci
from nodegate.outcomes import Outcome
from nodegate.parsers import parse

from .fakes import covers, healthy, pci_gpus, run, spec

FIX = Path(__file__).resolve().parents[1] / "fixtures"


@covers("NG-IB-001")
@pytest.mark.parametrize("name,rate", [("a100-8-hdr-active-bond-ethernet", 200),
                                       ("h100-8-ndr-active-bond-ethernet", 400)])
def test_ibstat_eight_active_ports_pass_the_ethernet_bond_ignored(name, rate):
    ports = parse("ibstat", (FIX / "ibstat" / f"public-gpud-{name}.txt").read_text())
    assert [p.link_layer for p in ports].count("InfiniBand") == 8 and len(ports) == 9
    f = healthy(ib_ports=[], ibstat_ports=ports)     # ibstat decides where sysfs lists nothing
    for sp in (spec(ib={"ports": 8, "rate_gbps": rate}), spec()):
        r = run("NG-IB-001", f, sp)
        assert (r.outcome, r.observed) == (Outcome.PASS, f"8/8 port(s) Active/LinkUp at {rate} Gb/s; "
                                                         "1 Ethernet-layer ignored")
    r = run("NG-IB-001", f, spec(ib={"ports": 8, "rate_gbps": 2 * rate}))
    assert r.outcome is Outcome.FAIL


@covers("NG-INV-001")
def test_lspci_nn_of_an_azure_a100_vm_lists_8_gpus_not_the_nvswitch_bridges():
    gs = gpus_from_lspci(parse("lspci", (FIX / "lspci" / "public-gpud-azure-a100x8-vm-nn-nvswitch-bridges.txt")
                               .read_text()))
    assert [g.pci_bus_id for g in gs] == [f"000{c}:00:00.0" for c in "1234bcde"]
    assert {g.pci_device_id for g in gs} == {"20b2"}
    f = healthy(gpus=gs, driver_gpus=[], gpu_source="lspci", pci_links=pci_gpus(gs)).without("clocks_samples")
    assert run("NG-INV-001", f, spec(gpu={"count": 8})).outcome is Outcome.PASS
    assert run("NG-INV-001", f, spec(gpu={"count": 9})).outcome is Outcome.FAIL


def test_lspci_nn_of_a_qemu_vm_lists_its_one_a10():
    (g,) = gpus_from_lspci(parse("lspci", (FIX / "lspci" / "public-gpud-a10-qemu-vm-nn.txt").read_text()))
    assert (g.pci_bus_id, g.pci_device_id) == ("0000:06:00.0", "2236")
