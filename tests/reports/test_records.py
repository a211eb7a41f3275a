"""records.py: per-test records from pytest phase reports, and node summaries."""

from nodegate.bundle import Bundle
from nodegate.facts import DmiFacts, DriverBanner, GpuFacts
from nodegate.errors import EvidenceError
from nodegate.reports.records import RecordBook, node_info

from .helpers import ng, rec, report


def test_nodegate_outcome_wins_over_pytest_phase():
    book = RecordBook()
    book.update(report(when="setup", outcome="passed", nodegate=ng(outcome="skip")))
    r = book.update(report(when="call", outcome="skipped", nodegate=ng(outcome="skip")))
    assert (r.outcome, r.node, r.check_id) == ("skip", "n1", "NG-X-001")


def test_setup_failure_without_nodegate_is_error_with_node_from_test_id():
    book = RecordBook()
    r = book.update(report(nodeid="suites/t.py::test_x[node7-gpu3]", when="setup", outcome="failed"))
    assert (r.outcome, r.node, r.gpu_index, r.has_nodegate) == ("error", "node7", "3", False)


def test_crash_without_nodegate_keeps_the_error_line():
    book = RecordBook()
    rep = report(nodeid="suites/t.py::test_x[n1]", when="setup", outcome="failed")
    rep.longreprtext = "Traceback ...\n  File x\nE   TypeError: '<=' not supported\n"
    assert book.update(rep).message == "E   TypeError: '<=' not supported"


def test_teardown_failure_turns_pass_into_error():
    book = RecordBook()
    book.update(report(when="call", outcome="passed", nodegate=ng(outcome="pass")))
    r = book.update(report(when="teardown", outcome="failed", nodegate=ng(outcome="pass")))
    assert r.outcome == "error"


def test_evidence_kept_only_for_failures():
    assert rec(outcome="fail").evidence == "decisive line 1\ndecisive line 2"
    assert rec(outcome="pass").evidence == ""
    assert rec(outcome="error").evidence == ""


def test_record_fields_are_cleaned():
    r = rec(node="n\x1b[2J1", observed="a\x00b")
    assert (r.node, r.observed) == ("n\\x1b[2J1", "a\\x00b")


class _Facts:
    """NodeFacts stand-in: kernel fails like a missing evidence item would."""

    driver_banner = DriverBanner(flavor="open", version="580.159.04")
    gpus = [GpuFacts(index=0, name="NVIDIA H200", vbios_version="96.00.99.00.01"),
            GpuFacts(index=1, name="NVIDIA H200", vbios_version="96.00.99.00.02")]
    dmi = DmiFacts(values={"sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR"},
                   unreadable={"product_serial"})

    @property
    def kernel_release(self):
        raise EvidenceError("meta.uname_r", "evidence not collected: meta.uname_r")


def test_node_info_reads_facts_and_guards_errors():
    b = Bundle("n1", meta={"status": "ok", "gather_s": 2.5})
    i = node_info("n1", b, _Facts(), [rec(outcome="fail"), rec(outcome="pass", check_id="B")])
    assert (i.gather_status, i.driver_version, i.flavor, i.kernel, i.gpu_model, i.gpu_count, i.vbios,
            i.gather_s) == ("ok", "580.159.04", "open", None, "NVIDIA H200", 2,
                            "96.00.99.00.01, 96.00.99.00.02", 2.5)
    assert i.problems == {"kernel": "EvidenceError: evidence not collected: meta.uname_r [meta.uname_r]"}
    # DMI identity: the serial needs root; the cell says so, never a guess
    assert (i.system_vendor, i.system_model, i.system_serial) == (
        "Supermicro", "SYS-821GE-TNHR", "unreadable without root (re-run with --sudo)")
    assert (i.counts["fail"], i.counts["pass"], i.has_problem) == (1, 1, True)


def test_node_info_dmi_not_collected_says_so():
    class F(_Facts):
        @property
        def dmi(self):
            raise EvidenceError("dmi.id", "evidence not collected: dmi.id")
    i = node_info("n1", Bundle("n1", meta={"status": "ok"}), F(), [])
    assert i.system_serial == "unknown: evidence not collected: dmi.id"


def test_finished_records_leave_the_book():
    book = RecordBook()
    for when in ("setup", "call", "teardown"):
        book.update(report(when=when, outcome="passed", nodegate=ng(outcome="pass")))
    assert len(book) == 1
    r = book.finish("suites/test_x.py::test_x[n1]")
    assert (r.outcome, len(book)) == ("pass", 0)


def test_node_info_gather_error_skips_facts():
    b = Bundle("down", meta={"status": "unreachable", "error": "connect timeout"})
    i = node_info("down", b, _Facts(), [rec(node="down", outcome="error")])
    assert (i.gather_status, i.gpu_model, i.flavor, i.driver_version) == (
        "unreachable: connect timeout", None, None, "580.159.04")


def test_node_info_mixed_models():
    class F(_Facts):
        gpus = [GpuFacts(name="A"), GpuFacts(name="B"), GpuFacts(name="A")]
        kernel_release = "6.8.0"
    i = node_info("n", Bundle("n", meta={}), F(), [])
    assert (i.gpu_model, i.gpu_count, i.kernel) == ("A x2, B x1", 3, "6.8.0")


def test_node_info_store_gives_back_every_field_as_it_was():
    """RunReports keeps released nodes' NodeInfo as one JSON string each (records.NodeInfoStore):
    every field comes back equal and of the same type, a new object each read."""
    from collections import Counter
    from dataclasses import fields

    from nodegate.reports.records import NodeInfo, NodeInfoStore
    i = NodeInfo(node="gpu-n01", gather_status="ok", gather_s=12.5, driver_version="580.159.04",
                 flavor="open", kernel="6.8.0-\u00e9", vbios="96.00.A5.00.01", gpu_model="NVIDIA H200",
                 gpu_count=8, system_vendor="Supermicro", system_model="AS-8125GS",
                 system_serial="unknown: needs root (--sudo)", spec_source="inventory", bundle_dir="/b/n01",
                 inforom="G525.0200.00.05", power_limit="700 W", mig_mode="Disabled", compute_mode="Default",
                 problems={"kernel": "EvidenceError: no uname"}, counts=Counter(pass_=3, fail=1),
                 status="need action", expected_items=190, not_evaluated="", worst_severity="high",
                 action="RMA")
    store = NodeInfoStore()
    store["gpu-n01"] = i
    got = store.get("gpu-n01")
    assert got == i and got is not i and store["gpu-n01"] is not got
    for f in fields(NodeInfo):
        assert type(getattr(got, f.name)) is type(getattr(i, f.name)), f.name
    assert "gpu-n01" in store and len(store) == 1 and list(store) == ["gpu-n01"]
    assert store.get("other") is None and store.get("other", 5) == 5
    assert dict(store.items()) == {"gpu-n01": i}
    got.counts["fail"] += 1              # a change to a read copy is not stored back
    assert store["gpu-n01"].counts["fail"] == 1
    empty = NodeInfo(node="n02")
    store["n02"] = empty
    assert store["n02"] == empty
