"""Extra node state for site tests on the simulated fleet: files and small tools written into a
started node's root (tools/fleet keeps to what nodegate's probe reads; a site check reads more)."""

from __future__ import annotations

import os
from pathlib import Path

#: answers ``systemctl is-active|is-enabled <unit>`` for the units given, the rest goes to the
#: fleet's own systemctl shim (``show ...``)
_SYSTEMCTL = """#!/bin/sh
# tests/site/nodes.py: unit states for testinfra's host.service
case "$1" in
  is-active|is-enabled)
    case "$2" in
@@CASES@@
    esac ;;
esac
exec /usr/bin/systemctl "$@"
"""

#: ``sysctl -n <key>`` from the node's /proc/sys (procps' output format for one key)
_SYSCTL = """#!/bin/sh
[ "$1" = -n ] && shift
f="/proc/sys/$(printf '%s' "$1" | tr . /)"
[ -r "$f" ] || { echo "sysctl: cannot stat $f: No such file or directory" >&2; exit 255; }
cat "$f"
"""


def write(fleet, node: str, path: str, text: str, mode: int = 0o644) -> Path:
    p = fleet.root(node) / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    os.chmod(p, mode)
    return p


def systemd(fleet, node: str, units: dict[str, tuple[str, str]]) -> None:
    """A systemd node for testinfra (``/run/systemd/system/`` exists) whose ``units`` are
    ``{unit: (is-active answer, is-enabled answer)}``; is-active's exit code is 0 for active, 3
    otherwise (systemctl(1))."""
    (fleet.root(node) / "run" / "systemd" / "system").mkdir(parents=True, exist_ok=True)
    cases = []
    for unit, (active, enabled) in units.items():
        for name in (unit, unit + ".service"):
            cases.append(f'      {name}) if [ "$1" = is-active ]; then echo {active}; '
                         f'[ {active} = active ] && exit 0 || exit 3; else echo {enabled}; '
                         f'[ {enabled} = enabled ] && exit 0 || exit 1; fi ;;')
    write(fleet, node, "/usr/local/bin/systemctl", _SYSTEMCTL.replace("@@CASES@@", "\n".join(cases)), 0o755)


def sysctl(fleet, node: str, values: dict[str, str]) -> None:
    for key, v in values.items():
        write(fleet, node, "/proc/sys/" + key.replace(".", "/"), f"{v}\n")
    write(fleet, node, "/usr/local/sbin/sysctl", _SYSCTL, 0o755)


def tool(fleet, node: str, name: str, stdout: str, rc: int = 0) -> None:
    """``/usr/local/bin/<name>`` printing ``stdout`` (kept in a data file) and exiting ``rc``."""
    data = write(fleet, node, f"/usr/local/share/site-tests/{name}.out", stdout)
    write(fleet, node, f"/usr/local/bin/{name}",
          f"#!/bin/sh\ncat /{data.relative_to(fleet.root(node))}\nexit {rc}\n", 0o755)
