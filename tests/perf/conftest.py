"""One simulated perf fleet per test session (tools/fleet: chroots + sshd on loopback), run once
with --perf over SSH; tests read its results, replay its bundles, and re-judge with --baseline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.fleet import Fleet, sshd_available
from tools.fleet.perf_profiles import load_perf_profiles

ROOT = Path(__file__).resolve().parents[2]
#: healthy copies: with perf-healthy and perf-fleet-outlier, 32 nodes a fleet rule can see
HEALTHY_COPIES = int(os.environ.get("NG_PERF_FLEET_COPIES", "30"))


def run_nodegate(args: list[str], tmp: Path, timeout: int = 600) -> dict[str, dict]:
    """``python -m pytest suites -m perf`` (the perf items only) with ``args``; {nodeid test name: results.jsonl record}."""
    reports = tmp / "reports"
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "-m", "perf",
           "--reports-dir", str(reports), *args]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    res = reports / "results.jsonl"
    assert res.is_file(), f"no results (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-3000:]}"
    out = {}
    for line in res.read_text().splitlines():
        d = json.loads(line)
        if "test_perf_" in d["nodeid"]:
            out[d["nodeid"].split("::", 1)[1]] = d
    return out


@pytest.fixture(scope="session")
def perf_fleet_run(tmp_path_factory):
    why = sshd_available()
    if why is not None:
        pytest.skip(f"simulated fleet unavailable: {why}")
    profiles = load_perf_profiles()
    tmp = tmp_path_factory.mktemp("perf-fleet")
    f = Fleet(profiles.values())
    f.add_copies(profiles["perf-healthy"], HEALTHY_COPIES, "perf-ok")
    with f:
        # connect deadline 60 s: every node here is healthy and reachable, so a long one costs nothing; at
        # 30 s the TCP connect of 2 of 42 nodes timed out under a load of 8 (a dropped SYN is sent again
        # at 1, 3, 7, 15 and 31 s: a 30 s deadline never sees the fifth try)
        got = run_nodegate(["--perf", "--inventory", str(f.inventory_path), "--known-hosts", str(f.known_hosts_path),
                            "--bundles-dir", str(tmp / "bundles"), "--connect-timeout", "60"], tmp)
        yield {"fleet": f, "results": got, "bundles": tmp / "bundles", "tmp": tmp,
               "exec_counts": f.exec_counts()}
