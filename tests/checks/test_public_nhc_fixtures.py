"""Azure/azurehpc-health-checks' test data (tests/fixtures/{smi_text,nvlink_status}/public-nhc-*.txt; sources in
tests/fixtures/smi_xml/PUBLIC_SOURCES.md): a real `nvidia-smi -q -d PAGE_RETIREMENT` of an 8-GPU Azure VM (535.86.10,
PCI domains 0001-0008), the same output with the retired-page counts the NHC authors edited in to make their own
checks fail, and one A100's `nvidia-smi nvlink -s` healthy and with every link down."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nodegate.outcomes import Outcome
from nodegate.parsers import parse
from nodegate.parsers.smi_text import parse_smi_text

from .fakes import covers, gpu, healthy, pci_gpus, run, spec

FIX = Path(__file__).resolve().parents[1] / "fixtures"
PAGES = "public-nhc-8gpu-535.86.10-d-page-retirement"


def pages_node(name: str):
    rep = parse_smi_text((FIX / "smi_text" / f"{name}.txt").read_text())
    assert rep.driver_version == "535.86.10" and len(rep.gpus) == 8
    return healthy(gpus=rep.gpus, driver_gpus=[], pci_links=pci_gpus(rep.gpus),
                   nvidia_module_version=rep.driver_version).without("clocks_samples")


@covers("NG-MEM-002")
def test_real_page_retirement_section_of_8_gpus_passes():
    f = pages_node(PAGES)
    assert [g.pci_bus_id for g in f.gpus] == [f"000{i}:00:00.0" for i in range(1, 9)]
    assert [run("NG-MEM-002", f, spec(gpu={"count": 8}), gpu=i).outcome for i in range(8)] == [Outcome.PASS] * 8


@covers("NG-MEM-002")
def test_edited_retired_page_counts_fail_by_the_catalog_limits():
    # checks.md "Retired pages (pre-Ampere)": pending = FAIL; total retired >= 63 or DBE-retired > 15 = FAIL
    f = pages_node(PAGES + "-edited-counts")
    msgs = [run("NG-MEM-002", f, spec(gpu={"count": 8}), gpu=i) for i in range(8)]
    assert "".join(r.outcome.name[0] for r in msgs) == "FFPFPFPF"
    assert msgs[0].message == "GPU 0 (0001:00:00.0): 65 retired pages >= 63"            # 60 SBE + 5 DBE
    assert msgs[1].message.startswith("GPU 1 (0002:00:00.0): page retirement pending (reboot/reset required); "
                                      "63 retired pages >= 63; 61 DBE retired pages > 15")
    assert msgs[3].message.startswith("GPU 3 (0004:00:00.0): page retirement pending")   # 6 SBE, pending


@covers("NG-MEM-001", "NG-PCIE-001")
def test_a_page_retirement_only_output_leaves_the_other_checks_unevaluated():
    # issue 39.5: `-q -d PAGE_RETIREMENT` holds no PCI / remapped rows section: ERROR naming it, never PASS/FAIL
    f = pages_node(PAGES)
    for cid in ("NG-PCIE-001", "NG-MEM-001"):
        r = run(cid, f, spec(gpu={"count": 8}), gpu=0)
        assert r.outcome is Outcome.ERROR and "section not collected" in r.message, (cid, r.message)


def a100(links):
    (g,) = links
    return healthy(gpus=[gpu(index=0, name="NVIDIA A100-SXM4-80GB", pci_device_id="20b2", uuid=g.uuid,
                             architecture="Ampere")], driver_gpus=[],
                   nvlink_status=[replace(g, index=0)], nvlink_errors=[replace(g, index=0)])


@covers("NG-NVL-001")
def test_a100_12_links_at_25_pass():
    links = parse("nvlink_status", (FIX / "nvlink_status" / "public-nhc-a100-gpu7-12-links.txt").read_text())
    assert (links[0].index, len(links[0].links)) == (7, 12)
    assert run("NG-NVL-001", a100(links), spec(gpu={"count": 1})).outcome is Outcome.PASS


@covers("NG-NVL-001")
def test_a100_all_links_inactive_fails():
    # 'NVML: Unable to retrieve NVLink information as all links are inactive' on an A100 SXM4 (12 links by its SKU
    # profile): the driver reports the links and every one is down, a violation of NG-NVL-001's rule (every
    # NVLink the SKU has is up), not missing evidence: FAIL naming the driver's words. The error counters of
    # those links cannot be read: NG-NVL-002 stays ERROR, never PASS
    links = parse("nvlink_status", (FIX / "nvlink_status" / "public-nhc-a100-gpu6-all-links-inactive.txt").read_text())
    assert (links[0].status, links[0].links) == ("unsupported", [])
    r = run("NG-NVL-001", a100(links), spec(gpu={"count": 1}))
    assert r.outcome is Outcome.FAIL and "all links are inactive" in r.message and "12 links" in r.message
    r2 = run("NG-NVL-002", a100(links), spec(gpu={"count": 1}))
    assert r2.outcome is Outcome.ERROR
