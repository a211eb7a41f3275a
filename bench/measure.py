"""Run a child process and measure it: wall time, CPU time and peak RSS of the child and its
descendants (``os.wait4``: the kernel's rusage of the waited process tree), plus the CPU spent
by simulated nodes (sshd listeners' own and reaped children's time from /proc/<pid>/stat)."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Measured:
    rc: int
    wall_s: float
    cpu_s: float          # user + system of the child tree (seconds)
    peak_rss_mb: float    # largest RSS of any process in the tree (MiB; ru_maxrss is KiB on Linux)
    output: str           # stdout+stderr, last 20000 characters


def run_measured(argv: list[str], *, cwd: Path | None = None, env: dict | None = None,
                 timeout_s: float = 900.0) -> Measured:
    """Run ``argv`` to completion; output is captured into a file (no pipe back-pressure)."""
    log = Path(f"/tmp/nodegate-bench-{os.getpid()}-{time.monotonic_ns()}.log")
    with open(log, "wb") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        deadline = t0 + timeout_s
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait again
    text = log.read_text(errors="replace")
    log.unlink()
    return Measured(p.returncode, round(wall, 3), round(ru.ru_utime + ru.ru_stime, 3),
                    round(ru.ru_maxrss / 1024, 1), text[-20000:])


def proc_cpu_s(pids: list[int]) -> float:
    """Own + reaped-children CPU seconds of ``pids`` (utime, stime, cutime, cstime of /proc/PID/stat).
    For an sshd listener this is every finished session's CPU: sshd, the node's shell and the
    probe's commands (each waited for by its parent)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime (fields 14-17)
    return total / _TICK
