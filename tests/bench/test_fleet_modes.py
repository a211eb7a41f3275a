"""Scale-out modes on a small simulated fleet (real sshd; needs root, openssh-server, busybox-static, dash).

- pytest-xdist: ``-n 2 --dist loadgroup`` gives exactly the serial run's outcomes, keeps each node's
  items on one worker (one xdist_group per node), and the controller still gathers each node with
  ONE exec channel (workers replay the controller's bundles).
- collect mode: ``nodegate-collect --root <node root>`` on every node (what a Slurm task or a
  Kubernetes pod with the host at /host does), then one ``pytest --replay``: the same JUnit outcomes,
  messages and properties as the SSH run over the same evidence (times ignored).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.execs import sessions_per_node
from tools.fleet import Fleet, sshd_available

from .helpers import ROOT, junit_cases, outcomes, run_suite

NEEDS = sshd_available()
pytestmark = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

#: healthy, a per-GPU FAIL, a node FAIL, unreadable GPUs (ERRORs): every outcome kind is compared.
PROFILES = ("h200-580-open-healthy", "pcie-gen4-slot", "persistenced-inactive", "driver-library-mismatch")


@pytest.fixture(scope="module")
def fleet():
    with Fleet(PROFILES) as f:
        yield f


def _ssh_args(fleet) -> list[str]:
    return ["--inventory", str(fleet.inventory_path), "--known-hosts", str(fleet.known_hosts_path)]


@pytest.fixture(scope="module")
def serial(fleet, tmp_path_factory):
    """The serial SSH run: (JUnit cases, exec channels per node it opened)."""
    out = tmp_path_factory.mktemp("serial")
    before = sessions_per_node(fleet)
    r = run_suite(*_ssh_args(fleet), reports=out)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]  # the fleet has failing nodes
    after = sessions_per_node(fleet)
    return junit_cases(out / "junit.xml"), {n: after[n] - before.get(n, 0) for n in after}


def test_serial_run_opens_one_exec_per_node(serial):
    assert serial[1] == {p: 1 for p in PROFILES}


def test_xdist_loadgroup_same_outcomes_one_worker_per_node_one_exec(fleet, serial, tmp_path):
    before = sessions_per_node(fleet)
    r = run_suite(*_ssh_args(fleet), "-n", "2", "--dist", "loadgroup", "-vv", reports=tmp_path)  # -q -vv: verbosity 1
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    after = sessions_per_node(fleet)
    assert {n: after[n] - before.get(n, 0) for n in after} == {p: 1 for p in PROFILES}
    got = junit_cases(tmp_path / "junit.xml")
    assert outcomes(got) == outcomes(serial[0])
    assert got == serial[0]  # messages and properties too
    # "[gw1] [ 10%] PASSED suites/test_x.py::test_y[node-gpu3]": every node's items on ONE worker
    workers: dict[str, set[str]] = {}
    for m in re.finditer(r"^\[(gw\d+)\] \[\s*\d+%\] \w+ \S+::\S+\[(\S+?)\]\s*$", r.stdout, re.M):
        node = next((p for p in PROFILES if m.group(2) == p or m.group(2).startswith(p + "-gpu")), None)
        if node:
            workers.setdefault(node, set()).add(m.group(1))
    assert set(workers) == set(PROFILES), r.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers


def _collect(fleet, node: str, out: Path, tmp: Path) -> subprocess.CompletedProcess:
    spec = tmp / f"{node}.spec.yml"
    host = fleet.inventory()["all"]["hosts"][node]
    spec.write_text(yaml.safe_dump({"nodegate": host.get("nodegate") or {}}))
    argv = [sys.executable, "-m", "nodegate.collect_cli", "--out", str(out), "--node", node,
            "--root", str(fleet.root(node)), "--spec", str(spec)]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _spec_sources(cases: dict) -> set[str]:
    return {v for c in cases.values() for k, v in c["properties"] if k == "spec_source"}


def _without_spec_source(cases: dict) -> dict:
    return {t: dict(c, properties=[(k, v) for k, v in c["properties"] if k != "spec_source"]) for t, c in cases.items()}


def test_collect_then_replay_equals_ssh_run(fleet, serial, tmp_path):
    bundles = tmp_path / "run"
    for node in PROFILES:
        r = _collect(fleet, node, bundles, tmp_path)
        assert r.returncode == 0, r.stderr
        assert (bundles / node / "meta.json").is_file()
    rep = run_suite("--replay", str(bundles), reports=tmp_path / "reports")
    assert rep.returncode == 1, rep.stdout[-3000:] + rep.stderr[-3000:]
    got = junit_cases(tmp_path / "reports" / "junit.xml")
    assert outcomes(got) == outcomes(serial[0])
    # same messages and properties: the same evidence, evaluated the same way; only the spec's origin
    # differs: the SSH run's is the inventory, the replay's the spec each bundle recorded
    assert _spec_sources(got) == {"bundle meta.json"}
    assert {s.split(" ", 1)[0] for s in _spec_sources(serial[0])} == {"inventory"}
    assert _without_spec_source(got) == _without_spec_source(serial[0])
