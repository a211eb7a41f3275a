"""Every corpus file (copied byte-exact from ../shared/corpus) parses to the facts its header
describes. Verdicts are asserted in tests/checks/; here: gens, widths, active reasons, counters,
flavors, versions, dkms states, Xid numbers, bus ids."""

from pathlib import Path

import pytest

from nodegate.facts import NA
from nodegate.parsers import corpus_sections, parse, parse_corpus_file

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[2] / "shared" / "corpus"
FILES = sorted(HERE.glob("[0-9][0-9][0-9]-*.txt"))


def sec(num: str, form: str, i: int = 0):
    """Parsed facts of the i-th section of corpus file ``num`` with ``form``."""
    (path,) = HERE.glob(f"{num}-*.txt")
    parts = [s for s in corpus_sections(path) if s.form == form]
    return parse(form, parts[i].text)


def active(g) -> set:
    return {k for k, v in g.clocks_event_reasons.items() if v is True}


def test_corpus_copied_byte_exact():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} absent (a clone without ../shared): nothing to compare the copies with")
    shared = sorted(p.name for p in SHARED.glob("*.txt"))
    assert [p.name for p in FILES] == shared
    for name in shared:
        assert (HERE / name).read_bytes() == (SHARED / name).read_bytes()


@pytest.mark.parametrize("path", FILES, ids=[p.name[:3] for p in FILES])
def test_header_and_sections(path):
    header, body = parse_corpus_file(path)
    assert {"source", "kind", "shows", "expected_verdict"} <= set(header)
    assert body and corpus_sections(path)


def test_001_h100x8_hw_slowdown_power_brake():
    rep = sec("001", "smi_text")
    assert (rep.driver_version, rep.attached_gpus, len(rep.gpus)) == ("535.161.08", 8, 8)
    assert [g.pci_bus_id[5:7] for g in rep.gpus] == ["19", "3b", "4c", "5d", "9b", "bb", "cb", "db"]
    for g in rep.gpus:
        assert active(g) == {"hw_slowdown", "hw_power_brake_slowdown"}
        assert g.pstate == "P0"
        assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (5, 5, 16, 16)


def test_003_a10_remapped_rows_pending():
    (g,) = sec("003", "smi_text").gpus
    rr = g.remapped_rows
    assert (rr.correctable, rr.uncorrectable, rr.pending, rr.failure) == (0, 4, True, False)
    assert rr.histogram == {"max": 192, "high": 0, "partial": 0, "low": 0, "none": 0}
    assert (g.ecc_volatile.correctable_total, g.ecc_volatile.uncorrectable_total) == (0, 0)
    assert "sram_uncorrectable" in g.ecc_volatile.by_location
    assert (g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) == (NA, NA, NA)


def test_005_titanv_gen1_idle_scalar_remap_na():
    (g,) = sec("005", "smi_text").gpus
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (1, 3, 16, 16)
    assert (g.pstate, active(g)) == ("P8", {"gpu_idle"})
    assert g.remapped_rows is NA and g.ecc_mode_current is NA
    assert g.ecc_volatile.correctable_total is NA and g.ecc_volatile.by_location["single_bit.device_memory"] is NA


