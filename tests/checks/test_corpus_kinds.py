"""The kinds the grown corpus stands for (002, 004, 011, 012, 036, 039, 116, 119, 121, bug report 204), on
other GPUs, driver branches and layouts than the samples: the fix holds for the kind, not the one file.
The per-file verdicts are in test_corpus_verdicts.py and tests/bugreport/test_bugreports.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nodegate.errors import EvidenceError
from nodegate.facts import NA, PcieLink, UnitFile
from nodegate.outcomes import Outcome
from nodegate.parsers import guess_form, parse
from nodegate.parsers.ibstat import ibstat_failures
from nodegate.parsers.systemd import effective_exec_start
from tests.parsers.test_collect import nf

from .fakes import DROPIN, covers, gpu, healthy, run, spec


# ------------------------------------------------------------------ clocks event reasons (002, 011, 012, 119)
def _smi_q(col: int, reasons: dict[str, str], counters: dict[str, str] | None = None) -> str:
    """A -q excerpt whose values sit at column ``col`` (36: R470, 44: R535, 56: R570+), as the branches pad."""
    def row(indent: int, label: str, value: str) -> str:
        return " " * indent + label.ljust(col - indent - 2) + ": " + value
    out = ["GPU 00000000:19:00.0", row(4, "Product Name", "NVIDIA H100 80GB HBM3"), "    Clocks Event Reasons"]
    for label, v in reasons.items():
        indent = 12 if label in ("HW Thermal Slowdown", "HW Power Brake Slowdown") else 8
        out.append(row(indent, label, v))
    if counters is not None:
        out.append("    Clocks Event Reasons Counters")
        out += [row(8, label, v) for label, v in counters.items()]
    return "\n".join(out) + "\n"


QUIET = {"Idle": "Not Active", "Applications Clocks Setting": "Not Active", "SW Power Cap": "Not Active",
         "HW Slowdown": "Not Active", "HW Thermal Slowdown": "Not Active", "HW Power Brake Slowdown": "Not Active",
         "Sync Boost": "Not Active", "SW Thermal Slowdown": "Not Active", "Display Clock Setting": "Not Active"}
COUNTERS = {"SW Power Capping": "0 us", "Sync Boost": "0 us", "SW Thermal Slowdown": "0 us",
            "HW Thermal Slowdown": "0 us", "HW Power Braking": "0 us"}


@covers("NG-CLK-001")
@pytest.mark.parametrize("col", [36, 44, 56])
def test_a_sub_reason_active_under_a_not_active_parent_fails_at_every_padding(col):
    text = _smi_q(col, {**QUIET, "HW Thermal Slowdown": "Active"}, COUNTERS)
    (g,) = parse("smi_text", text).gpus
    assert (g.clocks_event_reasons["hw_slowdown"], g.clocks_event_reasons["hw_thermal_slowdown"]) == (False, True)
    r = run("NG-CLK-001", healthy(gpus=[replace(gpu(), clocks_event_reasons=g.clocks_event_reasons,
                                                clocks_event_reasons_mask=None)]).without("clocks_samples"))
    assert (r.outcome, r.observed.split(";")[0]) == (Outcome.FAIL, "active: hw_thermal_slowdown")


@covers("NG-CLK-001")
def test_counters_are_history_text_and_xml_agree_na_is_unsupported():
    text = _smi_q(44, QUIET, {**COUNTERS, "HW Power Braking": "1500000000 us", "Sync Boost": "N/A"})
    (t,) = parse("smi_text", text).gpus
    assert t.clocks_event_reasons_counters == {"sw_power_cap": 0, "sync_boost": NA, "sw_thermal_slowdown": 0,
                                               "hw_thermal_slowdown": 0, "hw_power_brake_slowdown": 1500000000}
    xml = ("<?xml version=\"1.0\" ?>\n<nvidia_smi_log><driver_version>570.86.15</driver_version><attached_gpus>1"
           "</attached_gpus><gpu id=\"00000000:19:00.0\"><clocks_event_reasons_counters>"
           "<clocks_event_reasons_counters_sw_power_cap>0 us</clocks_event_reasons_counters_sw_power_cap>"
           "<clocks_event_reasons_counters_sync_boost>N/A</clocks_event_reasons_counters_sync_boost>"
           "<clocks_event_reasons_counters_sw_therm_slowdown>0 us</clocks_event_reasons_counters_sw_therm_slowdown>"
           "<clocks_event_reasons_counters_hw_therm_slowdown>0 us</clocks_event_reasons_counters_hw_therm_slowdown>"
           "<clocks_event_reasons_counters_hw_power_brake>1500000000 us</clocks_event_reasons_counters_hw_power_brake>"
           "</clocks_event_reasons_counters></gpu></nvidia_smi_log>\n")
    (x,) = parse("smi_xml", xml).gpus
    assert x.clocks_event_reasons_counters == t.clocks_event_reasons_counters
    # a past power brake (1500 s since driver load) with no reason active now: PASS, the history in the note
    r = run("NG-CLK-001", healthy(gpus=[replace(gpu(), clocks_event_reasons_counters=t.clocks_event_reasons_counters)]))
    assert r.outcome is Outcome.PASS
    assert r.message == "note: counters since driver load (history, not judged): hw_power_brake_slowdown 1500 s"
    # a negative duration is no reading: only that attribute is void
    bad = parse("smi_text", text.replace("1500000000 us", "-5 us")).gpus[0]
    assert "clocks_event_reasons_counters" in bad.field_errors and bad.clocks_event_reasons["gpu_idle"] is False


@covers("NG-CLK-001")
def test_a_healthy_limiter_active_passes_with_its_note_sync_boost_too():
    reasons = dict(gpu().clocks_event_reasons, sw_power_cap=True, sync_boost=True, gpu_idle=False)
    r = run("NG-CLK-001", healthy(gpus=[gpu(clocks_event_reasons=reasons, clocks_event_reasons_mask=0x14)]))
    assert r.outcome is Outcome.PASS
    assert r.message.startswith("note: sw_power_cap active: the software power-scaling limiter")
    assert "; sync_boost active: clocks synchronised with other GPUs" in r.message
    # SW Power Cap named as a fail reason in the spec: no longer healthy, FAIL
    assert run("NG-CLK-001", healthy(gpus=[gpu(clocks_event_reasons=reasons, clocks_event_reasons_mask=0x14)])
               .without("clocks_samples"), spec(clocks={"fail_reasons": ["sw_power_cap"]})).outcome is Outcome.FAIL


# ------------------------------------------------------------------ PCIe capability: which end limits it (011)
@covers("NG-PCIE-001")
@pytest.mark.parametrize("link,tail", [
    (PcieLink(current_gen=4, max_gen=4, device_max_gen=5, host_max_gen=4, current_width=16, max_width=16),
     ": the GPU supports Gen5 (max_device_link_gen), the host caps it at Gen4 (max_host_link_gen: slot, riser or "
     "root port)"),
    (PcieLink(current_gen=3, max_gen=3, device_max_gen=5, host_max_gen=3, current_width=16, max_width=16),
     ": the GPU supports Gen5 (max_device_link_gen), the host caps it at Gen3 (max_host_link_gen: slot, riser or "
     "root port)"),
    (PcieLink(current_gen=4, max_gen=4, device_max_gen=4, host_max_gen=NA, current_width=16, max_width=16),
     ": the GPU itself reports Gen4 as its maximum (max_device_link_gen)"),
    (PcieLink(current_gen=4, max_gen=4, current_width=16, max_width=16), ""),    # pre-550: no device/host split
])
def test_capability_below_spec_names_the_limiting_end(link, tail):
    r = run("NG-PCIE-001", healthy(gpus=[gpu(link=link)]))
    assert r.outcome is Outcome.FAIL
    assert r.message.endswith(f"link capability Gen{link.max_gen} x16 below Gen5 x16{tail}")


@covers("NG-PCIE-001")
def test_host_max_na_with_device_at_spec_passes():
    r = run("NG-PCIE-001", healthy(gpus=[gpu(link=PcieLink(current_gen=5, max_gen=5, device_max_gen=5,
                                                           host_max_gen=NA, current_width=16, max_width=16))]))
    assert (r.outcome, r.observed) == (Outcome.PASS, "Gen5 x16 max")


# ------------------------------------------------------------------ NVLink absent on PCIe boards (119)
NO_NVLINK = ("GPU 0: NVIDIA RTX 6000 Ada Generation (UUID: GPU-00000000-0000-0000-0000-000000000000)\n"
             "Device does not have or support Nvlink\n"
             "GPU 1: NVIDIA RTX 6000 Ada Generation (UUID: GPU-00000000-0000-0000-0000-000000000001)\n"
             "Device does not have or support Nvlink\n")


@covers("NG-NVL-001", "NG-NVL-002")
def test_driver_says_no_nvlink_on_two_pcie_boards_skips_status_and_errors():
    status, errors = parse("nvlink_status", NO_NVLINK), parse("nvlink_errors", NO_NVLINK)
    assert [(b.index, b.status, b.message) for b in status] == [(i, "none", "Device does not have or support Nvlink")
                                                                 for i in (0, 1)]
    assert [(b.status, b.links) for b in errors] == [("none", [])] * 2
    assert guess_form(NO_NVLINK) == "nvlink_status"
    gs = [gpu(i, f"0000:{0x41 + i:02x}:00.0", name="NVIDIA RTX 6000 Ada Generation", pci_device_id="26b1",
              uuid=f"GPU-00000000-0000-0000-0000-00000000000{i}") for i in (0, 1)]
    f = healthy(gpus=gs, nvlink_status=status, nvlink_errors=errors, driver_gpus=[])
    for cid in ("NG-NVL-001", "NG-NVL-002"):
        for i in (0, 1):
            r = run(cid, f, gpu=i)
            assert r.outcome is Outcome.SKIP, (cid, i)
            assert r.message.startswith("nvlink.links=unset: ")
    # a SKU that has NVLink and a driver that says it has none: never a SKIP (unknown cause: ERROR as before)
    h100 = [replace(g, pci_device_id="2330", name="NVIDIA H100 80GB HBM3") for g in gs]
    assert run("NG-NVL-001", f.but(gpus=h100)).outcome is Outcome.ERROR
    # links listed and one <inactive>: the links are judged, never skipped
    down = parse("nvlink_status", "GPU 0: NVIDIA RTX 6000 Ada Generation (UUID: GPU-00000000-0000-0000-0000-"
                                  "000000000000)\n\t Link 0: <inactive>\n")
    assert run("NG-NVL-001", f.but(nvlink_status=down)).outcome is Outcome.ERROR   # no count expected: unknown SKU


# ------------------------------------------------------------------ ibstat stopping part-way (116)
TABS = ("CA 'mlx5_0'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n\tPort 1:\n"
        "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n")


@covers("NG-IB-001")
@pytest.mark.parametrize("stdout,rc,stderr,first", [
    (TABS, 255, "ibpanic: [77] main: stat of IB device 'mlx5_1' failed: No such file or directory\n",
     "ibpanic: [77] main: stat of IB device 'mlx5_1' failed"),                       # tabs build, panic on stderr
    ("", 255, "ibpanic: [9] main: can't open UMAD port (mlx5_0:1)\n", "ibpanic: [9] main: can't open UMAD port"),
    (TABS + "ibstat: iberror: failed: querying port 2\n", 0, "", "ibstat: iberror: failed: querying port 2"),
    (TABS, 1, "", "ibstat failed (exit code 1)"),
])
def test_ibstat_that_failed_is_error_whatever_sysfs_shows(stdout, rc, stderr, first):
    with pytest.raises(EvidenceError) as ei:
        nf(ib__ibstat=(stdout, rc, stderr)).ibstat_ports
    assert first in ei.value.reason
    if stdout:
        assert ei.value.reason.endswith("not judged: 1 CA(s), 1 port(s): 1 Active/LinkUp at 400 Gb/s")
    ports = parse("ibstat", TABS)
    r = run("NG-IB-001", healthy(ib_ports=ports, ibstat_ports=ei.value))
    assert r.outcome is Outcome.ERROR and r.message.startswith("ibstat failed (exit code ")


def test_ibstat_warning_alone_is_not_a_failure_and_never_a_stanza():
    text = "ibwarn: [12] umad_get_port: can't find port guid\n" + TABS
    assert ibstat_failures(text) == [] and [p.device for p in parse("ibstat", text)] == ["mlx5_0"]
    assert [p.state for p in nf(ib__ibstat=(text, 0)).ibstat_ports] == ["ACTIVE"]
    # ibstat not installed, or never gathered (an older probe, a bug report): sysfs decides
    f = healthy(ib_ports=parse("ibstat", TABS), ibstat_ports=EvidenceError("ib.ibstat", "evidence not collected: ib.ibstat"))
    assert run("NG-IB-001", f).outcome is Outcome.PASS


# ------------------------------------------------------------------ plain lspci, domains, unnamed ids (121)
PLAIN = ("0000:00:01.0 PCI bridge: Intel Corporation Device 09ab\n"
         "0000:17:00.0 Bridge: NVIDIA Corporation GH100 [H100 NVSwitch] (rev a1)\n"
         "000f:01:00.0 3D controller: NVIDIA Corporation Device 2901 (rev a1)\n"
         "41:00.0 VGA compatible controller: NVIDIA Corporation GA102 [GeForce RTX 3090] (rev a1)\n"
         "41:00.1 Audio device: NVIDIA Corporation GA102 High Definition Audio Controller (rev a1)\n"
         "02:00.0 VGA compatible controller: Matrox Electronics Systems Ltd. Integrated Matrox G200eW3 (rev 04)\n")


def test_plain_lspci_with_and_without_domains_is_read_as_lspci():
    from nodegate.altkeys import gpus_from_lspci
    assert guess_form(PLAIN) == "lspci"
    links = parse("lspci", PLAIN)
    assert [(l.bdf, l.display) for l in links if l.display] == [("000f:01:00.0", True), ("0000:41:00.0", True)]
    assert [g.pci_device_id for g in gpus_from_lspci(links)] == ["2901", None]   # named GA102: no id without -nn
    assert [l.bdf for l in links if l.description.startswith("Bridge: NVIDIA")] == ["0000:17:00.0"]
    # a kernel log that mentions PCI addresses is not an lspci listing
    assert guess_form("[    2.1] pci 0000:17:00.0: [10de:22a3] type 00 class 0x068000\n") == "kernel_log"


# ------------------------------------------------------------------ the open module refusing a GPU (204)
@pytest.mark.parametrize("prefix", ["[    6.311007] ", "Mar 13 21:36:59 hx kernel: [    6.311007] ",
                                    "2023-03-13T21:36:59+0700 hx kernel: ", "[Mon Mar 13 21:36:59 2023] "])
def test_open_module_refusal_in_every_line_shape(prefix):
    evs = parse("kernel_log", f"{prefix}NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
                              f"{prefix}NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x62:0x0:1835)\n")
    assert [(e.kind, e.bus_id) for e in evs] == [("open_unsupported_gpu", None),
                                                 ("rm_init_adapter_failed", "0000:01:00.0")]
    assert evs[0].text == "NVRM: Open nvidia.ko is only ready for use on Data Center GPUs."


def test_kern_log_uptime_after_the_syslog_prefix_keeps_continuations_joined():
    text = ("Mar 03 13:47:27 n1 kernel: [  903.61] NVRM: API mismatch: the client has the version 535.154.05, but\n"
            "Mar 03 13:47:27 n1 kernel: [  903.61] NVRM: this kernel module has the version 550.78.  Please\n")
    (ev,) = parse("kernel_log", text)
    assert ev.kind == "api_mismatch"
    assert ev.details == {"client_version": "535.154.05", "kernel_version": "550.78"}


@covers("NG-FLV-001")
def test_open_refusal_in_the_current_boot_fails_flavor_whatever_driver_flavor_says():
    from nodegate.facts import KernelEvent
    ev = KernelEvent("open_unsupported_gpu", "NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.")
    r = run("NG-FLV-001", healthy(kernel_events=[ev]), spec(driver={"flavor": "open"}))
    assert r.outcome is Outcome.FAIL and "install the proprietary modules" in r.message


# ------------------------------------------------------------------ ExecStart= resets across drop-ins (036)
UNIT = "/usr/lib/systemd/system/nvidia-persistenced.service"
CMD = "/usr/bin/nvidia-persistenced --user nvidia-persistenced"


def test_effective_exec_start_follows_systemds_load_order():
    frag = UnitFile(UNIT, ["/usr/bin/nvidia-persistenced --verbose"], type="forking")
    etc = UnitFile("/etc/systemd/system/nvidia-persistenced.service.d/override.conf", ["", CMD])
    run_ = UnitFile("/run/systemd/system/nvidia-persistenced.service.d/override.conf", ["/x"])   # shadowed by /etc's
    later = UnitFile("/etc/systemd/system/nvidia-persistenced.service.d/zz-extra.conf", ["/usr/bin/extra"])
    before = UnitFile("/etc/systemd/system/nvidia-persistenced.service.d/90-extra.conf", ["/usr/bin/extra"])
    early = UnitFile("/usr/lib/systemd/system/nvidia-persistenced.service.d/10-reset.conf", [""])
    assert effective_exec_start([frag, etc, run_]) == ([CMD], "forking")
    assert effective_exec_start([frag, etc, later]) == ([CMD, "/usr/bin/extra"], "forking")   # zz- after override
    assert effective_exec_start([frag, etc, before]) == ([CMD], "forking")   # 90- sorts first: override resets it
    assert effective_exec_start([frag, early]) == ([], "forking")
    assert effective_exec_start([UnitFile(UNIT, ["/a", "/b"], type="oneshot")]) == (["/a", "/b"], "oneshot")


@covers("NG-PER-002")
def test_a_second_dropin_without_the_reset_fails_before_systemd_refuses_the_unit():
    h = healthy()
    extra = UnitFile("/etc/systemd/system/nvidia-persistenced.service.d/zz-extra.conf", ["/usr/bin/extra"])
    r = run("NG-PER-002", h.but(persistenced_unit_files=h.persistenced_unit_files + [extra]))
    assert r.outcome is Outcome.FAIL
    assert r.message == ("the unit files resolve to 2 ExecStart= commands (Type=forking allows one: systemd refuses "
                         "the unit at its next daemon-reload)")
    ok = UnitFile(DROPIN, ["", CMD + " --persistence-mode"])
    assert run("NG-PER-002", h.but(persistenced_unit_files=[h.persistenced_unit_files[0], ok])).outcome is Outcome.PASS
