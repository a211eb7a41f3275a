"""End to end over real SSH: the whole suite against the whole simulated fleet.

Starts a Fleet of every profile plus an unreachable host (127.0.1.250:22, nothing listens), runs
``python -m pytest suites`` in a subprocess with the fleet's inventory and known_hosts, parses the
JUnit XML and compares every test item with the profiles' expected outcomes EXACTLY (no item
missing, none extra). Needs root, sshd, busybox-static and dash (CI installs them).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools.fleet import Fleet, load_profiles, sshd_available

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

#: Seconds: nvidia-smi hangs on two nodes; a short command timeout keeps the run short.
COMMAND_TIMEOUT = 5
PROBE_TIMEOUT = 60


def junit_outcomes(path: Path) -> dict[str, str]:
    """{test name: pass|fail|error|skip} from nodegate's JUnit file, one entry per item (the compact
    GPU testcases expanded: tests/junit_view.py). A name reported twice keeps the worst outcome:
    error > fail > skip > pass."""
    from tests.junit_view import outcomes
    return outcomes(path)


def compare(expected: dict[str, str], got: dict[str, str]) -> dict[str, tuple]:
    """Items whose outcome differs, is missing or is extra: {test id: (expected, got)}."""
    return {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got))
            if expected.get(k) != got.get(k)}


def test_junit_outcomes_and_compare(tmp_path):
    x = tmp_path / "j.xml"
    x.write_text('<testsuites><testsuite name="s">'
                 '<testcase classname="c" name="test_a[n]"/>'
                 '<testcase classname="c" name="test_b[n-gpu0]"><failure message="m"/></testcase>'
                 '<testcase classname="c" name="test_b[n-gpu1]"><skipped message="m"/></testcase>'
                 '<testcase classname="c" name="test_c[n]"><error message="m"/></testcase>'
                 '<testcase classname="c" name="test_a[n]"><error message="teardown"/></testcase>'
                 '</testsuite></testsuites>')
    got = junit_outcomes(x)
    assert got == {"test_a[n]": "error", "test_b[n-gpu0]": "fail", "test_b[n-gpu1]": "skip", "test_c[n]": "error"}
    assert compare({"test_a[n]": "error", "test_d[n]": "pass"}, got) == {
        "test_b[n-gpu0]": (None, "fail"), "test_b[n-gpu1]": (None, "skip"), "test_c[n]": (None, "error"),
        "test_d[n]": ("pass", None)}


@pytest.fixture(scope="module")
def fleet():
    f = Fleet(load_profiles().values())
    f.add_unreachable("unreachable")
    with f:
        yield f


def test_suite_over_ssh_matches_profiles_exactly(fleet, tmp_path):
    junit = tmp_path / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q",
           "--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
           "--junitxml", str(junit), "--bundles-dir", str(tmp_path / "bundles"),
           "--reports-dir", str(tmp_path / "reports"),
           "--command-timeout", str(COMMAND_TIMEOUT), "--probe-timeout", str(PROBE_TIMEOUT),
           "--connect-timeout", "5"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert junit.is_file(), f"no JUnit written (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    # items of the check catalog are parametrized by node ("[node]" / "[node-gpuN]"); unparametrized
    # suite tests (the opt-in burn-in suite) are not fleet items
    got = {k: v for k, v in junit_outcomes(junit).items() if "[" in k}
    expected = fleet.expected()
    wrong = compare(expected, got)
    assert wrong == {}, "\n".join(f"{k}: expected {e}, got {g}" for k, (e, g) in wrong.items())
    # the unreachable host is ERROR throughout while every other node completed
    assert {v for k, v in got.items() if "[unreachable" in k} == {"error"}
    counts = fleet.exec_counts()
    assert counts == {n: 1 for n in counts}, "one exec channel per node"