def test_006_lspci_h100_gen5_x16():
    links = sec("006", "lspci")
    assert [l.bdf for l in links] == [f"0000:{b}:00.0" for b in ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")]
    for l in links:
        assert (l.cap_gen, l.cap_width, l.sta_gen, l.sta_width, l.downgraded, l.driver) == (5, 16, 5, 16, False, "nvidia")


def test_007_xml_no_doctype_throttle_names():
    rep = sec("007", "smi_xml")
    (g,) = rep.gpus
    assert (rep.driver_version, g.name, g.pci_bus_id) == ("418.43", "Quadro P400", "0000:43:00.0")
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (1, 3, 16, 16)
    assert active(g) == {"gpu_idle"} and g.ecc_mode_current is NA


def test_008_t4_v11_width_x8():
    (g,) = sec("008", "smi_xml").gpus
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (3, 3, 8, 16)
    assert (g.pstate, active(g), g.ecc_mode_current) == ("P0", set(), True)
    assert (g.ecc_aggregate.correctable_total, g.ecc_aggregate.uncorrectable_total) == (0, 0)
    assert (g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) == (0, 0, False)
    assert g.gsp_firmware_version == "515.105.01"


def test_009_v12_with_throttle_names():
    (g,) = sec("009", "smi_xml").gpus
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (1, 3, 8, 16)
    assert (g.pstate, active(g), g.architecture) == ("P8", {"gpu_idle"}, "Pascal")


def test_010_v12_event_names_mig_remap_scalar():
    (g,) = sec("010", "smi_xml").gpus
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (4, 4, 16, 16)
    assert (g.mig_mode_current, g.remapped_rows) == (True, NA)
    assert "gpu_idle" in g.clocks_event_reasons and active(g) == set()
    assert (g.ecc_volatile.correctable_total, g.ecc_volatile.uncorrectable_total) == (0, 0)


def test_013_partial_throttle_excerpt_power_brake():
    (g,) = sec("013", "smi_text").gpus
    assert g.pci_bus_id is None
    assert active(g) == {"hw_slowdown", "hw_power_brake_slowdown"}
    assert g.clocks_event_reasons["hw_thermal_slowdown"] is False


def test_014_dkms_comma_three_kernels():
    d = sec("014", "dkms")
    assert [(e.module, e.version, e.kernel, e.arch, e.state) for e in d.entries] == [
        ("nvidia", "396.45", k, "x86_64", "installed")
        for k in ("4.17.11-200.fc28.x86_64", "4.17.12-200.fc28.x86_64", "4.17.14-202.fc28.x86_64")]


def test_015_dkms_error_not_no_module():
    d = sec("015", "dkms")
    assert d.entries == []
    assert d.errors == ["Error! Could not locate dkms.conf file.\n"
                        "File: /var/lib/dkms/nvidia/390.48/source/dkms.conf does not exist."]


def test_016_dkms_slash_format():
    d = sec("016", "dkms")
    assert [(e.module, e.version, e.kernel, e.state) for e in d.entries] == [
        ("nvidia", "535.86.05", "6.5.0-060500rc5-generic", "installed"),
        ("rtl8852bu", "1.19.3", "6.5.0-060500rc5-generic", "installed")]


def test_018_dkms_diff_warning_dedup_and_built():
    a, b = sec("018", "dkms").entries
    assert (a.version, a.state, a.warnings) == ("396.44", "installed", ["WARNING! Diff between built and installed module!"])
    assert (b.version, b.state, b.kernel) == ("440.31", "built", "3.10.0-862.3.2.el7.x86_64")


def test_020_nvml_mismatch():
    e = sec("020", "smi_error")
    assert (e.kind, e.nvml_library_version) == ("driver_library_mismatch", "535.154")


def test_021_api_mismatch_journal_joined():
    (ev,) = sec("021", "kernel_log")
    assert ev.kind == "api_mismatch"
    assert ev.details == {"client_version": "535.154.05", "kernel_version": "550.78"}
    assert ev.text.endswith("components have the same version.")


def test_022_requires_open_and_rminit():
    a, b = sec("022", "kernel_log")
    assert (a.kind, a.bus_id, a.details) == ("requires_open", "0000:01:00.0", {"pci_id": "10de:2d58"})
    assert (b.kind, b.bus_id, b.details) == ("rm_init_adapter_failed", "0000:01:00.0", {"code": "0x22:0x56:1050"})


def test_023_rminit_gsp_gfw():
    evs = sec("023", "kernel_log")
    assert [e.kind for e in evs] == ["gsp_init_failed", "rm_init_adapter_failed", "rm_init_adapter_failed",
                                     "gsp_init_failed", "gsp_init_failed"]
    assert (evs[1].bus_id, evs[1].details) == ("0000:98:00.0", {"code": "0x62:0x65:1792"})


def test_024_wpr2_rminit_xid120_crashcat():
    evs = sec("024", "kernel_log")
    rm = [e for e in evs if e.kind == "rm_init_adapter_failed" and e.details]
    assert [(e.bus_id, e.details["code"]) for e in rm] == [("0000:01:00.0", "0x62:0x40:1941")]
    (x,) = [e for e in evs if e.kind == "xid"]
    assert (x.xid, x.bus_id) == (120, "0000:01:00.0")
    assert x.text.endswith("RISC-V CSR State:")
    assert any(e.kind == "gsp_init_failed" and "WPR2" in e.text for e in evs)


def test_026_open_license_banner_cut_device_handle():
    assert sec("026", "modinfo").license == "Dual MIT/GPL"
    b = sec("026", "proc_version")
    assert (b.flavor, b.version) == ("open", "515.43.04")
    (path,) = HERE.glob("026-*.txt")
    e = parse("smi_error", parse_corpus_file(path)[1])
    assert (e.kind, e.bus_id, e.reason) == ("device_handle", "0000:d8:00.0", "Not Found")


def test_027_lsmod_no_uvm_open_banner():
    names = [m.name for m in sec("027", "lsmod")]
    assert names == ["nvidia_drm", "nvidia_modeset", "nvidia", "drm_kms_helper", "drm"]
    b = sec("027", "proc_version")
    assert (b.flavor, b.version) == ("open", "515.57")


def test_028_proprietary_banner():
    b = sec("028", "proc_version")
    assert (b.flavor, b.version, b.arch) == ("proprietary", "535.183.06", "x86_64")


def test_029_xid79_handle_unknown_lsmod():
    e = sec("029", "smi_error")
    assert (e.kind, e.bus_id, e.reason) == ("device_handle", "0000:a1:00.0", "Unknown Error")
    evs = sec("029", "kernel_log")
    assert [(e.kind, e.xid, e.bus_id) for e in evs if e.kind != "other"] == [
        ("loading_banner", None, None), ("xid", 79, "0000:a1:00.0"), ("fallen_off_bus", None, "0000:a1:00.0")]
    assert evs[0].details == {"flavor": "proprietary", "version": "535.161.07"}
    mods = {m.name: m for m in sec("029", "lsmod")}
    assert mods["nvidia"].refcount == 188 and "nvidia_peermem" not in mods


def test_031_xid_48_63_94_iso():
    xids = [(e.xid, e.bus_id) for e in sec("031", "kernel_log") if e.kind == "xid"]
    assert xids[:3] == [(48, "0000:19:00.0"), (63, "0000:19:00.0"), (94, "0000:19:00.0")]
    assert len(xids) == 11 and {x for x, _ in xids} == {48, 63, 94}


def test_032_lsmod_peermem_ib_core():
    mods = {m.name: m for m in sec("032", "lsmod")}
    assert mods["nvidia_peermem"].refcount == 0
    assert "nvidia_peermem" in mods["ib_core"].used_by and "mlx5_ib" in mods["ib_core"].used_by
    assert mods["nvidia"].refcount == 550 and mods["nvidia"].used_by == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]


