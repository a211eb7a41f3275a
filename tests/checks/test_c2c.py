"""Issue 39.5: on Grace systems (GH200, GB200) the GPU is attached to its CPU by NVLink-C2C, not a
PCIe slot: the PCIe link checks SKIP naming pcie.c2c (NVIDIA's Grace Hopper Superchip and GB200
NVL72 architecture documents: the GPU-CPU link is NVLink-C2C, 900 GB/s), unless the spec asks to
judge the link nvidia-smi reports (pcie.c2c=judge, or pcie.gen/width). A GPU on a PCIe slot is
judged as before."""

from __future__ import annotations

import pytest

from nodegate.outcomes import Outcome

from .fakes import gpu, healthy, run, spec

GRACE = [("NVIDIA GH200 480GB", "2342", "Hopper"), ("NVIDIA GB200", "2941", "Blackwell")]


@pytest.mark.parametrize("name, dev, arch", GRACE)
@pytest.mark.parametrize("check", ["NG-PCIE-001", "NG-PCIE-002"])
def test_pcie_link_checks_skip_naming_pcie_c2c_on_grace(name, dev, arch, check):
    f = healthy(gpus=[gpu(name=name, pci_device_id=dev, architecture=arch)])
    r = run(check, f)
    assert r.outcome is Outcome.SKIP, r
    assert r.message.startswith("pcie.c2c=skip:") and "attached to its Grace CPU by NVLink-C2C" in r.message


@pytest.mark.parametrize("name, dev, arch", GRACE)
def test_the_spec_can_judge_the_reported_link(name, dev, arch):
    f = healthy(gpus=[gpu(name=name, pci_device_id=dev, architecture=arch)])
    assert run("NG-PCIE-001", f, spec(pcie={"c2c": "judge", "gen": 5, "width": 16})).outcome is Outcome.PASS
    assert run("NG-PCIE-001", f, spec(pcie={"gen": 6, "width": 16})).outcome is Outcome.FAIL
    r = run("NG-PCIE-001", f, spec(pcie={"c2c": "judge"}))
    assert r.outcome is Outcome.ERROR and "no expected PCIe link" in r.message   # judge, but against what?


def test_a_pcie_board_is_judged_as_before():
    f = healthy(gpus=[gpu(name="NVIDIA B200", pci_device_id="2901", architecture="Blackwell")])
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
