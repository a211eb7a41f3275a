"""-n N is capped to the workers that can pay (nodegate.session.scheduling.cap_workers): never
slower than serial (docs/performance.md "xdist")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from nodegate.session import scheduling


class _Config:
    def __init__(self, n):
        self.option = SimpleNamespace(numprocesses=n, dist="loadgroup", tx=["popen"] * n)
        self.stash = pytest.Stash()


@pytest.fixture(autouse=True)
def capped(monkeypatch):
    monkeypatch.delenv("NODEGATE_XDIST_UNCAPPED", raising=False)


@pytest.mark.parametrize("cores,nodes,n,want", [
    (2, 64, 2, 0),       # one core for the controller, one for a worker: serial
    (16, 64, 8, 4),      # 16 nodes a worker at least
    (16, 256, 8, 8),
    (8, 4096, 8, 7),     # one core for the controller
    (16, 20, 4, 0),      # one worker's worth of nodes: serial
])
def test_workers_capped_to_cores_and_nodes(monkeypatch, cores, nodes, n, want):
    monkeypatch.setattr(scheduling, "usable_cores", lambda: cores)
    c = _Config(n)
    scheduling.cap_workers(c, nodes)
    if want == n:
        assert c.option.numprocesses == n and scheduling.CAPPED_KEY not in c.stash
        return
    assert c.option.numprocesses == want
    if want == 0:
        assert c.option.dist == "no" and c.option.tx == [] and "running serially" in c.stash[scheduling.CAPPED_KEY]
    else:
        assert c.option.tx == ["popen"] * want and f"capped to {want}" in c.stash[scheduling.CAPPED_KEY]


def test_uncapped_for_benchmarks(monkeypatch):
    monkeypatch.setattr(scheduling, "usable_cores", lambda: 2)
    monkeypatch.setenv("NODEGATE_XDIST_UNCAPPED", "1")
    c = _Config(2)
    scheduling.cap_workers(c, 64)
    assert c.option.numprocesses == 2 and scheduling.CAPPED_KEY not in c.stash
