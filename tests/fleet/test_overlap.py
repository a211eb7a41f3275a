"""Tests that run while nodes are gathered (issue 5): the same items and outcomes as gathering
first, per-GPU items from gpu.count, a node without gpu.count waited for at collection, a GPU
beyond gpu.count reported, and the gathering process's failures turned into ERROR items.

The fleet tests run ``python -m pytest suites`` in a subprocess against a small simulated fleet
(real sshd on loopback; needs root, sshd, busybox-static, dash), once in the default mode and
once with ``--gather-first``, and compare their JUnit files item by item.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from nodegate.bundle import Bundle
from nodegate.run import FleetRun, GatherOptions, NodeJob
from tests.e2e.test_fleet_ssh import compare, junit_outcomes
from tools.fleet import Fleet, sshd_available

ROOT = Path(__file__).resolve().parents[2]
NEEDS = sshd_available()
needs_fleet = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

HEALTHY = "h200-580-open-healthy"      # 8 GPUs, everything passes or skips by spec
LOST = "gpu-fallen-off-bus"            # gpu.count 8, one GPU lost
NO_COUNT = "no-count"                  # HEALTHY with gpu.count removed from its spec
SURPLUS = "surplus"                    # HEALTHY with gpu.count 7: one GPU more than the spec
SURPLUS_SKIPPED = "surplus-skipped"    # the same with gpu_count in checks.skip


@pytest.fixture(scope="module")
def small_fleet():
    if NEEDS is not None:
        pytest.skip(f"simulated fleet unavailable: {NEEDS}")
    f = Fleet([HEALTHY, LOST])
    f.add(HEALTHY, NO_COUNT)
    f.add(HEALTHY, SURPLUS)
    f.add(HEALTHY, SURPLUS_SKIPPED)
    f.add_unreachable("unreachable")
    with f:
        inv = yaml.safe_load(f.inventory_path.read_text())
        hosts = inv["all"]["hosts"]
        del hosts[NO_COUNT]["nodegate"]["gpu"]["count"]
        hosts[NO_COUNT]["nodegate"]["gpu"].pop("bus_ids", None)
        for n in (SURPLUS, SURPLUS_SKIPPED):
            hosts[n]["nodegate"]["gpu"]["count"] = 7
            hosts[n]["nodegate"]["gpu"].pop("bus_ids", None)
        hosts[SURPLUS_SKIPPED]["nodegate"].setdefault("checks", {})["skip"] = ["gpu_count"]
        f.inventory_path.write_text(yaml.safe_dump(inv))
        yield f


def _run_suites(fleet: Fleet, tmp: Path, *extra: str) -> tuple[dict[str, str], str, float]:
    junit = tmp / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider",
           "--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path),
           "--junitxml", str(junit), "--reports-dir", str(tmp / "reports"), "--connect-timeout", "60", *extra]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert junit.is_file(), f"no JUnit (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return {k: v for k, v in junit_outcomes(junit).items() if "[" in k}, r.stdout, time.monotonic() - t0


@pytest.fixture(scope="module")
def both_modes(small_fleet, tmp_path_factory):
    overlap = _run_suites(small_fleet, tmp_path_factory.mktemp("overlap"))
    first = _run_suites(small_fleet, tmp_path_factory.mktemp("first"), "--gather-first")
    return overlap, first


@needs_fleet
def test_overlap_gives_the_items_and_outcomes_of_gathering_first(small_fleet, both_modes):
    (ov, ov_out, _), (gf, gf_out, _) = both_modes
    assert "while the tests run" in ov_out and "while the tests run" not in gf_out
    surplus_gpu7 = {k for k in gf if k.endswith(f"[{SURPLUS}-gpu7]") or k.endswith(f"[{SURPLUS_SKIPPED}-gpu7]")}
    assert len(surplus_gpu7) > 20, "the surplus GPU's records come from what the node reports"
    # items from the specs alone, their GPUs resolved when they run (issue 40.4): both modes judge
    # the GPU beyond gpu.count, so gpu_count turned off in checks.skip stays a SKIP in both
    skipped_count = f"test_gpu_count[{SURPLUS_SKIPPED}]"
    assert gf[skipped_count] == "skip" and ov[skipped_count] == "skip"
    assert compare(gf, ov) == {}
    # the profiles' expected outcomes hold for the nodes whose spec the test did not change
    changed = (f"[{NO_COUNT}", f"[{SURPLUS}")   # SURPLUS_SKIPPED starts with SURPLUS
    expected = {k: v for k, v in small_fleet.expected().items() if not any(c in k for c in changed)}
    got = {k: v for k, v in ov.items() if not any(c in k for c in changed)}
    assert compare(expected, got) == {}
    assert {v for k, v in ov.items() if "[unreachable" in k} == {"error"}


@needs_fleet
def test_lost_gpu_slot_from_gpu_count_and_node_without_count(both_modes):
    (ov, _, _), _ = both_modes
    # the lost GPU's slot exists from gpu.count before the node was gathered, and ERRORs or FAILs
    lost = {k: v for k, v in ov.items() if f"[{LOST}-gpu" in k}
    assert len({k.split("[")[1] for k in lost}) == 8
    assert ov[f"test_gpu_count[{LOST}]"] == "fail"
    # without gpu.count the node's GPU records follow what it reports (8), resolved when its items run
    assert len({k.split("[")[1] for k in ov if f"[{NO_COUNT}-gpu" in k}) == 8


@needs_fleet
def test_gpu_beyond_gpu_count_fails_gpu_count_and_is_named(both_modes):
    (ov, ov_out, _), (gf, _, _) = both_modes
    assert ov[f"test_gpu_count[{SURPLUS}]"] == "fail" == gf[f"test_gpu_count[{SURPLUS}]"]
    # the folded items judge every GPU the node reports (resolved when they run): none is left out
    assert any(f"[{SURPLUS}-gpu7]" in k for k in ov)
    assert "GPUs beyond gpu.count have no per-GPU items" not in ov_out


@needs_fleet
def test_terminal_shows_one_progress_line_per_node(both_modes):
    (_, ov_out, _), _ = both_modes
    lines = ov_out.splitlines()
    for node in (HEALTHY, LOST, NO_COUNT, SURPLUS, SURPLUS_SKIPPED, "unreachable"):
        assert any(ln.startswith(node + " ") for ln in lines), (node, ov_out[-2000:])
    assert not any(ln.startswith("suites/test_") for ln in lines), [ln for ln in lines if ln.startswith("suites/test_")][:5]
    assert "nodegate: gathered 6/6 nodes, 1 unreachable/errors in" in ov_out


# ---------------------------------------------------------------------------- gathering process
def _jobs(names):
    return [NodeJob(name=n, url="local://", shown_url="local://") for n in names]


def test_gathering_process_that_dies_leaves_error_bundles(tmp_path, monkeypatch):
    """The child reports one node, then dies: that node is judged from its bundle, the others
    come out ERROR naming the exit code, and wait_all raises (the run exits INTERNAL_ERROR)."""
    import nodegate.gather as G

    def fake_gather(jobs, opts, bundles_dir, progress=None, prepare=None, prepare_errors=False, keep=True,
                    stop=None):  # gather_fleet's signature (stop: the run-wide interruption)
        b = Bundle(jobs[0].name, {}, {"node": jobs[0].name, "status": "ok"})
        b.write(bundles_dir)
        prepare(b)
        os._exit(3)

    monkeypatch.setattr(G, "gather_fleet", fake_gather)   # fork: the child runs the patched module
    run = FleetRun(bundles_dir=tmp_path)
    run.start_gather(_jobs(["a", "b", "c"]), GatherOptions())
    with pytest.raises(RuntimeError, match="exit code 3"):
        run.wait_all()
    assert list(run.bundles) == ["a", "b", "c"]
    assert run.bundles["a"].gather_error is None and run.bundles["a"].path == tmp_path / "a"
    for n in ("b", "c"):
        assert "gathering process ended (exit code 3)" in run.bundles[n].gather_error
    assert run.progress()[:3] == (3, 3, 2)


def _fake_pool(jobs, opts, bundles_dir, progress=None, prepare=None, prepare_errors=False, keep=True, stop=None):
    """gather_fleet's signature: every node an ok bundle at once."""
    for j in jobs:
        b = Bundle(j.name, {}, {"node": j.name, "status": "ok"})
        b.write(bundles_dir)
        prepare(b)