def test_033_empty_greps_are_absent():
    assert sec("033", "lsmod", 0) == [] and sec("033", "lsmod", 1) == []


def test_034_nv_peer_mem_modinfo_not_loaded():
    assert sec("034", "lsmod") == []
    m = sec("034", "modinfo")
    assert (m.version, m.license, m.depends, m.vermagic) == ("1.0-8", "Dual BSD/GPL", ["ib_core"],
                                                             "4.15.0-46-generic SMP mod_unload")


def test_035_unit_short_user_flag_and_status_dead():
    uf = sec("035", "unit_text")
    assert uf.exec_start == ["/usr/bin/nvidia-persistenced --verbose -u nvidia-persistenced -g nvidia-persistenced"]
    assert uf.type == "forking"
    st = sec("035", "systemctl_status")
    assert (st.load_state, st.unit_file_state, st.active_state, st.sub_state) == ("loaded", "enabled", "inactive", "dead")
    assert st.fragment_path == "/lib/systemd/system/nvidia-persistenced.service"


def test_037_persistenced_journal_permission_denied():
    # journal lines of the daemon and systemd: the identifier stays in the text
    evs = sec("037", "kernel_log")
    assert len(evs) == 8 and {e.timestamp for e in evs} == {"Aug 27 21:35:25"}
    assert evs[2].text == ("nvidia-persistenced[1405]: NUMA: Failed to open "
                           "/sys/devices/system/memory/auto_online_blocks: Permission denied")
    assert evs[6].text == "systemd[1]: nvidia-persistenced.service: Control process exited, code=exited, status=1/FAILURE"


