"""The benchmark's own code (bench/): generated suites, measurement, session counting, and one
``bench/run.py`` smoke run on a 2-node fleet (needs the simulated fleet). No timed assertions: the
benchmark reports numbers, it does not gate on them."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from bench import floors, naive
from bench.measure import run_measured
from bench.run import COLUMNS, table
from tools.fleet import sshd_available

from .helpers import ROOT, junit_cases, outcomes


def test_pytest_floor_suite_has_the_requested_items(tmp_path):
    f = floors.pytest_floor_suite(tmp_path, passed=7, skipped=3)
    r = subprocess.run([sys.executable, "-m", "pytest", f.name, "-p", "no:cacheprovider", "-q",
                        "--junitxml", str(tmp_path / "j.xml")], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
    got = outcomes(junit_cases(tmp_path / "j.xml"))
    assert sorted(got.values()) == ["pass"] * 7 + ["skip"] * 3


def test_naive_suite_runs_one_host_run_per_command(tmp_path):
    """Against local:// (testinfra's local backend) the naive suite has one item per command."""
    f = naive.naive_suite(tmp_path)
    r = subprocess.run([sys.executable, "-m", "pytest", f.name, "-p", "no:cacheprovider", "-q", "--hosts=local://",
                        "--junitxml", str(tmp_path / "j.xml")], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:]
    assert len(naive.COMMANDS) == 31
    assert list(outcomes(junit_cases(tmp_path / "j.xml")).values()) == ["pass"] * 31


def test_hosts_arg_lists_reachable_nodes_with_the_fleet_key():
    key = "/srv/f/keys/client_ed25519"
    fleet = SimpleNamespace(user="root", client_key_path=key, nodes={
        "a": SimpleNamespace(address="127.9.1.1", port=22, reachable=True),
        "b": SimpleNamespace(address="127.9.1.2", port=22, reachable=True),
        "u": SimpleNamespace(address="127.0.1.250", port=22, reachable=False)})
    assert naive.hosts_arg(fleet) == (f"paramiko://root@127.9.1.1:22?ssh_identity_file={key},"
                                      f"paramiko://root@127.9.1.2:22?ssh_identity_file={key}")


def test_run_measured_reports_exit_code_and_child_cpu(tmp_path):
    m = run_measured([sys.executable, "-c", "import sys; sum(range(3_000_000)); print('hi'); sys.exit(3)"])
    assert m.rc == 3
    assert m.output.strip() == "hi"
    assert m.cpu_s > 0 and m.peak_rss_mb > 1


def test_run_measured_peak_rss_is_the_childs_own_not_this_process(tmp_path):
    """A waited child's ``ru_maxrss`` also counts the address space it had before its exec (this
    process's, with vfork or fork): the peak comes from the child's VmHWM, its own and its
    descendants', so a large benchmark process does not raise it."""
    ballast = bytearray(300 * 2**20)
    for i in range(0, len(ballast), 4096):   # resident
        ballast[i] = 1
    code = ("import subprocess, sys, time; b = bytearray(60 * 2**20); b[::4096] = b'x' * len(b[::4096]); "
            "subprocess.run([sys.executable, '-c', 'import time; c = bytearray(90 * 2**20); "
            "c[::4096] = bytes(len(c[::4096])); time.sleep(0.5)']); time.sleep(0.3)")
    m = run_measured([sys.executable, "-c", code])
    assert m.rc == 0, m.output
    assert 90 <= m.peak_rss_mb < 250, m.peak_rss_mb   # the grandchild's 90 MB counts, not our 300
    del ballast


def test_sessions_are_counted_from_chroot_lines(tmp_path):
    log = tmp_path / "sshd-0.log"
    log.write_text('Connection from 127.0.0.1 port 5000 on 127.9.1.1 port 22 rdomain ""\n'
                   'Starting session: command for root from 127.0.0.1 port 5000 id 0\n'
                   'Changed root directory to "/srv/f/nodes/a"\n'
                   'Changed root directory to "/srv/f/nodes/a"\n'
                   'Changed root directory to "/srv/f/nodes/b"\n')
    from tools.fleet.sshd import count_sessions
    assert count_sessions([log, tmp_path / "absent.log"]) == {"/srv/f/nodes/a": 2, "/srv/f/nodes/b": 1}


def test_table_has_a_header_one_line_per_row_and_a_label_per_column():
    t = table([{"nodes": 16, "wall_s": 1.5}, {"nodes": 64}]).splitlines()
    head = [c.replace("_per_node", "/node") for c in COLUMNS]
    assert t[0].split() == head
    assert t[1].split()[:2] == ["16", "1.5"]
    assert t[3] == ""
    legend = t[4:]
    assert [ln.split(":")[0].strip() for ln in legend] == head
    assert all(ln.split(":", 1)[1].strip() for ln in legend)   # every column says what it is
    assert "test_items" not in COLUMNS and {"pytest_items", "junit_testcases"} <= set(COLUMNS)


