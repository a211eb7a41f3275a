"""Kernel log: NVRM/Xid events mapped to GPUs (checks.md "Kernel log")."""

from nodegate.facts import KernelEvent
from nodegate.outcomes import Outcome
from nodegate.spec import xid_fail_set, xid_table

from .fakes import BUS, covers, gpu, healthy, missing, run, spec


def xid(n, bus="0000:00:06", text=None):
    return KernelEvent("xid", text or f"NVRM: Xid (PCI:{bus}): {n}, pid=1234, name=python", bus_id=bus, xid=n)


def test_xid_table_fail_set_is_the_catalog_set():
    # issue 39.1: NVIDIA's Xid catalog (nodegate/data/xid.yaml, tools/gen_xid_catalog.py) supersedes
    # checks.md's short list: an immediate action on the GPU or node FAILs; IGNORE / RESTART_APP do not
    fs = xid_fail_set()
    assert {48, 62, 64, 74, 79, 95, 109, 119, 120, 136, 140, 143, 154, 158} <= fs
    assert set(range(144, 151)) <= fs            # NVLink5 (and its network interface, 149)
    assert not fs & {8, 13, 31, 43, 45, 63, 92, 94, 121, 137}
    assert xid_table()[94].action == "RESTART_APP" and xid_table()[62].action == "RESET_GPU"
    assert len(xid_table()) == 172