def test_038_csv_all_fields_na():
    (g,) = sec("038", "smi_csv")
    assert (g.pci_bus_id, g.pci_device_id, g.pstate) == ("0000:00:09.0", "2330", "P0")
    assert (g.link.current_gen, g.link.max_gen, g.link.host_max_gen, g.link.current_width, g.link.max_width) == (5, 5, NA, 16, 16)
    assert (g.clocks_event_reasons_mask, active(g)) == (0x1, {"gpu_idle"})
    assert (g.ecc_mode_current, g.ecc_volatile.uncorrectable_total, g.ecc_aggregate.uncorrectable_total) == (True, 0, 0)
    assert (g.remapped_rows.pending, g.remapped_rows.failure, g.remapped_rows.histogram["max"]) == (False, False, 2560)
    assert g.retired_pages.sbe is NA


def test_040_v100_470_ecc_mode_retired_sbe():
    (g,) = sec("040", "smi_text").gpus
    assert (g.ecc_mode_current, g.ecc_aggregate.correctable_total, g.ecc_aggregate.uncorrectable_total) == (True, 3, 0)
    assert g.ecc_aggregate.by_location["single_bit.device_memory"] == 3
    assert (g.retired_pages.sbe, g.retired_pages.dbe, g.retired_pages.pending) == (1, 0, False)
    assert g.remapped_rows is NA and active(g) == {"gpu_idle"}
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width) == (3, 3, 16)


def test_042_modinfo_proprietary_545():
    m = sec("042", "modinfo")
    assert (m.license, m.version, m.vermagic.split()[0]) == ("NVIDIA", "545.29.02", "6.2.0-39-generic")
    assert m.firmware == ["nvidia/545.29.02/gsp_tu10x.bin", "nvidia/545.29.02/gsp_ga10x.bin"]
    assert m.filename == "/lib/modules/6.2.0-39-generic/updates/dkms/nvidia.ko" and m.depends == ["drm"]


def test_043_modinfo_proprietary_580_akmod():
    m = sec("043", "modinfo")
    assert (m.license, m.version) == ("NVIDIA", "580.95.05")
    assert m.filename == "/lib/modules/6.17.5-200.fc42.x86_64/extra/nvidia/nvidia.ko"
    assert m.firmware == ["nvidia/580.95.05/gsp_tu10x.bin", "nvidia/580.95.05/gsp_ga10x.bin"]


def test_045_probe_not_called_joined():
    evs = sec("045", "kernel_log")
    (p,) = [e for e in evs if e.kind == "probe_not_called"]
    assert p.details == {"count": "3"}
    assert any(e.text.startswith("NVRM: This can occur when a driver such as: nouveau, rivafb") for e in evs)
    assert len(evs) == 6


