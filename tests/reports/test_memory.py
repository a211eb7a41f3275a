"""Bounded memory of a run (docs/performance.md "4,096 nodes"): shards of nodes collected and run
in turn, node evidence released once its items are done, nodegate's reports compacted and their
passed setup/teardown reports not kept by pytest's terminal reporter. The figures are the
benchmark's (``make bench --scale``); these tests pin the mechanisms, and the pytest behaviour they
rely on (so they fail the day pytest changes it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .runner import ROOT, run_pytest, synth_suite
from .test_run_outputs import build_fleet

PROBE = '''
import json, os, pytest
from nodegate.run import RUN_KEY
S = {"collections": [], "max_bundles": 0, "nodes_at_collection": []}

def pytest_collection_finish(session):
    S["collections"].append(len(session.items))
    run = session.config.stash.get(RUN_KEY, None)
    if run is not None:
        S["nodes_at_collection"].append(list(run.nodes))

def pytest_runtest_logfinish(nodeid):
    run = _cfg[0].stash.get(RUN_KEY, None)
    if run is not None:
        S["max_bundles"] = max(S["max_bundles"], len(run.bundles))

_cfg = [None]
def pytest_configure(config):
    _cfg[0] = config

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    S["stats"] = {k: len(v) for k, v in tr.stats.items()}
    passed = tr.stats.get("passed", [])
    S["compacted"] = all(dict(r.keywords) == {} and tuple(r.user_properties) == () for r in passed)
    ids = getattr(tr, "_progress_nodeids_reported", None)
    S["progress"] = [type(ids).__name__, len(ids), len(list(set.__iter__(ids)))]
    try:
        from _pytest.subtests import failed_subtests_key
        S["subtest_counts"] = dict((str(k), v) for k, v in session.config.stash[failed_subtests_key].items())
    except ImportError:
        S["subtest_counts"] = None
    with open(os.environ["PROBE_OUT"], "w") as fh:
        json.dump(S, fh)
'''


def _probe_run(tmp_path, fleet, *extra):
    suite = synth_suite(tmp_path / "suite")
    (tmp_path / "memprobe.py").write_text(PROBE)
    out = tmp_path / "probe.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), PROBE_OUT=str(out))
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", ".", "-p", "no:cacheprovider", "-p", "memprobe", "--replay", str(fleet),
           "--reports-dir", str(tmp_path / "out"), *extra]
    p = subprocess.run(cmd, cwd=suite, env=env, capture_output=True, text=True, timeout=600)
    return p, json.loads(out.read_text()) if out.exists() else None


def _results(d):
    return sorted((x["nodeid"].split("/", 1)[1], x["outcome"], x["message"]) for x in
                  (json.loads(ln) for ln in (d / "results.jsonl").read_text().splitlines()))


def _plain_probe(tmp_path):
    """pytest alone (no nodegate item) on two passing tests, with the probe plugin."""
    (tmp_path / "test_plain.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "memprobe.py").write_text(PROBE)
    out = tmp_path / "probe.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), PROBE_OUT=str(out))
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "pytest", "test_plain.py", "-p", "no:cacheprovider", "-p", "memprobe"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p, json.loads(out.read_text())


def test_pytest_keeps_passed_phase_reports_in_terminal_stats(tmp_path):
    """The pytest behaviour nodegate's compaction relies on: the terminal reporter files a passed
    setup/teardown report under stats[""] (two per test) and keeps it to the session's end."""
    p, s = _plain_probe(tmp_path)
    assert s["stats"] == {"": 4, "passed": 2}


def test_pytest_keeps_an_id_per_reported_test_for_progress_and_subtests(tmp_path):
    """The pytest behaviour nodegate.reports.live.ReportedProgress and _forget_subtest_count rely
    on: the terminal reporter keeps the id of every reported test in a plain set
    (``_progress_nodeids_reported``) and counts it for the progress; pytest >= 9's subtests
    plugin keeps a 0 count per test under ``failed_subtests_key``."""
    p, s = _plain_probe(tmp_path)
    assert s["progress"] == ["set", 2, 2] and "[100%]" in p.stdout
    import pytest as _pytest
    if int(_pytest.__version__.split(".")[0]) >= 9:
        assert sorted(s["subtest_counts"].values()) == [0, 0] and len(s["subtest_counts"]) == 2


def test_a_sharded_run_counts_reported_tests_without_keeping_their_ids(tmp_path):
    """Sharded: the terminal's progress is a count (ReportedProgress: no id kept), it still
    reaches 100 %, and the subtests plugin's 0 entries of passed items are gone."""
    fleet = build_fleet(tmp_path / "fleet")
    p, s = _probe_run(tmp_path, fleet, "--shard-nodes", "2")
    assert p.returncode == 1, p.stdout[-3000:]
    assert s["progress"] == ["ReportedProgress", 8, 0], s   # 8 items: a GPU check's GPUs fold into one a node
    assert "[100%]" in p.stdout
    assert s["subtest_counts"] in (None, {}), s
    p, s = _probe_run(tmp_path, fleet, "--shard-nodes", "0")    # not sharded: pytest's own set
    assert s["progress"] == ["set", 8, 8], s


