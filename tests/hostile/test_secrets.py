"""Passwords never reach reports, bundles, JUnit, HTML or terminal output; no agent forwarding,
no pty. The node is a fleet root served by a small paramiko SSH server that accepts one password
(the fleet's sshd allows keys only, and a password for a host user would change the machine)."""

from __future__ import annotations

import socket
import subprocess
import threading
import urllib.parse

import paramiko
import pytest
import yaml

from tests.hostile import harness as H
from tests.hostile.conftest import needs_fleet
from tools.fleet import Fleet

pytestmark = needs_fleet

#: URL-special characters on purpose: the inventory path percent-encodes them into the target URL.
PASSWORD = "Pw@7f3a:9c/1e%41-never-in-reports"


class _Server(paramiko.ServerInterface):
    def __init__(self, root, seen):
        self.root, self.seen = root, seen

    def get_allowed_auths(self, username):
        return "password"

    def check_auth_password(self, username, password):
        ok = username == "root" and password == PASSWORD
        self.seen.append(("password", ok))
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_forward_agent_request(self, channel):
        self.seen.append(("agent-forwarding", True))
        return False

    def check_channel_pty_request(self, *a):
        self.seen.append(("pty", True))
        return False

    def check_channel_exec_request(self, channel, command):
        self.seen.append(("exec", command.decode()))
        threading.Thread(target=self._run, args=(channel, command.decode()), daemon=True).start()
        return True

    def _run(self, chan, command):
        p = subprocess.Popen(["chroot", str(self.root), "/bin/sh", "-c", command], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def feed():
            while True:
                b = chan.recv(65536)
                if not b:
                    break
                p.stdin.write(b)
            p.stdin.close()

        def errs():
            for b in iter(lambda: p.stderr.read1(65536), b""):
                chan.sendall_stderr(b)

        ts = [threading.Thread(target=feed, daemon=True), threading.Thread(target=errs, daemon=True)]
        for t in ts:
            t.start()
        for b in iter(lambda: p.stdout.read1(65536), b""):
            chan.sendall(b)
        p.wait()
        ts[1].join(5)
        chan.send_exit_status(p.returncode)
        chan.close()


class PasswordNode:
    def __init__(self, root):
        self.key = paramiko.ECDSAKey.generate()
        self.seen: list = []
        self.root = root
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            t = paramiko.Transport(c)
            t.add_server_key(self.key)
            t.start_server(server=_Server(self.root, self.seen))

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.key.get_name()} {self.key.get_base64()}\n"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("secrets")
    f = Fleet()
    f.add("h200-vm-sim", "pw-node")
    with f:
        node = PasswordNode(f.root("pw-node"))
        kh = tmp / "known_hosts"
        kh.write_text(node.known_hosts_line())
        # a password login is paramiko's (ansible_connection unset means OpenSSH in batch mode,
        # which nodegate refuses with a password: tests/inventory/test_resolve.py)
        inv = {"all": {"hosts": {"pw-node": {"ansible_host": "127.0.0.1", "ansible_port": node.port,
                                             "ansible_user": "root", "ansible_password": PASSWORD,
                                             "ansible_connection": "paramiko"}}}}
        inv_path = tmp / "inventory.yml"
        inv_path.write_text(yaml.safe_dump(inv))
        run = H.run_suite(tmp / "inv-run", "--command-timeout", "5", "--probe-timeout", "60",
                          inventory=inv_path, known_hosts=kh)
        url = f"paramiko://root:{urllib.parse.quote(PASSWORD, safe='')}@127.0.0.1:{node.port}"
        target_run = H.run_suite(tmp / "target-run", "--target", url, "--command-timeout", "5",
                                 "--probe-timeout", "60", known_hosts=kh)
        yield {"run": run, "target_run": target_run, "seen": list(node.seen), "tmp": tmp}
        node.sock.close()


def _forms() -> list[bytes]:
    return [PASSWORD.encode(), urllib.parse.quote(PASSWORD, safe="").encode(),
            urllib.parse.quote(PASSWORD).encode()]


def _leaks(run: H.SuiteRun) -> list[str]:
    found = []
    for p in run.output_files():
        data = p.read_bytes()
        found += [f"{p}: {f!r}" for f in _forms() if f in data]
    for name, text in (("stdout", run.out), ("stderr", run.err)):
        found += [f"{name}: {f!r}" for f in _forms() if f in text.encode()]
    return found


def test_password_node_is_gathered_and_evaluated(env):
    run = env["run"]
    assert ("password", True) in env["seen"]
    meta = run.meta("pw-node")
    assert meta["status"] == "ok" and meta["complete"] is True
    assert meta["target"] == f"paramiko://root:***@127.0.0.1:{meta['target'].rsplit(':', 1)[1]}"
    assert run.node_outcomes("pw-node") and "error" not in {
        o for t, o in run.node_outcomes("pw-node").items() if t.startswith(("test_gpu_model", "test_pcie_link"))}


def test_password_from_the_inventory_never_reaches_any_output(env):
    assert env["run"].output_files()
    assert _leaks(env["run"]) == []


def test_password_in_target_url_never_reaches_any_output(env):
    run = env["target_run"]
    assert run.output_files()
    assert _leaks(run) == []


def test_no_agent_forwarding_and_no_pty_requested(env):
    kinds = [k for k, _ in env["seen"]]
    assert "agent-forwarding" not in kinds and "pty" not in kinds
    from nodegate.transport import SCRIPT_RUNNER
    # one exec per run; the script read whole, then run (issue 37.8)
    assert [c for k, c in env["seen"] if k == "exec"] == [f"sh -c '{SCRIPT_RUNNER}'"] * 2
