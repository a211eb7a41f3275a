"""Site tests against the simulated fleet behind a real sshd (tools/fleet): host on every node,
one connection per node for all its site commands (counted from sshd's log), host-key refusals
as the probe's, command deadlines, OpenSSH, declared evidence in the probe's exec, --replay with
the network unavailable, examples/site end to end, and a DeepOps-like inventory of two sources
with password logins (Ansible's default ssh connection) running site files of the real shapes
(testinfra_hosts as testinfra and molecule write it, one test name in two files)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from nodegate.site.connection import SiteConnection
from nodegate.transport import HostKeyPolicy, TransportError
from tools.fleet import Fleet, sshd_available

from . import nodes
from .runner import ROOT, run_pytest

NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

PROFILE = "h200-580-open-healthy"
NODES = ("site-a", "site-b", "site-c")
SITE = textwrap.dedent('''
    def test_node_name(host, nodegate_node):
        assert host.check_output("uname -n") == nodegate_node.name

    def test_ten_commands(host):
        for i in range(10):
            assert host.check_output("echo %s", str(i)) == str(i)

    def test_files_and_users(host):
        assert host.file("/etc/hostname").exists
        assert host.user("root").uid == 0

    def test_declared_evidence_only(site_evidence):
        assert site_evidence["kernel"].text().startswith("6.8.0")
''')
HANG = textwrap.dedent('''
    import pytest

    @pytest.mark.nodegate_check(timeout=2)
    def test_never_returns(host):
        host.run("sleep 600")

    def test_after_the_cut(host):
        assert host.check_output("uname -n")
''')


def _inventory(fleet: Fleet, path: Path, per_host: dict | None = None) -> Path:
    inv = fleet.inventory()
    for name, extra in (per_host or {}).items():
        inv["all"]["hosts"][name].update(extra)
    path.write_text(yaml.safe_dump(inv, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def fleet():
    f = Fleet(spec={"site_evidence": {"kernel": "uname -r"}})
    for n in NODES:
        f.add(PROFILE, n)
    with f:
        yield f


@pytest.fixture(scope="module")
def site_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("sitefile")
    (d / "test_site.py").write_text(SITE)
    (d / "test_hang.py").write_text(HANG)
    return d


def _counted(fleet, fn):
    fleet.settle_logs()
    c0, s0 = fleet.connection_counts(), fleet.exec_counts()
    r = fn()
    c1, s1 = fleet.connection_counts(), fleet.exec_counts()
    return r, {n: c1[n] - c0.get(n, 0) for n in c1}, {n: s1[n] - s0.get(n, 0) for n in s1}


@pytest.fixture(scope="module")
def live(fleet, site_file, tmp_path_factory):
    t = tmp_path_factory.mktemp("live")
    run, conns, execs = _counted(fleet, lambda: run_pytest(
        ["suites", str(site_file / "test_site.py"), "--inventory", str(fleet.inventory_path), "--known-hosts",
         str(fleet.known_hosts_path), "--command-timeout", "10"], t / "reports"))
    return run, conns, execs


def test_host_runs_on_every_node_and_uname_n_is_its_own_name(live):
    run, _, _ = live
    got = run.outcomes()
    for n in NODES:
        assert {k: v for k, v in got.items() if k.endswith(f"[{n}]") and k.split("[")[0] in (
            "test_node_name", "test_ten_commands", "test_files_and_users", "test_declared_evidence_only")} == {
            f"test_node_name[{n}]": "pass", f"test_ten_commands[{n}]": "pass",
            f"test_files_and_users[{n}]": "pass", f"test_declared_evidence_only[{n}]": "pass"}, run.output[-3000:]
    assert {v for k, v in got.items() if not k.startswith(("test_node_name", "test_ten", "test_files", "test_decl"))} \
        <= {"pass", "skip"}


def test_two_connections_per_node_in_all_and_one_site_session_for_every_command(live):
    _, conns, execs = live
    # the probe's connection and the site commands' one: never one per command (16 commands here)
    assert conns == {n: 2 for n in NODES}
    # the probe's exec and the site shell's session
    assert execs == {n: 2 for n in NODES}


def test_every_site_command_is_in_the_bundle(live):
    import json
    run, _, _ = live
    meta = json.loads((run.out / "bundles" / "site-b" / "meta.json").read_text())
    cmds = [c["command"] for c in meta["site"]["commands"]]
    assert cmds[:11] == ["uname -n"] + [f"echo {i}" for i in range(10)]
    assert (run.out / "bundles" / "site-b" / "site.cmd.0.out").read_text() == "site-b\n"
    assert meta["items"]["site_evidence.kernel"]["rc"] == 0


def test_replay_of_the_runs_bundles_gives_identical_outcomes_without_network(fleet, live, site_file, tmp_path):
    run, _, _ = live
    r = run_pytest(["suites", str(site_file / "test_site.py"), "--replay", str(run.out / "bundles")], tmp_path / "r",
                   nonet=True)
    assert r.outcomes() == run.outcomes(), r.output[-3000:]


def test_declared_evidence_costs_no_exec_of_its_own(fleet, site_file, tmp_path):
    r, conns, execs = _counted(fleet, lambda: run_pytest(
        [str(site_file / "test_site.py"), "-k", "declared", "--inventory", str(fleet.inventory_path),
         "--known-hosts", str(fleet.known_hosts_path)], tmp_path / "r"))
    assert r.outcomes() == {f"test_declared_evidence_only[{n}]": "pass" for n in NODES}
    assert conns == {n: 1 for n in NODES} and execs == {n: 1 for n in NODES}


def test_a_command_that_never_returns_is_cut_at_its_deadline_and_is_error(fleet, site_file, tmp_path):
    r, conns, execs = _counted(fleet, lambda: run_pytest(
        [str(site_file / "test_hang.py"), "--inventory", str(fleet.inventory_path), "--limit", "site-a",
         "--known-hosts", str(fleet.known_hosts_path)], tmp_path / "r"))
    assert r.outcomes() == {"test_never_returns[site-a]": "error", "test_after_the_cut[site-a]": "pass"}
    msg = ("[SITE-NEVER-RETURNS] could not evaluate: 'sleep 600': timed out (the "
           "command deadline was reached before it finished)")
    # stopped by the node's `timeout` at 2 s, or (busybox's timeout leaves the shell's child
    # holding the output) cut by the controller 5 s later
    assert r.message("test_never_returns[site-a]") in (msg, msg + ": cut by the controller after 7s")
    import json
    meta = json.loads((tmp_path / "r" / "bundles" / "site-a" / "meta.json").read_text())
    key = next(c["key"] for c in meta["site"]["commands"] if c["command"] == "sleep 600")
    took = meta["items"][key]["duration_s"]   # the recording's (nodegate.site.recording)
    assert 2.0 <= took < 60     # node-side 2 s, the controller's cut 5 s later (a bound: the sleep is 600 s)
    # the cut session is replaced on the same connection
    assert conns["site-a"] == 2 and execs["site-a"] == 3


def test_openssh_connection_carries_the_site_shell_too(fleet, site_file, tmp_path):
    inv = _inventory(fleet, tmp_path / "inv.yml", {"site-c": {"ansible_connection": "ssh"}})
    r, conns, execs = _counted(fleet, lambda: run_pytest(
        [str(site_file / "test_site.py"), "--inventory", str(inv), "--limit", "site-c", "--known-hosts",
         str(fleet.known_hosts_path)], tmp_path / "r"))
    assert set(r.outcomes().values()) == {"pass"}, r.output[-3000:]
    assert conns["site-c"] == 2 and execs["site-c"] == 2


def test_accept_new_host_keys_records_the_key_once_for_probe_and_site(fleet, site_file, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    r, conns, _ = _counted(fleet, lambda: run_pytest(
        [str(site_file / "test_site.py"), "-k", "node_name", "--inventory", str(fleet.inventory_path), "--limit",
         "site-a", "--known-hosts", str(kh), "--accept-new-host-keys"], tmp_path / "r"))
    assert r.outcomes() == {"test_node_name[site-a]": "pass"}, r.output[-3000:]
    assert len(kh.read_text().splitlines()) == 1 and conns["site-a"] == 2


# ---------------------------------------------------------------------- host keys
@pytest.fixture
def keyfleet():
    f = Fleet()
    f.add(PROFILE, "key-a")
    f.add(PROFILE, "key-b")
    with f:
        yield f


def test_unknown_and_changed_host_keys_refuse_site_tests_exactly_as_the_probe(keyfleet, site_file, tmp_path):
    f = keyfleet
    f.rekey("key-b")                                   # known_hosts still has key-b's old key
    kh = tmp_path / "known_hosts"
    kh.write_text("".join(ln + "\n" for ln in f.known_hosts_path.read_text().splitlines()
                          if not ln.startswith(f.nodes["key-a"].address + " ")))   # key-a unknown
    r, conns, execs = _counted(f, lambda: run_pytest(
        ["suites/test_driver.py", str(site_file / "test_site.py"), "-k", "node_name or driver_stack", "--inventory",
         str(f.inventory_path), "--known-hosts", str(kh)], tmp_path / "r"))
    assert r.outcomes() == {"test_driver_stack[key-a]": "error", "test_node_name[key-a]": "error",
                            "test_driver_stack[key-b]": "error", "test_node_name[key-b]": "error"}
    for node, kind in (("key-a", "hostkey-unknown"), ("key-b", "hostkey-changed")):
        probe = r.message(f"test_driver_stack[{node}]")
        site = r.message(f"test_node_name[{node}]")
        why = probe.split("node not gathered: ", 1)[1]
        assert why.startswith(f"{kind}: host key for")
        assert site.endswith(f"node not gathered: {why}")
    assert execs == {"key-a": 0, "key-b": 0}                      # no command reached either node


def test_site_connection_verifies_host_keys_on_its_own(keyfleet, tmp_path):
    f = keyfleet
    addr = f.nodes["key-a"].address
    url = f"paramiko://root@{addr}:22?ssh_identity_file={f.client_key_path}"
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(TransportError) as e:
        SiteConnection(url, hostkeys=HostKeyPolicy([empty])).open()
    assert e.value.kind == "hostkey-unknown" and "add it or run with --accept-new-host-keys" in e.value.message
    f.rekey("key-a")                                   # the fleet's known_hosts keeps the old key
    with pytest.raises(TransportError) as e:
        SiteConnection(url, hostkeys=HostKeyPolicy([f.known_hosts_path])).open()
    assert e.value.kind == "hostkey-changed" and "CHANGED" in e.value.message


# ---------------------------------------------------------------------- examples/site
@pytest.fixture(scope="module")
def examples_fleet():
    f = Fleet(spec={"site_evidence": {"ib_ports": "ibstat"},
                    "site_vars": {"ib_rate_gbps": 400, "ib_ports": 8, "min_max_map_count": 262144}})
    for n in ("ex-good", "ex-bad"):
        f.add(PROFILE, n)
    with f:
        from .test_examples import IBSTAT
        down = IBSTAT.replace("State: Active", "State: Down", 1)
        for n in ("ex-good", "ex-bad"):
            nodes.write(f, n, "/proc/mounts", "proc /proc proc rw 0 0\ntmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n")
        nodes.systemd(f, "ex-good", {"nvidia-fabricmanager": ("active", "enabled")})
        nodes.systemd(f, "ex-bad", {"nvidia-fabricmanager": ("inactive", "enabled")})
        nodes.sysctl(f, "ex-good", {"vm.max_map_count": "1048576"})
        nodes.sysctl(f, "ex-bad", {"vm.max_map_count": "65530"})
        nodes.tool(f, "ex-good", "ibstat", IBSTAT)
        nodes.tool(f, "ex-bad", "ibstat", down)
        yield f


def test_examples_live_then_replayed(examples_fleet, tmp_path):
    f = examples_fleet
    live = run_pytest([str(ROOT / "examples" / "site"), "--inventory", str(f.inventory_path), "--known-hosts",
                       str(f.known_hosts_path)], tmp_path / "live")
    want = {"test_fabric_manager_active_at_driver_version[{n}]": ("pass", "fail"),
            "test_infiniband_ports_active_at_rate[{n}]": ("pass", "fail"),
            "test_vm_max_map_count[{n}]": ("pass", "fail"), "test_dev_shm_is_tmpfs[{n}]": ("pass", "pass")}
    assert live.outcomes() == {k.format(n=n): v[i] for k, v in want.items()
                               for i, n in enumerate(("ex-good", "ex-bad"))}, live.output[-4000:]
    assert live.properties("test_infiniband_ports_active_at_rate[ex-bad]")["observed"] == (
        "InfiniBand ports not Active at 400 Gb/s: mlx5_0/1: Down, LinkUp, 400 Gb/s")
    assert live.properties("test_fabric_manager_active_at_driver_version[ex-bad]")["observed"] == \
        "nvidia-fabricmanager.service is not active"
    replay = run_pytest([str(ROOT / "examples" / "site"), "--replay", str(tmp_path / "live" / "bundles")],
                        tmp_path / "replay", nonet=True)
    assert replay.outcomes() == live.outcomes(), replay.output[-3000:]


# ---------------------------------------------------------------------- password logins, site files as sites have them
@pytest.fixture(scope="module")
def login_user():
    """A user of this machine with a password (sshd checks it before entering the node's chroot),
    removed afterwards: DeepOps-like inventories log in with ansible_user + ansible_password."""
    import os
    import pwd
    import secrets
    import shutil
    import subprocess
    if shutil.which("useradd") is None or shutil.which("chpasswd") is None:
        pytest.skip("useradd/chpasswd not installed (apt-get install passwd)")
    name = f"ngpw{os.getpid() % 100000}"
    password = "pw-" + secrets.token_hex(8)
    subprocess.run(["useradd", "-M", "-d", "/", "-s", pwd.getpwnam("root").pw_shell, name], check=True,
                   capture_output=True)
    try:
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
        yield name, password
    finally:
        subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture(scope="module")
def pwfleet(login_user):
    f = Fleet(passwords=True)
    for n in ("pw-a", "pw-b", "pw-c"):
        f.add(PROFILE, n)
    with f:
        yield f


def _password_inventory(fleet, user, password, d: Path) -> list[str]:
    """Two sources, as `ansible -i common.ini -i site.yml`: the shared layout with a password for
    every host and Ansible's default connection (ssh), and the site's own group."""
    a = {n: fleet.nodes[n].address for n in ("pw-a", "pw-b", "pw-c")}
    (d / "common.ini").write_text(
        f"[slurm-node]\npw-a ansible_host={a['pw-a']}\npw-b ansible_host={a['pw-b']}\n\n[login]\n"
        f"pw-c ansible_host={a['pw-c']}\n\n[all:vars]\nansible_user={user}\nansible_password={password}\n")
    (d / "site.yml").write_text("all:\n  children:\n    h200:\n      hosts:\n        pw-b:\n")
    return ["--inventory", str(d / "common.ini"), "--inventory", str(d / "site.yml")]


PW_SITE = {
    "slurm/test_slurm.py": textwrap.dedent('''
        testinfra_hosts = ['ansible://slurm-node:!h200']

        def test_service(host, nodegate_node):
            assert host.check_output("uname -n") == nodegate_node.name
    '''),
    "molecule/tests/test_default.py": textwrap.dedent('''
        import os

        import testinfra.utils.ansible_runner

        testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
            os.environ['MOLECULE_INVENTORY_FILE']).get_hosts('all')


        def test_hosts_file(host):
            assert host.file('/etc/hostname').exists
    '''),
    "checks/test_every.py": textwrap.dedent('''
        def test_service(host):
            """same test name as slurm/test_slurm.py's: logged in with the inventory's password"""
            assert host.check_output("id -u") != "0"

        def test_lookup(host):
            {}["no-such-key"]
    '''),
}
PW_WANT = {"slurm/test_slurm.py::test_service[pw-a]": "pass",
           **{f"molecule/tests/test_default.py::test_hosts_file[{n}]": "pass" for n in ("pw-a", "pw-b", "pw-c")},
           **{f"checks/test_every.py::test_service[{n}]": "pass" for n in ("pw-a", "pw-b", "pw-c")},
           **{f"checks/test_every.py::test_lookup[{n}]": "fail" for n in ("pw-a", "pw-b", "pw-c")}}


def _site_outcomes(out: Path) -> dict[str, str]:
    import json
    return {d["nodeid"]: d["outcome"] for d in map(json.loads, (out / "results.jsonl").read_text().splitlines())
            if d.get("check_id", "").startswith("SITE-")}


def test_password_logins_testinfra_hosts_and_paths_over_ssh_then_replayed(pwfleet, login_user, tmp_path):
    import subprocess
    import sys
    user, password = login_user
    for rel, text in PW_SITE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    inv = _password_inventory(pwfleet, user, password, tmp_path)
    nodegate = str(Path(sys.executable).parent / "nodegate")
    listed = subprocess.run([nodegate, *inv, "--list-hosts"], cwd=tmp_path, capture_output=True, text=True)
    assert listed.stdout.count("paramiko (password; Ansible: ssh)") == 3, listed.stdout + listed.stderr
    args = ["slurm/", "molecule/tests", "checks", "-p", "no:cacheprovider", "-rA"]
    import os
    live = subprocess.run([nodegate, *args, *inv, "--known-hosts", str(pwfleet.known_hosts_path),
                           "--reports-dir", "live"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, COLUMNS="200"))
    assert _site_outcomes(tmp_path / "live") == PW_WANT, live.stdout[-4000:] + live.stderr[-2000:]
    assert "FAILED checks/test_every.py::test_lookup[pw-a] - [SITE-LOOKUP] KeyError: 'no-such-key'" in live.stdout
    # the password is in no output and no file the run wrote
    assert password not in live.stdout + live.stderr + listed.stdout + listed.stderr
    for p in (tmp_path / "live").rglob("*"):
        if p.is_file() and not p.name.endswith(".gz"):
            assert password.encode() not in p.read_bytes(), p
    replay = run_pytest([str(tmp_path / "slurm"), str(tmp_path / "molecule" / "tests"), str(tmp_path / "checks"),
                         "--replay", str(tmp_path / "live" / "bundles")], tmp_path / "replay", nonet=True)
    # (ids named by the absolute paths given here)
    got = {k.split(str(tmp_path) + "/", 1)[-1]: v for k, v in _site_outcomes(tmp_path / "replay").items()}
    assert got == PW_WANT, replay.output[-4000:]
