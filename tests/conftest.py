"""What the project's own tests share: fixtures built once per run, and how `make test` spreads
the test files over pytest-xdist workers (docs/contributing.md, "The test suite").

Shared fixtures (session scope: built once per worker that needs them; the files using one are
grouped on one worker with ``pytest.mark.xdist_group(PROFILE_FLEET)``, see below):

- ``profile_fleet``: the simulated SSH fleet of every profile (tools/fleet/profiles, one node each,
  named after it) plus ``unreachable`` (127.0.1.250:22, nothing listens);
- ``profile_fleet_run``: ONE ``python -m pytest suites`` over SSH on that fleet (its JUnit,
  outcomes, messages, exec channels opened per node by the run). tests/e2e/test_fleet_ssh.py and
  tests/fleet/test_fabric_profiles.py read it; tests/fleet/test_fleet_ssh.py probes the same fleet.

Scheduling (``make test`` passes ``-n 4 --dist loadgroup``): every test file is one unit of work
(its module-scoped fixtures, fleets and suite runs, are built once, never once per worker), the
files of one ``FILE_GROUPS`` entry are one unit together, and the heaviest units start first
(HEAVY) so that no long file starts last and runs alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the nodegate runs these tests start with -n N exercise pytest-xdist whatever this machine's cores
# and their small fleets (nodegate.session.scheduling.cap_workers would run them serially);
# tests/core/test_worker_cap.py tests the cap itself
os.environ.setdefault("NODEGATE_XDIST_UNCAPPED", "1")

#: the xdist group of the files that use ``profile_fleet`` / ``profile_fleet_run``
PROFILE_FLEET = "profile-fleet"

#: test files that share a session fixture, so must run on ONE worker: file -> unit name. The
#: scheduler below reads this table, not the ``xdist_group`` marks (kept on the files, and still
#: honoured when a node id carries xdist's "@group" suffix): with pytest 9.2, xdist 3.8 no longer
#: groups by the mark (its worker renames ``item._nodeid``, which pytest 9.2's structured node ids
#: do not read: pytest-dev/pytest-xdist#1386), and each worker built its own 43-node profile fleet
#: (three at once: the load that cut healthy nodes' SSH handshakes). tests/core/test_scheduling.py
#: checks that every file using the shared fixtures is listed, and ``profile_fleet`` refuses to be
#: built twice in one run.
FILE_GROUPS = {
    "tests/e2e/test_fleet_ssh.py": PROFILE_FLEET,
    "tests/fleet/test_fabric_profiles.py": PROFILE_FLEET,
    "tests/fleet/test_fleet_ssh.py": PROFILE_FLEET,
}

#: deadlines of the shared run. nvidia-smi hangs on two nodes: the command deadline ends smi-hang's
#: hung calls (5 + 3 s each), the probe deadline smi-hang-no-timeout's probe (the run lasts that
#: long). Both stay far from what a node that does not hang needs, even with 43 nodes connecting at
#: once on a loaded 2-core machine (with 60 / 5, a healthy node's probe or SSH handshake was cut at
#: a load of 15: issue 30); nothing listens at ``unreachable``, so the connect deadline costs nothing.
COMMAND_TIMEOUT, PROBE_TIMEOUT, CONNECT_TIMEOUT = 5, 90, 60

#: test paths (prefixes) whose files take longest, longest first (measured: docs/contributing.md);
#: these start first. Files not listed keep pytest's order after them.
HEAVY = (
    "tests/reports/test_browser.py", "tests/reports/test_scale.py", "tests/inventory/test_cli_selection.py",
    "tests/bench/test_bench_code.py", "tests/e2e/", "tests/crossnode/test_fleet_mpirun.py", "tests/perf/test_fleet_e2e.py", "tests/fleet/", "tests/hostile/test_hostile_fleet.py",
    "tests/install/test_install_isolation.py", "tests/inventory/test_compat.py", "tests/site/test_plugin_local.py",
    "tests/hostile/test_load.py", "tests/slurm/", "tests/site/test_fleet_site.py", "tests/burnin/test_interrupt.py",
    "tests/hostile/test_interrupts.py", "tests/hostile/test_parser_properties.py", "tests/parsers/test_properties.py",
    "tests/hostile/", "tests/bench/", "tests/baseline/", "tests/site/", "tests/probe/test_probe_klog.py",
    "tests/core/test_gc_schedule.py", "tests/core/test_item_setup.py", "tests/reports/", "tests/inventory/",
    "tests/burnin/", "tests/nvml/", "tests/k8s/",
)


# ------------------------------------------------------------------------------ scheduling
def _weight(nodeid: str) -> int:
    for i, prefix in enumerate(HEAVY):
        if nodeid.startswith(prefix):
            return i
    return len(HEAVY)


def pytest_collection_modifyitems(session, config, items):
    """Heaviest files first (a stable sort: within a file, pytest's order). Identical on every
    xdist worker (pytest-xdist requires one collection order)."""
    items.sort(key=lambda it: _weight(it.nodeid))


def unit_of(nodeid: str) -> str:
    """The unit of work of a test id: its ``FILE_GROUPS`` entry, else its file (an xdist "@group"
    suffix, where xdist still adds one, wins)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):   # xdist's own "@group" suffix (loadgroup)
        return nodeid.rsplit("@", 1)[-1]
    path = nodeid.split("::", 1)[0]
    return FILE_GROUPS.get(path, path)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup``: one unit per file, or per ``FILE_GROUPS`` entry (files together)."""
    if getattr(config.option, "dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling
    # units in collection order (HEAVY first), not xdist's default of the most tests first: a file of
    # 300 quick tests would otherwise start before a fleet of 14 slow ones
    config.option.loadscopereorder = False

    class FileGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return FileGroupScheduling(config, log)


# ------------------------------------------------------------------------------ the profile fleet
def _built_once_per_run(tmp_path_factory, name: str) -> None:
    """Fail when another xdist worker of this run already built the fixture ``name`` (a marker
    file created exclusively in the run's shared base directory): its files were split over
    workers (FILE_GROUPS)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent          # pytest-N/, shared by the run's workers (popen-gwN/ below it)
    try:
        fd = os.open(base / f"{name}.built", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        pytest.fail(f"{name} built by two xdist workers of one run: list every file using it in "
                    "tests/conftest.py FILE_GROUPS")
    os.write(fd, os.environ.get("PYTEST_XDIST_WORKER", "main").encode())
    os.close(fd)


@pytest.fixture(scope="session")
def profile_fleet(tmp_path_factory):
    """The fleet of every profile plus ``unreachable``, started once per session (skips where the
    simulated fleet cannot run: tools.fleet.sshd_available)."""
    from tools.fleet import Fleet, load_profiles, sshd_available
    why = sshd_available()
    if why is not None:
        pytest.skip(f"simulated fleet unavailable: {why}")
    _built_once_per_run(tmp_path_factory, "profile-fleet")
    f = Fleet(load_profiles().values())
    f.add_unreachable("unreachable")
    with f:
        yield f


@dataclass
class FleetRun:
    """One ``python -m pytest suites`` over SSH: exit code, output, JUnit, and the exec channels
    the run opened per reachable node (from the sshd logs, counted before and after it)."""

    returncode: int
    stdout: str
    stderr: str
    junit: Path
    bundles: Path
    reports: Path
    exec_counts: dict[str, int] = field(default_factory=dict)


@pytest.fixture(scope="session")
def profile_fleet_run(profile_fleet, tmp_path_factory) -> FleetRun:
    """The whole suite once over SSH on ``profile_fleet`` (deadlines: COMMAND_TIMEOUT etc.)."""
    tmp = tmp_path_factory.mktemp("profile-fleet-run")
    junit = tmp / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q",
           "--inventory", str(profile_fleet.inventory_path), "--known-hosts", str(profile_fleet.known_hosts_path),
           "--junitxml", str(junit), "--bundles-dir", str(tmp / "bundles"), "--reports-dir", str(tmp / "reports"),
           "--command-timeout", str(COMMAND_TIMEOUT), "--probe-timeout", str(PROBE_TIMEOUT),
           "--connect-timeout", str(CONNECT_TIMEOUT)]
    before = profile_fleet.exec_counts()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    after = profile_fleet.exec_counts()
    return FleetRun(r.returncode, r.stdout, r.stderr, junit, tmp / "bundles", tmp / "reports",
                    {n: after[n] - before.get(n, 0) for n in after})


def pytest_sessionstart(session):
    """Stop simulated fleets an earlier, killed run left behind (their owner is gone:
    tools/reaper.py), once, in the controller; fleets of running sessions and ``make fleet``'s are
    left alone."""
    if hasattr(session.config, "workerinput") or os.geteuid() != 0:
        return
    try:
        from tools.reaper import reap_orphans
        gone = reap_orphans()
    except Exception as e:  # noqa: BLE001 - cleaning up is best effort; the tests still run
        print(f"tests: could not check for leftover simulated fleets: {e}", file=sys.stderr)
        return
    for wd in gone:
        print(f"tests: stopped a simulated fleet a killed run left behind: {wd}", file=sys.stderr)
