"""A replay's next node parsed in a second process (nodegate.fleetrun.prefetch): the verdicts and
every report are what the run gives without it, a child that dies or lags costs nothing but its
help, and nothing of it outlives the session."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nodegate import collect
from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.fleetrun.prefetch import Prefetch

from .test_folded_items import ROOT, SAMPLES, _reports

FLEET = SAMPLES / "fleet"
NODES = sorted(p.name for p in FLEET.iterdir() if (p / "meta.json").is_file())

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="fork is not a start method here: no prefetching process")

#: kills the prefetching process after the first items (a child that dies mid-run)
KILLER = textwrap.dedent("""
    import pytest
    N = [0]

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(nodeid, location):
        N[0] += 1
        if N[0] == 60:
            from nodegate.run import RUN_KEY
            from nodegate.session.state import CONFIG
            p = CONFIG[0].stash[RUN_KEY]._prefetch
            p._proc.kill()
            p._proc.join(5)
""")

#: how many nodes' facts the pytest process took over from the child, written at session finish
TAKEN = textwrap.dedent("""
    import os
    import pytest

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(session):
        from nodegate.run import RUN_KEY
        p = session.config.stash[RUN_KEY]._prefetch
        with open(os.environ["TAKEN_OUT"], "w") as f:
            f.write(str(p.taken if p is not None else -1))
""")


def _run(tmp: Path, name: str, *extra: str, prefetch: bool = True, plugins: dict | None = None):
    rep = tmp / name
    pdir = tmp / f"{name}-plugins"
    pdir.mkdir()
    argv = [sys.executable, "-m", "pytest", "suites", "-q", "--tb=no", "-rN", "-p", "no:cacheprovider",
            "--replay", str(FLEET), "--reports-dir", str(rep)]
    for mod, src in (plugins or {}).items():
        (pdir / f"{mod}.py").write_text(src)
        argv += ["-p", mod]
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200", TAKEN_OUT=str(tmp / f"{name}.taken"),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(pdir)]), NODEGATE_PREFETCH="1" if prefetch else "0")
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run(argv + list(extra), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    taken = tmp / f"{name}.taken"
    return rep, r.stdout.replace(str(rep), "REP").rsplit(" in ", 1)[0], int(taken.read_text()) if taken.exists() else None


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prefetch")
    return {
        "off": _run(tmp, "off", prefetch=False, plugins={"taken_plugin": TAKEN}),
        "on": _run(tmp, "on", plugins={"taken_plugin": TAKEN}),
        "sharded": _run(tmp, "sharded", "--shard-nodes", "7", plugins={"taken_plugin": TAKEN}),
        "sharded-off": _run(tmp, "sharded-off", "--shard-nodes", "7", prefetch=False),
        "killed": _run(tmp, "killed", plugins={"killer_plugin": KILLER, "taken_plugin": TAKEN}),
    }


@pytest.mark.parametrize("mode", ["on", "sharded", "killed"])
def test_every_report_is_the_same_as_without_it(runs, mode):
    """The sample fleet (passes, FAILs, SKIPs, ERRORs, nodes whose tools hung or whose GPU fell off
    the bus): every report file and the terminal's summary as without prefetching."""
    base = "sharded-off" if mode == "sharded" else "off"
    want, got = _reports(runs[base][0]), _reports(runs[mode][0])
    assert sorted(got) == sorted(want) and "results.jsonl" in want
    for f in want:
        assert got[f] == want[f], f
    assert runs[mode][1] == runs[base][1]


def test_the_child_parsed_the_nodes(runs):
    """Every node but the first (loaded before anything could be ahead of it) and those whose
    gathering failed came parsed; with shards too (the child follows the run's node order)."""
    assert runs["on"][2] >= len(NODES) // 2
    assert runs["sharded"][2] >= len(NODES) // 2
    assert runs["off"][2] == -1   # NODEGATE_PREFETCH=0: none started


def test_a_child_that_dies_leaves_the_rest_to_the_pytest_process(runs):
    assert 0 < runs["killed"][2] < runs["on"][2]


def _load(node: str) -> Bundle:
    return Bundle.load(FLEET / node)


