"""PCIe link capability, trained link, upstream ports (checks.md "PCIe link")."""

from nodegate.facts import NA, PcieLink, SysfsLink
from nodegate.outcomes import Outcome

from .fakes import BUS, covers, gpu, healthy, reasons, run, spec

BUSY = dict(pstate="P0", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0)
IDLE = dict(pstate="P8", clocks_event_reasons=reasons(gpu_idle=True), clocks_event_reasons_mask=0x1)


def link(cur_gen, cur_w, max_gen=5, max_w=16, host=NA):
    return PcieLink(current_gen=cur_gen, max_gen=max_gen, device_max_gen=5, host_max_gen=host, current_width=cur_w,
                    max_width=max_w)


@covers("NG-PCIE-001")
def test_capability_meets_sku_profile_passes():
    r = run("NG-PCIE-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "Gen5 x16 max"
    assert r.expected == "Gen5 x16 (SKU profile 2335 (H200))"


@covers("NG-PCIE-001")
def test_host_max_na_in_vm_is_not_a_failure():
    r = run("NG-PCIE-001", healthy(gpus=[gpu(link=link(5, 16, host=NA))]))
    assert r.outcome is Outcome.PASS


@covers("NG-PCIE-001")
def test_gen5_gpu_in_gen4_slot_fails():
    r = run("NG-PCIE-001", healthy(gpus=[gpu(link=link(4, 16, max_gen=4, host=4))]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen4 x16 max"


@covers("NG-PCIE-001")
def test_spec_overrides_sku_profile():
    r = run("NG-PCIE-001", healthy(gpus=[gpu(link=link(4, 16, max_gen=4))]), spec(pcie={"gen": 4}))
    assert r.outcome is Outcome.PASS
    assert r.expected == "Gen4 x16 (spec pcie.gen/pcie.width + SKU profile 2335 (H200))"


@covers("NG-PCIE-001")
def test_unknown_sku_without_spec_is_error():
    r = run("NG-PCIE-001", healthy(gpus=[gpu(pci_device_id="1c30", name="Quadro P2000", architecture="Pascal")]))
    assert r.outcome is Outcome.ERROR
    assert "set pcie.gen/pcie.width" in r.message


@covers("NG-PCIE-002")
def test_trained_link_at_spec_passes():
    r = run("NG-PCIE-002", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "Gen5 x16 at P0, GpuIdle active"


@covers("NG-PCIE-002")
def test_trained_below_spec_while_busy_fails():
    r = run("NG-PCIE-002", healthy(gpus=[gpu(link=link(5, 8), **BUSY)]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen5 x8 at P0, GpuIdle not active"
    assert "GPU 0 (0000:00:06.0, serial 1650000000001)" in r.message


@covers("NG-PCIE-002")
def test_trained_below_spec_while_idle_skips_not_verified():
    r = run("NG-PCIE-002", healthy(gpus=[gpu(link=link(1, 16), **IDLE)]))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "Gen1 x16 at P8, GpuIdle active"
    assert r.message.startswith("pcie.idle=not_verified")


@covers("NG-PCIE-002")
def test_trained_below_spec_while_idle_fails_when_spec_idle_fail():
    r = run("NG-PCIE-002", healthy(gpus=[gpu(link=link(1, 16), **IDLE)]), spec(pcie={"idle": "fail"}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen1 x16 at P8, GpuIdle active"


@covers("NG-PCIE-002")
def test_p0_with_gpuidle_active_counts_as_idle():
    r = run("NG-PCIE-002", healthy(gpus=[gpu(link=link(2, 16))]))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "Gen2 x16 at P0, GpuIdle active"


@covers("NG-PCIE-002")
def test_busy_idle_unknown_below_spec_is_error():
    g = gpu(link=link(3, 16), pstate="P0", clocks_event_reasons={}, clocks_event_reasons_mask=None)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.ERROR
    assert "cannot tell busy from idle" in r.message


@covers("NG-PCIE-002")
def test_unknown_sku_compares_with_gpu_max():
    g = gpu(pci_device_id="1c30", name="Quadro P2000", architecture="Pascal", link=link(3, 8, 3, 16), **BUSY)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert r.expected == "Gen3 x16 (the GPU's max link (no spec/SKU value))"


@covers("NG-PCIE-003")
def test_upstream_port_at_gpu_link_passes():
    r = run("NG-PCIE-003", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "0000:00:01.0 Gen5 x16"


@covers("NG-PCIE-003")
def test_upstream_port_below_gpu_link_fails_naming_port():
    links = [SysfsLink(BUS, "gpu", None, "0x2335", 5, 16, 5, 16),
             SysfsLink("0000:01:00.0", "upstream", BUS, "0x1234", 4, 8, 5, 16),
             SysfsLink("0000:00:01.0", "upstream", BUS, "0x1234", 5, 16, 5, 16)]
    r = run("NG-PCIE-003", healthy(pci_links=links))
    assert r.outcome is Outcome.FAIL
    assert "upstream port 0000:01:00.0 trained Gen4 x8 below the GPU link Gen5 x16" in r.message
    assert r.observed == "0000:01:00.0 Gen4 x8; 0000:00:01.0 Gen5 x16"


@covers("NG-PCIE-003")
def test_upstream_unreadable_root_complex_passes_with_observation():
    # capture h200-vm: the parent is pci0000:00 without link attributes
    links = [SysfsLink(BUS, "gpu", None, "0x2335", 5, 16, 5, 16),
             SysfsLink("pci0000:00", "upstream", BUS, None, None, None, None, None)]
    r = run("NG-PCIE-003", healthy(pci_links=links))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("no upstream port with link attributes")


@covers("NG-PCIE-003")
def test_gpu_not_in_sysfs_listing_is_error():
    r = run("NG-PCIE-003", healthy(pci_links=[]))
    assert r.outcome is Outcome.ERROR


@covers("NG-PCIE-003")
def test_upstream_check_disabled_skips():
    r = run("NG-PCIE-003", healthy(), spec(pcie={"check_upstream": False}))
    assert r.outcome is Outcome.SKIP
    assert "pcie.check_upstream=false" in r.message


@covers("NG-PCIE-002")
def test_p2_with_gpuidle_not_active_is_busy_and_fails():
    g = gpu(link=link(4, 16), pstate="P2", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert "trained link Gen4 x16 below Gen5 x16 while busy (P2, GpuIdle not active)" in r.message


@covers("NG-PCIE-002")
def test_p2_with_gpuidle_unknown_is_error_not_idle():
    g = gpu(link=link(4, 16), pstate="P2", clocks_event_reasons={}, clocks_event_reasons_mask=None)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("cannot tell busy from idle (P2, GpuIdle unknown)")


@covers("NG-PCIE-002")
def test_p8_with_gpuidle_unknown_counts_as_idle():
    g = gpu(link=link(4, 16), pstate="P8", clocks_event_reasons={}, clocks_event_reasons_mask=None)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("pcie.idle=not_verified:")


@covers("NG-PCIE-002")
def test_p8_with_gpuidle_explicitly_not_active_is_busy():
    g = gpu(link=link(4, 16), pstate="P8", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.FAIL
    assert "while busy (P8, GpuIdle not active)" in r.message


@covers("NG-PCIE-003")
def test_upstream_port_link_unreadable_is_error():
    links = [SysfsLink(BUS, "gpu", None, "0x2335", 5, 16, 5, 16),
             SysfsLink("0000:00:01.0", "upstream", BUS, "0x1234", 5, 16, 5, 16),
             SysfsLink("0000:00:02.0", "upstream", BUS, "0x1234", None, 16, None, 16)]
    r = run("NG-PCIE-003", healthy(pci_links=links))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("upstream port link unreadable: 0000:00:02.0 Gennot reported x16")
    assert r.observed == "0000:00:01.0 Gen5 x16; 0000:00:02.0 Gennot reported x16"
