"""The regression gate over the simulated fleet behind real sshd: gather four healthy 8x H100 nodes
(the accepted state), then the same nodes after an "upgrade" in which n1's GPUs land in a Gen4 slot,
n2's GPU 2 gains uncorrectable ECC errors (and their Xid 48), n3 gets the planned driver the spec now asks for and n4
is unchanged; run the suite with --baseline and assert exactly those regressions and changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.e2e.test_fleet_ssh import junit_outcomes
from tools.fleet import PROFILES_DIR, Fleet, load_profile, sshd_available

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

HEALTHY = "h100-535-healthy"
NEW_DRIVER = "550.127.05"


def _suite(fleet: Fleet, tmp: Path, name: str, *extra: str) -> tuple[int, dict, Path]:
    inv_path = fleet.inventory_path
    reports, junit = tmp / name, tmp / f"{name}.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q",
                        "--inventory", str(inv_path), "--known-hosts", str(fleet.known_hosts_path),
                        "--reports-dir", str(reports), "--bundles-dir", str(reports / "bundles"),
                        "--junitxml", str(junit), *extra], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert junit.is_file(), r.stdout[-3000:] + r.stderr[-3000:]
    return r.returncode, junit_outcomes(junit), reports


def _messages(junit: Path, names: list[str]) -> dict[str, str]:
    """failure/error messages of some test cases (for an assertion's explanation)."""
    import defusedxml.ElementTree as DET
    out = {}
    for tc in DET.parse(junit).getroot().iter("testcase"):
        if tc.get("name") in names:
            out[tc.get("name")] = " | ".join((c.get("message") or "")[:300] for c in tc)
    return out


def test_upgrade_regressions_and_planned_changes_over_ssh(tmp_path):
    before = Fleet()
    for n in ("n1", "n2", "n3", "n4"):
        before.add(HEALTHY, n)
    with before:
        rc, got, rep_before = _suite(before, tmp_path, "before")
    assert rc == 0, {k: v for k, v in got.items() if v not in ("pass", "skip")}

    # the planned upgrade as a profile of its own: every version-derived part (module, banner,
    # NVML, DKMS entry, modinfo, firmware dir, fabric manager) follows the new driver
    profiles = tmp_path / "profiles"
    shutil.copytree(PROFILES_DIR, profiles)
    (profiles / "upgraded-550.yaml").write_text(yaml.safe_dump({
        "base": HEALTHY, "driver": {"version": NEW_DRIVER}, "fabricmanager": {"version": NEW_DRIVER},
        "spec": {"driver": {"version": NEW_DRIVER}}}))
    upgraded = load_profile("upgraded-550", profiles)
    after = Fleet()
    after.add("pcie-gen4-slot", "n1")
    after.add("ecc-uncorrectable-volatile", "n2")
    after.add(upgraded, "n3")
    after.add(HEALTHY, "n4")
    with after:
        rc, got, rep = _suite(after, tmp_path, "after", "--baseline", str(rep_before / "bundles"))
    regressions = {k: v for k, v in got.items() if k.startswith("test_regression_")}
    failed = {k for k, v in regressions.items() if v != "pass"}
    why = _messages(tmp_path / "after.xml", sorted(failed - {"test_regression_checks[n1]"})[:3])
    assert failed == {*(f"test_regression_pcie[n1-gpu{i}]" for i in range(8)), "test_regression_checks[n1]",
                      # n2's ECC errors come with the driver's Xid 48 in its kernel log (the profile's)
                      "test_regression_ecc[n2-gpu2]", "test_regression_xid[n2]", "test_regression_checks[n2]"}, why
    assert {regressions[k] for k in failed} == {"fail"}
    assert rc == 1  # the normal checks fail too (capability, ECC counters): not "regressions only"

    changes = json.loads((rep / "changes.json").read_text())
    n3 = changes["nodes"]["n3"] if "nodes" in changes else changes["n3"]
    driver = [c for c in n3["changes"] if c.get("kind") == "driver" or "driver" in str(c.get("what", ""))]
    assert driver and driver[0]["before"] == "535.161.08" and driver[0]["after"] == NEW_DRIVER
    assert driver[0].get("planned") is True
    assert n3["regressions"] == []
    n4 = changes["nodes"]["n4"] if "nodes" in changes else changes["n4"]
    assert n4["regressions"] == [] and n4["changes"] == []
