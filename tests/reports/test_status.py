"""Node status in every report: accepted only when every item of the node's suite ran and passed
or was skipped by the spec; need action on any FAIL or ERROR; not evaluated when items were
deselected or not run (-k, -x) or the node was not judged at all."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from nodegate.reports.status import node_status, sort_key

from .runner import run_pytest, synth_suite
from .test_run_outputs import build_fleet


@pytest.mark.parametrize("counts, expected, status", [
    ({"pass": 3}, 3, "accepted"), ({"pass": 2, "skip": 1}, 3, "accepted"), ({"pass": 2}, 3, "not evaluated"),
    ({}, 3, "not evaluated"), ({}, None, "not evaluated"), ({"pass": 2, "fail": 1}, 3, "need action"),
    ({"pass": 1, "error": 1}, 3, "need action"), ({"fail": 1}, 5, "need action"), ({"pass": 4}, None, "accepted")])
def test_node_status(counts, expected, status):
    assert node_status(Counter(counts), expected) == status


def test_sort_order_need_action_by_severity_then_action():
    keys = [("accepted", "", "", "a"), ("need action", "major", "RMA", "b"), ("not evaluated", "", "", "c"),
            ("need action", "critical", "reboot", "d"), ("need action", "critical", "RMA", "e")]
    assert [k[3] for k in sorted(keys, key=lambda k: sort_key(*k))] == ["e", "d", "b", "c", "a"]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return build_fleet(tmp_path_factory.mktemp("status") / "fleet")


def _statuses(run) -> dict[str, str]:
    html = run.html.read_text()
    return {n.replace("&lt;", "<").replace("&gt;", ">"): s
            for n, s in re.findall(r'<tr id="n-([^"]*)" data-status="([^"]*)" data-cells="[^"]*">', html)}


def test_deselected_nodes_are_not_evaluated(fleet, tmp_path):
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", fleet, tmp_path / "out", "-k", "a1 or b2")
    assert run.rc == 1, run.output
    got = _statuses(run)
    assert (got["a1"], got["b2"], got["down"]) == ("accepted", "need action", "not evaluated")
    assert "nodegate verdict: 1 accepted, 1 need action, 2 not evaluated" in run.output
    lines = [json.loads(ln) for ln in (run.out / "results.jsonl").read_text().splitlines()]
    assert {d["node"] for d in lines} == {"a1", "b2"}   # only the items that ran have lines
    page = (run.out / "nodes" / "down.html").read_text()
    assert '<b class="st st-ne" id="ng-status">not evaluated</b>' in page


def test_a_node_with_part_of_its_suite_deselected_is_not_accepted(fleet, tmp_path):
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", fleet, tmp_path / "out", "-k", "gpu_health and a1")
    assert run.rc == 0, run.output
    assert _statuses(run)["a1"] == "not evaluated"
    assert "(of 3 items)" in (run.out / "nodes" / "a1.html").read_text()


def test_nodes_after_a_stop_are_not_evaluated(fleet, tmp_path):
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", fleet, tmp_path / "out", "-x")
    assert run.rc == 1, run.output
    got = _statuses(run)
    assert got["a1"] == "accepted" and got["b2"] == "need action"
    assert {got["down"], got[next(n for n in got if n.startswith("evil"))]} == {"not evaluated"}
