"""nodegate's inventory resolution compared with ansible-core's own command-line tools.

For each case (an inventory under data/ and a ``--limit`` pattern) the reference is what
ansible-core's CLIs, run as subprocesses, say:

- host list and order: ``ansible -i INV all --limit PATTERN --list-hosts`` (what ``--limit``
  means to ansible and ansible-playbook: the host order of ``all``), and the same set of hosts as
  ``ansible -i INV PATTERN --list-hosts``;
- each host's address, port, user, key file, password presence and connection: ``ansible -i INV
  all -m raw -a true`` with ansible-core's own ssh/paramiko_ssh/local connection plugins, whose
  ``exec_command`` reports the options Ansible's TaskExecutor set on them instead of connecting
  (ansible_plugins/connection/; no packet leaves the machine);
- the ``nodegate:`` spec: ``ansible -i INV all -m debug -a var=nodegate`` with Ansible's
  ``hash_behaviour=merge`` (DEFAULT_HASH_BEHAVIOUR), which is the deep merge nodegate documents
  for this one variable, computed by Ansible from the same sources, templated;
- both tools' outputs go to a tree callback directory (``ANSIBLE_CALLBACK_TREE_DIR``), one JSON
  file per host.

``compare(case, resolver)`` returns the mismatches ("" list when equal); ``resolver`` is
``new_resolver`` (nodegate.inventory) or, for the before/after table, ``old_resolver`` (the
hand-written resolver that main had, loaded from a file). Run ``python -m tests.inventory.compat
[OLD_INVENTORY_PY]`` for the table. Both sides run with one PYTHONHASHSEED (see ``_env``).

The ``ansible`` commands run through a fork server (ansible_forks.py: ansible-core imported once,
one forked child per command, ~4.7x less CPU than a process each); NODEGATE_COMPAT_PLAIN=1 runs
each as its own process, and test_compat.py checks that both answer alike.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PLUGINS = HERE / "ansible_plugins" / "connection"
BIN = Path(sys.executable).parent
FIELDS = ("address", "port", "user", "key_file", "password_set", "connection")
#: ansible-core's connection plugin names -> nodegate's transports
TRANSPORT = {"ssh": "ssh", "paramiko_ssh": "paramiko", "local": "local"}


@dataclass(frozen=True)
class Case:
    inventory: str            # path under data/; several sources joined by "+" (ansible -i A -i B)
    pattern: str              # --limit
    refused: tuple[str, ...] = ()   # hosts nodegate refuses on purpose (exit 2, documented)

    @property
    def id(self) -> str:
        return f"{'+'.join(p.split('/')[0] for p in self.inventory.split('+'))}:{self.pattern}"


def paths(inventory: str) -> list[str]:
    """The sources of a case's inventory, in order ("a+b": ``ansible -i a -i b``)."""
    return [str(DATA / p) for p in inventory.split("+")]


def _i(inventory: str) -> list[str]:
    return [a for p in paths(inventory) for a in ("-i", p)]


P = "precedence/hosts.yml"
I = "ini/hosts.ini"
D = "directory"
R = "ranges/hosts.yml"
A = "aliases/hosts.yml"
V = "ipv6/hosts.yml"
#: two sources merged (a DeepOps-like shared layout with a password for every host, and the
#: site's own), in both orders: ansible-core's merge decides hosts, variables and spec
M = "multi/common/hosts.ini+multi/site/hosts.yml"
MR = "multi/site/hosts.yml+multi/common/hosts.ini"
LIMIT_FILE = f"@{DATA / 'precedence' / 'limit.txt'}"

