"""nodegate-collect's contract for schedulers (examples/slurm, examples/k8s): exit codes, the bundle it
always leaves, and ``--missing`` for a node whose task never ran. No Slurm and no root needed, except
where a test says so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from nodegate.bundle import Bundle
from nodegate.checks import evaluate, load_all
from nodegate.collect import NodeFacts
from nodegate.collect_cli import EXIT_OK, EXIT_PROBE, EXIT_USAGE, EXIT_WRITE, main
from nodegate.spec import load_spec
from tests.bench.helpers import ROOT, junit_cases, outcomes
from tools.fleet.local import evaluate_bundle

SPEC = {"gpu": {"count": 2, "model": "H200"}, "driver": {"version": "580", "flavor": "open"}}


@pytest.fixture
def spec_file(tmp_path):
    p = tmp_path / "spec.yml"
    p.write_text("nodegate:\n  gpu: {count: 2, model: H200}\n  driver: {version: '580', flavor: open}\n")
    return p


def test_missing_writes_a_bundle_whose_every_item_is_error_naming_the_reason(tmp_path, spec_file, capsys):
    rc = main(["--out", str(tmp_path / "b"), "--node", "gpu17", "--spec", str(spec_file),
               "--missing", "slurmd on gpu17 did not answer"])
    assert rc == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith("nodegate-collect: gpu17: marked missing (slurmd on gpu17 did not answer)")
    meta = json.loads((tmp_path / "b" / "gpu17" / "meta.json").read_text())
    assert (meta["status"], meta["error"], meta["spec"], meta["items"]) == \
        ("missing", "slurmd on gpu17 did not answer", SPEC, {})
    b = Bundle.load(tmp_path / "b" / "gpu17")
    assert b.gather_error == "missing: slurmd on gpu17 did not answer"
    got = evaluate_bundle(b, SPEC)
    node_checks = sum(1 for c in load_all().values() if c.scope == "node")
    gpu_checks = len(load_all()) - node_checks
    assert len(got) == node_checks + 2 * gpu_checks  # both GPUs of gpu.count are in the report
    assert set(got.values()) == {"error"}
    r = evaluate("NG-CLK-001", NodeFacts(b), load_spec(SPEC, "test"))
    assert (r.outcome.value, r.message) == \
        ("error", "node not gathered (missing: slurmd on gpu17 did not answer) [smi.qx]")


def test_missing_keeps_an_existing_bundle(tmp_path, capsys):
    d = Bundle("gpu17", {}, {"status": "ok", "spec": {}}).write(tmp_path)
    before = (d / "meta.json").read_bytes()
    assert main(["--out", str(tmp_path), "--node", "gpu17", "--missing", "late"]) == EXIT_OK
    assert (d / "meta.json").read_bytes() == before
    assert capsys.readouterr().out == "nodegate-collect: gpu17: a bundle exists, not marked missing\n"


def test_missing_without_node_is_a_usage_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SLURMD_NODENAME", "gpu03")  # the node the job runs on: not the missing one
    assert main(["--out", str(tmp_path), "--missing", "x"]) == EXIT_USAGE
    assert "--missing needs --node" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text, why", [
    ("- a\n- b\n", "expected a mapping"),
    ("nodegate: [1, 2]\n", "`nodegate:` is not a mapping"),
    ("nodegate: {a: [}\n", "while parsing"),
])
def test_unusable_spec_is_a_usage_error_and_writes_nothing(tmp_path, capsys, text, why):
    spec = tmp_path / "spec.yml"
    spec.write_text(text)
    out = tmp_path / "out"
    assert main(["--out", str(out), "--node", "n1", "--spec", str(spec), "--missing", "x"]) == EXIT_USAGE
    assert why in capsys.readouterr().err
    assert not out.exists()


def test_node_name_that_escapes_the_out_dir_is_refused(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--node", "../x", "--missing", "x"]) == EXIT_USAGE
    assert "node name not usable as a directory: '../x'" in capsys.readouterr().err


def test_unwritable_out_exits_4_with_the_reason(tmp_path, capsys):
    (tmp_path / "out").write_text("a file where the shared directory should be\n")
    assert main(["--out", str(tmp_path / "out"), "--node", "n1", "--missing", "x"]) == EXIT_WRITE
    err = capsys.readouterr().err
    assert err.startswith(f"nodegate-collect: n1: cannot write the bundle under {tmp_path / 'out'}: ")


def test_probe_that_cannot_run_exits_3_and_leaves_a_bundle_naming_it(tmp_path, capsys):
    # chroot into a directory that does not exist: as root "No such file or directory", otherwise
    # "Operation not permitted"; either way the probe produced nothing. Where chroot(8) is not on
    # PATH (Debian's /usr/sbin is not on a plain user's PATH) the process cannot start: the
    # message names the tool
    rc = main(["--out", str(tmp_path / "b"), "--node", "n1", "--root", str(tmp_path / "no-such-root"),
               "--probe-timeout", "20"])
    assert rc == EXIT_PROBE
    why = ("probe produced no evidence" if shutil.which("chroot")
           else "cannot run chroot: No such file or directory")
    assert f"nodegate-collect: n1: probe-failed: {why}" in capsys.readouterr().err
    meta = json.loads((tmp_path / "b" / "n1" / "meta.json").read_text())
    assert meta["status"] == "probe-failed" and "chroot" in meta["error"], meta


def test_replay_of_a_missing_bundle_reports_every_item_error(tmp_path, spec_file):
    """`pytest suites --replay` (the report step of examples/slurm and examples/k8s) over one
    collected-missing node: exit 1, every item ERROR with the reason, in junit.xml."""
    assert main(["--out", str(tmp_path / "b"), "--node", "gpu17", "--spec", str(spec_file),
                 "--missing", "its task never started"]) == EXIT_OK
    r = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--tb=no",
                        "--replay", str(tmp_path / "b"), "--reports-dir", str(tmp_path / "reports")],
                       cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")})
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    cases = junit_cases(tmp_path / "reports" / "junit.xml")
    assert set(outcomes(cases).values()) == {"error"}
    assert all("node not gathered: missing: its task never started" in c["message"] for c in cases.values())
