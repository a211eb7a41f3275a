"""NG-INV-003 node_identity: no two nodes of a run are one machine (same boot id or machine
id); the machine id fact; the run's identity index (issue 17, item 9)."""

from __future__ import annotations

import pytest

from nodegate.bundle import Bundle
from nodegate.checks import evaluate
from nodegate.collect import NodeFacts
from nodegate.outcomes import Outcome
from nodegate.probe import RawItem
from nodegate.run import FleetRun, NodeJob, address_of, address_twins
from nodegate.spec import load_spec

from .fakes import covers

BOOT = {"a": "11111111-aaaa-4aaa-8aaa-000000000001", "b": "22222222-bbbb-4bbb-8bbb-000000000002",
        "c": "33333333-cccc-4ccc-8ccc-000000000003"}
MID = {"a": "0123456789abcdef0123456789abcdef", "b": "fedcba9876543210fedcba9876543210",
       "c": "00112233445566778899aabbccddeeff"}


def bundle(node: str, boot: str | None = None, mid: str | None = None, *, mid_rc: int = 0,
           meta: dict | None = None) -> Bundle:
    raw = {}
    if boot is not None:
        raw["meta.boot_id"] = RawItem("meta.boot_id", (boot + "\n").encode(), b"", 0)
    if mid is not None or mid_rc:
        raw["meta.machine_id"] = RawItem("meta.machine_id", ((mid or "") + "\n").encode() if not mid_rc else b"",
                                         b"no /etc/machine-id or /var/lib/dbus/machine-id" if mid_rc else b"", mid_rc)
    return Bundle.from_raw(node, raw, meta or {"status": "ok"})


def fleet(*bundles: Bundle) -> FleetRun:
    run = FleetRun()
    for b in bundles:
        run.add(b)
    return run


def judge(run: FleetRun, node: str):
    return evaluate("NG-INV-003", run.facts[node], load_spec({}))


@covers("NG-INV-003")
def test_distinct_machines_pass():
    run = fleet(bundle("a", BOOT["a"], MID["a"]), bundle("b", BOOT["b"], MID["b"]), bundle("c", BOOT["c"], MID["c"]))
    r = judge(run, "b")
    assert r.outcome is Outcome.PASS
    assert r.observed == f"boot id {BOOT['b']}, machine id {MID['b']}; no other node of the run reports either"


@covers("NG-INV-003")
def test_same_boot_id_errors_both_naming_each_other():
    # two inventory names for one address: one running kernel answered for both
    run = fleet(bundle("a", BOOT["a"], MID["a"]), bundle("a-alias", BOOT["a"], MID["a"]), bundle("c", BOOT["c"], MID["c"]))
    ra, rb, rc = judge(run, "a"), judge(run, "a-alias"), judge(run, "c")
    assert (ra.outcome, rb.outcome, rc.outcome) == (Outcome.ERROR, Outcome.ERROR, Outcome.PASS)
    assert ra.message.startswith(f"node a-alias reports the same boot id {BOOT['a']}; node a-alias reports the same "
                                 f"machine id {MID['a']}: one running machine answered for both")
    assert rb.message.startswith(f"node a reports the same boot id {BOOT['a']}")
    assert "neither node's evidence can be attributed to it" in rb.message


@covers("NG-INV-003")
def test_same_machine_id_other_boot_id_is_a_clone_error():
    run = fleet(bundle("a", BOOT["a"], MID["a"]), bundle("b", BOOT["b"], MID["a"]))
    r = judge(run, "b")
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith(f"node a reports the same machine id {MID['a']}: one installation, or machines "
                                "cloned from one image")


@covers("NG-INV-003")
def test_three_nodes_one_machine_names_both_others():
    run = fleet(bundle("a", BOOT["a"]), bundle("b", BOOT["a"]), bundle("c", BOOT["a"]))
    r = judge(run, "c")
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith(f"2 other nodes report the same boot id {BOOT['a']}: a, b: one running machine "
                                "answered for all of them")


