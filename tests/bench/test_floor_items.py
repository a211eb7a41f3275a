"""The pytest floor is sized by the items pytest runs, not by JUnit testcases (issue 30, item 9).

nodegate's JUnit folds a check's passed GPUs into one testcase (44 testcases for a healthy
node's 198 items), so a floor sized by testcases had a quarter of the items and
``ratio_to_floor`` read 3.35-4.08 where it is ~1.1. Here: a replay of two sample nodes (one
healthy, one with findings) measured as bench/run.py measures the live run, its floor built
from its item counts, and the two counts compared as ``bench_size`` compares them.
"""

from __future__ import annotations

import json
import re
import shutil
import sys

import pytest

from bench.measure import run_measured
from bench.run import _env, _junit_counts, floor_split, item_counts, run_pytest_floor, same_items

from .helpers import ROOT

FLEET = ROOT / "inventories" / "samples" / "fleet"
NODES = ("h200-580-open-healthy", "ecc-uncorrectable-volatile")


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """One timed replay of NODES (``-p timing_plugin``, as bench/run.py runs nodegate)."""
    base = tmp_path_factory.mktemp("floor-items")
    for n in NODES:
        shutil.copytree(FLEET / n, base / "fleet" / n)
    timing, reports = base / "timing.json", base / "reports"
    argv = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "-p", "timing_plugin",
            "--replay", str(base / "fleet"), "--reports-dir", str(reports)]
    m = run_measured(argv, cwd=ROOT, env=_env(timing))
    assert m.rc == 1, m.output[-3000:]   # the second node has findings
    return base, item_counts(timing), _junit_counts(reports / "junit.xml"), reports


def test_items_are_counted_as_pytest_ran_them(replay):
    _, items, junit, reports = replay
    results = (reports / "results.jsonl").read_text().splitlines()   # one line per (check, GPU) (docs/reports.md)
    ids = [json.loads(ln)["nodeid"] for ln in results if json.loads(ln).get("check_id")]
    # pytest's items: one per check and node (a GPU check's GPUs folded into its item)
    assert items["items"] == len({re.sub(r"-gpu\d+\]$", "]", i) for i in ids}) > 0
    assert items["items"] < len(ids)
    assert items["passed"] + items["failed"] + items["skipped"] + items["errors"] == items["items"]
    assert items["failed"] + items["errors"] > 0 and items["skipped"] > 0
    assert junit["tests"] < len(ids)   # JUnit folds passed GPUs: testcases are not records


def test_floor_runs_as_many_items_as_the_measured_run(replay):
    base, items, junit, _ = replay
    floor = run_pytest_floor(base, *floor_split(items))
    assert floor["items"]["items"] == items["items"]
    assert floor["items"]["skipped"] == items["skipped"]
    same_items(items, floor["items"])   # what bench_size checks before it reports a ratio
    # the old sizing (JUnit testcases) disagrees with the run: the check catches it
    old = {"items": junit["tests"], "skipped": junit["skipped"]}
    with pytest.raises(RuntimeError, match="not the same item count"):
        same_items(items, old)


def test_same_items_refuses_a_floor_of_another_size():
    run = {"items": 198, "skipped": 8}
    same_items(run, {"items": 198, "skipped": 8})
    for floor in ({"items": 44, "skipped": 8}, {"items": 198, "skipped": 0}):
        with pytest.raises(RuntimeError):
            same_items(run, floor)
