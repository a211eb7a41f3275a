"""Issue 37.9 (c): a simulated fleet whose owner died is found and stopped (tools/reaper.py).

A child process starts a 2-node fleet (real sshd on loopback, a tmpfs where mount works), says
so, and sleeps; it is then killed with SIGKILL (nothing of its own cleanup runs, as with `make
bench` under a CI timeout before the bench handled SIGTERM). The reaper stops it: no sshd of it
runs, nothing is mounted there, the work directory is gone. A fleet whose owner still runs, and
a `make fleet` one (persistent), are left alone unless --all. Needs root, openssh-server, busybox.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import sys, time
from tools.fleet import Fleet
f = Fleet(run_id=sys.argv[1])
f.add_copies("h100-535-healthy", 2, prefix="r")
f.persistent = sys.argv[2] == "1"
f.start()
print("UP", f.workdir, " ".join(str(g.pid) for g in f.groups), flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module")
def need_fleet():
    from tools.fleet import sshd_available
    why = sshd_available()
    if why is not None:
        pytest.skip(f"simulated fleet unavailable: {why}")


def _start(run_id: str, persistent: bool = False) -> tuple[subprocess.Popen, Path, list[int]]:
    p = subprocess.Popen([sys.executable, "-c", CHILD, run_id, "1" if persistent else "0"], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    line = p.stdout.readline()
    assert line.startswith("UP "), line
    _, wd, *pids = line.split()
    return p, Path(wd), [int(x) for x in pids]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    st = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
    return " Z " not in st[:60]


def _mounted(wd: Path) -> bool:
    return any(ln.split()[1:2] == [str(wd)] for ln in Path("/proc/mounts").read_text().splitlines())


def test_a_fleet_whose_owner_was_killed_is_stopped_and_a_live_one_is_left(need_fleet):
    from tools.reaper import reap_orphans
    dead, wd, pids = _start(f"reaper-dead-{os.getpid()}")
    live, wd2, pids2 = _start(f"reaper-live-{os.getpid()}")
    try:
        dead.send_signal(signal.SIGKILL)
        dead.wait(30)
        assert pids and all(_alive(p) for p in pids), "sshd should outlive its SIGKILLed owner"
        gone = reap_orphans()
        assert wd in gone and wd2 not in gone
        end = time.monotonic() + 30
        while any(_alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.2)
        assert not any(_alive(p) for p in pids)
        assert not _mounted(wd) and not wd.exists()
        assert wd2.exists() and all(_alive(p) for p in pids2)
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait(30)
        reap_orphans()
    assert not wd2.exists()


def test_a_persistent_fleet_is_left_unless_all(need_fleet):
    from tools.reaper import reap_orphans
    p, wd, pids = _start(f"reaper-keep-{os.getpid()}", persistent=True)
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    try:
        assert json.loads((wd / "owner.json").read_text())["persistent"] is True
        assert wd not in reap_orphans()
        assert wd.exists() and all(_alive(x) for x in pids)
    finally:
        assert wd in reap_orphans(everything=True)
    assert not wd.exists()
