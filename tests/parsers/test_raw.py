"""Parametrized raw-string tests, one per rule or trap (Ansible fact-collector style)."""

import pytest

from nodegate.errors import ParseError
from nodegate.facts import NA
from nodegate.parsers import dkms, kernel_log, modules, proc_version, smi_error, smi_text, smi_version, systemd


@pytest.mark.parametrize("pad", [36, 44, 56], ids=["pad36", "pad44", "pad56"])
def test_smi_text_any_padding(pad):
    def ln(indent, k, v):
        return " " * indent + k.ljust(pad - indent) + ": " + v
    text = "\n".join([
        "GPU 00000000:19:00.0",
        ln(4, "Performance State", "P0"),
        "    Clocks Event Reasons",
        ln(8, "HW Slowdown", "Active"),
        ln(12, "HW Power Brake Slowdown", "Active"),
        ln(8, "Idle", "Not Active"),
        "    PCI",
        "        GPU Link Info",
        "            PCIe Generation",
        ln(16, "Max", "5"),
        ln(16, "Current", "4"),
        "            Link Width",
        ln(16, "Max", "16x"),
        ln(16, "Current", "8x"),
    ]) + "\n"
    g = smi_text.parse_smi_text(text).gpus[0]
    assert (g.pci_bus_id, g.pstate) == ("0000:19:00.0", "P0")
    assert (g.link.max_gen, g.link.current_gen, g.link.max_width, g.link.current_width) == (5, 4, 16, 8)
    assert g.clocks_event_reasons == {"hw_slowdown": True, "hw_power_brake_slowdown": True, "gpu_idle": False}


def test_smi_text_power_brake_active_while_parent_not_active():
    text = ("Clocks Event Reasons\n    HW Slowdown                 : Not Active\n"
            "        HW Power Brake Slowdown : Active\n")
    g = smi_text.parse_smi_text(text).gpus[0]
    assert g.clocks_event_reasons == {"hw_slowdown": False, "hw_power_brake_slowdown": True}


def test_smi_text_remapped_rows_scalar_na():
    g = smi_text.parse_smi_text("GPU 00000000:01:00.0\n    Remapped Rows          : N/A\n").gpus[0]
    assert g.remapped_rows is NA


def test_smi_text_header_only_no_gpus():
    rep = smi_text.parse_smi_text("==============NVSMI LOG==============\n\nDriver Version : 550.54.15\n"
                                  "Attached GPUs : 0\n")
    assert (rep.driver_version, rep.attached_gpus, rep.gpus) == ("550.54.15", 0, [])


@pytest.mark.parametrize("text,kind,extra", [
    ("Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.124\n",
     "driver_library_mismatch", {"nvml_library_version": "570.124"}),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "no_driver", {}),
    ("No devices were found\n", "no_devices", {}),
    ("Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error\n", "device_handle",
     {"bus_id": "0000:a1:00.0", "reason": "Unknown Error"}),
    ("Unable to determine the device handle for GPU 0000:D8:00.0: Not Found\n", "device_handle",
     {"bus_id": "0000:d8:00.0", "reason": "Not Found"}),
], ids=["mismatch_with_lib_version", "no_driver", "no_devices", "handle_no_space", "handle_space"])
def test_smi_error_kinds(text, kind, extra):
    err = smi_error.parse_smi_error(text)
    assert err.kind == kind
    for k, v in extra.items():
        assert getattr(err, k) == v


@pytest.mark.parametrize("label", ["DRIVER version", "KMD version"], ids=["driver_label", "kmd_label"])
def test_smi_version_by_label(label):
    v = smi_version.parse_smi_version(f"NVIDIA-SMI version  : 590.48.01\n{label}      : 590.48.01\n")
    assert v.driver_version == "590.48.01"


@pytest.mark.parametrize("line,expected", [
    ("nvidia, 535.104.05, 5.15.0-91-generic, x86_64: installed", ("nvidia", "535.104.05", "5.15.0-91-generic", "installed")),
    ("nvidia/535.104.05, 5.15.0-91-generic, x86_64: installed", ("nvidia", "535.104.05", "5.15.0-91-generic", "installed")),
    ("nvidia/535.104.05: added", ("nvidia", "535.104.05", None, "added")),
    ("nvidia, 535.104.05: added", ("nvidia", "535.104.05", None, "added")),
    ("nvidia/535.104.05, 5.15.0-91-generic, x86_64: broken", ("nvidia", "535.104.05", "5.15.0-91-generic", "broken")),
], ids=["comma_2x", "slash_3x", "added_slash", "added_comma", "broken"])
def test_dkms_line_formats(line, expected):
    e = dkms.parse_dkms_status(line + "\n").entries[0]
    assert (e.module, e.version, e.kernel, e.state) == expected


