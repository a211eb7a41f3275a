"""NG-NVL-001 (NVLink links) and NG-NVL-002 (NVLink errors): one test per rule and per trap."""

from dataclasses import replace

from nodegate.facts import NA, GpuNvLinks, NvLink
from nodegate.outcomes import Outcome

from .fakes import covers, gpu, healthy, missing, nvlinks, run, spec

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR


def h100(i=0, **kw):
    return gpu(i, bus=f"0000:{0x19 + i:02x}:00.0", name="NVIDIA H100 80GB HBM3", pci_device_id="2330",
               uuid=f"GPU-5e1f0c3a-0d2b-4c7e-9a61-2f3b8d4e6a1{i}", **kw)


def node(**kw):
    kw.setdefault("gpus", [h100()])
    return healthy(driver_gpus=[], **kw)


@covers("NG-NVL-001")
def test_eighteen_links_at_26562_pass():
    r = run("NG-NVL-001", node())
    assert r.outcome is P
    assert r.observed == "18/18 links up at 26.562 GB/s"
    assert r.expected == "18 links up at >= 26.562 GB/s (SKU profile 2330 (H100 80GB HBM3))"


@covers("NG-NVL-001")
def test_inactive_link_fails_naming_it():
    f = node(nvlink_status=[nvlinks(down=(3, 11))])
    r = run("NG-NVL-001", f)
    assert r.outcome is F
    assert "links 3, 11 <inactive>" in r.message
    assert r.observed == "16/18 links up at 26.562 GB/s"


@covers("NG-NVL-001")
def test_link_below_sku_speed_fails_and_a_faster_one_passes():
    st = nvlinks()
    st.links[5].speed_gbps = 13.281
    r = run("NG-NVL-001", node(nvlink_status=[st]))
    assert r.outcome is F
    assert "link 5 at 13.281 GB/s below 26.562 GB/s" in r.message
    # a B200 printing NVLink5's 53.125 meets the SKU's 50 GB/s (a minimum, not an equality)
    b200 = healthy(gpus=[gpu(0, name="NVIDIA B200", pci_device_id="2901", architecture="Blackwell")], driver_gpus=[],
                   nvlink_status=[nvlinks(gbps=53.125)])
    assert run("NG-NVL-001", b200).outcome is P


@covers("NG-NVL-001")
def test_fewer_links_than_the_sku_fails():
    r = run("NG-NVL-001", node(nvlink_status=[nvlinks(n=12)]))
    assert r.outcome is F
    assert "only 12 of 18 links reported" in r.message


@covers("NG-NVL-001", "NG-NVL-002")
def test_pcie_board_without_nvlink_skips_by_sku_and_spec():
    a10 = healthy(gpus=[gpu(0, name="NVIDIA A10", pci_device_id="2236", architecture="Ampere")], driver_gpus=[],
                  nvlink_status=[], nvlink_errors=[])
    r = run("NG-NVL-001", a10)
    assert r.outcome is S and r.message.startswith("nvlink.links=0: ")
    assert run("NG-NVL-002", a10).outcome is S
    # the spec can say the same for an H200 in a VM
    assert run("NG-NVL-001", node(nvlink_status=[]), spec(nvlink={"links": 0})).outcome is S


@covers("NG-NVL-001", "NG-NVL-002")
def test_no_nvlink_reported_while_the_sku_has_links_is_error_never_pass():
    # the H200 VM capture: nvidia-smi nvlink -s printed nothing (rc 0)
    f = node(nvlink_status=[], nvlink_errors=[])
    r = run("NG-NVL-001", f)
    assert r.outcome is E
    assert "no NVLink reported (nvidia-smi nvlink -s did not list this GPU)" in r.message
    assert "set nvlink.links: 0" in r.message
    assert run("NG-NVL-002", f).outcome is E


@covers("NG-NVL-001")
def test_unknown_sku_without_spec_is_error():
    f = healthy(gpus=[gpu(0, name="NVIDIA X", pci_device_id="9999", architecture="Hopper")], driver_gpus=[])
    r = run("NG-NVL-001", f)
    assert r.outcome is E and "set nvlink.links" in r.message
    assert run("NG-NVL-001", f, spec(nvlink={"links": 18, "speed_gbps": 26.562})).outcome is P


