"""The real probe over SSH (paramiko, host keys verified against the fleet's known_hosts) against
every simulated node; the evidence must be what each profile implies. Needs root, sshd, busybox."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import defusedxml.ElementTree as DET
import paramiko
import pytest
import yaml

from nodegate.probe import ITEMS, render_script, split_stream
from tools.fleet.local import probe_chroot
from tools.fleet.models import EVENT_BITS
from tools.fleet.profile import gpu_state

from tests.conftest import PROFILE_FLEET

from .conftest import HANG, needs_fleet

#: the session's fleet of every profile (tests/conftest.py), with the other files that use it
pytestmark = [needs_fleet, pytest.mark.xdist_group(PROFILE_FLEET)]


def run_probe(fleet, node: str, *, timeout_s: int = 5, deadline: float = 180.0):
    """Probe ``node`` over SSH in one exec; returns (items, complete)."""
    prof = fleet.nodes[node].profile
    script, marker = render_script(user=(prof.spec.get("persistence") or {}).get("user", "nvidia-persistenced"), timeout_s=timeout_s)
    c = fleet.ssh_client(node)
    try:
        ch = c.get_transport().open_session(timeout=10)
        ch.settimeout(deadline)
        ch.exec_command("sh -s")
        ch.sendall(script.encode())
        ch.shutdown_write()
        out = bytearray()
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            try:
                chunk = ch.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            out += chunk
        settle = time.monotonic() + 5   # stdout ended: the exit status follows (not for a cut probe)
        while not ch.exit_status_ready() and time.monotonic() < min(settle, end):
            time.sleep(0.02)
        err = bytearray()   # the probe's stderr stream (under 1 MiB: it fits paramiko's window)
        while ch.recv_stderr_ready():
            err += ch.recv_stderr(65536)
        ch.close()
    finally:
        c.close()
    return split_stream(bytes(out), marker, stderr=bytes(err))


@pytest.fixture(scope="module")
def gathered_and_execs(fleet):
    """(node -> (items, complete), node -> exec channels the probes opened): the fleet is the
    session's (other files' runs counted before)."""
    nodes = [n for n in fleet.nodes if n not in HANG and fleet.nodes[n].reachable]
    before = fleet.exec_counts()
    with ThreadPoolExecutor(8) as ex:
        got = dict(zip(nodes, ex.map(lambda n: run_probe(fleet, n), nodes)))
    after = fleet.exec_counts()
    return got, {n: after[n] - before.get(n, 0) for n in nodes}


@pytest.fixture(scope="module")
def gathered(gathered_and_execs):
    return gathered_and_execs[0]


def test_every_node_completes_with_every_item(gathered):
    for node, (items, complete) in gathered.items():
        assert complete, node
        # every probe item but nvml.json (only where the node has python3 with nvidia-ml-py)
        assert set(items) == set(ITEMS) - {"nvml.json"}, (node, sorted(items))


def test_identity_and_kernel_per_node(fleet, gathered):
    for node, (items, _) in gathered.items():
        d = fleet.nodes[node].profile.data
        assert items["meta.hostname"].stdout == (d["node"]["hostname"] + "\n").encode(), node
        assert items["meta.uname_r"].stdout == (d["node"]["kernel"] + "\n").encode(), node
        assert items["meta.boot_id"].stdout == (d["node"]["boot_id"] + "\n").encode(), node
        assert items["meta.id"].stdout == b"uid=0(root) gid=0(root) groups=0(root)\n", node


def test_gpus_and_clocks_per_node(fleet, gathered):
    for node, (items, _) in gathered.items():
        prof = fleet.nodes[node].profile
        d = prof.data
        present = [i for i in range(d["gpus"]["count"]) if i not in d["gpus"]["missing"]]
        if d["driver"]["userspace_version"] != d["driver"]["version"]:
            assert items["smi.qx"].rc == 18 and items["smi.version"].rc == 18, node
            assert b"Driver/library version mismatch" in items["smi.qx"].stdout
            continue
        if "nvidia-smi" in d["tools_absent"]:   # a login node without GPUs (issue 40.8): no nvidia-smi
            assert items["smi.qx"].rc == 127 and not present, node
            continue
        root = DET.fromstring(items["smi.qx"].stdout)
        assert [g.findtext("uuid") for g in root.findall("gpu")] == \
            [gpu_state(d, prof.name, i)["uuid"] for i in present], node
        masks = [line.rsplit(", ", 1)[1] for line in items["smi.clocks_samples"].stdout.decode().splitlines()
                 if not line.startswith("#")][:len(present)]
        want = [f"0x{sum(EVENT_BITS[e] for e in gpu_state(d, prof.name, i)['events']):016x}" for i in present]
        assert masks == want, node


def test_persistenced_process_per_node(fleet, gathered):
    for node, (items, _) in gathered.items():
        ps = fleet.nodes[node].profile.data["persistenced"]
        text = items["persistenced.process"].stdout.decode()
        if ps["mode"] != "daemon" or not ps["running"]:
            assert "processes: 0\n" in text, node
            continue
        user = "root" if "--user root" in "".join((ps["dropins"] or {}).values()) else ps["user"]
        uid = 0 if user == "root" else ps["uid"]
        assert f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}\n" in text and "processes: 1\n" in text, node


def test_ssh_evidence_equals_local_chroot_evidence(fleet, gathered):
    """Over sshd or chroot'ed locally, a node yields byte-identical evidence (the samples rely on it)."""
    for node in ("h100-535-healthy", "h200-vm-sim", "gpu-fallen-off-bus", "persistenced-inactive"):
        prof = fleet.nodes[node].profile
        local = probe_chroot(node, fleet.root(node), prof.spec)
        items, _ = gathered[node]
        assert {k: (v.stdout, v.stderr, v.rc) for k, v in items.items()} == \
            {k: (v.stdout, v.stderr, v.rc) for k, v in local.items.items()}, node


