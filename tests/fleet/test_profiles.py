"""Profile loading, inheritance and rendering (no root, no sshd)."""

from __future__ import annotations

import defusedxml.ElementTree as DET
import pytest

from tools.fleet import Profile, ProfileError, expand, load_profiles, render_node
from tools.fleet.profile import normalize, resolve
from tools.fleet.render import CLOCKS_QUERY


def prof(name: str, **d) -> Profile:
    d.setdefault("driver", {"version": "535.161.08"})
    return Profile(name, normalize(name, d))


def smi(r, args: str):
    return r.tools["nvidia-smi"].cases[args]


# ---------------------------------------------------------------- inheritance
def test_base_inheritance_merges_mappings_replaces_lists_and_null_clears():
    raw = {
        "_b": {"driver": {"version": "535.161.08", "flavor": "proprietary"}, "files": {"/etc/a": "x"},
               "modules": {"loaded": ["nvidia", "nvidia_uvm"]}, "expect": {"*": "pass", "retired_pages": "skip"}},
        "c": {"base": "_b", "driver": {"flavor": "open"}, "files": None, "modules": {"loaded": ["nvidia"]},
              "expect": {"peermem": "fail"}},
    }
    d, chain = resolve("c", raw)
    assert chain == ["_b", "c"]
    assert d["driver"] == {"version": "535.161.08", "flavor": "open"}
    assert d["modules"]["loaded"] == ["nvidia"]
    assert d["expect"] == {"*": "pass", "retired_pages": "skip", "peermem": "fail"}
    assert normalize("c", d)["files"] == {}


def test_base_cycle_and_unknown_base_are_errors():
    with pytest.raises(ProfileError, match="cycle"):
        resolve("a", {"a": {"base": "b"}, "b": {"base": "a"}})
    with pytest.raises(ProfileError, match="unknown profile 'nope'"):
        resolve("a", {"a": {"base": "nope"}})


def test_unknown_key_and_bad_outcome_are_errors():
    with pytest.raises(ProfileError, match="unknown keys \\['gpu'\\]"):
        normalize("x", {"driver": {"version": "535.1"}, "gpu": {}})
    with pytest.raises(ProfileError, match="not one of"):
        normalize("x", {"driver": {"version": "535.1"}, "expect": {"*": "ok"}})


def test_shipped_profiles_load_and_are_concrete():
    ps = load_profiles()
    assert "_hgx-h100-535" not in ps
    assert ps["pcie-x8-busy"].chain == ["_hgx-h100-535", "pcie-x8-busy"]
    assert ps["retired-pages-63"].chain == ["_hgx-h100-535", "_dgx1-v100-535", "retired-pages-63"]
    assert len(ps) == 45   # 29 + issue 19's 13 fabric/InfiniBand/PCIe/config/CUDA fault profiles + B200 and GH200
    #                        (issue 39.7) + a login node without GPUs (issue 40.8)


# ---------------------------------------------------------------- expectations
def test_expand_precedence_and_slots():
    p = prof("n", gpus={"count": 2}, spec={"gpu": {"count": 2}},
             expect={"*": "pass", "gpu:*": "skip", "b": "fail", "b[gpu1]": "error"})
    got = expand(p, "n", [("a", "node"), ("b", "gpu"), ("c", "gpu")])
    assert got == {"test_a[n]": "pass", "test_b[n-gpu0]": "fail", "test_b[n-gpu1]": "error",
                   "test_c[n-gpu0]": "skip", "test_c[n-gpu1]": "skip"}
    assert set(expand(p, "n", [("a", "node"), ("b", "gpu"), ("c", "gpu")], all_outcome="error").values()) == {"error"}


def test_expand_rejects_keys_naming_no_check():
    p = prof("n", expect={"*": "pass", "pcie_lnk": "fail"})
    with pytest.raises(ProfileError, match="pcie_lnk"):
        expand(p, "n", [("pcie_link_trained", "gpu")])


