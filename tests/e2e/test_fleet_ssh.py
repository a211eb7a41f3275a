"""End to end over real SSH: the whole suite against the whole simulated fleet.

A Fleet of every profile plus an unreachable host (127.0.1.250:22, nothing listens), on which
``python -m pytest suites`` ran once in a subprocess with the fleet's inventory and known_hosts
(tests/conftest.py: ``profile_fleet_run``, shared with tests/fleet); this parses the
JUnit XML and compares every test item with the profiles' expected outcomes EXACTLY (no item
missing, none extra). Needs root, sshd, busybox-static and dash (CI installs them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROFILE_FLEET
from tools.fleet import sshd_available

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
#: the fleet and its suite run are the session's (tests/conftest.py: profile_fleet_run), shared
#: with tests/fleet/test_fleet_ssh.py and test_fabric_profiles.py on one xdist worker
pytestmark = [pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}"),
              pytest.mark.xdist_group(PROFILE_FLEET)]


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


def test_suite_over_ssh_matches_profiles_exactly(profile_fleet, profile_fleet_run):
    run = profile_fleet_run   # the suite once over the fleet (tests/conftest.py; shared with other files)
    assert run.junit.is_file(), f"no JUnit written (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    # items of the check catalog are parametrized by node ("[node]" / "[node-gpuN]"); unparametrized
    # suite tests (the opt-in burn-in suite) are not fleet items
    got = {k: v for k, v in junit_outcomes(run.junit).items() if "[" in k}
    expected = profile_fleet.expected()
    wrong = compare(expected, got)
    assert wrong == {}, "\n".join(f"{k}: expected {e}, got {g}" for k, (e, g) in wrong.items())
    # the unreachable host is ERROR throughout while every other node completed
    assert {v for k, v in got.items() if "[unreachable" in k} == {"error"}
    assert run.exec_counts == {n: 1 for n in run.exec_counts}, "one exec channel per node"
