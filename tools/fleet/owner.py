"""A fleet owner's identity: a pid and its start time (so that a reused pid is not taken for it).

Its own module: tools/fleet/fleet.py writes owner.json with it and tools/reaper.py reads it back,
and the reaper imports the fleet (to stop one), so the fleet cannot import the reaper.
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
