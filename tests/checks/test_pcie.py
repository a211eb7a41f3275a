"""PCIe link capability, trained link, upstream ports (checks.md "PCIe link")."""

from nodegate.facts import NA, PcieLink, SysfsLink
from nodegate.outcomes import Outcome

from .fakes import BUS, covers, gpu, healthy, reasons, run, spec

BUSY = dict(pstate="P0", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0)
IDLE = dict(pstate="P8", clocks_event_reasons=reasons(gpu_idle=True), clocks_event_reasons_mask=0x1)


def node(g, sample=True, **changes):
    """Healthy node with GPU ``g`` whose clocks sample (the probe's second look) agrees with it;
    ``sample=False``: no sample gathered."""
    from nodegate.facts import GpuFacts
    if not sample:
        return healthy(gpus=[g], **changes).without("clocks_samples")
    s = GpuFacts(index=g.index, pci_bus_id=g.pci_bus_id, pstate=g.pstate,
                 clocks_event_reasons_mask=g.clocks_event_reasons_mask, source="smi_csv")
    return healthy(gpus=[g], clocks_samples=[{g.index: s}], **changes)


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
    # a device id not in the SKU profiles (the Quadro P2000 used here before is profiled since issue 21)
    r = run("NG-PCIE-001", healthy(gpus=[gpu(pci_device_id="1c82", name="GeForce GTX 1050 Ti", architecture="Pascal")]))
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
    r = run("NG-PCIE-002", node(g, sample=False))
    assert r.outcome is Outcome.ERROR
    assert "cannot tell busy from idle" in r.message


@covers("NG-PCIE-002")
def test_unknown_sku_compares_with_gpu_max():
    g = gpu(pci_device_id="1c82", name="GeForce GTX 1050 Ti", architecture="Pascal", link=link(3, 8, 3, 16), **BUSY)
    r = run("NG-PCIE-002", node(g))
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
    r = run("NG-PCIE-002", node(g))
    assert r.outcome is Outcome.FAIL
    assert "trained link Gen4 x16 below Gen5 x16 while busy (P2, GpuIdle not active)" in r.message


@covers("NG-PCIE-002")
def test_p2_with_gpuidle_unknown_is_error_not_idle():
    g = gpu(link=link(4, 16), pstate="P2", clocks_event_reasons={}, clocks_event_reasons_mask=None)
    r = run("NG-PCIE-002", node(g, sample=False))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("cannot tell busy from idle (P2, GpuIdle unknown)")


@covers("NG-PCIE-002")
def test_p8_with_gpuidle_unknown_counts_as_idle():
    g = gpu(link=link(4, 16), pstate="P8", clocks_event_reasons={}, clocks_event_reasons_mask=None)
    r = run("NG-PCIE-002", healthy(gpus=[g]))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("pcie.idle=not_verified:")


@covers("NG-PCIE-002")
def test_p8_with_gpuidle_explicitly_not_active_is_unverified_not_busy():
    # Changed by issue 21 (item 1). The old rule read an explicit "GpuIdle Not Active" as busy
    # whatever the P-state and FAILed this link. Real GeForce and workstation boards report exactly
    # that at P8 with 0 % utilisation (telegraf's rtx-3090-v13 and pro-6000-maxq-blackwell-v13
    # fixtures, tests/fixtures/smi_xml/PUBLIC_SOURCES.md): P8 says idle, the bit says busy, so the evidence
    # disagrees and the link is unverified at idle (pcie.idle policy), never a FAIL.
    g = gpu(link=link(4, 16), pstate="P8", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0)
    r = run("NG-PCIE-002", node(g))
    assert r.outcome is Outcome.SKIP
    assert r.observed == "Gen4 x16 at P8, GpuIdle not active"
    assert r.message.startswith("pcie.idle=not_verified: ")
    assert "the activity evidence disagrees (idle: P8, sample 1: P8; busy: GpuIdle not active, sample 1: GpuIdle " \
           "not active)" in r.message


@covers("NG-PCIE-003")
def test_upstream_port_link_unreadable_is_error():
    links = [SysfsLink(BUS, "gpu", None, "0x2335", 5, 16, 5, 16),
             SysfsLink("0000:00:01.0", "upstream", BUS, "0x1234", 5, 16, 5, 16),
             SysfsLink("0000:00:02.0", "upstream", BUS, "0x1234", None, 16, None, 16)]
    r = run("NG-PCIE-003", healthy(pci_links=links))
    assert r.outcome is Outcome.ERROR
    assert r.message.endswith("upstream port link unreadable: 0000:00:02.0 Gennot reported x16")
    assert r.observed == "0000:00:01.0 Gen5 x16; 0000:00:02.0 Gennot reported x16"


