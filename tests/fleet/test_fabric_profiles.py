"""Issue 19's fault profiles over real SSH (sshd + chroot nodes, host keys verified): the whole suite
against the healthy HGX base and each fabric/InfiniBand/PCIe/config/CUDA fault gives exactly the
profiles' outcomes, and the failure messages name what an operator acts on. Needs root, sshd, busybox.
The run is the session's one run over the fleet of every profile (tests/conftest.py), which holds these."""

from __future__ import annotations

from pathlib import Path

import defusedxml.ElementTree as DET
import pytest

from tests.conftest import PROFILE_FLEET

from ..e2e.test_fleet_ssh import compare, junit_outcomes
from .conftest import needs_fleet

#: the session's fleet of every profile and its one suite run (tests/conftest.py)
pytestmark = [needs_fleet, pytest.mark.xdist_group(PROFILE_FLEET)]
ROOT = Path(__file__).resolve().parents[2]

FAULTS = ("nvlink-link-down", "nvlink-wrong-speed", "nvlink-crc-errors", "fabric-in-progress", "nvswitch-missing",
          "ib-port-down", "ib-port-200g", "pcie-replays", "aer-fatal-upstream", "vbios-mixed", "power-limit-lowered",
          "mig-enabled", "cuda-12.8-on-535")

#: test id -> a phrase its failure message must carry
MESSAGES = {
    "test_nvlink_links[nvlink-link-down-gpu2]": "link 7 <inactive>",
    "test_nvlink_links[nvlink-wrong-speed-gpu4]": "at 13.281 GB/s below 26.562 GB/s",
    "test_nvlink_errors[nvlink-crc-errors-gpu1]": "link 3 replay 2; link 3 CRC 1893",
    "test_fabric_state[fabric-in-progress-gpu0]": "fabric state In Progress",
    "test_nvswitch_count[nvswitch-missing]": "NVSwitch missing: 3 of 4 present",
    "test_infiniband_ports[ib-port-down]": "mlx5_3 port 1 DOWN/Disabled",
    "test_infiniband_ports[ib-port-200g]": "mlx5_5 port 1 at 200 Gb/s below 400",
    "test_pcie_errors[pcie-replays-gpu6]": "50000 PCIe replays, above 11520",
    "test_pcie_errors[aer-fatal-upstream-gpu2]": "1 AER fatal error(s) (DLP 1), above 0",
    "test_firmware_versions[vbios-mixed-gpu5]": "VBIOS 96.00.74.00.0B differs from the node's other GPUs",
    "test_power_limit[power-limit-lowered-gpu0]": "enforced power limit 500 W lowered from 700 W",
    "test_mig_mode[mig-enabled-gpu3]": "MIG Enabled, config.mig=disabled",
    "test_cuda_compatibility[cuda-12.8-on-535]": "is below CUDA 12.8's minimum 570.26",
}


def _messages(path: Path) -> dict[str, str]:
    out = {}
    for tc in DET.parse(path).getroot().iter("testcase"):
        for c in tc:
            if c.tag in ("failure", "error", "skipped"):
                out[tc.get("name")] = (c.get("message") or "") + (c.text or "")
    return out


def test_fault_profiles_over_ssh_give_exactly_their_outcomes(profile_fleet, profile_fleet_run):
    # the session's one suite run over the fleet of every profile (tests/conftest.py), which holds
    # these nodes with these names and specs: their items, read from it (issue 30: one run, not two)
    run, nodes = profile_fleet_run, ("h100-535-healthy", *FAULTS)
    assert run.junit.is_file(), f"no JUnit written (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"

    def ours(test_id: str) -> bool:
        node = test_id.split("[", 1)[1].rstrip("]")
        return any(node == n or node.startswith(f"{n}-gpu") for n in nodes)

    got = {k: v for k, v in junit_outcomes(run.junit).items() if "[" in k and ours(k)}
    want = {k: v for k, v in profile_fleet.expected().items() if ours(k)}
    assert {k.split("[", 1)[1].split("-gpu")[0].rstrip("]") for k in want} == set(nodes)
    wrong = compare(want, got)
    assert wrong == {}, "\n".join(f"{k}: expected {e}, got {g}" for k, (e, g) in wrong.items())
    assert {v for k, v in got.items() if "[h100-535-healthy" in k} == {"pass", "skip"}
    msgs = _messages(run.junit)
    missing = {k: want for k, want in MESSAGES.items() if want not in msgs.get(k, "")}
    assert missing == {}, {k: msgs.get(k, "")[:300] for k in missing}
    assert {n: run.exec_counts[n] for n in nodes} == {n: 1 for n in nodes}, "one exec channel per node"