def test_046_sysfs_upstream_x8_vs_gpu_x16():
    up = sec("046", "sysfs_tail", 0)
    gpu = sec("046", "sysfs_tail", 1)
    assert [(l.bdf, l.current_gen, l.current_width, l.max_gen, l.max_width) for l in up] == [("0000:01:00.0", 4, 8, 5, 16)]
    assert [(l.bdf, l.current_gen, l.current_width, l.max_gen, l.max_width) for l in gpu] == [("0000:03:00.0", 5, 16, 5, 16)]


def test_047_csv_units_na_fan():
    (g,) = sec("047", "smi_csv")
    assert (g.name, g.pstate, g.temperature_c, g.power_draw_w) == ("Tesla P100-PCIE-16GB", "P0", 37, 28.16)
    from nodegate.parsers.smi_csv import parse_query_csv
    (path,) = HERE.glob("047-*.txt")
    (row,) = parse_query_csv(parse_corpus_file(path)[1])
    assert row["fan.speed"] is NA and row["memory.reserved"] == "103"


def test_048_csv_memory_na_units_in_values():
    (g,) = sec("048", "smi_csv")
    assert (g.temperature_c, g.power_draw_w) == (35, 11.17)
    from nodegate.parsers.smi_csv import parse_query_csv
    (path,) = HERE.glob("048-*.txt")
    row = parse_query_csv([s for s in corpus_sections(path) if s.form == "smi_csv"][0].text)[0]
    assert (row["memory.total"], row["memory.used"], row["memory.free"], row["utilization.gpu"]) == (NA, NA, NA, "0 %")


def test_050_boot_decode_proprietary_8_drm():
    evs = sec("050", "kernel_log")
    (ban,) = [e for e in evs if e.kind == "loading_banner"]
    assert ban.details == {"flavor": "proprietary", "version": "550.90.07"}
    assert {e.details["license"] for e in evs if e.kind == "module_license"} == {"NVIDIA"}
    assert [e.bus_id for e in evs if e.kind == "drm_initialized"] == [
        f"0000:{b}:00.0" for b in ("19", "3b", "4c", "5d", "9b", "bb", "cb", "db")]
    assert not [e for e in evs if e.kind in ("xid", "rm_init_adapter_failed", "fallen_off_bus")]


# ------------------------------------------------------------------ corpus grown (002, 004, 011, 012, 036, 039,
# 116, 119, 121): each kind's parse, including the traps its header names
def test_002_power_brake_sub_reason_under_a_not_active_parent():
    rep = sec("002", "smi_text")
    assert (rep.driver_version, rep.attached_gpus, len(rep.gpus)) == ("535.183.01", 8, 8)
    g = rep.gpus[2]
    # the header names 00000000:64:00.0, the output prints these values in 00000000:75:00.0's block
    assert g.pci_bus_id == "0000:75:00.0"
    assert active(g) == {"sw_power_cap", "hw_power_brake_slowdown", "sw_thermal_slowdown"}
    assert g.clocks_event_reasons["hw_slowdown"] is False     # the parent line, read on its own
    assert [active(x) for i, x in enumerate(rep.gpus) if i != 2] == [{"gpu_idle"}] * 7
    assert {x.link.host_max_gen for x in rep.gpus} == {NA}      # 'Host Max : N/A' is unsupported, not 0
    assert {(x.link.max_gen, x.link.current_gen, x.link.max_width) for x in rep.gpus} == {(5, 5, 16)}


def test_004_rtx4090_three_idle_at_gen1_five_busy_at_gen4():
    gs = sec("004", "smi_text").gpus
    assert [(g.pci_bus_id[5:7], g.pstate, g.link.current_gen) for g in gs] == [
        ("01", "P2", 4), ("23", "P2", 4), ("41", "P2", 4), ("61", "P2", 4), ("81", "P8", 1), ("a1", "P8", 1),
        ("c1", "P2", 4), ("e1", "P8", 1)]
    for g in gs:
        assert (g.link.max_gen, g.link.device_max_gen, g.link.host_max_gen, g.link.max_width) == (4, 4, 4, 16)
        assert (g.serial, g.ecc_mode_current, g.ecc_volatile.uncorrectable_total) == (NA, False, NA)
        # the GeForce board reports its row remapper (0 rows) although ECC is off
        assert (g.remapped_rows.correctable, g.remapped_rows.histogram["max"]) == (0, 192)
    assert [active(g) for g in gs if g.pstate == "P8"] == [{"gpu_idle"}] * 3