@pytest.mark.skipif(sshd_available() is not None, reason=f"simulated fleet unavailable: {sshd_available()}")
def test_bench_smoke_on_two_nodes(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, "bench/run.py", "--sizes", "2", "--naive-at", "2", "--no-chromium",
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.loads(out.read_text())
    assert [x["nodes"] for x in rows] == [2]
    row = rows[0]
    for k in ("wall_s", "cpu_s", "peak_rss_mb", "ssh_floor_s", "pytest_floor_s", "floor_wall_s", "ratio_to_floor",
              "exec_channels_per_node", "pytest_items", "junit_testcases", "html_mb", "junit_mb", "naive_wall_s"):
        assert k in row, k
    assert row["exec_channels_per_node"] == 1                       # the whole probe in one exec
    assert row["naive_exec_channels_per_node"] == len(naive.COMMANDS)  # the naive suite: one per check
    assert row["floor_wall_s"] == round(row["ssh_floor_s"] + row["pytest_floor_s"], 3)
    assert row["ratio_to_floor"] == round(row["wall_s"] / row["floor_wall_s"], 2)
    from nodegate.checks import load_all
    per_node = len(load_all())   # one item per check and node (a GPU check's 8 GPUs folded into it)
    assert row["pytest_items"] == row["pytest_floor_items"] == 2 * per_node
    # passed GPUs folded in JUnit too: a testcase per check and node on the healthy fleet
    assert row["junit_testcases"] == row["outcomes"]["tests"] <= row["pytest_items"]


def test_node_of_test_id_maps_node_and_gpu_items_to_their_node():
    from nodegate.session.scheduling import node_of_test_id
    nodes = sorted(["a", "a-1", "gpu-node", "x.y"], key=len, reverse=True)
    assert node_of_test_id("suites/test_driver.py::test_driver_stack[a]", nodes) == "a"
    assert node_of_test_id("suites/test_pcie.py::test_pcie_link[a-1-gpu7]", nodes) == "a-1"
    assert node_of_test_id("suites/test_pcie.py::test_pcie_link[a-gpu12]", nodes) == "a"
    assert node_of_test_id("suites/test_pcie.py::test_pcie_link[gpu-node-gpu0]@gpu-node", nodes) == "gpu-node"
    assert node_of_test_id("suites/test_x.py::test_y[x.y]", nodes) == "x.y"
    assert node_of_test_id("suites/test_x.py::test_y[b]", nodes) is None
    # a site test's own parameters follow its node (issue 18): its items stay on the node's worker
    assert node_of_test_id("site/test_x.py::test_y[a-gpux]", nodes) == "a"
    assert node_of_test_id("site/test_x.py::test_y[a-1-/etc]", nodes) == "a-1"
    assert node_of_test_id("tests/test_plain.py::test_plain", nodes) is None


def test_site_row_file_has_one_host_command_per_test():
    import ast

    from bench.site import COMMANDS_PER_NODE, SITE_TESTS
    tree = ast.parse(SITE_TESTS)
    tests = [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")]
    assert len(tests) == COMMANDS_PER_NODE == 10
    for f in tests:
        calls = [n for n in ast.walk(f) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("run", "check_output", "file")]
        assert len(calls) == 1, f.name
        assert [a.arg for a in f.args.args] == ["host"]


def test_scale_copies_are_replayable_bundles_of_their_own_node(tmp_path):
    from bench import scale
    from nodegate.bundle import Bundle
    names = scale.make_copies(tmp_path / "fleet", 3)
    assert names == ["s00000", "s00001", "s00002"]
    b = Bundle.load(tmp_path / "fleet" / "s00002")
    assert b.node == "s00002" and b.has("smi.qx") and not b.gather_error
    assert (tmp_path / "fleet" / "s00001" / "smi.qx.out").stat().st_nlink == 1   # copies, not links


def test_scale_counts_xml_objects_as_gitlab_does(tmp_path):
    from bench import scale
    f = tmp_path / "j.xml"
    f.write_text('<?xml version="1.0"?>\n<testsuites><testsuite name="a" tests="2" failures="1" errors="0">'
                 '<testcase name="x"/><testcase name="y"><failure message="m">text</failure></testcase>'
                 "</testsuite></testsuites>\n")
    assert scale.xml_objects(f) == (5, 2)


def test_scale_run_at_two_sizes_writes_its_table(tmp_path):
    from bench import scale
    out = tmp_path / "scale.json"
    assert scale.main((2, 4), out) == 0
    rows = json.loads(out.read_text())
    items = sum(8 if c.scope == "gpu" else 1 for c in __import__("nodegate.checks", fromlist=["x"]).load_all().values())
    assert [(r["nodes"], r["items"], r["junit_files"], r["rc"]) for r in rows] == [
        (2, 2 * items, 1, 0), (4, 4 * items, 1, 0)]
    from nodegate.checks import load_all
    # a node's suite, a testcase per check, and a <skipped> for each check skipped there: retired pages
    # (row-remapping board) and the IMEX daemon (fabric.imex=auto: no NVL72 tray)
    per_node = 3 + len(load_all())
    assert rows[1]["nodes_ratio_to_first"] == 2.0 and rows[0]["junit_objects"] == 1 + 2 * per_node
    # pytest alone on as many trivial items, with its protocol and with the fast lane's: both ran
    for r in rows:
        assert r["pytest_alone_items"] > 0 and r["pytest_alone_ms_per_node"] > 0, r
        assert r["fast_lane_alone_ms_per_node"] > 0 and r["ratio_bound"] > 1, r


def test_scale_repeat_runs_the_sizes_in_turn_and_reports_medians(tmp_path, monkeypatch):
    """``--repeat N``: sizes in turn (a slow spell of the machine hits each alike), each size's
    fleet generated once and kept until its last run, wall/CPU/RSS the medians of its runs."""
    from bench import scale
    order = []
    walls = {2: [9.0, 3.0, 4.0], 4: [8.0, 20.0, 7.0]}

    def fake_run_size(n, base, extra=(), *, keep=False):
        k = sum(1 for m, _ in order if m == n)
        order.append((n, keep))
        w = walls[n][k]
        return {"nodes": n, "wall_s": w, "cpu_s": w - 1, "peak_rss_mb": 100.0 + n + k, "loadavg_at_start": 0.5}

    monkeypatch.setattr(scale, "run_size", fake_run_size)
    out = tmp_path / "scale.json"
    assert scale.main((2, 4), out, repeat=3) == 0
    assert order == [(2, True), (4, True), (2, True), (4, True), (2, False), (4, False)]
    rows = json.loads(out.read_text())
    assert [(r["nodes"], r["wall_s"], r["cpu_s"], r["peak_rss_mb"]) for r in rows] == [(2, 4.0, 3.0, 103.0),
                                                                                       (4, 8.0, 7.0, 105.0)]
    assert [x["wall_s"] for x in rows[1]["runs"]] == [8.0, 20.0, 7.0] and rows[1]["repeat"] == 3
    assert rows[1]["wall_ratio_to_first"] == 2.0


def test_paired_windows_compare_the_shards_that_ran_at_the_same_time(tmp_path):
    """bench/paired.py: each small run is compared with the big run's shards finished between its
    start and end; lines that do not parse are left out."""
    from bench import paired
    log = tmp_path / "shards.log"
    log.write_text("big 1 100.5 2.0 0.1\nbig 2 102.0 2.2 0.1\nbig 3 111.0 3.0 0.1\n"
                   "small1 1 101.0 2.0 0.0\nsmall1 2 103.0 2.0 0.0\nnot a line\nsmall2 1 x 1 1\n"
                   "small2 1 112.0 2.5 0.0\n")
    shards = paired.read_shards(log)
    assert sorted(shards) == ["big", "small1", "small2"] and len(shards["small2"]) == 1
    rows = paired.windows(shards, [{"tag": "small1", "start": 100.0, "end": 104.0},
                                   {"tag": "small2", "start": 110.0, "end": 113.0},
                                   {"tag": "small3", "start": 120.0, "end": 121.0}])
    assert rows == [
        {"small": "small1", "small_cpu_per_shard_s": 2.0, "big_shards": [1, 2], "big_cpu_per_shard_s": 2.1,
         "ratio": 1.05},
        {"small": "small2", "small_cpu_per_shard_s": 2.5, "big_shards": [3, 3], "big_cpu_per_shard_s": 3.0,
         "ratio": 1.2}]
    assert paired.read_shards(tmp_path / "missing.log") == {}


def test_paired_run_on_a_few_nodes_writes_its_figures(tmp_path):
    """A real paired run, small enough for the tests: 8 nodes in shards of 2 beside 4-node runs."""
    out = tmp_path / "paired.json"
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--paired", "8,4", "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**__import__("os").environ, "PYTEST_ADDOPTS": "--shard-nodes 2"})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    row = json.loads(out.read_text())
    assert (row["big_nodes"], row["small_nodes"], row["nodes_ratio"]) == (8, 4, 2.0)
    assert row["big_wall_s"] > 0 and row["big_cpu_s"] > 0 and row["big_peak_rss_mb"] > 0 and row["ratio"] > 0
    # the small run still going when the big one exited is not counted (it also ran alone)
    assert row["small_walls_s"] and len(row["small_walls_s"]) in (row["small_runs"] - 1, row["small_runs"])
    logged = row["shards_logged"]
    assert logged.pop("big") == 3 and logged and set(logged.values()) == {1}   # 4 and 2 shards, the last not logged
    assert all(w["big_cpu_per_shard_s"] > 0 and w["small_cpu_per_shard_s"] > 0 for w in row["windows"])
    assert "wall x" in r.stdout