# ---------------------------------------------------------------- issue 21: activity from all the evidence
@covers("NG-PCIE-002")
def test_gen_below_spec_with_all_signals_idle_skips():
    g = gpu(link=link(1, 16), utilization_gpu=0, graphics_clock_mhz=345, max_graphics_clock_mhz=1980, **IDLE)
    r = run("NG-PCIE-002", node(g))
    assert r.outcome is Outcome.SKIP
    assert "activity: idle (idle: P8, GpuIdle active, utilization 0 %, graphics clock 345 of 1980 MHz, " \
           "sample 1: P8, sample 1: GpuIdle active)" in r.evidence


@covers("NG-PCIE-002")
def test_gen_below_spec_with_all_signals_busy_fails():
    g = gpu(link=link(4, 16), utilization_gpu=97, graphics_clock_mhz=1980, max_graphics_clock_mhz=1980, **BUSY)
    r = run("NG-PCIE-002", node(g))
    assert r.outcome is Outcome.FAIL
    assert "trained link Gen4 x16 below Gen5 x16 while busy (P0, GpuIdle not active)" in r.message


@covers("NG-PCIE-002")
def test_second_sample_disagreeing_with_the_first_is_unverified_not_fail():
    # nvidia-smi -q -x saw work (P0, GpuIdle not active); the probe's clocks sample a moment later
    # saw the GPU idle: a P-state change between the two, not a verdict
    g = gpu(link=link(4, 16), **BUSY)
    from nodegate.facts import GpuFacts
    s = GpuFacts(index=0, pci_bus_id=BUS, pstate="P8", clocks_event_reasons_mask=0x1, source="smi_csv")
    r = run("NG-PCIE-002", healthy(gpus=[g], clocks_samples=[{0: s}]))
    assert r.outcome is Outcome.SKIP
    assert "disagrees (idle: sample 1: P8, sample 1: GpuIdle active; busy: GpuIdle not active)" in r.message


@covers("NG-PCIE-002")
def test_disagreeing_evidence_under_pcie_idle_fail_is_error_never_fail():
    g = gpu(link=link(1, 16), pstate="P8", clocks_event_reasons=reasons(), clocks_event_reasons_mask=0x0,
            utilization_gpu=0)
    r = run("NG-PCIE-002", node(g), spec(pcie={"idle": "fail"}))
    assert r.outcome is Outcome.ERROR
    assert "cannot tell busy from idle: the activity evidence disagrees" in r.message


@covers("NG-PCIE-002")
def test_utilization_alone_decides_when_nothing_else_is_reported():
    g = gpu(link=link(3, 16), pstate=None, clocks_event_reasons={}, clocks_event_reasons_mask=None,
            utilization_gpu=88)
    r = run("NG-PCIE-002", node(g, sample=False))
    assert r.outcome is Outcome.FAIL
    assert "while busy" in r.message


@covers("NG-PCIE-002")
def test_width_below_spec_fails_at_idle():
    # issue 21 item 7: speed drops at idle, width does not (x8 of x16: bifurcated slot, riser)
    g = gpu(link=link(1, 8), utilization_gpu=0, **IDLE)
    r = run("NG-PCIE-002", node(g))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen1 x8 at P8, GpuIdle active"
    assert "trained link width x8 below x16 (Gen1, expected Gen5 x16) at P8, GpuIdle active; link width does " \
           "not train down at idle" in r.message


@covers("NG-PCIE-002")
def test_width_below_spec_at_idle_skips_when_spec_allows_it():
    g = gpu(link=link(1, 8), **IDLE)
    r = run("NG-PCIE-002", node(g), spec(pcie={"width_at_idle": "not_verified"}))
    assert r.outcome is Outcome.SKIP
    assert r.message.startswith("pcie.width_at_idle=not_verified: ")


@covers("NG-PCIE-002")
def test_narrow_slot_named_in_spec_width_passes():
    g = gpu(link=link(5, 8), **BUSY)
    r = run("NG-PCIE-002", node(g), spec(pcie={"width": 8}))
    assert r.outcome is Outcome.PASS
    assert r.expected == "Gen5 x8 (spec pcie.gen/pcie.width + SKU profile 2335 (H200))"