CASES = [
    Case(P, "all"), Case(P, "rack1"), Case(P, "h200"), Case(P, "rack1:rack2"), Case(P, "rack1,zeta"),
    Case(P, "site:&h200"), Case(P, "site:!h200"), Case(P, "~gpu00[1-2]"), Case(P, "gpu00*"),
    Case(P, "h200[0]"), Case(P, "site[1:3]"), Case(P, "site[-1]"), Case(P, LIMIT_FILE),
    Case(P, "all:!login01"), Case(P, "gpu00[1-3]"), Case(P, "zeta:&rack2"), Case(P, "!h200"),
    Case(P, "h200:!~gpu00[1-2]"), Case(P, "rack1,~gpu00[4-5]"), Case(P, "nope"),
    Case(I, "all"), Case(I, "h100"), Case(I, "gpus:!h200"), Case(I, "gpu1*"), Case(I, "rack2[0:1]"),
    Case(I, "~gpu1[0-2]"), Case(I, "gpu[01:02]"),
    Case(D, "all"), Case(D, "rack1"), Case(D, "rack2:storage"), Case(D, "nfs01"), Case(D, "rack1:&all"),
    Case(R, "h200"), Case(R, "gpu01*"), Case(R, "h200[15:]"), Case(R, "~^gpu0(0[5-9]|1)"),
    Case(R, "cpu,bmc2"), Case(R, "login.example.org"), Case(R, "h100-0*:&h100"),
    Case(A, "ssh_aliases"), Case(A, "paramiko_aliases"), Case(A, "jinja"), Case(A, "fqcn"),
    Case(A, "a0*:!a05"), Case(A, "ssh_password"),
    Case(V, "all", refused=("fd00:10::3",)), Case(V, "v6"), Case(V, "v6a,v6e"), Case(V, "v6:!v6b"),
    Case(M, "all"), Case(M, "slurm-node"), Case(M, "slurm-cluster:!h200"), Case(M, "h200:&slurm-node"),
    Case(M, "kube-master,gpu04"), Case(MR, "all"), Case(MR, "slurm-node"),
    Case("multi/common/hosts.ini", "slurm-node"),
]


# ------------------------------------------------------------------ the reference: ansible-core
def _env(tree: str, **extra) -> dict:
    from nodegate.ansible_core import ANSIBLE_SETTINGS
    env = dict(os.environ)
    for k in ANSIBLE_SETTINGS:   # nodegate sets them in its own process: the reference is plain Ansible
        env.pop(k, None)
    env.update(ANSIBLE_CONNECTION_PLUGINS=str(PLUGINS), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_CALLBACKS_ENABLED="ansible.builtin.tree", ANSIBLE_CALLBACK_TREE_DIR=tree,
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_DEPRECATION_WARNINGS="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORKS="2",
               # ansible-core's host order through nested groups follows Python's string hashing
               # (Group._walk_relationship iterates a set): one seed for every process compared
               PYTHONHASHSEED="0", **extra)
    return env


#: the variables a command may set on top of the fork server's environment (read by ansible-core
#: when the command runs, not at import); a command with any other difference runs as a process
FORK_VARS = ("ANSIBLE_CALLBACK_TREE_DIR",)
_servers: "queue.SimpleQueue" = queue.SimpleQueue()
#: NODEGATE_COMPAT_PLAIN=1: every command as its own process (the fork server's own check)
PLAIN = os.environ.get("NODEGATE_COMPAT_PLAIN") == "1"


#: ansible-core's CLI refusing to start on this machine (its worker queues need a writable /dev/shm,
#: absent for a non-root user in some chroots and containers): the reference cannot run, so the
#: comparison is skipped naming it, never failed
CANNOT_RUN = "Unable to use multiprocessing"


def _run(argv: list[str], env: dict, plain: bool = PLAIN) -> subprocess.CompletedProcess:
    """``argv`` with ``env``: the ``ansible`` CLI through a fork server (ansible_forks.py: its
    start-up paid once) when only FORK_VARS differ from the server's environment, else a process.
    Skips the test when ansible-core's CLI cannot run here (``CANNOT_RUN``)."""
    r = _run_cli(argv, env, plain)
    if r.returncode != 0 and CANNOT_RUN in (r.stderr or "") + (r.stdout or ""):
        import pytest
        why = next((ln for ln in ((r.stderr or "") + (r.stdout or "")).splitlines() if CANNOT_RUN in ln), CANNOT_RUN)
        pytest.skip(f"ansible-core's CLI cannot run on this machine: {why.strip()}")
    return r


