"""``nodegate`` usage errors of the cross-node options that need no fleet: an option of the phase
given without ``--crossnode FILE`` is exit 2 naming it (ignored, ``--replay DIR --crossnode-run-id
ID`` judged the nodes on their per-node checks alone: a node the recorded phase confirmed faulty was
accepted), before any report is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples"


@pytest.mark.parametrize("opts", [["--crossnode-run-id", "xn1"], ["--crossnode-live"], ["--crossnode-plan"],
                                  ["--crossnode-ibnetdiscover", "fabric.out"], ["--crossnode-ibdiagnet", "d.log"]])
def test_a_crossnode_option_without_crossnode_is_a_usage_error(opts, tmp_path):
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(SAMPLES), "--reports-dir", str(reports),
                        "-p", "no:cacheprovider", "-q", *opts], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"{opts[0]} needs --crossnode FILE" in r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not (reports / "results.jsonl").exists()


@pytest.mark.parametrize("opts", [["--crossnode", ""], ["--crossnode=  "]])
def test_an_empty_crossnode_file_name_is_a_usage_error(opts, tmp_path):
    """`--crossnode "$XN_SPEC"` with the variable unset ran the per-node checks alone (exit 0/1 with
    nodes accepted that the phase would have judged)."""
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(SAMPLES), "--reports-dir", str(reports),
                        "-p", "no:cacheprovider", "-q", *opts], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "--crossnode: an empty file name" in r.stderr
    assert not (reports / "results.jsonl").exists()


@pytest.mark.parametrize("rid", ["../../escaped", "/tmp/x", "a/b", ".hidden", "x\x1b[2J", ""])
def test_a_run_id_that_is_no_directory_name_is_a_usage_error(rid, tmp_path):
    """The run id names <bundles>/crossnode/<run id>/: '../x' failed after the whole gather, as an
    'internal error in the cross-node phase: ValueError ...'."""
    (tmp_path / "xn.yaml").write_text("crossnode: {fabric: ib-ndr400}\n")
    reports = tmp_path / "reports"
    r = subprocess.run([sys.executable, "-m", "nodegate.cli", "--replay", str(SAMPLES), "--reports-dir", str(reports),
                        "-p", "no:cacheprovider", "-q", "--crossnode", "xn.yaml", "--crossnode-run-id", rid],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "not a run id" in r.stderr and "\x1b[" not in r.stderr
    assert not (reports / "results.jsonl").exists()