@covers("NG-LOG-001", "NG-LOG-002")
def test_clean_log_passes():
    assert run("NG-LOG-001", healthy()).outcome is Outcome.PASS
    r = run("NG-LOG-002", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "no failing events"


@covers("NG-LOG-002")
def test_xid_79_on_gpu_fails_naming_gpu():
    r = run("NG-LOG-002", healthy(kernel_events=[xid(79)]))
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("GPU 0 (0000:00:06.0, serial 1650000000001): Xid 79 (GPU has fallen off the bus")


@covers("NG-LOG-002")
def test_xid_48_and_63_cross_check_memory():
    r = run("NG-LOG-002", healthy(kernel_events=[xid(48), xid(63)]))
    assert r.outcome is Outcome.FAIL
    assert "cross-check NG-MEM-001/NG-MEM-002" in r.message


@covers("NG-LOG-002")
def test_application_xid_13_is_informational():
    r = run("NG-LOG-002", healthy(kernel_events=[xid(13), xid(13)]))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("no failing events; informational: Xid 13 (Graphics Engine Exception")
    assert r.observed.endswith("x2")


@covers("NG-LOG-002")
def test_xid_94_contained_is_informational_per_catalog():
    # the catalog: Xid 94 RESTART_APP (contained to one application; "reset the GPU when convenient");
    # the memory checks (NG-MEM-*) judge the rows it left pending
    r = run("NG-LOG-002", healthy(kernel_events=[xid(94)]))
    assert r.outcome is Outcome.PASS
    assert "Xid 94 (Contained memory error; minor; action: RESTART_APP)" in r.observed


@covers("NG-LOG-002")
def test_xid_62_halt_fails_with_its_reset_action():
    r = run("NG-LOG-002", healthy(kernel_events=[xid(62)]))
    assert r.outcome is Outcome.FAIL
    assert "Xid 62 (Internal micro-controller halt; major; action: RESET_GPU)" in r.message


@covers("NG-LOG-001", "NG-LOG-002")
def test_an_xid_not_in_the_catalog_is_error_never_pass():
    for x in (173, 200, 999):
        r = run("NG-LOG-002", healthy(kernel_events=[xid(x)]))
        assert r.outcome is Outcome.ERROR, (x, r)
        assert f"Xid {x} is not in the catalog" in r.message and "(driver " in r.message and "review" in r.message


@covers("NG-LOG-002")
def test_xid_45_caused_by_a_previous_xid_follows_it():
    # the driver appends " caused by previous Xid %d" to a cleanup Xid 45 (open-gpu-kernel-modules
    # rc_engine.c); real line: corpus 122 (Talos, A100)
    line = "NVRM: Xid (PCI:0000:00:06): 45, pid=22884, name=python, channel 0x00000010 caused by previous Xid {}"
    r = run("NG-LOG-002", healthy(kernel_events=[xid(45, text=line.format(149))]))
    assert r.outcome is Outcome.FAIL and "Xid 45 caused by previous Xid 149 (NVLink5 network interface" in r.message
    assert run("NG-LOG-002", healthy(kernel_events=[xid(45, text=line.format(13))])).outcome is Outcome.PASS
    # the driver's self-reference "caused by previous Xid 45" (corpus 122) is a plain cleanup
    assert run("NG-LOG-002", healthy(kernel_events=[xid(45, text=line.format(45))])).outcome is Outcome.PASS


@covers("NG-LOG-002")
def test_xid_fail_set_overridden_by_spec():
    r = run("NG-LOG-002", healthy(kernel_events=[xid(94)]), spec(kernel_log={"xid_fail": [79]}))
    assert r.outcome is Outcome.PASS


@covers("NG-LOG-002")
def test_event_on_other_gpu_does_not_count_here():
    g1 = gpu(index=1, bus="0000:19:00.0")
    f = healthy(gpus=[gpu(), g1], kernel_events=[xid(48, bus="0000:19:00")])
    assert run("NG-LOG-002", f, gpu=0).outcome is Outcome.PASS
    assert run("NG-LOG-002", f, gpu=1).outcome is Outcome.FAIL
    assert run("NG-LOG-001", f).outcome is Outcome.PASS


@covers("NG-LOG-002")
def test_nonzero_pci_domain_maps_to_gpu():
    f = healthy(gpus=[gpu(bus="000f:01:00.0")], kernel_events=[xid(79, bus="000f:01:00")])
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.FAIL


@covers("NG-LOG-001")
def test_fallen_off_bus_for_unlisted_gpu_fails_node():
    ev = KernelEvent("fallen_off_bus", "NVRM: GPU 0000:a1:00.0: GPU has fallen off the bus.", bus_id="0000:a1:00.0")
    r = run("NG-LOG-001", healthy(kernel_events=[ev]))
    assert r.outcome is Outcome.FAIL
    assert "GPU has fallen off the bus at 0000:a1:00.0" in r.observed


@covers("NG-LOG-001")
def test_rm_init_adapter_failed_fails():
    ev = KernelEvent("rm_init_adapter_failed", "NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
                     bus_id="0000:98:00.0")
    r = run("NG-LOG-001", healthy(kernel_events=[ev]))
    assert r.outcome is Outcome.FAIL
    assert "RmInitAdapter failed" in r.message


@covers("NG-LOG-001")
def test_gsp_init_failure_fails():
    ev = KernelEvent("gsp_init_failed", "NVRM: RmInitAdapter: Cannot initialize GSP firmware RM", bus_id=None)
    assert run("NG-LOG-001", healthy(kernel_events=[ev])).outcome is Outcome.FAIL


@covers("NG-LOG-001")
def test_api_mismatch_fails():
    ev = KernelEvent("api_mismatch", "NVRM: API mismatch: the client has the version 535.154.05, but ...")
    r = run("NG-LOG-001", healthy(kernel_events=[ev]))
    assert r.outcome is Outcome.FAIL
    assert "API mismatch" in r.observed


@covers("NG-LOG-001")
def test_probe_not_called_nouveau_fails():
    ev = KernelEvent("probe_not_called", "NVRM: The NVIDIA probe routine was not called for 3 device(s).")
    r = run("NG-LOG-001", healthy(kernel_events=[ev]))
    assert r.outcome is Outcome.FAIL
    assert "nouveau" in r.observed


@covers("NG-LOG-001")
def test_requires_open_fails():
    ev = KernelEvent("requires_open", "NVRM: ... requires use of the NVIDIA open kernel modules.")
    assert run("NG-LOG-001", healthy(kernel_events=[ev])).outcome is Outcome.FAIL


@covers("NG-LOG-001")
def test_persistence_deprecated_line_is_not_a_failure():
    ev = KernelEvent("persistence_legacy", "NVRM: Persistence mode is deprecated ...")
    assert run("NG-LOG-001", healthy(kernel_events=[ev])).outcome is Outcome.PASS


@covers("NG-LOG-001", "NG-LOG-002")
def test_log_not_readable_without_root_is_error():
    f = healthy(kernel_events=missing("kernel_events", "exit code 1: dmesg: read kernel buffer failed: "
                                                        "Operation not permitted"))
    for cid in ("NG-LOG-001", "NG-LOG-002"):
        r = run(cid, f)
        assert r.outcome is Outcome.ERROR
        assert "Operation not permitted" in r.message


@covers("NG-LOG-001")
def test_gpus_unreadable_counts_every_event_on_node():
    f = healthy(gpus=missing("gpus", "nvidia-smi failed"), kernel_events=[xid(79, bus=BUS[:-2])])
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.FAIL
    assert "GPUs unreadable" in r.observed


@covers("NG-LOG-001")
def test_kernel_log_disabled_skips():
    r = run("NG-LOG-001", healthy(), spec(kernel_log={"enabled": False}))
    assert r.outcome is Outcome.SKIP
    assert "kernel_log.enabled=false" in r.message


@covers("NG-LOG-002")
def test_gpu_without_bus_id_is_error():
    f = healthy(gpus=[gpu(bus=None)], kernel_events=[KernelEvent("xid", "NVRM: Xid (PCI:0000:00:06): 79, ...",
                                                                 bus_id="0000:00:06", xid=79)])
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.observed == "bus id not reported"
    assert r.message == ("GPU 0 (bus id unknown, serial 1650000000001): PCI bus id not reported; kernel log events "
                         "cannot be mapped to this GPU")


# ---------------------------------------------------------------------------- a cut log (issue 17, item 4)
import pytest  # noqa: E402

from nodegate.bundle import Bundle  # noqa: E402
from nodegate.collect import NodeFacts  # noqa: E402
from nodegate.probe import RawItem  # noqa: E402

XID48 = "[    2.000000] NVRM: Xid (PCI:0000:00:06): 48, pid=1, name=python, An uncorrectable double bit error"
XID13 = "[   {t}.000000] NVRM: Xid (PCI:0000:00:06): 13, pid=1, name=python, Graphics Exception"


def log_facts(text: str) -> NodeFacts:
    """Real facts over a kernel.log item (the rest of the node from the healthy fake)."""
    b = Bundle.from_raw("n", {"kernel.log": RawItem("kernel.log", text.encode(), b"", 0)}, {})
    return NodeFacts(b)


def with_log(text: str):
    f = log_facts(text)
    try:
        return healthy(kernel_events=f.kernel_events, kernel_log_cut=f.kernel_log_cut, kernel_log_source="dmesg")
    except Exception as e:  # noqa: BLE001 - an EvidenceError: the fact raises it on access
        return healthy(kernel_events=e, kernel_log_cut=None)


@covers("NG-LOG-001", "NG-LOG-002")
def test_severe_line_kept_before_the_cut_fails_and_the_cut_is_shown():
    # the probe kept the Xid 48 from before its last 5000 lines (and every Xid 13): no PASS on it
    lines = [XID48] + [XID13.format(t=10 + i) for i in range(6000)]
    text = "# source: dmesg\n" + "\n".join(lines) + "\n# lines: seen=13002 kept=6001 dropped_severe=0\n"
    f = with_log(text)
    r = run("NG-LOG-002", f)
    assert r.outcome is Outcome.FAIL
    assert "Xid 48" in r.message
    assert r.observed.endswith("(kept 6001 of 13002 lines: every line that can decide a verdict, and the last ones)")
    r1 = run("NG-LOG-001", f)
    assert r1.outcome is Outcome.PASS
    assert "kept 6001 of 13002 lines" in r1.observed


@covers("NG-LOG-001", "NG-LOG-002")
@pytest.mark.parametrize("record,why", [
    ("# lines: seen=30000 kept=25000 dropped_severe=5000",
     "the probe kept 25000 of 30000 NVRM lines and 5000 line(s) of records that can decide a verdict were cut away"),
    ("# lines: seen=13002 kept=5000 dropped_severe=unknown",
     "the probe kept 5000 of 13002 NVRM lines and lines that can decide a verdict may have been cut away"),
], ids=["over_keep_cap", "node_without_awk"])
def test_a_cut_that_lost_severe_lines_is_error_on_every_kernel_log_check(record, why):
    text = "# source: dmesg\n" + "\n".join(XID13.format(t=10 + i) for i in range(50)) + "\n" + record + "\n"
    f = with_log(text)
    for cid in ("NG-LOG-001", "NG-LOG-002"):
        r = run(cid, f)
        assert r.outcome is Outcome.ERROR, cid
        assert why in r.message, r.message


@covers("NG-LOG-001")
def test_no_awk_and_nothing_cut_is_judged():
    text = "# source: dmesg\n" + XID48 + "\n# lines: seen=1 kept=1 dropped_severe=unknown\n"
    r = run("NG-LOG-001", with_log(text).but(gpus=[]))
    assert r.outcome is Outcome.FAIL
    assert "Xid 48" in r.message


@covers("NG-LOG-001", "NG-LOG-002", "NG-INV-001")
@pytest.mark.parametrize("text", ["", "\n\n", "   \n"], ids=["empty", "blank_lines", "spaces"])
def test_empty_kernel_log_without_its_source_line_is_error(text):
    f = with_log(text)
    for cid in ("NG-LOG-001", "NG-LOG-002"):
        r = run(cid, f)
        assert r.outcome is Outcome.ERROR
        assert r.message.startswith("empty, without the probe's '# source:' line"), r.message
    assert run("NG-INV-001", f).outcome is Outcome.ERROR   # gpu.count unset: a lost GPU not ruled out


@covers("NG-LOG-001")
@pytest.mark.parametrize("text", ["# source: dmesg\n", "# source: journalctl -k -b\n# lines: seen=0 kept=0 dropped_severe=0\n"])
def test_empty_kernel_log_from_the_probe_passes(text):
    r = run("NG-LOG-001", with_log(text))
    assert r.outcome is Outcome.PASS
    assert r.observed.startswith("no failing node-wide events (0 records")


@covers("NG-LOG-001")
@pytest.mark.parametrize("n,outcome", [(5000, Outcome.ERROR), (4999, Outcome.PASS), (5001, Outcome.PASS)])
def test_old_probe_log_of_exactly_its_tail_limit_may_be_cut(n, outcome):
    text = "# source: dmesg\n" + "\n".join(XID13.format(t=10 + i) for i in range(n)) + "\n"
    r = run("NG-LOG-001", with_log(text))
    assert r.outcome is outcome
    if outcome is Outcome.ERROR:
        assert r.message.startswith("5000 lines without a record of the cut")


def test_a_cut_record_keeping_more_than_it_saw_is_unparsable():
    f = log_facts("# source: dmesg\n# lines: seen=1 kept=9 dropped_severe=0\n")
    with pytest.raises(Exception, match="keeps more lines than it saw"):
        f.kernel_events  # noqa: B018


def test_xid_yaml_is_what_the_catalog_generator_writes():
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, str(root / "tools" / "gen_xid_catalog.py"), "--check"], capture_output=True,
                       timeout=60)
    assert r.returncode == 0, "nodegate/data/xid.yaml differs from tools/gen_xid_catalog.py: run it"