def _run_cli(argv: list[str], env: dict, plain: bool) -> subprocess.CompletedProcess:
    base = _env("")
    extra = {k: v for k, v in env.items() if base.get(k) != v}
    if plain or argv[0] != str(BIN / "ansible") or set(extra) - set(FORK_VARS) or set(base) - set(env):
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=str(HERE))
    from .ansible_forks import Forks
    try:
        server = _servers.get_nowait()
    except queue.Empty:
        server = Forks(base, cwd=str(HERE))
        atexit.register(server.close)
    try:
        return server.run(argv[1:], extra)
    finally:
        _servers.put(server)


@lru_cache(maxsize=None)
def ansible_hosts(inventory: str, pattern: str, as_limit: bool = True) -> tuple[tuple[str, ...] | None, str]:
    """(hosts in Ansible's order, or None when Ansible refuses; its message). ``as_limit``:
    ``ansible all --limit PATTERN``, else ``ansible PATTERN``."""
    argv = ["all", "--limit", pattern] if as_limit else [pattern]
    with tempfile.TemporaryDirectory() as tree:
        r = _run([str(BIN / "ansible"), *_i(inventory), *argv, "--list-hosts"], _env(tree))
    if r.returncode != 0:
        return None, (r.stderr or r.stdout).strip()
    lines = r.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip().startswith("hosts ("))
    return tuple(ln.strip() for ln in lines[start + 1:] if ln.strip()), r.stderr.strip()


def _tree(argv: list[str], **extra) -> dict[str, dict]:
    with tempfile.TemporaryDirectory() as tree:
        r = _run(argv, _env(tree, **extra))
        out = {}
        for f in Path(tree).iterdir():
            out[f.name] = json.loads(f.read_text())
    if not out:
        raise RuntimeError(f"{' '.join(argv)}: no result (exit {r.returncode}): {r.stderr[-2000:]}")
    return out


@lru_cache(maxsize=None)
def ansible_connections(inventory: str) -> dict[str, dict]:
    """Host -> the connection options Ansible resolved (FIELDS), or {"error": msg}."""
    res = _tree([str(BIN / "ansible"), *_i(inventory), "all", "-m", "raw", "-a", "true"])
    out = {}
    for host, r in res.items():
        if r.get("rc") != 0 or not r.get("stdout"):
            out[host] = {"error": r.get("msg") or r.get("stderr") or "failed"}
            continue
        v = json.loads(r["stdout"])
        v["connection"] = TRANSPORT.get(v["connection"], v["connection"])
        if v.get("key_file"):
            v["key_file"] = os.path.expanduser(v["key_file"])
        out[host] = v
    return out


@lru_cache(maxsize=None)
def ansible_specs(inventory: str) -> dict[str, object]:
    """Host -> the templated ``nodegate`` variable under Ansible's hash_behaviour=merge."""
    res = _tree([str(BIN / "ansible"), *_i(inventory), "all", "-m", "debug",
                 "-a", "msg={{ nodegate | default({}) }}"], ANSIBLE_HASH_BEHAVIOUR="merge")
    return {h: r.get("msg") for h, r in res.items()}


@lru_cache(maxsize=None)
def order_is_reproducible(inventory: str) -> bool:
    """Whether ansible-core gives this inventory's hosts in one order from run to run.

    ``Group.get_hosts`` walks the groups breadth-first (``Group._walk_relationship``) and, below
    the first level, iterates a *set* of groups; ansible-core's Group defines no ``__hash__``, so
    that order follows object addresses: with two or more groups that have child groups on one
    level, ``ansible all --list-hosts`` itself prints different orders from run to run (seen with
    data/ini/hosts.ini: gpus -> rack1, rack2). There only the set of hosts can be compared."""
    from nodegate.inventory import load_inventory
    im = load_inventory(paths(inventory))._im
    level = list(im.groups["all"].child_groups)
    seen = set()
    while level:
        if sum(1 for g in level if g.child_groups) >= 2:
            return False
        seen.update(g.name for g in level)
        level = [k for g in level for k in g.child_groups if k.name not in seen]
    return True