def test_nodegate_reports_are_compacted_and_phase_reports_not_kept(tmp_path):
    fleet = build_fleet(tmp_path / "fleet")
    p, s = _probe_run(tmp_path, fleet)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    assert s["stats"].get("", 0) == 0          # 8 items: no passed setup/teardown report kept
    # pytest's items (a GPU check: one a node, its GPUs folded); results.jsonl keeps 11 records
    assert (s["stats"]["passed"], s["stats"]["failed"], s["stats"]["error"]) == (3, 3, 2)
    assert s["compacted"]
    assert "3 failed, 3 passed, 2 errors" in p.stdout    # pytest's own summary counts them as before


def test_durations_keeps_the_phase_reports(tmp_path):
    fleet = build_fleet(tmp_path / "fleet")
    p, s = _probe_run(tmp_path, fleet, "--durations=3")
    assert s["stats"][""] == 14                # passed setups (6: 2 items ERROR in setup) and teardowns (8)
    assert "slowest 3 durations" in p.stdout


def test_shards_collect_and_run_nodes_in_turn_with_the_same_results(tmp_path):
    fleet = build_fleet(tmp_path / "fleet")
    whole = run_pytest(synth_suite(tmp_path / "w"), ".", fleet, tmp_path / "whole")
    p, s = _probe_run(tmp_path, fleet, "--shard-nodes", "2")
    assert p.returncode == whole.rc == 1, p.stdout[-3000:]
    # 4 nodes in shards of 2 (replay order: a1, b2, down, evil): two collections, one per shard
    assert len(s["nodes_at_collection"]) == 2 and [len(n) for n in s["nodes_at_collection"]] == [2, 2]
    assert s["collections"] == [4, 4]   # a1 + b2: 2 + 2 items (a GPU check's GPUs folded); down (2) + evil (2)
    assert s["max_bundles"] <= 2               # released once their items are done
    assert _results(tmp_path / "out") == _results(whole.out)
    assert "3 failed, 3 passed, 2 errors" in p.stdout
    shard_page = (tmp_path / "out" / "report.html").read_text()
    assert 'id="ng-verdict">4 node(s): <b class="st-ok">1 accepted</b>' in shard_page


def test_shards_with_deselection_and_collect_only(tmp_path):
    fleet = build_fleet(tmp_path / "fleet")
    p, _ = _probe_run(tmp_path, fleet, "--shard-nodes", "1", "-k", "gpu_health", "--collect-only", "-q")
    assert p.returncode == 0, p.stdout[-3000:]
    listed = [ln for ln in p.stdout.splitlines() if "::test_" in ln]
    assert len(listed) == 4 and all("test_gpu_health" in ln for ln in listed)   # one a node, its GPUs folded
    assert "4/8 tests collected (4 deselected)" in p.stdout


def test_shards_keep_the_selection_of_every_shard(tmp_path):
    """Each shard's collection adds its nodes' selected items: nodes of earlier shards are not
    reported "not evaluated" because a later shard was collected, and -k on a node of the last
    shard leaves exactly the others not evaluated."""
    fleet = build_fleet(tmp_path / "fleet")
    p, _ = _probe_run(tmp_path, fleet, "--shard-nodes", "2")
    doc = json.loads((tmp_path / "out" / "rma.json").read_text())
    assert p.returncode == 1 and doc["not_evaluated"] == [], p.stdout[-3000:]
    p, _ = _probe_run(tmp_path, fleet, "--shard-nodes", "1", "-k", "evil")
    doc = json.loads((tmp_path / "out" / "rma.json").read_text())
    assert sorted(e["node"] for e in doc["not_evaluated"]) == ["a1", "b2", "down"], p.stdout[-3000:]
    assert all("no selected item" in e["reason"] for e in doc["not_evaluated"])
    p, _ = _probe_run(tmp_path, fleet, "--shard-nodes", "1", "-k", "no_such_check")
    assert p.returncode == 2 and "no nodegate check selected" in p.stdout + p.stderr, p.stdout[-2000:]


