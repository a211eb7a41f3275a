"""Interrupting a burn-in stops the load on every node and leaves nothing behind.

- local://: SIGINT to a pytest subprocess running the burn-in suite (the user's Ctrl-C).
- real sshd (tools.fleet): the controller closes the channel (no pty, so no SIGHUP from sshd): the
  script's heartbeat write fails and it stops the load. Liveness by process: chroot processes are
  visible on the host, and the fake gpu_burn has a name unique to the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from nodegate.burnin.runner import BurninJob, burnin_node
from nodegate.burnin.spec import BurninSpec
from nodegate.run import GatherOptions
from nodegate.transport import HostKeyPolicy

from tests.hostile.harness import default_sigint

from .shims import Scenario, gpu_burn_shim, smi_shim, write_shims

ROOT = Path(__file__).resolve().parents[2]


def _pids(pattern: str) -> list[int]:
    """Live processes whose command line holds ``pattern`` (/proc; pgrep is procps, not everywhere)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if pattern in cmd and state != "Z":
            out.append(int(p.name))
    return out


def _wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.2)
    return pred()


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_burnin_stops_the_load_and_writes_every_report(tmp_path, sig, code):
    # issue 37.4: the load stops on the node, and the reports of what was judged are written (they
    # were not: the interrupt left pytest_sessionstart and the session ended before collection)
    d = write_shims(tmp_path / "bin", Scenario())
    env = dict(os.environ, PATH=f"{d}:/usr/bin:/bin:/usr/sbin:/sbin", PYTHONPATH=str(ROOT))
    reports = tmp_path / "reports"
    p = subprocess.Popen([sys.executable, "-m", "pytest", str(ROOT / "suites" / "test_burnin.py"),
                          "-p", "nodegate.plugins.nodegate_burnin", "--burn-in", "120s", "--target", "local://",
                          "--reports-dir", str(reports), "-p", "no:cacheprovider", "-q"],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=default_sigint)   # Ctrl-C as at a terminal, also under make test &
    pattern = f"{d}/gpu_burn"
    try:
        assert _wait(lambda: bool(_pids(pattern)), 60), "the load never started"
        p.send_signal(sig)
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    text = out.decode(errors="replace")
    assert _wait(lambda: not _pids(pattern), 10), f"load still running: {_pids(pattern)}"
    runs = list(reports.glob("bundles/*/burnin.run.out"))
    assert len(runs) == 1
    assert json.loads(runs[0].read_text())["status"] == "interrupted"
    assert p.returncode == code, text[-2000:]  # 128 + the signal (README "Exit codes")
    for name in ("results.jsonl", "junit.xml", "report.html"):
        assert (reports / name).is_file(), f"{name} not written:\n{text[-2000:]}"
    recs = [json.loads(ln) for ln in (reports / "results.jsonl").read_text().splitlines()]
    load = [r for r in recs if "test_burnin_load" in r["nodeid"]]
    assert load and load[0]["outcome"] == "error", load
    assert "interrupted" in json.dumps(load[0])
    assert "burn-in interrupted" in text


def _fleet_available():
    try:
        from tools.fleet import sshd_available
    except ImportError as e:
        return f"tools.fleet not importable: {e}"
    return sshd_available()


@pytest.mark.skipif(_fleet_available() is not None, reason=f"simulated fleet unavailable: {_fleet_available()}")
def test_closing_the_ssh_channel_stops_the_load_on_every_node(tmp_path):
    from tools.fleet import Fleet

    token = uuid.uuid4().hex[:8]
    burn = f"gpu_burn_{token}"
    with Fleet(["h200-vm-sim", "h100-535-healthy"]) as fleet:
        sc = Scenario(gpus=1)
        for node in fleet.nodes:
            root = fleet.root(node)
            # each nvidia-smi call logged inside the node's root: the test stops the burn-in only after
            # every node's sampler ran twice with the load running (under load the first sample could
            # still be on its way when the channel closed: no burnin.samples at all)
            smi = smi_shim(sc).replace("#!/bin/sh\n", f"#!/bin/sh\necho . >> /tmp/ng-smi-calls-{token}\n", 1)
            for name, text in (("nvidia-smi", smi), (burn, gpu_burn_shim(sc))):
                f = root / "usr" / "bin" / name
                if f.exists() or f.is_symlink():
                    f.unlink()
                f.write_text(text)
                f.chmod(0o755)
        opts = GatherOptions(hostkeys=HostKeyPolicy([fleet.known_hosts_path]))
        spec = BurninSpec(interval_s=1, gpu_burn=burn, stop_grace_s=2)
        stop = threading.Event()
        results = {}

        def one(node):
            n = fleet.nodes[node]
            url = f"paramiko://{fleet.user}@{n.address}:{n.port}?ssh_identity_file={fleet.client_key_path}"
            results[node] = burnin_node(BurninJob(node, url, spec), opts, 300, stop)

        threads = [threading.Thread(target=one, args=(n,)) for n in fleet.nodes]
        for t in threads:
            t.start()
        def calls(node) -> int:
            try:
                return (fleet.root(node) / "tmp" / f"ng-smi-calls-{token}").read_text().count(".")
            except OSError:
                return 0

        try:
            assert _wait(lambda: len(_pids(burn)) >= 2, 60), "the loads never started"
            started = {n: calls(n) for n in fleet.nodes}
            assert _wait(lambda: all(calls(n) >= started[n] + 3 for n in fleet.nodes), 120), \
                f"the samplers did not sample twice: {started} -> {[calls(n) for n in fleet.nodes]}"
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        assert _wait(lambda: not _pids(burn), 15), f"load still running after the channel closed: {_pids(burn)}"
        for node, ev in results.items():
            run = json.loads(ev["burnin.run"].text)
            assert run["status"] == "interrupted", (node, run)
            assert ev["burnin.samples"].text.count("# sample ") >= 2
