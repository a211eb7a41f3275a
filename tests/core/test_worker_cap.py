"""-n N runs serially (nodegate.session.scheduling.cap_workers): xdist's controller alone spends
more CPU on the items' reports than a serial run takes, so no number of workers or cores can
make a nodegate run faster than serial (docs/performance.md "xdist")."""

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


@pytest.mark.parametrize("n", [1, 2, 4, 8, 64])
def test_every_n_runs_serially_and_says_why(n):
    c = _Config(n)
    scheduling.cap_workers(c)
    assert c.option.numprocesses == 0 and c.option.dist == "no" and c.option.tx == []
    said = c.stash[scheduling.CAPPED_KEY]
    assert f"-n {n} would be slower than serial" in said and "running serially" in said


def test_no_n_is_left_alone():
    c = _Config(0)
    c.option.numprocesses = None
    scheduling.cap_workers(c)
    assert c.option.numprocesses is None and scheduling.CAPPED_KEY not in c.stash


def test_uncapped_for_benchmarks(monkeypatch):
    monkeypatch.setenv("NODEGATE_XDIST_UNCAPPED", "1")
    c = _Config(2)
    scheduling.cap_workers(c)
    assert c.option.numprocesses == 2 and scheduling.CAPPED_KEY not in c.stash
