"""Start and stop a simulated fleet that outlives this command (``make fleet N=4``, ``make clean``).

    .venv/bin/python -m tools.fleet.cli start [--nodes 4] [--out fleet]
    .venv/bin/python -m tools.fleet.cli stop [--out fleet]

``start`` builds ``--nodes`` simulated nodes (tools/fleet/profiles: a healthy H100 node, then one
fault each in ``MENU`` order, then more healthy copies), serves them with real OpenSSH sshd on
loopback addresses (the sshd daemons keep running after this command exits) and writes, under
``--out``:

    inventory.yml   Ansible YAML inventory: ansible_host/port/user, the client key, each node's spec
    known_hosts     one line per node (its address and host key)
    fleet.json      what ``stop`` needs: the fleet's work directory (``/srv/nodegate-fleet/<id>``)

``stop`` stops the sshd daemons (their pid files), kills what still runs inside a node root,
unmounts and removes the work directory, and removes ``--out``. Needs root, openssh-server,
busybox-static and dash (``tools.fleet.sshd_available``); exit 2 with the reason otherwise.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# `python tools/fleet/cli.py` as well as `-m tools.fleet.cli`
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tools.fleet import Fleet, sshd_available  # noqa: E402
from tools.fleet.sshd import SshdGroup  # noqa: E402

#: the nodes of a fleet of N, in order: a healthy node first, then faults an operator meets
MENU = ("h100-535-healthy", "pcie-x8-busy", "row-remap-failure", "persistenced-inactive", "ib-port-down",
        "nvswitch-missing", "driver-library-mismatch", "aer-fatal-upstream")
HEALTHY = MENU[0]
MAX_NODES = 64


def plan(n: int) -> list[tuple[str, str]]:
    """(node name, profile) for a fleet of ``n``: MENU's first ``n``, then healthy copies."""
    out = [(p, p) for p in MENU[:n]]
    out += [(f"{HEALTHY}-{i:02d}", HEALTHY) for i in range(1, n - len(out) + 1)]
    return out


def start(n: int, out: Path) -> int:
    why = sshd_available()
    if why:
        print(f"make fleet needs the simulated fleet's tools: {why}\n"
              "install: apt-get install openssh-server openssh-client busybox-static dash (as root)", file=sys.stderr)
        return 2
    if not 1 <= n <= MAX_NODES:
        print(f"N must be 1..{MAX_NODES} (got {n})", file=sys.stderr)
        return 2
    if (out / "fleet.json").exists():
        print(f"a fleet is already running ({out}/fleet.json): `make clean` (or `python -m tools.fleet.cli stop "
              f"--out {out}`) stops it first", file=sys.stderr)
        return 2
    fleet = Fleet()
    fleet.persistent = True   # outlives this command: tools/reaper.py leaves it unless --all (make clean)
    for name, prof in plan(n):
        fleet.add(prof, name)
    fleet.start()
    out.mkdir(parents=True, exist_ok=True)
    (out / "fleet.json").write_text(json.dumps({"workdir": str(fleet.workdir), "mounted": fleet.mounted,
                                                "nodes": {k: v.address for k, v in fleet.nodes.items()}}, indent=1))
    shutil.copyfile(fleet.inventory_path, out / "inventory.yml")
    shutil.copyfile(fleet.known_hosts_path, out / "known_hosts")
    print(f"simulated fleet of {n} node(s) running (sshd on 127.x loopback, work directory {fleet.workdir}):")
    for name, node in fleet.nodes.items():
        print(f"  {name:<28} {node.address}  ({node.profile.data.get('description', '').split('.')[0][:70]})")
    print(f"inventory: {out}/inventory.yml   known_hosts: {out}/known_hosts\n"
          f"run nodegate over SSH:\n"
          f"  .venv/bin/nodegate --inventory {out}/inventory.yml --known-hosts {out}/known_hosts "
          f"--reports-dir reports/fleet\n"
          f"stop it: make clean (or make fleet-stop)")
    return 0


def stop(out: Path) -> int:
    meta = out / "fleet.json"
    if not meta.exists():
        print(f"no fleet recorded under {out}", file=sys.stderr)
        shutil.rmtree(out, ignore_errors=True)
        return 0
    info = json.loads(meta.read_text())
    wd = Path(info["workdir"])
    fleet = Fleet(workdir=wd)
    fleet.mounted = bool(info.get("mounted"))
    sshd_dir = wd / "sshd"
    # sshd writes sshd-<g>.pid: the groups are rebuilt from them (SshdGroup.stop reads the file)
    for pid in sorted(sshd_dir.glob("sshd-*.pid")) if sshd_dir.is_dir() else ():
        idx = pid.stem.split("-", 1)[1]
        if idx.isdigit():
            fleet.groups.append(SshdGroup(int(idx), sshd_dir))
    fleet.stop()
    shutil.rmtree(out, ignore_errors=True)
    print(f"simulated fleet stopped; {wd} removed")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("start", "stop"))
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("fleet"))
    a = ap.parse_args(argv)
    return start(a.nodes, a.out) if a.command == "start" else stop(a.out)


if __name__ == "__main__":
    sys.exit(main())