def _refuse_fork(monkeypatch):
    import multiprocessing.process as P

    def refuse(self):
        raise BlockingIOError(11, "Resource temporarily unavailable")
    monkeypatch.setattr(P.BaseProcess, "start", refuse)


def test_fork_refused_gathers_in_a_thread(tmp_path, monkeypatch):
    """fork refused (EAGAIN: a user's process limit on a loaded machine): the same pool runs in a
    thread of this process and every node is gathered."""
    import nodegate.fleetrun.background as BG
    _refuse_fork(monkeypatch)
    monkeypatch.setattr(BG, "gather_fleet", _fake_pool)
    run = FleetRun(bundles_dir=tmp_path)
    run.start_gather(_jobs(["a", "b"]), GatherOptions())
    run.wait_all()
    assert run._proc is None and list(run.bundles) == ["a", "b"]
    assert all(b.gather_error is None for b in run.bundles.values())


def test_no_shared_memory_still_gathers_in_the_child(tmp_path, monkeypatch):
    """No usable /dev/shm (a non-root user in a chroot: PermissionError for the shared reason
    array): the gathering child still runs; it only cannot be told the signal's name."""
    import nodegate.gather as G
    import nodegate.interrupt as I

    def no_shm(self, ctx):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(I.ReasonBox, "__init__", no_shm)
    monkeypatch.setattr(G, "gather_fleet", _fake_pool)   # fork: the child runs the patched module
    run = FleetRun(bundles_dir=tmp_path)
    run.start_gather(_jobs(["a", "b"]), GatherOptions())
    run.wait_all()
    assert run._proc is not None and run._reason_box is None
    assert [n for n, b in run.bundles.items() if b.gather_error is None] == ["a", "b"]


