"""nvidia-bug-report logs (nodegate/bugreport; issue 21 item 11). Every real log in tests/bugreports/ (copies of
../shared/bugreports/, README there) is judged and the verdict its header states is asserted; where the header
allows two outcomes the README's rule decides (the kernel-log checks judge the current boot), where it and the
catalog differ the test follows the catalog and says why. Synthetic logs in the forms of bug-report versions
no public log covers (tests/bugreport/synth.py) show the kind works for any GPU and version."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

from nodegate.bugreport import VERSIONS, bug_report_paths, convert, load_bug_report, read_log, split_sections
from nodegate.bugreport.sections import bug_report_version, command_name
from nodegate.collect import NodeFacts
from nodegate.outcomes import Outcome
from tests.checks.fakes import run, spec

from . import synth

LOGS = Path(__file__).resolve().parents[1] / "bugreports"
L202 = next(LOGS.glob("202-*.log"))
L203 = next(LOGS.glob("203-*.log"))
L204 = next(LOGS.glob("204-*.log"))
DESKTOP = {"ecc": {"required": False}}     # the README: desktop/workstation logs; ECC is not part of their spec


def header(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8", errors="replace").split("\n---\n", 1)[0]
    return dict(ln.split(": ", 1) for ln in head.splitlines() if ": " in ln)


def facts(path: Path) -> NodeFacts:
    return NodeFacts(load_bug_report(path))


def outcomes(cid, f, sp=None):
    return [run(cid, f, sp, gpu=i).outcome for i in range(len(f.gpus))]


@pytest.fixture(scope="module")
def f202():
    return facts(L202)


@pytest.fixture(scope="module")
def f203():
    return facts(L203)


@pytest.fixture(scope="module")
def f204():
    return facts(L204)


def test_bug_reports_copied_byte_exact():
    shared = Path(__file__).resolve().parents[3] / "shared" / "bugreports"
    if not shared.is_dir():
        pytest.skip(f"{shared} absent (a clone without ../shared): nothing to compare the copies with")
    names = sorted(p.name for p in shared.glob("*.log"))
    assert sorted(p.name for p in LOGS.glob("*.log")) == names
    for name in names:
        assert (LOGS / name).read_bytes() == (shared / name).read_bytes(), name


def test_every_bug_report_copy_has_a_verdict_test():
    names = {p.name[:3] for p in LOGS.glob("*.log")}
    src = Path(__file__).read_text()
    assert names == {"202", "203", "204"}
    assert all(f"def test_{n}_" in src for n in names)


# ------------------------------------------------------------------ 202: 4x RTX 2080 Ti server, 440.31
def test_202_sections_node_and_version(f202):
    secs = split_sections(read_log(L202))
    assert len([s for s in secs if s.kind != "text"]) == 161                 # header: "161 sections"
    assert bug_report_version(secs) == "27505028" and "27505028" in VERSIONS
    assert f202.node == "lab-gpu1-node-1"                        # uname -a's host
    assert (f202.kernel_release, f202.gpu_source, len(f202.gpus)) == ("5.0.0-36-generic", "smi_text", 4)


def test_202_driver_stack_flavor_and_gsp(f202):
    assert "440.31" in header(L202)["driver"]
    r = run("NG-DRV-001", f202)
    assert (r.outcome, r.observed) == (Outcome.PASS, "kernel module 440.31, NVML 440.31")
    assert run("NG-FLV-001", f202).outcome is Outcome.PASS               # proprietary; no open modules in 440
    r = run("NG-GSP-002", f202, gpu=0)
    assert r.outcome is Outcome.SKIP
    assert "driver 440.31 predates GSP firmware" in r.message


def test_202_kernel_log_current_boot_clean_history_counts_3_xid62_incidents_not_607_lines(f202):
    # header: "FAIL for GPU 0000:03:00 (or WARN if the policy only looks at the current boot) ... the current
    # boot is clean": the README's rule decides, the kernel-log checks judge the current boot -> PASS, and the
    # earlier boots' Xid 62 incidents are shown (3, kern.log and journal deduplicated), not 607 lines
    text = L202.read_text(encoding="utf-8", errors="replace").split("\n---\n", 1)[1]
    assert len(re.findall(r"NVRM: Xid", text)) == 607
    assert run("NG-LOG-001", f202).outcome is Outcome.PASS
    assert outcomes("NG-LOG-002", f202) == [Outcome.PASS] * 4
    r = run("NG-LOG-002", f202, gpu=1)
    assert "history (earlier boots, not judged): " in r.observed
    assert re.search(r"Xid 62 \([^)]*\) at 0000:03:00\.0 x3;", r.observed)
    assert "Xid 62" not in run("NG-LOG-002", f202, gpu=0).observed     # all 607 lines are on 03:00
    assert sum(1 for e in f202.kernel_history if e.xid == 62) == 3
    assert not [e for e in f202.kernel_events if e.kind == "xid"]


def test_202_persistence_legacy_mode_fails_under_daemon_policy(f202):
    # header: "WARN (FAIL under a strict policy) - Enabled ... through the deprecated legacy mode"; the default
    # persistence.mode=daemon is that strict policy; the kernel log confirms the legacy flag
    for i in range(4):
        r = run("NG-PER-004", f202, gpu=i)
        assert r.outcome is Outcome.FAIL
        assert "persistence mode is legacy (nvidia-smi -pm 1), the daemon is not running; kernel log confirms" in r.message
    assert run("NG-PER-004", f202, spec(persistence={"mode": "legacy"})).outcome is Outcome.PASS


def test_202_pcie_busy_gpus_at_max_idle_gpu_unverified(f202):
    assert outcomes("NG-PCIE-001", f202) == [Outcome.PASS] * 4
    # header: "03:00 at Gen1 while idle at P8 is power-saving downtraining, not a fault (re-check under load)":
    # catalog pcie.idle=not_verified -> SKIP with the observed state, the three busy GPUs PASS
    assert outcomes("NG-PCIE-002", f202) == [Outcome.PASS, Outcome.SKIP, Outcome.PASS, Outcome.PASS]
    assert run("NG-PCIE-002", f202, gpu=1).observed == "Gen1 x16 at P8, GpuIdle active"
    assert run("NG-PCIE-002", f202, gpu=0).observed == "Gen3 x16 at P2, GpuIdle not active"


def test_202_clocks_ecc_memory_gpu_count(f202):
    assert outcomes("NG-CLK-001", f202) == [Outcome.PASS] * 4          # SW Power Cap is healthy
    for cid in ("NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-MEM-002"):
        assert outcomes(cid, f202, spec(**DESKTOP)) == [Outcome.SKIP] * 4, cid
    r = run("NG-INV-001", f202)
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("4 GPU(s): 0000:02:00.0, 0000:03:00.0, 0000:83:00.0, 0000:84:00.0")
    assert run("NG-DRV-002", f202).outcome is Outcome.SKIP             # "Fabric manager: N/A"


def test_202_what_the_log_lacks_is_error_evidence_not_in_the_bug_report(f202):
    for cid, key in (("NG-DKMS-001", "dkms.status"), ("NG-MOD-001", "modules.sys"),
                     ("NG-PER-002", "persistenced.unit_files"), ("NG-PER-003", "persistenced.passwd")):
        r = run(cid, f202)
        assert r.outcome is Outcome.ERROR, cid
        assert r.message.startswith(f"evidence not in the bug report: {key}"), (cid, r.message)
    r = run("NG-PCIE-003", f202, gpu=0)
    assert (r.outcome, r.message.startswith("evidence not in the bug report: pci.sysfs")) == (Outcome.ERROR, True)


# ------------------------------------------------------------------ 203: Quadro K2200 workstation, 510.73.08
def test_203_sections_node_and_version(f203):
    secs = split_sections(read_log(L203))
    assert len([s for s in secs if s.kind != "text"]) == 106                 # header: "106 sections"
    assert bug_report_version(secs) == "31295035"
    assert (f203.node, len(f203.gpus)) == ("wkstn01", 1)


def test_203_driver_flavor_persistence(f203):
    r = run("NG-DRV-001", f203)
    assert (r.outcome, r.observed) == (Outcome.PASS, "kernel module 510.73.08, NVML 510.73.08")
    assert run("NG-FLV-001", f203).outcome is Outcome.PASS             # proprietary, which Maxwell requires
    r = run("NG-PER-004", f203, gpu=0)                                 # Enabled, daemon 'Started' this boot
    assert (r.outcome, r.observed) == (Outcome.PASS, "Enabled, nvidia-persistenced pid 767")


def test_203_vermagic_absent_is_error_never_a_mismatch(f203):
    r = run("NG-DKMS-001", f203, spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("evidence not in the bug report: modinfo.nvidia ('/sbin/modinfo nvidia | grep "
                                "vermagic' printed nothing)")


def test_203_pcie_gen1_at_idle_on_a_gen2_board(f203):
    assert run("NG-PCIE-001", f203).observed == "Gen2 x16 max"
    assert run("NG-PCIE-001", f203).outcome is Outcome.PASS
    # header: "PASS - Gen1 while idle at P8 is normal downtraining"; the catalog's outcome for a link below
    # spec at idle is SKIP under pcie.idle=not_verified (never the FAIL the header warns against)
    r = run("NG-PCIE-002", f203)
    assert (r.outcome, r.observed) == (Outcome.SKIP, "Gen1 x16 at P8, GpuIdle active")


def test_203_clocks_ecc_kernel_log_count(f203):
    assert run("NG-CLK-001", f203).outcome is Outcome.PASS
    for cid in ("NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-MEM-002"):
        assert run(cid, f203, spec(**DESKTOP)).outcome is Outcome.SKIP, cid
    # dmesg holds only UFW lines (rotated): coverage rests on journalctl -b -0
    assert f203.kernel_log_source == "dmesg + journalctl -b -0 (nvidia-bug-report)"
    assert any(e.kind == "loading_banner" for e in f203.kernel_events)
    assert run("NG-LOG-001", f203).outcome is Outcome.PASS
    assert run("NG-LOG-002", f203).outcome is Outcome.PASS
    assert run("NG-INV-001", f203).outcome is Outcome.PASS


# ------------------------------------------------------------------ 204: GTX 1650 Ti laptop, 525.85.05
def test_204_sections_node_and_version(f204):
    secs = split_sections(read_log(L204))
    assert len([s for s in secs if s.kind != "text"]) == 108                 # header: "108 sections"
    assert bug_report_version(secs) == "32263591"
    assert (f204.node, f204.kernel_release, f204.gpu_source, len(f204.gpus)) == ("hx", "5.14.0-1058-oem", "smi_text", 1)
    assert f204.gpus[0].name == "NVIDIA GeForce GTX 1650 Ti with Max-Q Design"


def test_204_driver_stack_and_vermagic_pass(f204):
    r = run("NG-DRV-001", f204)
    assert (r.outcome, r.observed) == (Outcome.PASS, "kernel module 525.85.05, NVML 525.85.05")
    # header: "vermagic = uname -r (DKMS build; its make.log is removed here)": the log has no dkms status, its
    # modinfo section is the vermagic line only: modinfo resolved a file for the booted kernel, unnamed
    r = run("NG-DKMS-001", f204, spec(driver={"install": "precompiled"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == ("filename none, vermagic 5.14.0-1058-oem SMP mod_unload modversions (file name not in the "
                          "evidence: modinfo's vermagic line only)")
    r = run("NG-DKMS-001", f204, spec(driver={"install": "dkms"}))
    assert (r.outcome, r.message.startswith("evidence not in the bug report: dkms.status")) == (Outcome.ERROR, True)


def test_204_flavor_current_boot_proprietary_passes_the_open_refusal_is_history(f204):
    # header: "Kernel module flavor: current PASS (proprietary); history FAIL signature - the Open module on a
    # GeForce Turing laptop under 525 ('Open nvidia.ko is only ready for use on Data Center GPUs' followed by
    # RmInitAdapter failed)". The README's rule: the current boot is judged, earlier boots are shown
    r = run("NG-FLV-001", f204)
    assert r.outcome is Outcome.PASS
    assert r.observed == ("proprietary 525.85.05; history (earlier boots, not judged): the open module refused the "
                          "GPU ('only ready for use on Data Center GPUs')")
    (ev,) = [e for e in f204.kernel_history if e.kind == "open_unsupported_gpu"]
    assert ev.text == "NVRM: Open nvidia.ko is only ready for use on Data Center GPUs."
    # the on-disk flavor: the log's modinfo is the vermagic line, no license: not shown, never guessed
    r = run("NG-FLV-002", f204)
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("on-disk module license not reported (modinfo gave no 'license' line)")


def test_204_kernel_log_current_boot_clean_xid79_and_rminitadapter_are_history(f204):
    assert not [e for e in f204.kernel_events if e.kind in ("xid", "rm_init_adapter_failed", "open_unsupported_gpu")]
    r = run("NG-LOG-001", f204)
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("history (earlier boots, not judged): the open kernel module refuses this GPU ('only "
                               "ready for use on Data Center GPUs')")
    r = run("NG-LOG-002", f204)
    assert r.outcome is Outcome.PASS
    hist = r.observed.split("history (earlier boots, not judged): ", 1)[1]
    assert "RmInitAdapter failed (GPU could not be initialised) at 0000:01:00.0 x80" in hist
    assert re.search(r"Xid 79 \(GPU has fallen off the bus[^)]*\) at 0000:01:00\.0;", hist)
    assert sum(1 for e in f204.kernel_history if e.xid == 79) == 1                   # Mar 21, kern.log only
    assert run("NG-INV-001", f204).outcome is Outcome.PASS                          # 1 GPU


def test_204_persistence_disabled_and_the_daemon_stopped_in_this_boot_fail(f204):
    # header: "FAIL under a datacenter policy (WARN on a laptop)": nodegate's default is that policy. The
    # journal -b -0 shows 'Started (749)' at 21:18:01 then 'Shutdown (749)' at 21:17:49: the line order decides
    assert f204.persistenced.processes == []
    r = run("NG-PER-004", f204)
    assert (r.outcome, r.observed) == (Outcome.FAIL, "persistence mode Disabled")
    r = run("NG-PER-001", f204)
    assert r.outcome is Outcome.FAIL and r.observed.startswith("no nvidia-persistenced process")


def test_204_pcie_clocks_memory_on_a_geforce_laptop(f204):
    r = run("NG-PCIE-001", f204)
    assert (r.outcome, r.observed) == (Outcome.PASS, "Gen3 x16 max")       # SKU profile 1f95 (from this log)
    r = run("NG-PCIE-002", f204)
    assert (r.outcome, r.observed) == (Outcome.PASS, "Gen3 x16 at P0, GpuIdle not active")
    assert run("NG-CLK-001", f204).outcome is Outcome.PASS
    for cid in ("NG-ECC-001", "NG-ECC-002", "NG-MEM-001", "NG-MEM-002"):
        assert run(cid, f204, spec(**DESKTOP)).outcome is Outcome.SKIP, cid
    # without the desktop spec the retired pages / remapped rows of this board are still not applicable
    assert run("NG-MEM-002", f204).outcome is Outcome.SKIP
    assert run("NG-MEM-001", f204).outcome is Outcome.SKIP


def test_persistenced_order_is_the_journal_line_order_not_its_timestamps():
    from nodegate.bugreport.kernel import persistenced_from_journal
    # 204's shape: the stop stamped before the start (clock stepped back); then a restart stamped earlier still
    lines = ["Apr 06 21:18:01 hx nvidia-persistenced[749]: Started (749)",
             "Apr 06 21:17:49 hx nvidia-persistenced[749]: Received signal 15",
             "Apr 06 21:17:49 hx nvidia-persistenced[749]: Shutdown (749)"]
    assert persistenced_from_journal(lines) == []
    assert persistenced_from_journal(lines + ["Apr 06 21:17:40 hx nvidia-persistenced[801]: Started (801)"]) == [801]


def test_open_module_refusing_a_geforce_gpu_in_the_current_boot_fails_flavor_log_and_inventory():
    journal = ("Nov 29 18:01:01 gpu042 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  525.85.05  "
               "Release Build  (dvs-builder@U16-A22-20-3)  Sat Jan 14 00:53:29 UTC 2023\n"
               "Nov 29 18:01:02 gpu042 kernel: NVRM: Open nvidia.ko is only ready for use on Data Center GPUs.\n"
               "Nov 29 18:01:02 gpu042 kernel: NVRM: To force use of Open nvidia.ko on other GPUs, see the\n"
               "Nov 29 18:01:02 gpu042 kernel: NVRM: 'OpenRmEnableUnsupportedGpus' kernel module parameter described\n"
               "Nov 29 18:01:02 gpu042 kernel: NVRM: in the README.\n"
               "Nov 29 18:01:03 gpu042 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x62:0x0:1835)\n")
    f = NodeFacts(convert(synth.log_37062940(journal0=journal), "x"))
    r = run("NG-FLV-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("the open kernel module refuses the GPU 0000:3b:00.0 (RmInitAdapter failed): 'Open "
                                "nvidia.ko is only ready for use on Data Center GPUs'; install the proprietary modules")
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "the open kernel module refuses this GPU ('only ready for use on Data Center GPUs')" in r.message
    r = run("NG-INV-001", f)
    assert r.outcome is Outcome.FAIL and "0000:3b:00.0 failed to initialise" in r.observed


# ------------------------------------------------------------------ other bug-report versions, other GPUs
def test_2025_script_forms_on_a_datacenter_gpu():
    journal = ("Nov 29 18:01:02 gpu042 kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04\n"
               "Nov 29 18:01:04 gpu042 nvidia-persistenced[1413]: Started (1413)\n")
    text = synth.log_37062940(journal0=journal)
    b = convert(text, "fallback")
    f = NodeFacts(b)
    assert (b.meta["bug_report_version"], f.node) == ("37062940", "gpu042")
    assert {"smi.q", "pci.lspci_vvv", "driver.proc_version", "systemd.persistenced_status", "modinfo.nvidia",
            "kernel.log", "persistenced.process"} <= set(b.items)
    # the nvidia-smi block holds --query, --query --unit and nvlink --status: only --query is smi.q
    assert "Attached Units" not in b.items["smi.q"].text and "Link 0:" not in b.items["smi.q"].text
    g = f.gpus[0]
    assert (g.name, g.pci_device_id, g.link.current_gen) == ("NVIDIA H200", "2335", 5)
    assert run("NG-PCIE-002", f).outcome is Outcome.PASS
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
    assert run("NG-GSP-002", f).outcome is Outcome.PASS
    assert run("NG-ECC-002", f).outcome is Outcome.PASS
    r = run("NG-PER-001", f)
    assert (r.outcome, r.observed.startswith("LoadState=loaded ActiveState=active SubState=running")) == \
        (Outcome.PASS, True)
    assert run("NG-PER-004", f).outcome is Outcome.PASS
    assert f.modinfo_nvidia.vermagic.startswith("6.8.0-50-generic")
    assert f.lspci_links[0].vendor_device == "10de:2335"


def test_log_without_nvidia_smi_output_falls_back_to_lspci_link_status():
    text = synth.log_37062940()
    text = re.sub(r"_{44}\n\n/usr/bin/nvidia-smi --query.*?(?=_{44})", "", text, flags=re.S)
    f = NodeFacts(convert(text, "x"))
    assert (f.gpu_source, len(f.gpus)) == ("lspci", 1)
    assert run("NG-PCIE-001", f).outcome is Outcome.PASS
    r = run("NG-ECC-001", f)
    assert r.outcome is Outcome.ERROR
    assert "ECC mode not reported" in r.message


def test_kernel_events_in_dmesg_and_journal_counted_once():
    line = "NVRM: Xid (PCI:0000:00:06): 79, pid=0, GPU has fallen off the bus."
    journal = f"Nov 29 18:40:00 gpu042 kernel: {line}\n"
    dmesg = f"[ 2338.125] {line}\n"
    f = NodeFacts(convert(synth.log_37062940(journal0=journal, dmesg=dmesg), "x"))
    xids = [e for e in f.kernel_events if e.kind in ("xid", "fallen_off_bus")]
    assert len([e for e in xids if e.kind == "xid"]) == 1
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.FAIL
    assert "Xid 79" in r.message


def test_node_name_from_file_name_when_uname_is_absent():
    text = synth.log_37062940().replace("uname: Linux gpu042", "uname: (none)")
    b = convert(text, "ticket-4711-node")
    assert b.node == "ticket-4711-node"
    assert "meta.hostname" not in b.items
    assert NodeFacts(b).kernel_release == "6.8.0-50-generic"             # from *** /proc/version


def test_header_forms_are_normalised():
    assert command_name('/usr/bin/lspci -d "10de:*" -v -xxx') == 'lspci -d "10de:*" -v -xxx'
    assert command_name("dmesg:") == "dmesg"
    assert command_name("/sbin/modinfo nvidia | grep vermagic") == "modinfo nvidia | grep vermagic"


# ------------------------------------------------------------------ files: gzip, folders, hostile input
def test_gzip_and_plain_give_the_same_bundle(tmp_path):
    gz = tmp_path / "nvidia-bug-report.log.gz"
    gz.write_bytes(gzip.compress(L203.read_bytes()))
    a, b = load_bug_report(L203), load_bug_report(gz)
    assert a.node == b.node == "wkstn01"
    assert {k: v.stdout for k, v in a.items.items()} == {k: v.stdout for k, v in b.items.items()}


def test_folder_of_logs_and_a_second_log_of_one_host(tmp_path):
    (tmp_path / "a.log").write_bytes(L203.read_bytes())
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(L203.read_bytes()))
    (tmp_path / "notes.md").write_text("not a log")
    paths = bug_report_paths(tmp_path)
    assert [p.name for p in paths] == ["a.log", "b.log.gz"]
    taken: set[str] = set()
    names = [load_bug_report(p, taken).node for p in paths]
    assert names == ["wkstn01", "wkstn01--b"]


def test_corrupt_gzip_is_an_unreadable_node_not_a_crash(tmp_path):
    bad = tmp_path / "broken.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    b = load_bug_report(bad)
    assert (b.node, b.meta["status"]) == ("broken", "unreadable")
    assert "unreadable gzip" in b.gather_error


def test_decompression_is_capped(tmp_path):
    bomb = tmp_path / "big.log.gz"
    bomb.write_bytes(gzip.compress(b"x" * 2_000_000))
    from nodegate.bugreport import BugReportError
    with pytest.raises(BugReportError, match="more than 1000000 bytes"):
        read_log(bomb, cap=1_000_000)


def test_symlinked_log_is_refused(tmp_path):
    link = tmp_path / "link.log"
    link.symlink_to(L203)
    b = load_bug_report(link)
    assert b.meta["status"] == "unreadable"
    assert "cannot open" in b.gather_error
