"""Report size linear in the nodes (issue 31, item 9; docs/security.md).

N copies of one bundle under different names are one machine N times: every node is ERROR, and
each message names the clash group once, bounded: "23 other nodes report the same boot id V: a,
b, c, d, e, ... (NG-INV-003)". Before, every item's message named all N-1 others (100 copies:
396 MB to the terminal, 86 MB of JUnit). The tests assert the bound as a figure: at most
``SHOWN`` names per group, messages of the same length at 10 and at 400 copies, reports whose
bytes per node do not grow with N."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from nodegate.checks import evaluate
from nodegate.outcomes import Outcome
from nodegate.run import FleetRun
from nodegate.session.verdicts import identity_clash
from nodegate.spec import load_spec

from tests.checks.test_identity import BOOT, MID, bundle
from tests.hostile import harness as H

SHOWN = 5   # FleetRun.identity_groups' default


def _copies(n: int, boot: str | None = BOOT["a"], mid: str | None = MID["a"]) -> FleetRun:
    run = FleetRun()
    for i in range(n):
        run.add(bundle(f"copy{i:04d}", boot, mid))
    return run


def _messages(run: FleetRun) -> tuple[list[str], list[str]]:
    """(NG-INV-003 messages, the every-item verdict message) of every node of ``run``."""
    class _Cfg:   # identity_clash reads nothing of the config on a run that is not overlapped
        pass
    inv = [evaluate("NG-INV-003", run.facts[n], load_spec({})).message for n in run.facts]
    every = [identity_clash(_Cfg(), run, n, {}, "NG-CLK-001") for n in run.facts]
    return inv, every


@pytest.mark.parametrize("what", ["boot id and machine id", "machine id only (cloned image)"])
def test_a_clash_group_is_named_once_and_bounded_whatever_its_size(what):
    boot = BOOT["a"] if what.startswith("boot") else None
    small_inv, small_every = _messages(_copies(10, boot=boot))
    big_run = _copies(400, boot=boot)
    big_inv, big_every = _messages(big_run)
    assert all(r is not None for r in big_every)
    groups = 2 if boot else 1
    for msgs_small, msgs_big in ((small_inv, big_inv), (small_every, big_every)):
        # the same length at 400 copies as at 10 (the counts' digits aside): no name per copy
        assert max(map(len, msgs_big)) <= max(map(len, msgs_small)) + 2 * groups
        for m in msgs_big:
            assert len(re.findall(r"copy\d{4}", m)) <= SHOWN * groups, m
            assert m.count("399 other nodes report the same") == groups, m
    assert big_inv[0].startswith(f"399 other nodes report the same {'boot id ' + BOOT['a'] if boot else 'machine id'}")
    assert ": copy0001, copy0002, copy0003, copy0004, copy0005, ..." in big_inv[0]
    assert "(NG-INV-003)" in big_every[0]
    # total bytes linear in the nodes: 40x the nodes, at most 40x (and a little) the bytes
    assert sum(map(len, big_inv + big_every)) <= 40 * 1.05 * sum(map(len, small_inv + small_every))


def test_two_groups_of_one_node_are_both_bounded_and_a_pair_keeps_its_plain_words():
    """A node in a boot-id group of 300 and, separately, a machine-id pair: each group said once."""
    run = FleetRun()
    for i in range(300):
        run.add(bundle(f"alias{i:03d}", BOOT["a"], MID["a"] if i == 0 else f"{i:032x}"))
    run.add(bundle("clone", BOOT["b"], MID["a"]))
    r = evaluate("NG-INV-003", run.facts["alias000"], load_spec({}))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith(f"299 other nodes report the same boot id {BOOT['a']}: alias001, alias002, "
                                f"alias003, alias004, alias005, ...; node clone reports the same machine id "
                                f"{MID['a']}: one running machine answered for all of them")
    assert len(r.message) < 600
    pair = evaluate("NG-INV-003", run.facts["clone"], load_spec({}))
    assert pair.message.startswith(f"node alias000 reports the same machine id {MID['a']}: one installation")
    assert "neither node's evidence can be attributed" in pair.message


def test_hostile_long_node_names_are_cut_in_a_clash_message():
    run = FleetRun()
    for i in range(50):
        run.add(bundle(f"{i:02d}" + "n" * 5000, BOOT["a"]))
    m = evaluate("NG-INV-003", run.facts[next(iter(run.facts))], load_spec({})).message
    assert len(m) < 1000


def test_copies_of_one_bundle_replayed_write_reports_linear_in_the_nodes(tmp_path):
    """The whole path: 16 copies of one sample node replayed by the installed suites with -rA
    (three checks, one of them per GPU: ~10 items a node). Every item of every copy is ERROR; no
    message names more than SHOWN other copies, and the terminal and JUnit bytes per node stay
    those of a group of 4 (within 25 %): before, each item of a node named all 15 others (x2.6
    the bytes per node)."""
    src = H.ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"
    sizes = {}
    for n in (4, 16):
        root = tmp_path / f"copies{n}"
        for i in range(n):
            d = shutil.copytree(src, root / f"copy{i:02d}")
            meta = json.loads((d / "meta.json").read_text())
            meta["node"] = d.name   # the same bundle under another name
            (d / "meta.json").write_text(json.dumps(meta))
        run = H.run_suite(tmp_path / f"out{n}", "--replay", str(root), "-rA", "-k",
                          "NG-INV-001 or NG-INV-003 or NG-CLK-001", timeout=300)
        assert run.rc == 1, run.out[-2000:]
        assert run.outcomes and set(run.outcomes.values()) == {"error"}
        for t, m in run.messages.items():
            assert len(set(re.findall(r"copy\d\d", m))) <= SHOWN + 1, (t, m)   # itself, and SHOWN others
        sizes[n] = (len(run.out) / n, (run.reports / "junit.xml").stat().st_size / n)
    assert sizes[16][0] <= 1.25 * sizes[4][0], sizes
    assert sizes[16][1] <= 1.25 * sizes[4][1], sizes


def test_a_streaming_run_adds_released_nodes_to_the_groups_in_place():
    """A streaming run keeps a released node's ids in the index in place (FleetRun._keep_ids):
    the groups count it, still bounded."""
    run = FleetRun()
    run.streaming = True
    for n in ("a", "b", "c"):
        run.add(bundle(n, BOOT["a"], MID["a"]))
    run._index()
    for i in range(50):
        run._keep_ids(f"gone{i:02d}", (BOOT["a"], MID["a"]))
    run._keep_ids("other", (BOOT["b"], None))
    groups = run.identity_groups("a")
    assert [(g.what, g.count, len(g.names)) for g in groups] == [("boot id", 52, 5), ("machine id", 52, 5)]
    assert run.identity_groups("other") == []
