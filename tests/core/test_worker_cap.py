"""What -n N becomes (nodegate.session.scheduling.cap_workers). nodegate's suites alone run
serially: xdist's controller alone spends more CPU on the items' reports than a serial run takes,
so no number of workers or cores makes such a run faster than serial. With test paths of the
site's own (site checks: remote commands workers can overlap), N is capped to the cores and nodes
that can pay (docs/performance.md "xdist")."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from nodegate.session import scheduling
from nodegate.session.jobs import SUITES


class _Config:
    def __init__(self, n, args=(str(SUITES),)):
        self.option = SimpleNamespace(numprocesses=n, dist="loadgroup", tx=["popen"] * n)
        self.stash = pytest.Stash()
        self.args = list(args)
        self.invocation_params = SimpleNamespace(dir=Path.cwd())


@pytest.fixture(autouse=True)
def capped(monkeypatch):
    monkeypatch.delenv("NODEGATE_XDIST_UNCAPPED", raising=False)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 64])
@pytest.mark.parametrize("args", [[str(SUITES)], [str(SUITES / "test_memory.py") + "::test_ecc_mode"]])
def test_nodegate_suites_run_serially_and_say_why(monkeypatch, n, args):
    monkeypatch.setattr(scheduling, "usable_cores", lambda: 64)
    c = _Config(n, args)
    scheduling.cap_workers(c, lambda: 4096)
    assert c.option.numprocesses == 0 and c.option.dist == "no" and c.option.tx == []
    said = c.stash[scheduling.CAPPED_KEY]
    assert f"-n {n} would be slower than serial" in said and "running serially" in said


@pytest.mark.parametrize("cores,nodes,n,want", [
    (2, 64, 2, 0),       # one core for the controller, one for a worker: serial
    (16, 64, 8, 4),      # 16 nodes a worker at least
    (16, 256, 8, 8),
    (8, 4096, 8, 7),     # one core for the controller
    (16, 20, 4, 0),      # one worker's worth of nodes: serial
])
def test_site_checks_capped_to_cores_and_nodes(monkeypatch, tmp_path, cores, nodes, n, want):
    monkeypatch.setattr(scheduling, "usable_cores", lambda: cores)
    c = _Config(n, [str(SUITES), str(tmp_path / "site")])
    scheduling.cap_workers(c, lambda: nodes)
    if want == n:
        assert c.option.numprocesses == n and scheduling.CAPPED_KEY not in c.stash
        return
    assert c.option.numprocesses == want
    if want == 0:
        assert c.option.dist == "no" and c.option.tx == [] and "running serially" in c.stash[scheduling.CAPPED_KEY]
    else:
        assert c.option.tx == ["popen"] * want and f"capped to {want}" in c.stash[scheduling.CAPPED_KEY]


def test_no_n_is_left_alone():
    c = _Config(0)
    c.option.numprocesses = None
    scheduling.cap_workers(c, lambda: 64)
    assert c.option.numprocesses is None and scheduling.CAPPED_KEY not in c.stash


def test_uncapped_for_benchmarks(monkeypatch):
    monkeypatch.setenv("NODEGATE_XDIST_UNCAPPED", "1")
    c = _Config(2)
    scheduling.cap_workers(c, lambda: 64)
    assert c.option.numprocesses == 2 and scheduling.CAPPED_KEY not in c.stash