# ---------------------------------------------------------------- rendering
def test_proc_modules_most_recent_first_with_users_and_taint():
    r = render_node(prof("n", modules={"loaded": ["ib_core", "nvidia", "nvidia_peermem"]}, gpus={"count": 2}))
    lines = r.tree.text("/proc/modules").splitlines()
    assert [x.split()[0] for x in lines] == ["nvidia_peermem", "nvidia", "ib_core"]
    assert lines[1].split()[2:4] == ["5", "nvidia_peermem,"]  # 1 user + 2 per GPU
    assert lines[1].endswith("(POE)") and not lines[2].endswith(")")
    r2 = render_node(prof("n", modules={"loaded": ["nvidia"], "unload": False}, driver={"version": "580.1.2",
                                                                                    "flavor": "open"}))
    assert r2.tree.text("/proc/modules").split()[2:4] == ["-", "-"]
    assert r2.tree.text("/proc/modules").rstrip().endswith("(OE)")


def test_builtin_modules_have_no_initstate():
    r = render_node(prof("n", modules={"loaded": ["nvidia"], "builtin": ["ib_core"]}))
    assert r.tree.has("/sys/module/nvidia/initstate") and not r.tree.has("/sys/module/ib_core/initstate")
    assert r.tree.entries["/sys/module/ib_core"].kind == "dir"


def test_smi_xml_per_gpu_edits():
    p = prof("n", gpus={"count": 2, "per_gpu": {1: {"pcie": {"cur_width": 8}, "events": ["hw_power_brake_slowdown"],
                                                     "remap": {"unc": 1, "pending": True}}}})
    root = DET.fromstring(smi(render_node(p), "-q -x").out)
    g = root.findall("gpu")
    assert [x.get("id") for x in g] == ["00000000:19:00.0", "00000000:3B:00.0"]
    assert root.findtext("attached_gpus") == "2"
    assert g[1].findtext("pci/pci_gpu_link_info/link_widths/current_link_width") == "8x"
    assert g[1].findtext("clocks_event_reasons/clocks_event_reason_hw_power_brake_slowdown") == "Active"
    assert g[1].findtext("clocks_event_reasons/clocks_event_reason_hw_slowdown") == "Not Active"
    assert g[1].findtext("remapped_rows/remapped_row_pending") == "Yes"
    assert g[0].findtext("product_name") == "NVIDIA H100 80GB HBM3"
    # 535 layout: no 570+ parity/SECDED split, no 580 repair elements
    assert g[0].find("ecc_errors/volatile/sram_uncorrectable") is not None
    assert g[0].find("ecc_errors/volatile/sram_uncorrectable_parity") is None
    assert g[0].find("ecc_errors/channel_repair_pending") is None
    assert g[0].find("gpu_recovery_action") is None


def test_smi_xml_580_keeps_v13_layout_and_clocks_csv_masks():
    p = prof("n", driver={"version": "580.95.05", "flavor": "open"},
             gpus={"count": 2, "all": {"events": ["sw_power_cap"]}, "per_gpu": {1: {"events": ["hw_slowdown"]}}})
    r = render_node(p)
    x = smi(r, "-q -x").out
    assert '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">' in x
    assert DET.fromstring(x).find("gpu/ecc_errors/volatile/sram_uncorrectable_parity") is not None
    assert smi(r, CLOCKS_QUERY).out == ("0, 00000000:19:00.0, P0, 0x0000000000000004\n"
                                        "1, 00000000:3B:00.0, P0, 0x0000000000000008\n")