@covers("NG-INV-003")
def test_the_only_node_of_a_run_passes_without_ids():
    run = fleet(bundle("a"))
    r = judge(run, "a")
    assert r.outcome is Outcome.PASS
    assert r.observed.endswith("; no other node in this run")


@covers("NG-INV-003")
def test_no_id_readable_among_others_is_error():
    run = fleet(bundle("a"), bundle("b", BOOT["b"], MID["b"]))
    r = judge(run, "a")
    assert r.outcome is Outcome.ERROR
    assert r.message == ("neither the boot id nor the machine id could be read: this node cannot be told apart "
                         "from the run's 1 other node(s)")


@covers("NG-INV-003")
def test_node_without_machine_id_file_is_told_apart_by_boot_id():
    run = fleet(bundle("a", BOOT["a"], mid_rc=1), bundle("b", BOOT["b"], MID["b"]))
    r = judge(run, "a")
    assert r.outcome is Outcome.PASS
    assert r.observed == f"boot id {BOOT['a']}, machine id none on the node; no other node of the run reports either"


@covers("NG-INV-003")
def test_a_node_that_was_not_gathered_clashes_with_nobody():
    down = Bundle("down", {}, {"status": "unreachable", "error": "connect timeout"})
    run = fleet(bundle("a", BOOT["a"]), down)
    assert judge(run, "a").outcome is Outcome.PASS
    assert run.identity_clashes("down") == []


@pytest.mark.parametrize("text,want", [
    ("0123456789ABCDEF0123456789ABCDEF\n", "0123456789abcdef0123456789abcdef"),
    ("uninitialized\n", None),   # machine-id(5): first boot, not committed yet
    ("\n", None),
], ids=["upper", "uninitialized", "empty"])
def test_machine_id_fact(text, want):
    b = Bundle.from_raw("a", {"meta.machine_id": RawItem("meta.machine_id", text.encode(), b"", 0)}, {})
    assert NodeFacts(b).machine_id == want


def test_clashes_among_limits_to_the_given_nodes():
    run = fleet(bundle("a", BOOT["a"]), bundle("b", BOOT["a"]), bundle("c", BOOT["a"]))
    assert run.identity_clashes("a", among=["c"]) == [("c", "boot id", BOOT["a"])]
    assert run.identity_clashes("a", among=[]) == []


def test_peer_ids_of_nodes_not_loaded_here_count():
    # an xdist worker loads its own nodes and gets the others' ids from the controller
    run = fleet(bundle("a", BOOT["a"], MID["a"]))
    run.peer_ids = {"z": (BOOT["a"], None)}
    r = judge(run, "a")
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith(f"node z reports the same boot id {BOOT['a']}")


@pytest.mark.parametrize("url,want", [
    ("paramiko://root@10.0.0.7:2222", "10.0.0.7:2222"), ("ssh://ops@GPU001.example", "gpu001.example:22"),
    ("paramiko://u:pw@[fd00::7]:22", "fd00::7:22"), ("local://", None),
])
def test_address_of(url, want):
    assert address_of(url) == want


def test_address_twins_are_the_jobs_of_one_host_and_port():
    jobs = [NodeJob("a", "paramiko://root@10.0.0.7", ""), NodeJob("a2", "ssh://ops@10.0.0.7:22", ""),
            NodeJob("b", "paramiko://root@10.0.0.7:2222", ""), NodeJob("l", "local://", "")]
    assert address_twins(jobs) == {"a": ["a2"], "a2": ["a"]}


@covers("NG-INV-003")
def test_a_node_that_was_not_gathered_is_error_even_alone():
    run = fleet(Bundle("down", {}, {"status": "missing", "error": "slurmd did not answer"}))
    r = judge(run, "down")
    assert r.outcome is Outcome.ERROR
    assert r.message == "node not gathered (missing: slurmd did not answer) [meta.boot_id]"
