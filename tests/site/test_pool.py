"""SitePool: one site host per node, opened on demand or ahead, refused for nodes not gathered,
closed and flushed after the node's last site test."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from nodegate.bundle import Bundle
from nodegate.site.backend import SiteCommandError
from nodegate.site.pool import PoolOptions, SitePool, SiteUnavailable

from .helpers import empty_bundle


@dataclass
class FakeRun:
    bundles: dict
    spec: dict = field(default_factory=dict)
    spec_errors: dict = field(default_factory=dict)

    def wait(self, node):
        return self.bundles.get(node)

    def ready(self, node):
        return True


@pytest.fixture
def run(tmp_path):
    ok = Bundle.load(empty_bundle(tmp_path / "b", "n1"))
    ok2 = Bundle.load(empty_bundle(tmp_path / "b", "n2"))
    down = Bundle("n3", {}, {"node": "n3", "status": "refused", "error": "connection refused by 10.0.0.3:22"})
    return FakeRun({"n1": ok, "n2": ok2, "n3": down, "n4": Bundle.load(empty_bundle(tmp_path / "b", "n4"))},
                   spec_errors={"n4": "inv.yml: nodegate.gpu.count: bad"})


def test_one_host_per_node_and_release_flushes_and_closes(run):
    pool = SitePool(run, live=True, urls={"n1": "local://"}, options=PoolOptions(lookahead=0))
    h = pool.host("n1")
    assert pool.host("n1") is h
    assert h.host.check_output("echo hi") == "hi"
    assert pool.release("n1", {"SITE-X": {"check_id": "SITE-X", "outcome": "pass", "title": "x"}}) is None
    meta = json.loads((run.bundles["n1"].path / "meta.json").read_text())
    assert [c["command"] for c in meta["site"]["commands"]] == ["echo hi"]
    assert meta["site"]["results"]["SITE-X"]["outcome"] == "pass"
    with pytest.raises(SiteCommandError, match="n1's site connection was closed after its last site test"):
        h.host.run("echo again")
    with pytest.raises(SiteUnavailable, match="already closed"):
        pool.host("n1")


@pytest.mark.parametrize("node, why", [
    ("n3", "node not gathered: refused: connection refused by 10.0.0.3:22"),
    ("n4", "spec error: inv.yml: nodegate.gpu.count: bad"),
    ("n2", "no connection target for this node (not in the inventory of this run)"),
    ("n9", "node not in this run"),
])
def test_nodes_without_a_usable_target_are_refused_with_the_reason(run, node, why):
    pool = SitePool(run, live=True, urls={"n1": "local://", "n3": "local://", "n4": "local://"})
    with pytest.raises(SiteUnavailable) as e:
        pool.host(node)
    assert str(e.value) == why


def test_prefetch_opens_ahead_and_the_host_is_the_one_opened(run):
    pool = SitePool(run, live=True, urls={"n1": "local://", "n2": "local://"}, options=PoolOptions(lookahead=2))
    pool.prefetch(["n1", "n2", "n3"])          # n3 is not gathered: not opened
    assert sorted(pool._pending) == ["n1", "n2"]
    h = pool.host("n2")
    assert h.conn is not None and h.conn.shell is not None and not h.conn.shell.broken
    assert pool.close_all() == []
    assert pool._pending == {} and pool.hosts == {}


def test_a_failed_connection_is_remembered_for_the_node(run):
    pool = SitePool(run, live=True, urls={"n1": "chroot:///nonexistent-root"})
    with pytest.raises(SiteUnavailable, match="site connection failed: ") as e:
        pool.host("n1")
    with pytest.raises(SiteUnavailable) as again:
        pool.host("n1")
    assert str(again.value) == str(e.value)


def test_a_bundle_that_was_not_written_cannot_hold_the_recording(run):
    run.bundles["n1"].path = None
    pool = SitePool(run, live=True, urls={"n1": "local://"})
    pool.host("n1").host.run("true")
    assert pool.release("n1") == "n1: its bundle was not written: the site commands are not recorded"


def test_replay_hosts_answer_from_the_bundle_and_open_nothing(run):
    pool = SitePool(run, live=False)
    h = pool.host("n1")
    assert h.conn is None and h.recorder is None
    with pytest.raises(SiteCommandError, match="not recorded in the bundle: echo hi"):
        h.host.run("echo hi")
