"""The cyclic GC schedule of a nodegate run (nodegate/session/memory.py ``young_gc_only``):
automatic collection off while the items run, young generations collected every
``YOUNG_BUDGET`` new objects, automatic collection back on when the run ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: nine nodes of the sample fleet (passes, failures, skips and errors: ~350 items called, a GPU
#: check's GPUs folded into one item a node; ~1,300 records): the
#: schedule is per item, so the property holds at this size as at the whole fleet's (issue 30)
LIMIT = ("h100-535-healthy,pcie-gen4-slot,smi-hang,row-remap-failure,nvlink-crc-errors,h200-vm-sim,"
         "pcie-replays,ecc-uncorrectable-volatile,mig-enabled")

#: a plugin that records, at each item's call, whether automatic GC is on and how many objects
#: were allocated since the last collection; and at exit whether GC is on again
PROBE_PLUGIN = '''
import atexit, gc, json, os
import pytest
S = {"enabled_in_items": set(), "max_count": 0, "items": 0}

def pytest_configure(config):
    import nodegate.session.memory as G
    G.YOUNG_BUDGET = int(os.environ["GC_BUDGET"])

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    S["items"] += 1
    S["enabled_in_items"].add(gc.isenabled())
    S["max_count"] = max(S["max_count"], gc.get_count()[0])

@atexit.register
def _dump():
    with open(os.environ["GC_OUT"], "w") as f:
        json.dump({**S, "enabled_in_items": sorted(S["enabled_in_items"]), "enabled_at_exit": gc.isenabled()}, f)
'''


def _run(tmp_path: Path, budget: int) -> dict:
    (tmp_path / "gcprobe.py").write_text(PROBE_PLUGIN)
    out = tmp_path / f"gc-{budget}.json"
    # the pytest process parses every node itself (no prefetching child, nodegate.fleetrun.prefetch):
    # the allocations whose young collections this measures are those of the parsing and the items
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), GC_BUDGET=str(budget),
               GC_OUT=str(out), NODEGATE_PREFETCH="0")
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-p", "gcprobe", "-q",
                        "--tb=no", "--replay", str(ROOT / "inventories" / "samples"), "--limit", LIMIT,
                        "--reports-dir", str(tmp_path / f"reports-{budget}"),
                        # unsharded: a shard's collection (nodegate.session.shards) allocates its
                        # items between two items' calls, past any budget of the items themselves
                        "--shard-nodes", "0"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]   # the sample fleet has findings
    return json.loads(out.read_text())


def test_items_run_without_automatic_gc_and_young_objects_are_still_collected(tmp_path):
    small = _run(tmp_path, 2_000)
    assert small["items"] > 300
    assert small["enabled_in_items"] == [False]
    assert small["enabled_at_exit"] is True
    # young generations were collected on the way: never much past the budget
    assert small["max_count"] < 20_000, small
    # ...which without the budget's collections they are not (the run allocates far more)
    unbounded = _run(tmp_path, 10**9)
    assert unbounded["max_count"] > 10 * small["max_count"], (small, unbounded)
    assert unbounded["enabled_at_exit"] is True


DRIVER = '''
import gc, sys
import pytest

class Boom:
    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config):
        raise RuntimeError("another plugin's unconfigure fails")

try:
    pytest.main(["suites", "-p", "no:cacheprovider", "-q", "--tb=no", "--replay", sys.argv[1],
                 "--limit", "h100-535-healthy,smi-hang", "--reports-dir", sys.argv[2]], plugins=[Boom()])
except RuntimeError as e:
    print("raised:", e)
print("gc enabled after:", gc.isenabled())
'''


def test_gc_is_back_on_for_a_pytest_main_caller_even_when_an_unconfigure_hook_raises(tmp_path):
    """pytest.main() in-process: automatic GC is the caller's again even when another plugin's
    pytest_unconfigure raises before ours runs (a config cleanup resumes it)."""
    (tmp_path / "driver.py").write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(ROOT / "inventories" / "samples"),
                        str(tmp_path / "reports")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert "raised: another plugin's unconfigure fails" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
    assert "gc enabled after: True" in p.stdout