def test_in_order_each_node_but_the_first_comes_parsed():
    p = Prefetch(NODES[:6], _load)
    try:
        got = [p.take(n) for n in NODES[:6]]
    finally:
        p.stop()
    assert got[0] is None and all(isinstance(g, dict) and isinstance(g["facts"], dict) for g in got[1:])
    assert p.taken == 5 and p.dead


def test_parsed_facts_and_results_are_those_made_here():
    """The facts and every check's result the child hands over equal what this process makes of
    the same bundle (a healthy node, a node whose GPU fell off the bus, one whose tools hung)."""
    from nodegate.checks import evaluate as check
    from nodegate.spec import load_spec
    for node in ("h200-580-open-healthy", "gpu-fallen-off-bus", "smi-hang", "nvlink-crc-errors"):
        spec = load_spec(_load(node).meta.get("spec") or {}, node)
        p = Prefetch(["x", node], _load, lambda n, spec=spec: spec)
        try:
            assert p.take("x") is None   # not a node: loading it fails in the child, nothing comes back
            got = p.take(node)
        finally:
            p.stop()
        assert got is not None, node
        here = NodeFacts(_load(node))
        for k, v in got["facts"].items():
            if k != "_parse_spent":
                assert getattr(here, k) == v, (node, k)
        assert got["checked"], node
        assert not any(cid == "NG-INV-003" for cid, _ in got["checked"])   # compares the run's other nodes
        for (cid, slot), res in got["checked"].items():
            assert check(cid, here, spec, slot) == res, (node, cid, slot)


def test_out_of_order_never_waits_and_recovers():
    """A node asked for out of the run's order (a selection that skips nodes) is parsed here; the
    answer for the skipped node is read later, and prefetching goes on."""
    a, b, c, d, e = NODES[:5]
    p = Prefetch([a, b, c, d, e], _load)
    try:
        assert p.take(a) is None          # asks for b
        assert p.take(c) is None          # b skipped: c parsed here, no waiting for b
        assert p._asked == [b] or p._asked == [d]
        if p._asked == [b]:               # b still in flight: its answer is read at the next take
            assert p._conn.poll(60)
        got = [p.take(n) for n in (d, e)]
    finally:
        p.stop()
    assert got[-1] is not None            # prefetching resumed
    assert not p._asked and not p._ready


def test_stop_ends_the_child_and_is_idempotent():
    p = Prefetch(NODES[:3], _load)
    p.take(NODES[0])
    proc = p._proc
    assert proc is not None and proc.is_alive()
    p.stop()
    p.stop()
    assert not proc.is_alive()
    assert p.take(NODES[1]) is None       # stopped: everything is parsed here


def test_parsed_cache_keeps_only_facts(monkeypatch):
    f = NodeFacts(_load("h200-580-open-healthy"))
    f.__dict__["_ng_identity_conflicts"] = ["not a fact of the bundle"]
    cache = f.parsed_cache()
    assert cache is not None and "gpus" in cache and "_parse_spent" in cache
    assert "_ng_identity_conflicts" not in cache and "bundle" not in cache and "node" not in cache


def test_a_node_that_spent_half_its_parse_budget_is_parsed_where_it_is_judged(monkeypatch):
    """Past half the budget the budget's errors depend on the order the facts are asked for:
    nothing is handed over, the pytest process parses it in its checks' order."""
    class Clock:
        t = 0.0

        def __call__(self):
            Clock.t += collect.PARSE_BUDGET_S / 8
            return Clock.t
    monkeypatch.setattr(collect, "cpu_clock", Clock())
    assert NodeFacts(_load("h200-580-open-healthy")).parsed_cache() is None


def test_no_prefetching_process_outlives_an_in_process_run(tmp_path):
    """pytest.main() in a process that goes on: the child is gone when the session is."""
    code = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import multiprocessing, sys, pytest
            rc = pytest.main(["suites", "-q", "-p", "no:cacheprovider", "--tb=no", "--replay", {str(FLEET)!r},
                              "--reports-dir", {str(tmp_path / 'rep')!r}, "-k", "test_gpu_count"])
            alive = [p.name for p in multiprocessing.active_children()]
            print("ALIVE", alive)
            sys.exit(0 if rc in (0, 1) and not alive else 3)
        """)], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT), NODEGATE_PREFETCH="1"))
    assert code.returncode == 0, code.stdout[-2000:] + code.stderr[-2000:]
