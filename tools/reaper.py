"""Stop simulated fleets whose owner is gone (issue 37.9).

A simulated fleet (tools/fleet) is sshd daemons, chrooted node processes and, where ``mount``
works, a 4 GB tmpfs under ``/srv/nodegate-fleet/<run id>``. Its owner (the test worker, the
bench, ``make fleet``) stops it on exit; a SIGKILL, or a SIGTERM to a process that does not
handle it (``make bench`` under a CI timeout), left it behind: 16 sshd daemons and a mounted
tmpfs holding 707 MB, until someone found them. Each fleet writes ``owner.json`` (its owner's
pid, the pid's start time, and whether it is meant to outlive it: ``make fleet``); this finds
every fleet whose owner is no longer running and stops it as ``Fleet.stop`` does (sshd by its
pid files, every process whose root is inside the fleet, unmount, remove).

    python -m tools.reaper           # orphaned fleets only (a test session runs this at its start)
    python -m tools.reaper --all     # every fleet, ``make fleet``'s included (``make clean``)
    python -m tools.reaper --dry-run

Needs root to stop root's daemons; prints one line per fleet it stopped.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tools.fleet.owner import proc_start

BASE = Path("/srv/nodegate-fleet")


def owner_alive(workdir: Path) -> bool | None:
    """Whether the fleet at ``workdir`` has a running owner (True), an owner that is gone
    (False), or is meant to outlive its owner (None: ``make fleet``). A fleet without a readable
    owner.json (a version before it, or a fleet still being built) counts as alive unless it is
    older than an hour: never stop what may still be starting."""
    try:
        info = json.loads((workdir / "owner.json").read_text())
        pid, start = int(info["pid"]), str(info.get("start", ""))
    except (OSError, ValueError, KeyError, TypeError):
        import time
        try:
            return time.time() - workdir.stat().st_mtime < 3600
        except OSError:
            return True
    if info.get("persistent"):
        return None
    return bool(proc_start(pid)) and proc_start(pid) == start


def fleets(base: Path = BASE) -> list[Path]:
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if p.is_dir() and not p.is_symlink())


def _mounted(path: Path) -> bool:
    try:
        mounts = Path("/proc/mounts").read_text()
    except OSError:
        return False
    target = str(path.resolve())
    return any(line.split()[1:2] == [target] for line in mounts.splitlines())


def reap(workdir: Path) -> None:
    """Stop the fleet at ``workdir`` as its owner would have (tools.fleet.Fleet.stop)."""
    from tools.fleet.fleet import Fleet
    from tools.fleet.sshd import SshdGroup
    fleet = Fleet(workdir=workdir)
    fleet.mounted = _mounted(workdir)
    sshd_dir = workdir / "sshd"
    for pid in sorted(sshd_dir.glob("sshd-*.pid")) if sshd_dir.is_dir() else ():
        idx = pid.stem.split("-", 1)[1]
        if idx.isdigit():
            fleet.groups.append(SshdGroup(int(idx), sshd_dir))
    fleet.stop()


def reap_orphans(base: Path = BASE, everything: bool = False, dry_run: bool = False) -> list[Path]:
    """Stop every fleet under ``base`` whose owner is gone (``everything``: every fleet); the
    work directories stopped (or that would be, ``dry_run``)."""
    out = []
    for wd in fleets(base):
        alive = owner_alive(wd)
        if alive is True or (alive is None and not everything):
            continue
        out.append(wd)
        if not dry_run:
            reap(wd)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.reaper", description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every fleet, make fleet's persistent ones included")
    ap.add_argument("--dry-run", action="store_true", help="list, stop nothing")
    ap.add_argument("--base", type=Path, default=BASE)
    a = ap.parse_args(argv)
    for wd in reap_orphans(a.base, a.all, a.dry_run):
        print(f"{'would stop' if a.dry_run else 'stopped'} the simulated fleet {wd}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