def test_missing_gpu_renumbers_and_logs_xid79():
    r = render_node(prof("n", gpus={"count": 3, "missing": [1]}))
    assert DET.fromstring(smi(r, "-q -x").out).findtext("attached_gpus") == "2"
    assert smi(r, CLOCKS_QUERY).out.splitlines()[1].startswith("1, 00000000:4C:00.0")
    log = r.tools["dmesg"].cases[""].out
    assert "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus." in log
    assert r.tree.text("/sys/devices/pci0000:38/0000:38:01.0/0000:39:00.0/0000:3a:00.0/0000:3b:00.0/"
                       "current_link_speed") == "Unknown\n"


def test_driver_library_mismatch_output():
    r = render_node(prof("n", driver={"version": "535.161.08", "userspace_version": "550.54.15"}))
    for args in ("--version", "-q -x", CLOCKS_QUERY):
        inv = smi(r, args)
        assert (inv.out, inv.rc) == ("Failed to initialize NVML: Driver/library version mismatch\n"
                                     "NVML library version: 550.54\n", 18)
    assert r.tree.entries["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"].target == "libnvidia-ml.so.550.54.15"


def test_systemctl_show_duplicate_execstart_is_bad_setting():
    dropin = ("[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --user u1\n"
              "ExecStart=/usr/bin/nvidia-persistenced --user u1\n")
    r = render_node(prof("n", persistenced={"dropins": {"/etc/systemd/system/nvidia-persistenced.service.d/o.conf": dropin}}))
    out = r.tools["systemctl"].cases["show nvidia-persistenced *"].out
    assert out.count("ExecStart={ path=/usr/bin/nvidia-persistenced ; argv[]=/usr/bin/nvidia-persistenced --user u1 ;") == 2
    assert "LoadState=bad-setting\n" in out and "ActiveState=active\n" in out


def test_persistenced_process_runs_as_drop_in_user():
    dropin = "[Service]\nExecStart=\nExecStart=/usr/bin/nvidia-persistenced --user root --persistence-mode\n"
    r = render_node(prof("n", persistenced={"dropins": {"/etc/systemd/system/nvidia-persistenced.service.d/o.conf": dropin}}))
    assert "Uid:\t0\t0\t0\t0\n" in r.tree.text("/proc/2861/status")
    assert r.tree.entries["/proc/2861/cmdline"].data == b"/usr/bin/nvidia-persistenced\0--user\0root\0--persistence-mode\0"
    assert r.tree.text("/proc/2861/comm") == "nvidia-persiste\n"


def test_dkms_formats_and_suffix():
    r = render_node(prof("n", node={"kernel": "5.15.0-91-generic", "kernels": ["5.15.0-91-generic", "6.8.0-1-generic"]},
                         dkms={"format": "comma", "suffix": {"6.8.0-1-generic": "(Original modules exist)"}}))
    assert r.tools["dkms"].cases["status"].out == (
        "nvidia, 535.161.08, 5.15.0-91-generic, x86_64: installed\n"
        "nvidia, 535.161.08, 6.8.0-1-generic, x86_64: installed (Original modules exist)\n")


def test_upstream_port_trains_with_the_gpu_link():
    r = render_node(prof("n", gpus={"count": 1, "per_gpu": {0: {"pcie": {"cur_gen": 1}}}}))
    base = "/sys/devices/pci0000:16/0000:16:01.0/0000:17:00.0/0000:18:00.0"
    assert r.tree.text(base + "/current_link_speed") == "2.5 GT/s PCIe\n"        # same link as the GPU
    assert r.tree.text("/sys/devices/pci0000:16/0000:16:01.0/current_link_speed") == "32.0 GT/s PCIe\n"
    assert r.tree.entries["/sys/bus/pci/devices/0000:19:00.0"].target == "../../.." + base.removeprefix("/sys") + "/0000:19:00.0"


def test_tools_absent_and_hang():
    r = render_node(prof("n", tools_absent=["systemctl", "dkms"], nvidia_smi={"hang": ["-q -x"]}))
    assert "systemctl" not in r.tools and "dkms" not in r.tools
    assert smi(r, "-q -x").hang is True and smi(r, "--version").hang is False
