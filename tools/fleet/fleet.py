"""Fleet: simulated GPU nodes as chroot roots behind real OpenSSH sshd on loopback.

Usage::

    with Fleet(load_profiles().values()) as fleet:
        fleet.inventory_path, fleet.known_hosts_path, fleet.expected()

Files under ``workdir`` (default ``/srv/nodegate-fleet/<run id>``; every component root-owned,
0755, as sshd's ChrootDirectory requires):

    nodes/<node>/            the node's root (chroot)
    shared/                  dash, busybox, libc copied once; hardlinked into every root
    sshd/sshd-<g>.{conf,log,pid}, ssh_host_ed25519_key-<g>[.pub]   one sshd per 16 nodes
    keys/client_ed25519[.pub], keys/authorized_keys
    known_hosts              one line per node: "<address> ssh-ed25519 AAAA..."
    inventory.yml            Ansible YAML inventory (all: hosts: ..., vars: nodegate: ...)
    expected.yaml            {test id: outcome} for every node (needs nodegate.checks)

The workdir is a tmpfs mount when ``mount`` works (fast; nothing left on disk), else a plain
directory. Teardown stops every sshd, kills processes still running inside a node root (a hung
shim left behind by a client deadline), unmounts and removes the workdir.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import yaml

from .expect import expand, registry_checks
from .profile import Profile, load_profiles
from .render import NodeRender, render_node
from .rootfs import build_root, compile_shim, prepare_shared
from .sshd import MAX_LISTEN, SshdGroup, count_connections, count_sessions, keygen

DEFAULT_BASE = Path("/srv/nodegate-fleet")
UNREACHABLE_ADDR = "127.0.1.250"


@dataclass
class FleetNode:
    """One inventory host: ``profile`` None for an unreachable host (no sshd behind it)."""

    name: str
    profile: Profile | None
    address: str
    port: int = 22
    root: Path | None = None
    render: NodeRender | None = None

    @property
    def reachable(self) -> bool:
        return self.profile is not None


def node_address(k: int, net: int = 0) -> str:
    """Loopback address of the k-th node of fleet network ``net``: 127.<net>.1.1 ... 127.<net>.1.200,
    then 127.<net>.2.1 ... Each Fleet draws its own ``net`` (2..254) so that fleets started at the
    same time by different tests never share an address; 127.0.1.250 stays closed (unreachable)."""
    return f"127.{net}.{1 + k // 200}.{k % 200 + 1}"


def _listening(addr: str, port: int = 22) -> bool:
    """Whether something already holds ``addr:port`` (another fleet's sshd).

    Asked by binding, as sshd itself does (SO_REUSEADDR), never by connecting: a connect lands in
    the other fleet's sshd log as a ``Connection from`` line, and the tests that count a node's
    connections from that log (tests/site/test_fleet_site.py) then count one too many (CI: 3 for 2
    on the first node of a fleet while another xdist worker drew the same network). Binding port 22
    needs root, as the fleet does; without it, fall back to a connect."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((addr, port))
            return False
        except PermissionError:
            pass
        except OSError:
            return True
    try:
        with socket.create_connection((addr, port), timeout=0.2):
            return True
    except OSError:
        return False


class Fleet:
    """Simulated fleet. ``profiles``: Profiles (or names of tools/fleet/profiles/*.yaml); each
    becomes a node named after the profile. ``spec`` goes to ``all.vars.nodegate`` of the
    inventory (host ``nodegate`` vars from each profile's ``spec:`` override it per key)."""

    def __init__(self, profiles: Iterable[Profile | str] = (), workdir: Path | str | None = None, *,
                 run_id: str | None = None, spec: dict | None = None, user: str = "root", tmpfs: bool = True,
                 passwords: bool = False):
        self.run_id = run_id or time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        self.workdir = Path(workdir) if workdir else DEFAULT_BASE / self.run_id
        self.spec = spec or {}
        self.user = user
        #: sshd takes password logins too (a password of a user of this machine: tools/fleet/sshd.py)
        self.passwords = passwords
        self.nodes: dict[str, FleetNode] = {}
        self.groups: list[SshdGroup] = []
        self.started = False
        self.net = random.randint(2, 254)
        self.tmpfs = tmpfs
        self.mounted = False
        #: outlives the process that started it (``make fleet``): the reaper leaves it unless --all
        self.persistent = False
        self._catalog: dict[str, Profile] | None = None
        for p in profiles:
            self.add(p)

    # ------------------------------------------------------------------ composition
    def _profile(self, p: Profile | str) -> Profile:
        if isinstance(p, Profile):
            return p
        if self._catalog is None:
            self._catalog = load_profiles(include_abstract=True)
        return self._catalog[p]

    def add(self, profile: Profile | str, name: str | None = None) -> str:
        """Add one node (named ``name`` or the profile's name); returns the node name."""
        if self.started:
            raise RuntimeError("add nodes before start()")
        prof = self._profile(profile)
        name = name or prof.name
        if name in self.nodes:
            raise ValueError(f"duplicate node {name}")
        if name != prof.name:
            prof = prof.renamed(name)
        k = sum(1 for n in self.nodes.values() if n.reachable)
        self.nodes[name] = FleetNode(name, prof, node_address(k, self.net))
        return name

    def add_copies(self, profile: Profile | str, n: int, prefix: str | None = None) -> list[str]:
        """Add ``n`` nodes from one profile named ``<prefix>-000`` ... (for 64/256-node fleets)."""
        prof = self._profile(profile)
        prefix = prefix or prof.name
        return [self.add(prof, f"{prefix}-{i:03d}") for i in range(n)]

    def add_unreachable(self, name: str = "unreachable", address: str = UNREACHABLE_ADDR, port: int = 22) -> str:
        """An inventory host nothing listens on: every item of it must come out ERROR."""
        self.nodes[name] = FleetNode(name, None, address, port)
        return name

    # ------------------------------------------------------------------ paths
    @property
    def inventory_path(self) -> Path:
        return self.workdir / "inventory.yml"

    @property
    def known_hosts_path(self) -> Path:
        return self.workdir / "known_hosts"

    @property
    def client_key_path(self) -> Path:
        return self.workdir / "keys" / "client_ed25519"

    @property
    def expected_path(self) -> Path:
        return self.workdir / "expected.yaml"

    def root(self, node: str) -> Path:
        return self.workdir / "nodes" / node

    # ------------------------------------------------------------------ build / start
    def _mkdirs(self) -> None:
        for d in (self.workdir.parent, self.workdir):
            d.mkdir(mode=0o755, parents=True, exist_ok=True)
        if self.tmpfs and not self.mounted:
            # tmpfs: creating ~400 files per node is ~20x faster than on the VM's disk, and
            # teardown leaves nothing behind. Falls back to plain directories without CAP_SYS_ADMIN.
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=4g", "nodegate-fleet",
                                str(self.workdir)], capture_output=True)
            self.mounted = r.returncode == 0
        for d in (self.workdir.parent, self.workdir, self.workdir / "nodes", self.workdir / "sshd",
                  self.workdir / "keys"):
            d.mkdir(mode=0o755, parents=True, exist_ok=True)
            os.chown(d, 0, 0)
            os.chmod(d, 0o755)
        self.write_owner()

    def write_owner(self) -> None:
        """``owner.json``: the process that owns this fleet (pid and its start time, so a reused
        pid is not taken for it) and whether it is meant to outlive that process (``make fleet``):
        tools/reaper.py stops a fleet whose owner is gone (issue 37.9: ``make bench`` ended by
        SIGTERM left 16 sshd daemons and a 4 GB tmpfs behind)."""
        from .owner import proc_start
        (self.workdir / "owner.json").write_text(json.dumps(
            {"pid": os.getpid(), "start": proc_start(os.getpid()), "persistent": self.persistent}))

    def build(self) -> None:
        """Render and write every node root (no sshd)."""
        self._mkdirs()
        shared = prepare_shared(self.workdir / "shared")
        shim_bin = compile_shim(self.workdir / "shared")
        for n in self.nodes.values():
            if not n.reachable:
                continue
            n.render = render_node(n.profile)
            n.root = self.root(n.name)
            if n.root.exists():
                shutil.rmtree(n.root)
            build_root(n.render, n.root, shared, n.profile.data["tools_absent"], shim_bin)

    def start(self) -> "Fleet":
        """Build roots, generate keys, start sshd groups, write known_hosts/inventory/expected."""
        try:
            self.build()
            keys = self.workdir / "keys"
            pub = keygen(self.client_key_path, "nodegate-fleet-client")
            ak = keys / "authorized_keys"
            ak.write_text(pub + "\n")
            os.chmod(ak, 0o600)
            reach = [n for n in self.nodes.values() if n.reachable]
            self._pick_free_net(reach)
            for g in range(0, len(reach), MAX_LISTEN):
                grp = SshdGroup(len(self.groups), self.workdir / "sshd", passwords=self.passwords)
                grp.nodes = {n.name: (n.address, n.root) for n in reach[g:g + MAX_LISTEN]}
                self.groups.append(grp)
            for grp in self.groups:
                grp.write_config(ak)
                grp.start()
            self.started = True
            self.write_known_hosts()
            self.write_inventory()
            self.write_expected()
        except BaseException:
            self.stop()
            raise
        return self

    def _pick_free_net(self, reach: list[FleetNode]) -> None:
        """Re-draw the fleet network while any of its addresses already answers (another fleet)."""
        for _ in range(20):
            if not any(_listening(n.address) for n in reach[:1] + reach[-1:]):
                return
            self.net = random.randint(2, 254)
            for k, n in enumerate(reach):
                n.address = node_address(k, self.net)
        raise RuntimeError("no free loopback network for the fleet")

    def __enter__(self) -> "Fleet":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ outputs
    def host_key(self, node: str) -> str:
        for g in self.groups:
            if node in g.nodes:
                return g.hostkey_pub
        raise KeyError(node)

    def write_known_hosts(self) -> None:
        lines = [f"{n.address} {self.host_key(n.name)}" for n in self.nodes.values() if n.reachable]
        self.known_hosts_path.write_text("\n".join(lines) + "\n")

    def inventory(self) -> dict:
        hosts = {}
        for n in self.nodes.values():
            # nodegate's paramiko transport (an Ansible inventory without ansible_connection
            # means OpenSSH, as for Ansible)
            h = {"ansible_host": n.address, "ansible_port": n.port, "ansible_user": self.user,
                 "ansible_ssh_private_key_file": str(self.client_key_path), "ansible_connection": "paramiko"}
            if n.profile is not None and n.profile.spec:
                h["nodegate"] = n.profile.spec
            hosts[n.name] = h
        inv = {"all": {"hosts": hosts}}
        if self.spec:
            inv["all"]["vars"] = {"nodegate": self.spec}
        return inv

    def write_inventory(self) -> None:
        self.inventory_path.write_text(yaml.safe_dump(self.inventory(), sort_keys=False))

    def expected(self, checks: list[tuple[str, str]] | None = None) -> dict[str, str]:
        """{test id: outcome} over all nodes (unreachable ones: every item "error")."""
        checks = registry_checks() if checks is None else checks
        out: dict[str, str] = {}
        for n in self.nodes.values():
            if n.profile is None:
                prof = Profile(n.name, {"expect": {"*": "error"}, "spec": {}, "gpus": {"count": 1, "missing": []}})
                out.update(expand(prof, n.name, checks, gpu_slots=int((self.spec.get("gpu") or {}).get("count") or 1),
                                  all_outcome="error"))
            else:
                out.update(expand(n.profile, n.name, checks))
        return dict(sorted(out.items()))

    def write_expected(self) -> None:
        try:
            exp = self.expected()
        except ImportError:  # checks not importable: expected outcomes cannot be expanded
            return
        self.expected_path.write_text(yaml.safe_dump(exp, sort_keys=True))

    # ------------------------------------------------------------------ helpers for other tests
    def exec_counts(self) -> dict[str, int]:
        """Exec channels (sessions) opened per node since start, from the sshd logs."""
        by_root = count_sessions([g.log for g in self.groups])
        return {n.name: by_root.get(str(n.root), 0) for n in self.nodes.values() if n.reachable}

    def connection_counts(self) -> dict[str, int]:
        """TCP connections sshd accepted per node since start, from the sshd logs (the fleet's own
        start-up check that each address listens is one of them: compare before and after)."""
        by_addr = count_connections([g.log for g in self.groups])
        return {n.name: by_addr.get(n.address, 0) for n in self.nodes.values() if n.reachable}

    def settle_logs(self, timeout_s: float = 120.0) -> None:
        """Wait until sshd has logged every node's start-up check connection (its forked child
        writes the line, late on a busy machine): counts taken after this only grow by what
        came later. Returns as soon as every line is there; RuntimeError when one is still
        missing after ``timeout_s`` (counting then would charge that line to the next run: a
        15 s wait that returned silently counted 3 connections for 2 under a load of 6)."""
        deadline = time.monotonic() + timeout_s
        while True:
            late = sorted(n for n, v in self.connection_counts().items() if v < 1)
            if not late:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(f"sshd logged no start-up connection for {', '.join(late[:5])} "
                                   f"within {timeout_s:g} s")
            time.sleep(0.05)

    def rekey(self, node: str) -> str:
        """Give ``node`` a new host key (known_hosts is NOT updated: the client must refuse it).
        The node moves to an sshd of its own; returns the new public key."""
        n = self.nodes[node]
        old = next(g for g in self.groups if node in g.nodes)
        old.stop()
        del old.nodes[node]
        if old.nodes:
            old.write_config(self.workdir / "keys" / "authorized_keys")
            old.start()
        grp = SshdGroup(len(self.groups), self.workdir / "sshd", {node: (n.address, n.root)})
        self.groups.append(grp)
        grp.write_config(self.workdir / "keys" / "authorized_keys")
        grp.start()
        return grp.hostkey_pub

    def ssh_client(self, node: str, *, timeout: float = 10.0):
        """A connected paramiko SSHClient for ``node`` verifying the host key against known_hosts."""
        import paramiko
        n = self.nodes[node]
        c = paramiko.SSHClient()
        c.load_host_keys(str(self.known_hosts_path))
        c.set_missing_host_key_policy(paramiko.RejectPolicy())
        c.connect(n.address, n.port, username=self.user, key_filename=str(self.client_key_path),
                  timeout=timeout, allow_agent=False, look_for_keys=False, banner_timeout=timeout,
                  auth_timeout=timeout)
        return c

    # ------------------------------------------------------------------ teardown
    def _kill_chrooted(self) -> None:
        """Kill processes whose root is inside this fleet (e.g. a hung nvidia-smi shim)."""
        base = str(self.workdir.resolve()) + "/"
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                r = os.readlink(p / "root")
            except OSError:
                continue
            if (r + "/").startswith(base):
                try:
                    os.kill(int(p.name), signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop(self, *, keep: bool = False) -> None:
        """Stop sshd groups, kill leftovers, remove the workdir (unless ``keep``)."""
        for g in self.groups:
            g.stop()
        if self.workdir.exists():
            self._kill_chrooted()
        self.started = False
        if keep or not self.workdir.exists():
            return
        if self.mounted:
            r = subprocess.run(["umount", str(self.workdir)], capture_output=True)
            if r.returncode != 0:  # something still holds it: detach now, freed when released
                subprocess.run(["umount", "-l", str(self.workdir)], capture_output=True)
            self.mounted = False
        shutil.rmtree(self.workdir, ignore_errors=True)
