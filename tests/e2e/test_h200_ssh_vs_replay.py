"""The real H200 capture two ways: replayed from its converted bundle (inventories/samples/h200-vm,
tools/capture_to_bundle.py) and gathered over real SSH from a simulated node that replays the same
capture (tools/fleet/profiles/h200-vm.yaml) with host-key verification on. Same spec, same outcomes,
item by item; and the outcomes are the ones the capture's README implies (issue: persistence daemon
FAIL as legacy mode only, GSP PASS through firmware_class.path, PCIe/ECC/clocks PASS, absent tools
ERROR or the spec's SKIP)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.fleet import Fleet, load_profile, sshd_available

from .test_fleet_ssh import junit_outcomes

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")


def _pytest(args, junit: Path) -> dict[str, str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q",
                        "--junitxml", str(junit), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert junit.is_file(), r.stdout[-2000:] + r.stderr[-2000:]
    assert r.returncode == 1, r.stdout[-2000:]  # the node has FAILs
    return {k: v for k, v in junit_outcomes(junit).items() if "[" in k}


def test_h200_over_ssh_equals_replay_of_the_capture(tmp_path):
    with Fleet([load_profile("h200-vm-sim")]) as fleet:
        (node,) = fleet.inventory()["all"]["hosts"]
        ssh = _pytest(["--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
                       "--reports-dir", str(tmp_path / "ssh")], tmp_path / "ssh.xml")
        assert fleet.exec_counts() == {node: 1}
    replay = _pytest(["--replay", str(ROOT / "inventories" / "samples" / "h200-vm"),
                      "--reports-dir", str(tmp_path / "replay")], tmp_path / "replay.xml")
    assert node == "h200-vm-sim"
    # the simulated node is named after its profile, the capture bundle after the capture
    assert {k.replace("[h200-vm-sim", "[h200-vm"): v for k, v in ssh.items()} == replay
    assert replay["test_persistenced_unit[h200-vm]"] == "fail"
    assert replay["test_persistence_mode[h200-vm-gpu0]"] == "fail"
    assert replay["test_gsp_firmware_files[h200-vm]"] == "pass"
    for t in ("pcie_link_capability", "pcie_link_trained", "ecc_counters", "clocks_event_reasons"):
        assert replay[f"test_{t}[h200-vm-gpu0]"] == "pass", t
    assert replay["test_dkms_booted_kernel[h200-vm]"] == "error"      # no dkms, no modinfo
    assert replay["test_fabricmanager[h200-vm]"] == "skip"            # fabricmanager.required=auto
