"""What a person reads in the terminal when nodes cannot be gathered (issue 32), over real SSH on
the simulated fleet, with the ``nodegate`` command as an operator runs it (stdout a pipe, as in CI):

- one node with an unknown host key printed 627 lines (the summary at line 413): now the summary
  comes before pytest's sections, one line per node problem with its fix, and the node's ~200
  identical ERRORs are not listed item by item (they stay counted in pytest's last line);
- two unreachable nodes with ``-q --tb=no`` printed 422 lines;
- no ``\\r`` progress line in a log;
- ``make fleet``'s CLI (tools/fleet/cli.py) starts a fleet that outlives it, writes an inventory and
  known_hosts that ``nodegate`` runs over, and ``stop`` removes everything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.fleet import Fleet

from .conftest import needs_fleet

ROOT = Path(__file__).resolve().parents[2]
#: the ~200 items of one node fit in 4 lines of -q progress; the summary is ~20 lines
MAX_LINES_ONE_NODE = 45
MAX_LINES_TWO_NODES = 45


def _nodegate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="120", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "nodegate.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def small_fleet():
    with Fleet(["h100-535-healthy"]) as f:
        yield f


def _summary_checks(out: str, nodes: list[str], why: str, fix: str) -> list[str]:
    lines = out.splitlines()
    s = next(i for i, ln in enumerate(lines) if "nodegate summary" in ln)
    assert lines[s + 1].startswith(f"nodegate verdict: 0 accepted, {len(nodes)} need action")
    head = next(i for i, ln in enumerate(lines) if ln.startswith("problems (one line a node"))
    probs = lines[head + 1:head + 1 + len(nodes)]
    for n, p in zip(sorted(nodes), sorted(probs)):
        assert p.startswith(f"  {n}: could not be evaluated: node not gathered: {why}"), p
        assert f" -> obtain evidence: {fix}" in p, p
    assert "ERRORS" not in out and "short test summary" not in out   # no item-by-item listing
    assert "\r" not in out
    return lines


@needs_fleet
def test_unknown_host_key_one_screen(small_fleet, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    p = _nodegate(tmp_path, "--inventory", str(small_fleet.inventory_path), "--known-hosts", str(empty),
                  "--reports-dir", str(tmp_path / "r"))
    assert p.returncode == 1, p.stdout + p.stderr
    lines = _summary_checks(p.stdout, ["h100-535-healthy"], "hostkey-unknown: host key for ",
                            "Verify the node's SSH host key out of band")
    assert len(lines) <= MAX_LINES_ONE_NODE, p.stdout
    assert lines[-1].strip("= ").startswith(f"{_items_per_node()} errors")


@needs_fleet
def test_two_unreachable_nodes_quiet(tmp_path):
    with Fleet(["h100-535-healthy"]) as f:
        f.add_unreachable("gone1")
        f.add_unreachable("gone2", address="127.0.1.251")
        f.write_inventory()
        p = _nodegate(tmp_path, "--inventory", str(f.inventory_path), "--known-hosts", str(f.known_hosts_path),
                      "--reports-dir", str(tmp_path / "r"), "--limit", "gone1,gone2", "-q", "--tb=no")
    assert p.returncode == 1, p.stdout + p.stderr
    lines = _summary_checks(p.stdout, ["gone1", "gone2"], "refused: connection refused by 127.0.1.25",
                            "Make the node reachable over SSH")
    assert len(lines) <= MAX_LINES_TWO_NODES, p.stdout


@needs_fleet
def test_make_fleet_cli_starts_runs_and_stops(tmp_path):
    out = tmp_path / "fleet"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    started = subprocess.run([sys.executable, "-m", "tools.fleet.cli", "start", "--nodes", "2", "--out", str(out)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert (out / "inventory.yml").is_file() and (out / "known_hosts").is_file()
        assert "nodegate --inventory" in started.stdout
        p = _nodegate(tmp_path, "--inventory", str(out / "inventory.yml"), "--known-hosts", str(out / "known_hosts"),
                      "--reports-dir", str(tmp_path / "r"), "-q", "--tb=no")
        assert p.returncode == 1, p.stdout + p.stderr   # pcie-x8-busy is the second node: a finding
        assert "nodegate verdict: 1 accepted, 1 need action, 0 not evaluated" in p.stdout
        again = subprocess.run([sys.executable, "-m", "tools.fleet.cli", "start", "--out", str(out)], cwd=ROOT,
                               env=env, capture_output=True, text=True, timeout=60)
        assert again.returncode == 2 and "already running" in again.stderr
    finally:
        import json
        wd = Path(json.loads((out / "fleet.json").read_text())["workdir"]) if (out / "fleet.json").exists() else None
        stopped = subprocess.run([sys.executable, "-m", "tools.fleet.cli", "stop", "--out", str(out)], cwd=ROOT,
                                 env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not out.exists() and wd is not None and not wd.exists()


def _items_per_node() -> int:
    """One node's pytest items on an 8-GPU H100: one per check (a GPU check's 8 GPUs folded into its
    item; results.jsonl keeps one record per GPU)."""
    from nodegate.checks import load_all
    return len(load_all())