def test_exec_channels_counted_per_node(gathered_and_execs):
    gathered, execs = gathered_and_execs
    assert execs == {n: 1 for n in gathered}


def test_inventory_and_known_hosts(fleet):
    inv = yaml.safe_load(fleet.inventory_path.read_text())
    hosts = inv["all"]["hosts"]
    assert set(hosts) == set(fleet.nodes)
    reachable = [n for n in fleet.nodes.values() if n.reachable]
    h = hosts["h200-vm-sim"]
    assert (h["ansible_host"], h["ansible_port"], h["ansible_user"]) == (fleet.nodes["h200-vm-sim"].address, 22, "root")
    assert h["ansible_ssh_private_key_file"] == str(fleet.client_key_path)
    assert h["nodegate"]["gpu"] == {"count": 1, "model": "H200"}
    kh = fleet.known_hosts_path.read_text().splitlines()
    assert len(kh) == len(reachable) and all(line.split()[1] == "ssh-ed25519" for line in kh)


def test_node_side_timeout_kills_hung_nvidia_smi(fleet):
    """smi-hang: `timeout -k 3 1` sends TERM (ignored), then KILL. busybox's timeout then exits 137
    (killed) or, seen under load, 124 (timed out): either way the item ends and the probe goes on."""
    items, complete = run_probe(fleet, "smi-hang", timeout_s=1, deadline=180)
    assert complete
    assert {items["smi.version"].rc, items["smi.qx"].rc} <= {124, 137}
    assert items["kernel.log"].rc == 0


def test_client_deadline_ends_hung_nvidia_smi_without_timeout(fleet):
    """smi-hang-no-timeout: the node has no `timeout`; only the client deadline ends the exec."""
    items, complete = run_probe(fleet, "smi-hang-no-timeout", timeout_s=1, deadline=20)
    assert not complete
    assert items["smi.version"].status == "timeout" and items["smi.version"].rc is None
    assert "smi.qx" not in items and items["dkms.status"].rc == 0


def test_rekey_is_refused_by_known_hosts(profiles):
    from tools.fleet import Fleet
    with Fleet([profiles["h100-535-healthy"], profiles["h200-vm-sim"]]) as f:
        f.ssh_client("h200-vm-sim").close()
        new = f.rekey("h200-vm-sim")
        assert new != f.host_key("h100-535-healthy")
        with pytest.raises(paramiko.BadHostKeyException):
            f.ssh_client("h200-vm-sim")
        f.ssh_client("h100-535-healthy").close()  # the other node keeps its key


def test_nodegate_client_negotiates_aes_gcm_with_openssh(fleet):
    """nodegate's client (SecureParamikoBackend) offers AES-GCM first; OpenSSH's sshd has it."""
    from pathlib import Path

    from nodegate.inventory import load_inventory
    from nodegate.transport import HostKeyPolicy, SecureParamikoBackend, Target

    policy = HostKeyPolicy(files=[Path(fleet.known_hosts_path)])
    host = next(h for h in load_inventory(str(fleet.inventory_path)).select(None) if h.name not in HANG)
    t = Target(host.url(), hostkeys=policy, connect_timeout=10)
    be = SecureParamikoBackend(t.host, hostkeys=policy, connect_timeout=10,
                               ssh_identity_file=t.kw.get("ssh_identity_file"))
    try:
        tr = be.client.get_transport()
        assert (tr.local_cipher, tr.remote_cipher) == ("aes128-gcm@openssh.com", "aes128-gcm@openssh.com")
        assert be.exec_stream("true", b"", 30.0).rc == 0
    finally:
        be.close()