PARSE_PROBE = '''
import collections, json, os, pytest
from nodegate import altkeys
from nodegate.session.state import IDENT_KEY
PARSES = collections.Counter()
_orig = altkeys.parse_smi

def _counting(key, text):
    # every process of the run counts (the prefetching child parses the nodes after the first:
    # nodegate.fleetrun.prefetch): one line a parse, appended
    import re
    m = re.search(r"<serial>(\\d+)</serial>", text)
    with open(os.environ["PROBE_OUT"] + ".parses", "a") as fh:
        fh.write((m.group(1) if m else "?") + "\\n")
    return _orig(key, text)

altkeys.parse_smi = _counting

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    try:
        with open(os.environ["PROBE_OUT"] + ".parses") as fh:
            PARSES.update(ln.strip() for ln in fh if ln.strip())
        os.unlink(os.environ["PROBE_OUT"] + ".parses")
    except FileNotFoundError:
        pass
    cache = session.config.stash.get(IDENT_KEY, {})
    with open(os.environ["PROBE_OUT"], "w") as fh:
        json.dump({"parses": sorted(PARSES.values()), "n_parsed": len(PARSES),
                   "cache_kinds": sorted({k[0] for k in cache}), "cache_size": len(cache)}, fh)
'''


def test_a_sharded_replay_parses_each_node_once_and_releases_its_cache_entries(tmp_path):
    """Each node's nvidia-smi XML is parsed once: its node_identity item (run after the shard's
    nodes were released) reads only the node's ids, and the release of a node takes the node's
    per-GPU identities out of the item cache by key, without scanning every node's entries
    (both made a 4,096-node replay super-linear: docs/performance.md). The reports are those of
    the unsharded run."""
    from bench import scale
    scale.make_copies(tmp_path / "fleet", 5)
    (tmp_path / "parseprobe.py").write_text(PARSE_PROBE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), PROBE_OUT=str(tmp_path / "p.json"))
    env.pop("PYTEST_ADDOPTS", None)

    def run(out, *extra):
        cmd = [sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider", "-p", "parseprobe",
               "--replay", str(tmp_path / "fleet"), "--reports-dir", str(tmp_path / out), *extra]
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
        return json.loads((tmp_path / "p.json").read_text())

    sharded = run("sharded", "--shard-nodes", "2")
    # the first GPU's serial names each copy: 5 nodes, one parse each
    assert sharded["n_parsed"] == 5 and sharded["parses"] == [1] * 5, sharded
    # what stays per node: its driver version, Xids and identity verdict (3 entries), no GPU entries
    assert "gpus" not in sharded["cache_kinds"] and "slots" not in sharded["cache_kinds"], sharded
    assert sharded["cache_size"] <= 3 * 5, sharded
    run("whole", "--shard-nodes", "0")

    def rows(d):
        return sorted((x["nodeid"].split("::", 1)[1], x["outcome"], x["message"], x["gpu_serial"]) for x in
                      (json.loads(ln) for ln in (tmp_path / d / "results.jsonl").read_text().splitlines()))

    assert rows("sharded") == rows("whole")
    def rma(d):
        doc = json.loads((tmp_path / d / "rma.json").read_text())
        return doc["rows"], doc["not_evaluated"]

    assert rma("sharded") == rma("whole")
    page = (tmp_path / "sharded" / "nodes" / "s00003.html").read_text()
    assert "<th>GPUs</th><td>8</td>" in page and "<th>GPU model</th><td>NVIDIA H200</td>" in page


SKIP_PROBE = '''
import json, os, pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    with open(os.environ["PROBE_OUT"], "w") as fh:
        json.dump(sorted({type(r).__name__ for r in tr.stats.get("skipped", [])}), fh)
'''


def test_skip_reports_are_kept_as_stand_ins_with_the_same_short_summary(tmp_path):
    """A nodegate item's skip report stays in the terminal's stats as a SkippedStandIn (id,
    phase, path/line/reason): ``-rs``, folded and ``--no-fold-skipped``, prints what the
    reports themselves print (``--durations`` keeps the reports as they are)."""
    from bench import scale
    scale.make_copies(tmp_path / "fleet", 2)    # the healthy H200 sample: 8 skips a node
    (tmp_path / "skipprobe.py").write_text(SKIP_PROBE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), PROBE_OUT=str(tmp_path / "p.json"))
    env.pop("PYTEST_ADDOPTS", None)

    def run(*extra):
        cmd = [sys.executable, "-m", "pytest", "suites", "-q", "-rs", "-p", "no:cacheprovider", "-p", "skipprobe",
               "--replay", str(tmp_path / "fleet"), "--reports-dir", str(tmp_path / "r"), *extra]
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
        return [ln for ln in p.stdout.splitlines() if ln.startswith("SKIPPED")], json.loads((tmp_path / "p.json").read_text())

    for fold in ((), ("--no-fold-skipped",)):
        slim, kinds = run(*fold)
        assert kinds == ["SkippedStandIn"]
        kept, kinds = run("--durations=1", *fold)
        assert kinds == ["TestReport"]
        # 2 retired-pages lines (one item a node, naming its 8 GPUs), and the IMEX daemon's
        # (NG-FAB-002) skip: one folded line, or one per node
        want = 3 if not fold else 4
        assert slim == kept and len(slim) == want and any("retired pages do not apply" in ln for ln in slim), slim[:3]
    assert "suites/test_" in slim[0] and "::" in slim[0]    # --no-fold-skipped: by test id