def test_011_v13_device_and_host_max_gen_and_reason_counters():
    rep = sec("011", "smi_xml")
    (g,) = rep.gpus
    assert (rep.driver_version, g.pci_device_id, g.architecture) == ("590.44.01", "2bb4", "Blackwell")
    lk = g.link
    assert (lk.current_gen, lk.max_gen, lk.device_max_gen, lk.host_max_gen, lk.current_width, lk.max_width) == \
        (1, 4, 5, 4, 16, 16)
    assert g.clocks_event_reasons_counters == {"sw_power_cap": 25483012608, "sync_boost": 0, "sw_thermal_slowdown": 0,
                                               "hw_thermal_slowdown": 0, "hw_power_brake_slowdown": 0}
    assert (g.pstate, active(g)) == ("P8", set())
    assert {"sram_uncorrectable_parity", "sram_uncorrectable_secded"} <= set(g.ecc_volatile.by_location)
    assert (g.recovery_action, g.remapped_rows.histogram["max"]) == ("None", 512)


def test_012_v13_sw_power_cap_active_at_p8_serial_and_ecc_na():
    (g,) = sec("012", "smi_xml").gpus
    assert (g.pstate, active(g), g.clocks_event_reasons["gpu_idle"]) == ("P8", {"sw_power_cap"}, False)
    assert g.clocks_event_reasons_counters["sw_power_cap"] == 9840338777
    assert (g.link.current_gen, g.link.max_gen, g.link.current_width, g.link.max_width) == (1, 4, 16, 16)
    assert (g.serial, g.ecc_mode_current, g.remapped_rows) == (NA, NA, NA)


def test_036_dropin_blank_execstart_is_a_reset_not_a_command():
    from nodegate.parsers.systemd import effective_exec_start
    uf = sec("036", "unit_text")
    assert uf.exec_start == ["", "/usr/bin/nvidia-persistenced --verbose"]
    unit = parse("unit_text", "[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced --user nvpd\n")
    frag = type(uf)("/lib/systemd/system/nvidia-persistenced.service", unit.exec_start, type="forking")
    drop = type(uf)("/etc/systemd/system/nvidia-persistenced.service.d/override.conf", uf.exec_start)
    assert effective_exec_start([frag, drop]) == (["/usr/bin/nvidia-persistenced --verbose"], "forking")
    # the same command without the reset: two commands, which systemd refuses for Type=forking
    no_reset = type(uf)(drop.path, uf.exec_start[1:])
    assert len(effective_exec_start([frag, no_reset])[0]) == 2


def test_039_590_layout_value_column_56_mig_remapped_rows_scalar_na():
    rep = sec("039", "smi_text")
    (g,) = rep.gpus
    assert (rep.driver_version, rep.attached_gpus, g.pci_bus_id, g.pci_device_id) == ("590.48.01", 1, "0000:83:00.0", "2335")
    assert (g.mig_mode_current, g.mig_mode_pending, g.remapped_rows) == (True, True, NA)
    assert (g.link.current_gen, g.link.max_gen, g.link.host_max_gen, g.link.current_width) == (5, 5, NA, 16)
    assert (g.channel_repair_pending, g.tpc_repair_pending, g.unrepairable_memory, g.sram_threshold_exceeded) == \
        (False, False, False, False)
    assert (g.ecc_volatile.uncorrectable_total, g.ecc_aggregate.by_location["aggregate_uncorrectable_sram_sources.sram_l2"]) == (0, 0)
    assert set(g.clocks_event_reasons_counters.values()) == {0}
    assert (active(g), g.fabric_state, g.fabric_status, g.persistence_mode) == ({"gpu_idle"}, "Completed", "Success", True)
    # the MIG devices' own 'ECC Errors' blocks stay theirs, not the GPU's
    assert set(g.ecc_volatile.by_location) == {"sram_correctable", "sram_uncorrectable_parity",
                                               "sram_uncorrectable_secded", "dram_correctable", "dram_uncorrectable"}


