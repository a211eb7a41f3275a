"""The RMA list a vendor's desk accepts as it is, and the site's work apart (issue 32), row by row
on the demo's own bundles (inventories/samples/fleet, the nodes with a hardware or firmware
fault, a software fault beside a hardware one, and a healthy node), replayed by the
``nodegate`` command as ``make demo`` runs it.

- rma.csv: one row per part to replace, named with its serial, the evidence figures and the Xids;
  no site work in it (no reseat, no software).
- actions.csv: reseats first (the RMA to open if the fault persists), resets, firmware updates,
  software; the fabric manager unit apart from the NVSwitch tray; the AER fault at the upstream
  port it was counted at, not at the GPU's serial.
- every output keeps message and remediation apart.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from .runner import ROOT

SAMPLES = ROOT / "inventories" / "samples" / "fleet"
NODES = ("aer-fatal-upstream", "nvswitch-missing", "pcie-replays", "pcie-x8-busy", "retired-pages-63",
         "row-remap-failure", "vbios-mixed", "ecc-uncorrectable-volatile", "ib-port-down", "h100-535-healthy")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("rmademo")
    for n in NODES:
        shutil.copytree(SAMPLES / n, base / "fleet" / n)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="120")
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(base / "fleet"), "--reports-dir",
                        str(base / "out"), "-q", "--tb=no", "-rN"], cwd=base, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 1, p.stdout + p.stderr
    out = base / "out"
    return {"cwd": base, "out": out, "stdout": p.stdout,
            "rma": list(csv.DictReader((out / "rma.csv").open())),
            "actions": list(csv.DictReader((out / "actions.csv").open())),
            "json": json.loads((out / "rma.json").read_text())}


def test_rma_rows_are_parts_with_serial_figures_and_xids(demo):
    got = [(r["node"], r["part"], r["part_location"], r["part_serial"], r["gpu_serial"], r["failed_checks"],
            r["xids"], r["action"]) for r in demo["rma"]]
    assert got == [
        ("retired-pages-63", "GPU", "0000:9b:00.0", "0323118023625", "0323118023625", "NG-LOG-002;NG-MEM-002",
         "48;63", "RMA"),
        ("row-remap-failure", "GPU", "0000:bb:00.0", "1320000000246", "1320000000246", "NG-LOG-002;NG-MEM-001",
         "64", "RMA")]
    retired, remap = demo["rma"]
    assert "NG-MEM-002: sbe 60, dbe 3, total 63, pending No" in retired["observed"]
    assert "uncorrectable 8" in remap["observed"] and "failure Yes" in remap["observed"]
    # the chassis the V100 is in is the DGX-1 its profile says, not an H100 system
    assert (retired["system_vendor"], retired["system_model"]) == ("NVIDIA", "DGX-1")
    for r in demo["rma"]:
        assert r["if_it_persists"] == ""
        assert not r["remediation"].lower().startswith(("drain", "reseat")), r["remediation"]
    assert [(r["node"], r["part"], r["xids"]) for r in demo["json"]["rows"]] == [
        ("retired-pages-63", "GPU", [48, 63]), ("row-remap-failure", "GPU", [64])]
    assert demo["json"]["format"] == "nodegate-rma/3"


def _acts(demo, node):
    return [(r["part"], r["part_location"], r["gpu_index"], r["gpu_serial"], r["failed_checks"], r["action"],
             r["if_it_persists"]) for r in demo["actions"] if r["node"] == node]


def test_site_work_row_by_row(demo):
    assert _acts(demo, "aer-fatal-upstream") == [
        ("riser", "upstream port 0000:4a:00.0 above GPU 2 (0000:4c:00.0)", "2", "", "NG-PCIERR-001", "reseat",
         "re-run nodegate on the node; still failing: RMA the riser (upstream port 0000:4a:00.0 above GPU 2 "
         "(0000:4c:00.0))")]
    nvsw = _acts(demo, "nvswitch-missing")
    assert nvsw[0] == ("", "", "", "", "NG-DRV-002", "fix configuration", "")
    part, where, _, _, checks, action, then = nvsw[1]
    assert (part, checks, action) == ("baseboard/NVSwitch tray", "NG-NVSW-001", "reseat")
    assert where.startswith("NVSwitch baseboard/tray; present: 3 NVSwitch function(s): 0000:83:00.0")
    assert then.startswith("re-run nodegate on the node; still failing: RMA the baseboard/NVSwitch tray")
    assert {a[4] for a in nvsw[2:]} == {"NG-FAB-001"} and all(a[0] == "" for a in nvsw[2:])
    assert _acts(demo, "pcie-replays") == [
        ("GPU", "0000:cb:00.0", "6", "1320000011487", "NG-PCIERR-001", "reseat",
         "re-run nodegate on the node; still failing: RMA the GPU (0000:cb:00.0, serial 1320000011487)")]
    assert _acts(demo, "pcie-x8-busy") == [
        ("riser", "slot of GPU 3 (0000:5d:00.0)", "3", "", "NG-PCIE-002", "reseat",
         "re-run nodegate on the node; still failing: RMA the riser (slot of GPU 3 (0000:5d:00.0))")]
    assert _acts(demo, "vbios-mixed") == [("", "", "5", "1320000086586", "NG-CFG-001", "update firmware", "")]
    assert _acts(demo, "ecc-uncorrectable-volatile") == [
        ("GPU", "0000:4c:00.0", "2", "1320000047263", "NG-ECC-002;NG-LOG-002", "reset",
         "re-run nodegate on the node; still failing: RMA the GPU (0000:4c:00.0, serial 1320000047263)")]
    assert [a[:6] for a in _acts(demo, "ib-port-down")] == [
        ("HCA", "mlx5_3", "3", "", "NG-IB-001;NG-IB-002", "fix configuration")]
    assert {r["node"] for r in demo["rma"] + demo["actions"]} <= set(NODES) - {"h100-535-healthy"}
    ecc = next(r for r in demo["actions"] if r["node"] == "ecc-uncorrectable-volatile")
    assert ecc["xids"] == "48"


def test_message_and_remediation_apart_everywhere(demo):
    out = demo["out"]
    for line in (out / "results.jsonl").read_text().splitlines():
        d = json.loads(line)
        assert "Remediation:" not in d["message"], d["nodeid"]
    for row in demo["json"]["rows"]:
        for c in row["checks"]:
            assert "Remediation:" not in c["message"]
    assert "Remediation:" not in (out / "rma.csv").read_text() + (out / "actions.csv").read_text()


def test_summary_first_one_problem_line_a_node(demo):
    lines = demo["stdout"].splitlines()
    first = next(i for i, ln in enumerate(lines) if "nodegate summary" in ln)
    assert lines[first + 1].startswith("nodegate verdict: 1 accepted, 9 need action, 0 not evaluated")
    head = lines.index("problems (one line a node, worst first; the fix after '->'; every finding in the HTML "
                       "report):")
    probs = [ln for ln in lines[head + 1:] if ln.startswith("  ")]
    assert len(probs) == 9 and len({p.split(":")[0] for p in probs}) == 9
    aer = next(p for p in probs if p.startswith("  aer-fatal-upstream: "))
    assert "[NG-PCIERR-001]" in aer and " -> reseat: Reseat the GPU and the riser" in aer
    assert "\r" not in demo["stdout"]
    assert not (demo["cwd"] / ".pytest_cache").exists()   # the cache lives in the reports dir
    assert (demo["out"] / ".pytest_cache").is_dir()
