"""No stale evidence (issue 30 item 6): every file in a reports directory belongs to the run that
wrote the reports. An earlier run's archive of a node that is accepted now, its node pages and
JUnit parts are removed and the terminal says so; nothing is removed through a symbolic link,
no directory is touched (a live run's bundles/<node>/ evidence, the bundles a --replay reads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from nodegate.reports.stale import remove_stale

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"
NODEGATE = Path(sys.executable).parent / "nodegate"


def test_only_nodegates_own_files_of_an_earlier_run_go(tmp_path):
    rep = tmp_path / "rep"
    for d in ("bundles/gpu001", "nodes", "junit"):
        (rep / d).mkdir(parents=True)
    keep = {rep / "bundles/gpu002.tar.gz", rep / "nodes/gpu002.html"}
    old = {rep / "bundles/gpu001.tar.gz", rep / "nodes/gpu001.html", rep / "junit/part-001.xml"}
    other = {rep / "bundles/gpu001/meta.json", rep / "bundles/notes.txt", rep / "nodes/style.css",
             rep / "junit/mine.xml"}
    for p in keep | old | other:
        p.write_text("x")
    outside = tmp_path / "outside.tar.gz"
    outside.write_text("not ours")
    os.symlink(outside, rep / "bundles/linked.tar.gz")
    got = remove_stale([("bundles", rep / "bundles", rep), ("nodes", rep / "nodes", rep), ("junit", rep / "junit", rep)],
                       keep)
    assert set(got) == old
    assert all(p.exists() for p in keep | other)
    assert outside.read_text() == "not ours" and os.path.islink(rep / "bundles/linked.tar.gz")


def test_a_linked_folder_is_left_alone(tmp_path):
    real = tmp_path / "elsewhere"
    real.mkdir()
    (real / "gpu001.tar.gz").write_text("x")
    (tmp_path / "rep").mkdir()
    os.symlink(real, tmp_path / "rep" / "bundles")
    assert remove_stale([("bundles", tmp_path / "rep" / "bundles", tmp_path / "rep")], set()) == []
    assert (real / "gpu001.tar.gz").exists()


def test_an_accepted_node_keeps_no_archive_of_an_earlier_run(tmp_path):
    rep = tmp_path / "rep"
    (rep / "bundles" / "h200-580-open-healthy").mkdir(parents=True)
    (rep / "bundles" / "h200-580-open-healthy.tar.gz").write_bytes(b"an earlier run's archive")
    (rep / "bundles" / "h200-580-open-healthy" / "evidence.out").write_text("kept")
    (rep / "nodes").mkdir()
    (rep / "nodes" / "gpu009.html").write_text("an earlier run's page")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([str(NODEGATE), "--replay", str(HEALTHY), "--reports-dir", str(rep), "-q", "--tb=no", "-rN",
                        "-p", "no:cacheprovider"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "nodegate verdict: 1 accepted" in r.stdout
    assert not (rep / "bundles" / "h200-580-open-healthy.tar.gz").exists()
    assert not (rep / "nodes" / "gpu009.html").exists()
    assert (rep / "bundles" / "h200-580-open-healthy" / "evidence.out").read_text() == "kept"
    line = next(ln for ln in r.stdout.splitlines() if "an earlier run left" in ln)
    assert "bundles/h200-580-open-healthy.tar.gz" in line and "nodes/gpu009.html" in line