def test_116_ibstat_eight_complete_cas_then_ibpanic():
    from nodegate.parsers.ibstat import describe_ports, ibstat_failures
    ports = sec("116", "ibstat")
    assert [p.device for p in ports] == [f"mlx5_{i}" for i in range(8)]
    assert {(p.port, p.state, p.phys_state, p.rate_gbps, p.link_layer, p.fw_ver, p.hca_type) for p in ports} == \
        {(1, "ACTIVE", "LinkUp", 200.0, "InfiniBand", "20.41.1000", "MT4124")}
    (path,) = HERE.glob("116-*.txt")
    assert ibstat_failures(parse_corpus_file(path)[1]) == [
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"]
    assert describe_ports(ports) == "8 CA(s), 8 port(s): 8 Active/LinkUp at 200 Gb/s"


def test_119_nvlink_not_supported_tlimit_is_headroom_not_temperature():
    (block,) = sec("119", "nvlink_status")
    assert (block.index, block.name, block.status, block.links) == (0, "NVIDIA L40S", "none", [])
    assert block.message == "Device does not have or support Nvlink"
    rep = sec("119", "smi_text")
    (g,) = rep.gpus
    assert (rep.driver_version, g.name, g.pci_device_id, g.persistence_mode) == ("595.80", "NVIDIA L40S", "26b9", False)
    # 'GPU Current Temp : 54 C' is the temperature; 'GPU T.Limit Temp : 34 C' and the shutdown/slowdown
    # T.Limit offsets (-5 C, -2 C) are headroom, never read as a temperature
    assert g.temperature_c == 54
    assert (g.link.current_gen, g.link.max_gen, g.link.host_max_gen, g.link.current_width) == (4, 4, NA, 16)
    assert (g.pstate, active(g), g.clocks_event_reasons_counters["sw_power_cap"]) == ("P0", set(), 204642816)
    assert (g.ecc_mode_current, g.ecc_volatile.uncorrectable_total, g.ecc_aggregate.uncorrectable_total) == (True, 0, 0)
    assert (g.remapped_rows.pending, g.remapped_rows.histogram["max"], g.retired_pages.sbe) == (False, 192, NA)
    assert (g.fabric_state, g.fabric_status, g.recovery_action) == (NA, NA, "None")


def test_121_gb200_tray_plain_lspci_domains_and_unnamed_device():
    from nodegate.altkeys import gpus_from_lspci
    links = sec("121", "lspci")
    assert len(links) == 87 and all(l.cap_gen is None for l in links)      # plain lspci: no link lines
    gpus = [l for l in links if l.display]
    assert [(l.bdf, l.vendor_device) for l in gpus] == [(f"{d}:01:00.0", "10de:2941") for d in ("0008", "0009", "0018", "0019")]
    (vga,) = [l for l in links if l.description.startswith("VGA compatible controller")]
    assert (vga.bdf, vga.display) == ("0005:07:00.0", False)                # the ASPEED BMC, not a GPU
    assert [g.pci_device_id for g in gpus_from_lspci(links)] == ["2941"] * 4
    # NVIDIA's functions besides the GPUs are root ports ('PCI bridge', class 0604), no NVSwitch ('Bridge', 0680)
    assert not [l for l in links if l.description.startswith("Bridge:")]
    assert {l.description for l in links if "NVIDIA" in l.description and not l.display} == {
        "PCI bridge: NVIDIA Corporation Device 22b1", "PCI bridge: NVIDIA Corporation Device 22b2",
        "PCI bridge: NVIDIA Corporation Device 22b8"}