def test_dkms_repeated_suffix_deduplicated():
    line = ("nvidia, 396.44, 3.10.0, x86_64: installed (WARNING! Diff between built and installed module!)"
            " (WARNING! Diff between built and installed module!)\n")
    assert dkms.parse_dkms_status(line).entries[0].warnings == ["WARNING! Diff between built and installed module!"]


@pytest.mark.parametrize("line,flavor,version", [
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)", "open", "580.159.04"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.06  Wed Jun 26 06:46:07 UTC 2024", "proprietary", "535.183.06"),
    ("NVRM version:  NVIDIA UNIX Open Kernel Module for x86_64  515.57  Release Build Mi 20. Jul", "open", "515.57"),
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  515.43.04  Release Build  (roo", "open", "515.43.04"),
], ids=["open_580", "proprietary_535", "open_two_spaces", "open_cut_off"])
def test_proc_version_flavor(line, flavor, version):
    b = proc_version.parse_proc_version(line + "\n")
    assert (b.flavor, b.version) == (flavor, version)


def test_proc_modules_dash_refcount_not_parsed_as_int():
    m = modules.parse_proc_modules("nvidia 14299136 - - Live 0xffffffffc0400000 (O)\n")[0]
    assert (m.refcount, m.used_by, m.state) == (None, [], "Live")


def test_proc_modules_order_is_position():
    ms = modules.parse_proc_modules("nvidia_peermem 16384 0 - Live 0x0\nnvidia 100 3 nvidia_peermem, Live 0x0\n")
    assert [(m.name, m.position, m.used_by) for m in ms] == [("nvidia_peermem", 0, []), ("nvidia", 1, ["nvidia_peermem"])]


def test_lsmod_matches_whole_names():
    ms = modules.parse_lsmod("nv_peer_mem  16384  0\nnvidia_peermem 16384 0\n")
    assert [m.name for m in ms] == ["nv_peer_mem", "nvidia_peermem"]


def test_systemctl_show_missing_unit_is_not_found():
    assert systemd.parse_systemctl_show("LoadState=not-found\nActiveState=inactive\n").load_state == "not-found"


def test_unit_file_empty_exec_start_reset_kept():
    uf = systemd.parse_unit_text("x.conf", "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --user u\n")
    assert uf.exec_start == ["", "/usr/bin/nvidia-persistenced --user u"]


@pytest.mark.parametrize("line,kind,bus,xid", [
    ("[    5.1] NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", "xid", "0000:19:00.0", 79),
    ("[Thu Apr  4 18:03:56 2024] NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.", "fallen_off_bus", "0000:a1:00.0", None),
    ("2024-11-15T12:02:03,470068+00:00 NVRM: Xid (PCI:000f:19:00): 48, DBE", "xid", "000f:19:00.0", 48),
    ("kern  :err   : 2025-01-17T15:36:28,286287+00:00 NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
     "rm_init_adapter_failed", "0000:98:00.0", None),
    ("Mar 03 13:47:27 node kernel: NVRM: RmInitAdapter: Cannot initialize GSP firmware RM", "gsp_init_failed", None, None),
    ("[    3.6] NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced instead.",
     "persistence_legacy", None, None),
], ids=["dmesg_xid79", "dmesg_T_fallen", "iso_xid48_domain_f", "decode_rminit", "journal_gsp", "legacy_persistence"])
def test_kernel_log_line_shapes(line, kind, bus, xid):
    ev = kernel_log.parse_kernel_log(line + "\n")[0]
    assert (ev.kind, ev.bus_id, ev.xid) == (kind, bus, xid)


def test_kernel_log_rm_init_code_captured():
    ev = kernel_log.parse_kernel_log("NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)\n")[0]
    assert ev.details == {"code": "0x62:0x65:1792"}


def test_kernel_log_untimestamped_continuation_joined():
    evs = kernel_log.parse_kernel_log("[ 1.0] NVRM: A GPU crash dump has been created. If possible, please run\n"
                                      "                           NVRM: nvidia-bug-report.sh as root.\n")
    assert len(evs) == 1 and evs[0].text.endswith("please run nvidia-bug-report.sh as root.")


def test_parse_error_is_the_only_exception():
    with pytest.raises(ParseError):
        dkms.parse_dkms_status("garbage line\n")
