"""A GPU that fell off the bus has one identity in every report (the demo's ``gpu-fallen-off-bus``:
eight GPUs expected, the one at 0000:5d:00.0 missing, nvidia-smi numbering the seven others 0..6).

The rule (nodegate.checks.slots, docs/reports.md ``gpu_index``): a missing GPU is named by its PCI
bus id (the spec's gpu.bus_ids, else the driver's or PCI's evidence); its item label ``gpu<N>``
comes after the present GPUs' indices, so it never equals one of them; ``gpu_index`` is what
nvidia-smi numbers a GPU, null for a GPU nvidia-smi does not list (the driver's Device Minor is
another numbering: /dev/nvidia3 of the missing GPU is not nvidia-smi's GPU 3). results.jsonl
(gpu_index, nodeid), the JUnit testcase and its properties, the message, the HTML node page and
the actions/RMA rows all say the same.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import defusedxml.ElementTree as DET
import pytest

from .runner import ROOT

NODE = "gpu-fallen-off-bus"
MISSING = "0000:5d:00.0"
SAMPLES = ROOT / "inventories" / "samples" / "fleet"


def _replay(base, out, *extra):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="120")
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(base / "fleet"), "--reports-dir",
                        str(out), "-q", "--tb=no", "-rN", "-p", "no:cacheprovider", *extra], cwd=base, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("fallen")
    shutil.copytree(SAMPLES / NODE, base / "fleet" / NODE)
    out = base / "out"
    return base, out, _replay(base, out)


def _slot(nodeid: str) -> str:
    m = re.search(r"-gpu(\d+)\]$", nodeid)
    return m.group(1) if m else ""


def test_results_jsonl_one_identity_per_gpu(run):
    _, _, lines = run
    gpu_lines = [d for d in lines if d["scope"] == "gpu"]
    present = {d["gpu_index"]: d["pci_bus_id"] for d in gpu_lines if d["pci_bus_id"] != MISSING}
    assert present == {0: "0000:19:00.0", 1: "0000:3b:00.0", 2: "0000:4c:00.0", 3: "0000:9b:00.0",
                       4: "0000:bb:00.0", 5: "0000:cb:00.0", 6: "0000:db:00.0"}
    for d in gpu_lines:
        if d["pci_bus_id"] == MISSING:
            # not listed by nvidia-smi: no index of its numbering; its label follows the present GPUs
            assert d["gpu_index"] is None, d
            assert _slot(d["nodeid"]) == "7", d
        else:
            assert _slot(d["nodeid"]) == str(d["gpu_index"]), d
    by_check: dict[str, list[str]] = {}
    for d in gpu_lines:
        by_check.setdefault(d["check_id"], []).append(_slot(d["nodeid"]))
    for check, slots in by_check.items():
        assert len(slots) == len(set(slots)) == 8, (check, slots)
    clk = [d for d in gpu_lines if d["check_id"] == "NG-CLK-001" and d["pci_bus_id"] == MISSING]
    assert len(clk) == 1 and clk[0]["outcome"] == "error"
    msg = clk[0]["message"]
    assert MISSING in msg and "gpu7" in msg and "slot 7" not in msg, msg
    model = next(d for d in gpu_lines if d["check_id"] == "NG-INV-002" and d["pci_bus_id"] == MISSING)
    assert model["outcome"] == "fail" and MISSING in model["message"] and "GPU 7" not in model["message"]


def test_junit_html_and_actions_name_the_missing_gpu_as_results_jsonl_does(run):
    _, out, lines = run
    root = DET.parse(out / "junit.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert f"test_clocks_event_reasons[{NODE}-gpu7]" in cases
    assert f"test_clocks_event_reasons[{NODE}-gpu0..6]" in cases
    suite = next(s for s in root.iter("testsuite") if s.get("name") == f"{NODE} gpu7 NG-CLK-001")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["gpu_index"], props["pci_bus_id"]) == ("", MISSING)
    page = (out / "nodes" / f"{NODE}.html").read_text()
    assert f"gpu7 {MISSING}" in page
    assert not re.search(rf"gpu\d+ {MISSING}", page.replace(f"gpu7 {MISSING}", ""))
    assert "gpu3 0000:9b:00.0" not in page or f"gpu3 {MISSING}" not in page
    rows = list(csv.DictReader((out / "actions.csv").open()))
    mine = [r for r in rows if r["pci_bus_id"] == MISSING]
    assert mine and all(r["gpu_index"] == "" for r in mine), mine
    assert all(r["gpu_index"] != "3" or r["pci_bus_id"] == "0000:9b:00.0" for r in rows)
    js = json.loads((out / "rma.json").read_text())
    assert all(r["gpu_index"] is None for r in js["rows"] if r["pci_bus_id"] == MISSING)


def test_k_selects_the_missing_gpu_by_its_label(run, tmp_path):
    base, _, _ = run
    got = _replay(base, tmp_path / "k", "-k", f"{NODE}-gpu7 and clocks_event")
    assert [(d["pci_bus_id"], d["gpu_index"], d["outcome"]) for d in got] == [(MISSING, None, "error")]
    got = _replay(base, tmp_path / "k3", "-k", f"{NODE}-gpu3 and clocks_event")
    assert [(d["pci_bus_id"], d["gpu_index"]) for d in got] == [("0000:9b:00.0", 3)]
