"""A per-node budget for site checks (issue 31, item 11; docs/site-checks.md, docs/security.md).

Each site command has its deadline (--command-timeout, a check's ``timeout``), and all the site
checks of one node together have ``--site-timeout`` seconds from its first one (default
--connect-timeout + --probe-timeout, the probe's own per-node bound): a command is cut at the
budget's end, and the node's remaining site checks are ERROR without running anything. Before,
one slow node held a run 107 s against a 25 s budget. What is asserted is the bound as figures
read from the run's own recording: the commands recorded for a node and their summed duration,
never a wall-clock race."""

from __future__ import annotations

import json
import textwrap

import pytest

from nodegate.site.pool import PoolOptions, SitePool
from nodegate.site.state import SiteRun, budget_spent

from .runner import inventory, run_pytest

N = 8          # site tests per node, each a command of SLEEP seconds
SLEEP = 1.5
BUDGET = 4.0   # --site-timeout: two commands fit, the third is cut, five never run

SITE = textwrap.dedent(f'''
    import pytest

    @pytest.mark.parametrize("i", range({N}))
    def test_slow(host, i):
        assert host.run("sleep {SLEEP}; echo {{}}".format(i)).rc == 0

    def test_swallows(host):
        try:                                # a test that catches the budget's error is still ERROR
            host.run("sleep {SLEEP}")
        except Exception:
            pass
''')


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    t = tmp_path_factory.mktemp("budget")
    (t / "test_site.py").write_text(SITE)
    inv = inventory(t / "inv.yml", {"box1": {"ansible_connection": "local"},
                                    "box2": {"ansible_connection": "local"}})
    run = run_pytest([str(t / "test_site.py"), "--inventory", str(inv), "--site-timeout", str(BUDGET),
                      "--command-timeout", "20"], t / "reports")
    return t, run


def _recorded(run, node: str) -> list[dict]:
    meta = json.loads((run.out / "bundles" / node / "meta.json").read_text())
    return [meta["items"][c["key"]] for c in meta.get("site", {}).get("commands", [])]


@pytest.mark.parametrize("node", ["box1", "box2"])
def test_a_nodes_site_checks_stop_at_its_budget(live, node):
    """Per node: box2's checks get their own budget, whatever box1 spent."""
    _, run = live
    got = run.outcomes()
    seq = [got[f"test_slow[{node}-{i}]"] for i in range(N)] + [got[f"test_swallows[{node}]"]]
    assert set(seq) <= {"pass", "error"}, seq
    first_error = seq.index("error")
    assert seq[first_error:] == ["error"] * (len(seq) - first_error), seq   # pass..., then error only
    assert first_error <= int(BUDGET // SLEEP), seq
    assert seq.count("error") >= N + 1 - int(BUDGET // SLEEP) - 1
    recorded = _recorded(run, node)
    # the bound, from the recording: at most the commands that fit plus the one cut, and their
    # summed duration within the budget (and a generous 2 s of process start-up)
    assert len(recorded) <= int(BUDGET // SLEEP) + 1, recorded
    assert sum(r["duration_s"] or 0 for r in recorded) <= BUDGET + 2.0, recorded
    last = run.message(f"test_swallows[{node}]")
    assert "site checks used their budget of 4 s (--site-timeout" in last, last


def test_the_budget_errors_are_said_and_reach_the_reports(live):
    _, run = live
    msgs = [run.message(f"test_slow[box1-{i}]") for i in range(N)]
    assert sum("used their budget of 4 s" in m for m in msgs) >= N - int(BUDGET // SLEEP) - 1
    rec = run.record(f"test_slow[box1-{N - 1}]")
    assert rec["outcome"] == "error" and "budget" in json.dumps(rec)


def test_a_replay_of_the_run_needs_no_budget_and_keeps_the_verdicts(live):
    """A replay answers from the recording: what the budget cut stays ERROR (it was not run, so it
    is not recorded), what ran is judged as before."""
    t, run = live
    again = run_pytest([str(t / "test_site.py"), "--replay", str(run.out / "bundles"), "--site-timeout", "0.001"],
                       t / "replay", nonet=True)
    assert again.outcomes() == run.outcomes()


def test_the_default_budget_is_connect_plus_probe_timeout():
    from types import SimpleNamespace
    from nodegate.site import session as site_session
    o = SimpleNamespace(replay="x", known_hosts=None, accept_new_host_keys=False, connect_timeout=3.0,
                        command_timeout=7.0, probe_timeout=22.0, forks=1, sudo=False, gpu_source="auto",
                        site_timeout=None)
    pool = site_session.make_pool(SimpleNamespace(option=o), run=None, jobs=[])
    assert pool.opts.site_timeout == 25.0
    o.site_timeout = 9.0
    assert site_session.make_pool(SimpleNamespace(option=o), run=None, jobs=[]).opts.site_timeout == 9.0


def test_a_spent_budget_is_known_per_node_without_waiting(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("nodegate.site.state.time.monotonic", lambda: clock[0])
    st = SiteRun(run=None, pool=SitePool(None, live=True, urls={}, options=PoolOptions(site_timeout=25.0)))
    st.begin("slow", "SITE-A", None)
    st.begin("fast", "SITE-A", None)
    clock[0] = 124.9
    assert st.over_budget("slow") is None
    clock[0] = 125.0
    assert st.over_budget("slow") == budget_spent(25.0)
    st.begin("late", "SITE-A", None)           # a node's budget starts at its own first site check
    assert st.over_budget("late") is None and st.over_budget("never") is None