def warm(cases=CASES, workers: int = 2) -> None:
    """Run every reference subprocess once (two at a time: the machine has two cores)."""
    with ThreadPoolExecutor(workers) as ex:
        jobs = [ex.submit(ansible_hosts, c.inventory, c.pattern, lim) for c in cases for lim in (True, False)]
        invs = sorted({c.inventory for c in cases})
        jobs += [ex.submit(ansible_connections, i) for i in invs] + [ex.submit(ansible_specs, i) for i in invs]
        for j in jobs:
            j.result()


# ------------------------------------------------------------------ resolvers under test
@dataclass
class Resolved:
    hosts: list[str] | None                  # None: refused
    why: str = ""
    conn: dict[str, dict] = field(default_factory=dict)
    spec: dict[str, object] = field(default_factory=dict)


def new_resolver(inventory: str, pattern: str) -> Resolved:
    from nodegate.errors import SpecError
    from nodegate.inventory import load_inventory
    try:
        inv = load_inventory(paths(inventory))
        hosts = inv.select(pattern)
    except SpecError as e:
        return Resolved(None, str(e))
    # connection: the ansible-core plugin nodegate resolved (compared with Ansible's); transport:
    # what nodegate connects with (checked against the documented mapping in compare)
    return Resolved([h.name for h in hosts],
                    conn={h.name: {"address": h.address, "port": h.port, "user": h.user, "key_file": h.key_file,
                                   "password_set": h.password is not None,
                                   "connection": TRANSPORT.get(h.ansible_connection, h.ansible_connection),
                                   "transport": h.connection}
                          for h in hosts},
                    spec={h.name: h.spec_raw for h in hosts})


def old_resolver(module_path: str):
    """The hand-written resolver of main before this change (nodegate/inventory.py then)."""
    import importlib.util
    import urllib.parse
    spec = importlib.util.spec_from_file_location("nodegate._old_inventory", module_path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)

    def resolve(inventory: str, pattern: str) -> Resolved:
        try:
            inv = mod.load_inventory(paths(inventory)[0])
            hosts = inv.select(pattern)
        except Exception as e:  # noqa: BLE001 - SpecError, or a crash: both a refusal here
            return Resolved(None, f"{type(e).__name__}: {e}")
        conn, spec = {}, {}
        for h in hosts:
            try:
                url = h.url()
                if url.startswith("local"):
                    conn[h.name] = {"connection": "local"}
                else:
                    p = urllib.parse.urlsplit(url)
                    q = urllib.parse.parse_qs(p.query)
                    conn[h.name] = {"address": p.hostname, "port": p.port,
                                    "user": urllib.parse.unquote(p.username) if p.username else None,
                                    "key_file": q.get("ssh_identity_file", [None])[0],
                                    "password_set": p.password is not None, "connection": p.scheme}
            except Exception as e:  # noqa: BLE001 - an unusable host: a difference too
                conn[h.name] = {"error": f"{type(e).__name__}: {e}"}
            spec[h.name] = h.spec_raw
        return Resolved([h.name for h in hosts], conn=conn, spec=spec)
    return resolve


def in_subprocess(old: str | None = None):
    """A resolver that runs ``new_resolver`` (or ``old_resolver(old)``) in a child process with
    the reference's PYTHONHASHSEED, all patterns of one inventory in one process."""
    cache: dict[str, dict] = {}

    def resolve(inventory: str, pattern: str) -> Resolved:
        if inventory not in cache:
            pats = [c.pattern for c in CASES if c.inventory == inventory]
            if pattern not in pats:
                pats.append(pattern)
            argv = [sys.executable, "-m", "tests.inventory.compat", "--resolve", inventory, *pats]
            if old:
                argv[4:4] = ["--old", old]
            env = dict(os.environ, PYTHONHASHSEED="0")
            r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=str(HERE.parents[1]))
            if r.returncode != 0:
                raise RuntimeError(f"resolver failed: {r.stderr[-3000:]}")
            cache[inventory] = json.loads(r.stdout.splitlines()[-1])
        d = cache[inventory].get(pattern)
        if d is None:
            cache.pop(inventory)
            return resolve(inventory, pattern)
        return Resolved(**d)
    return resolve


