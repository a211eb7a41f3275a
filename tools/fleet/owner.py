"""A process's identity: a fleet owner's pid and its start time, a daemon's pid and its command
line (so that a reused pid is not taken for it).

Its own module: tools/fleet/fleet.py writes owner.json with it and tools/reaper.py reads it back,
and the reaper imports the fleet (to stop one), so the fleet cannot import the reaper. tools/slurm
checks its daemons' pids with ``runs`` too.
"""

from __future__ import annotations

from pathlib import Path


def proc_start(pid: int) -> str:
    """The start time of ``pid`` (field 22 of /proc/<pid>/stat, clock ticks since boot), "" when
    unreadable: a pid reused by another process has another start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # the command name (field 2) may hold spaces and parentheses: split after its last ")"
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def runs(pid: int, marker: str) -> bool:
    """Whether ``pid`` is still the daemon a pid file named: its command line holds ``marker`` (its
    config file or work directory). A daemon SIGKILLed leaves its pid file behind, and on a busy
    machine (pid_max 32768, thousands of forks a minute) its pid soon belongs to another process:
    signalling that pid SIGTERMed an unrelated ``make test`` (its pytest controller) on this host."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return marker.encode() in cmd
