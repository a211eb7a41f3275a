"""What nodegate gives each suite test's item at collection (nodegate/session/items.py
``prefill_verdict_item``): the ``verdict`` argument without pytest's fixture machinery, and the
item's location computed once per test function. Both must leave every outcome, message and
location exactly as pytest itself would make them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: records, per run: fixtures set up by name, items whose verdict argument is not their own
#: parameter, items whose location differs from pytest's own computation; PREFILL=0 turns the
#: prefill off (the reference run)
PROBE_PLUGIN = '''
import atexit, collections, json, os
import pytest
S = {"fixture_setups": collections.Counter(), "items": 0, "wrong_arg": [], "wrong_location": [],
     "prefilled": 0}

def pytest_configure(config):
    if os.environ["PREFILL"] == "0":
        import nodegate.session.items as I
        I.prefill_verdict_item = lambda item, where: None

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if "verdict" in getattr(item, "funcargs", {}):
            S["prefilled"] += 1
        own = type(item).location.func(item)   # what pytest computes, bypassing the cache
        if item.location != own:
            S["wrong_location"].append([item.nodeid, list(item.location), list(own)])

@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    S["fixture_setups"][fixturedef.argname] += 1

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    S["items"] += 1
    cs = getattr(item, "callspec", None)
    if cs is not None and "verdict" in cs.params and item.funcargs.get("verdict") is not cs.params["verdict"]:
        S["wrong_arg"].append(item.nodeid)

@atexit.register
def _dump():
    with open(os.environ["PROBE_OUT"], "w") as f:
        json.dump(S, f)
'''


def _run(tmp_path: Path, prefill: bool) -> tuple[dict, dict]:
    (tmp_path / "setupprobe.py").write_text(PROBE_PLUGIN)
    tag = "on" if prefill else "off"
    out, reports = tmp_path / f"probe-{tag}.json", tmp_path / f"reports-{tag}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), PREFILL=str(int(prefill)),
               PROBE_OUT=str(out))
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-p", "setupprobe",
                        "-q", "--tb=short", "-rs", "--replay", str(ROOT / "inventories" / "samples"),
                        # three nodes (passes, failures, skips, errors: ~600 items) show every path;
                        # the whole fleet added only time (issue 30)
                        "--limit", "h100-535-healthy,pcie-gen4-slot,smi-hang",
                        "--reports-dir", str(reports)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]   # the sample fleet has findings
    cases = {}
    for tc in ET.parse(reports / "junit.xml").getroot().iter("testcase"):
        kids = [(k.tag, k.get("message"), (k.text or "").strip()) for k in tc if k.tag != "properties"]
        props = {pr.get("name"): pr.get("value") for pr in tc.iter("property")}
        cases[f"{tc.get('classname')}::{tc.get('name')}"] = (kids, props)
    return json.loads(out.read_text()), cases


def test_verdict_items_skip_the_fixture_machinery_and_report_the_same(tmp_path):
    on, cases_on = _run(tmp_path, prefill=True)
    off, cases_off = _run(tmp_path, prefill=False)
    assert on["items"] > 100 and on["items"] == off["items"]
    assert on["prefilled"] > 100 and off["prefilled"] == 0
    # without the prefill pytest sets up the direct parameter as a fixture for every item...
    assert off["fixture_setups"].get("verdict", 0) > 100
    # ...with it, never; and every test received its own parameter
    assert on["fixture_setups"].get("verdict", 0) == 0, on["fixture_setups"]
    assert on["wrong_arg"] == [] and off["wrong_arg"] == []
    # every item's location is what pytest computes itself
    assert on["wrong_location"] == [], on["wrong_location"][:3]
    # the same testcases, outcomes, messages and properties in junit.xml
    assert cases_on.keys() == cases_off.keys()
    for k in cases_on:
        assert cases_on[k] == cases_off[k], k
    assert any(kids for kids, _ in cases_on.values())   # findings (failures, skips) were compared too