@covers("NG-NVL-001", "NG-NVL-002")
def test_mig_refusal_skips_by_default_and_errors_when_asked():
    mig = GpuNvLinks(index=0, uuid=h100().uuid, status="mig",
                     message="Nvlink queries are not supported for Devices in MIG mode")
    f = node(gpus=[h100(mig_mode_current=True)], nvlink_status=[mig], nvlink_errors=[mig])
    r = run("NG-NVL-001", f)
    assert r.outcome is S
    assert r.message.startswith("nvlink.mig=not_verified: ") and "MIG mode" in r.message
    assert run("NG-NVL-002", f).outcome is S
    assert run("NG-NVL-001", f, spec(nvlink={"mig": "error"})).outcome is E


@covers("NG-NVL-001")
def test_gpus_matched_by_uuid_not_position():
    g0, g1 = h100(0), h100(1)
    st = [nvlinks(index=0, uuid=g1.uuid, down=(0,)), nvlinks(index=1, uuid=g0.uuid)]  # listed crosswise
    f = node(gpus=[g0, g1], nvlink_status=st)
    assert run("NG-NVL-001", f, gpu=0).outcome is P
    assert run("NG-NVL-001", f, gpu=1).outcome is F


@covers("NG-NVL-001", "NG-NVL-002")
def test_nvml_is_the_source_where_the_node_has_it():
    bus = h100().pci_bus_id
    nv = GpuNvLinks(index=0, bus_id=bus, source="nvml",
                    links=[NvLink(k, True, 26.562, {"replay": 0, "recovery": 0, "crc_flit": 5 if k == 3 else 0,
                                                   "crc_data": 0}) for k in range(18)])
    f = node(nvml_nvlinks=[nv], nvlink_status=missing("nvlink_status"), nvlink_errors=missing("nvlink_errors"))
    r = run("NG-NVL-001", f)
    assert r.outcome is P and r.evidence_keys == ("nvml.json",)
    r = run("NG-NVL-002", f)
    assert r.outcome is F and "link 3 CRC 5" in r.message


@covers("NG-NVL-001")
def test_smi_failure_is_error_naming_it():
    f = node(nvlink_status=missing("nvlink_status", "nvidia-smi failed (driver_library_mismatch): Failed to initialize"))
    r = run("NG-NVL-001", f)
    assert r.outcome is E and "driver_library_mismatch" in r.message


@covers("NG-NVL-002")
def test_zero_counters_pass_and_each_counter_has_its_threshold():
    assert run("NG-NVL-002", node()).observed == "18 links: replay 0, recovery 0, CRC 0"
    bad = nvlinks(errors={3: {"replay": 0, "recovery": 1, "crc": 0}, 7: {"replay": 2, "recovery": 0, "crc": 40}})
    r = run("NG-NVL-002", node(nvlink_errors=[bad]))
    assert r.outcome is F
    assert "link 3 recovery 1" in r.message and "link 7 replay 2" in r.message and "link 7 CRC 40" in r.message
    sp = spec(nvlink={"max_replay_errors": 2, "max_recovery_errors": 1, "max_crc_errors": 100})
    assert run("NG-NVL-002", node(nvlink_errors=[bad]), sp).outcome is P


@covers("NG-NVL-002")
def test_crc_flit_and_data_are_summed_and_na_is_not_zero():
    per_lane = nvlinks(errors={0: {"replay": 0, "recovery": 0, "crc_flit": 1, "crc_data": 1}})
    r = run("NG-NVL-002", node(nvlink_errors=[per_lane]), spec(nvlink={"max_crc_errors": 1}))
    assert r.outcome is F and "link 0 CRC 2" in r.message
    na = replace(nvlinks(), links=[NvLink(k, errors={"replay": NA, "recovery": NA, "crc": NA}) for k in range(18)])
    r = run("NG-NVL-002", node(nvlink_errors=[na]))
    assert r.outcome is E and "no NVLink replay/recovery/CRC error counter reported (counters seen: crc, recovery, replay)" in r.message