@pytest.mark.parametrize("streaming", [False, True])
def test_a_gathering_that_cannot_start_errors_every_node_and_never_hangs(tmp_path, monkeypatch, streaming):
    """Neither a child nor a thread can start: every node is an ERROR bundle naming why and
    wait_all raises it at once. Before, the nodes' events were never set and the session finish
    waited forever (a non-root make test in a chroot hung there: no /dev/shm for the child's
    shared array, and nothing set the events)."""
    import nodegate.fleetrun.background as BG
    _refuse_fork(monkeypatch)

    def no_thread(self, jobs, opts):
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(BG.Gathering, "_start_thread", no_thread)
    run = FleetRun(bundles_dir=tmp_path)
    run.streaming = streaming
    run.start_gather(_jobs(["a", "b"]), GatherOptions())
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="can't start new thread"):
        run.wait_all()
    assert time.monotonic() - t0 < 60
    assert run.progress()[:3] == (2, 2, 2)
    if not streaming:
        for n in ("a", "b"):
            assert "the gathering could not start: RuntimeError" in run.bundles[n].gather_error


def test_a_child_whose_reader_cannot_start_is_stopped(tmp_path, monkeypatch):
    """The gathering child started but its reader thread did not: the child is killed (nothing
    would read what it gathers) and every node is an ERROR bundle naming why."""
    import threading

    import nodegate.gather as G

    def slow_pool(jobs, opts, bundles_dir, **kw):
        time.sleep(60)
    monkeypatch.setattr(G, "gather_fleet", slow_pool)   # fork: the child runs the patched module

    class NoThread(threading.Thread):
        def start(self):
            raise RuntimeError("can't start new thread")
    import nodegate.fleetrun.background as BG
    monkeypatch.setattr(BG.threading, "Thread", NoThread)
    run = FleetRun(bundles_dir=tmp_path)
    run.start_gather(_jobs(["a"]), GatherOptions())
    monkeypatch.undo()
    run._proc.join(30)
    assert not run._proc.is_alive()
    with pytest.raises(RuntimeError, match="can't start new thread"):
        run.wait_all()
    assert "the gathering could not start: RuntimeError" in run.bundles["a"].gather_error


def test_gathering_process_reports_nodes_as_they_arrive_in_inventory_order(tmp_path, monkeypatch):
    """wait(node) returns as soon as that node is in, before the slow one; wait_all restores
    the inventory order whatever the order of arrival."""
    import nodegate.gather as G

    release = tmp_path / "release-slow"   # the slow node arrives only once the test says so

    def fake_gather(jobs, opts, bundles_dir, progress=None, prepare=None, prepare_errors=False, keep=True,
                    stop=None):  # gather_fleet's signature (stop: the run-wide interruption)
        for j in reversed(jobs):
            if j.name == "slow":
                end = time.monotonic() + 120
                while not release.exists() and time.monotonic() < end:
                    time.sleep(0.02)
            b = Bundle(j.name, {}, {"node": j.name, "status": "ok"})
            b.write(bundles_dir)
            prepare(b)

    monkeypatch.setattr(G, "gather_fleet", fake_gather)   # the gathering child calls nodegate.gather's
    (tmp_path / "bundles").mkdir()
    run = FleetRun(bundles_dir=tmp_path / "bundles")
    run.start_gather(_jobs(["slow", "fast"]), GatherOptions())
    # an order, not a race: "slow" cannot be in before the release (issue 30: no wall-clock bound)
    assert run.wait("fast").node == "fast"
    assert not run.ready("slow")
    release.touch()
    run.wait_all()
    assert list(run.bundles) == ["slow", "fast"] and run.gather_s > 0


def test_without_bundles_dir_the_pool_runs_in_a_thread(tmp_path):
    """No bundles directory: nothing for a child process to hand over, so a thread gathers
    (here local:// in a chroot-less sh: the probe runs on this machine)."""
    run = FleetRun(bundles_dir=None)
    run.start_gather(_jobs(["here"]), GatherOptions(gpu_source="smi", command_timeout=10))
    assert run._proc is None
    run.wait_all()
    b = run.bundles["here"]
    assert b.gather_error is None and "meta.uname_r" in b.items
    assert run.facts["here"].kernel_release == os.uname().release


def test_gathering_process_pool_keeps_no_bundle_once_reported(tmp_path):
    """keep=False (the gathering process): each bundle is written and handed to ``prepare``,
    then dropped; nothing per node stays for the process's GC to walk at every collection."""
    import gc
    import weakref

    from nodegate.run import gather_fleet

    refs = []
    got = gather_fleet(_jobs(["n1", "n2", "n3"]), GatherOptions(gpu_source="smi", command_timeout=10), tmp_path,
                       prepare=lambda b: refs.append(weakref.ref(b)), keep=False)
    assert got == [] and len(refs) == 3
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
    for n in ("n1", "n2", "n3"):
        assert Bundle.load(tmp_path / n).items["meta.uname_r"].rc == 0