def _resolve_main(argv: list[str]) -> int:
    old = None
    if argv[0] == "--old":
        old, argv = argv[1], argv[2:]
    resolve = old_resolver(old) if old else new_resolver
    inventory, pats = argv[0], argv[1:]
    out = {}
    for p in pats:
        r = resolve(inventory, p)
        out[p] = {"hosts": r.hosts, "why": r.why, "conn": r.conn, "spec": r.spec}
    print(json.dumps(out, default=str))
    return 0


# ------------------------------------------------------------------ the comparison
def compare(case: Case, resolve) -> list[str]:
    """Every difference between ``resolve`` and ansible-core for ``case`` ([] when none)."""
    want, why = ansible_hosts(case.inventory, case.pattern)
    got = resolve(case.inventory, case.pattern)
    if not want or (case.refused and any(h in want for h in case.refused)):
        if got.hosts is None:
            # both refuse, or Ansible matches no host (a warning; nodegate: exit 2 naming the
            # pattern), or nodegate refuses a host it documents it cannot use
            return []
        return [f"expected a refusal ({why or 'unsupported host ' + ', '.join(case.refused)}), "
                f"nodegate selected {got.hosts}"]
    if got.hosts is None:
        return [f"nodegate refused: {got.why}"]
    out = []
    as_pattern = ansible_hosts(case.inventory, case.pattern, False)[0]
    if not case.pattern.startswith("@") and as_pattern is not None and sorted(as_pattern) != sorted(want):
        out.append(f"ansible itself: {case.pattern} as --limit {list(want)}, as a pattern {list(as_pattern)}")
    if not order_is_reproducible(case.inventory):
        if sorted(got.hosts) != sorted(want):
            out.append(f"hosts: ansible {sorted(want)} nodegate {sorted(got.hosts)} (as sets)")
    elif got.hosts != list(want):
        out.append(f"hosts: ansible {list(want)} nodegate {got.hosts}")
    conns, specs = ansible_connections(case.inventory), ansible_specs(case.inventory)
    for h in want:
        if h not in got.conn:
            continue
        a, n = conns.get(h, {}), got.conn[h]
        for f in FIELDS:
            if f == "connection" or a.get("connection") != "local":
                if a.get(f) != n.get(f):
                    out.append(f"{h}.{f}: ansible {a.get(f)!r} nodegate {n.get(f)!r}")
        # nodegate's transport: Ansible's plugin mapped, a password login with ssh (Ansible: sshpass)
        # through nodegate's paramiko transport
        want_t = "paramiko" if a.get("connection") == "ssh" and a.get("password_set") else a.get("connection")
        if "error" not in a and n.get("transport", n.get("connection")) != want_t:
            out.append(f"{h}.transport: expected {want_t!r} nodegate {n.get('transport')!r}")
        if specs.get(h) != got.spec.get(h):
            out.append(f"{h}.nodegate: ansible {specs.get(h)!r} nodegate {got.spec.get(h)!r}")
    return out


def table(resolve, cases=CASES) -> tuple[list[tuple[Case, list[str]]], dict]:
    """Per case its mismatches, and totals: cases, cases with a mismatch, hosts compared, hosts
    with a different connection value."""
    warm(cases)
    rows = [(c, compare(c, resolve)) for c in cases]
    bad_hosts = {(c.inventory, m.split(".")[0]) for c, ms in rows for m in ms if "." in m.split(":")[0]}
    bad_values = {(c.inventory, m.split(".")[0]) for c, ms in rows for m in ms
                  if m.split(":")[0].split(".")[-1] in FIELDS[:-1]}
    hosts = {(c.inventory, h) for c in cases for h in (ansible_hosts(c.inventory, c.pattern)[0] or ())}
    totals = {"cases": len(rows), "cases_mismatched": sum(1 for _, m in rows if m),
              "inventories": len({c.inventory for c in cases}), "hosts": len(hosts),
              "hosts_with_a_different_value": len(bad_hosts),
              "hosts_with_a_different_address_port_user_key_or_password": len(bad_values)}
    return rows, totals


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--resolve":
        return _resolve_main(argv[1:])
    resolve = in_subprocess(argv[0] if argv else None)
    rows, totals = table(resolve)
    for c, ms in rows:
        print(f"{'MISMATCH' if ms else 'ok':9} {c.id}" + "".join(f"\n            {m}" for m in ms))
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
