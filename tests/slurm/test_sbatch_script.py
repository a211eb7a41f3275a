"""examples/slurm/collect.sbatch without a Slurm: its configuration errors exit 2 before any node is
touched, with a message naming what is wrong (the job's exit code contract, see the script's header).
The run on a real Slurm is tests/slurm/test_slurm_example.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.helpers import ROOT

SBATCH = ROOT / "examples" / "slurm" / "collect.sbatch"


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "PYTEST_", "NODEGATE", "RUN_DIR"))}
    return subprocess.run(["bash", str(SBATCH)], cwd=tmp_path, env={**base, **env}, capture_output=True,
                          text=True, timeout=60)


def test_script_parses():
    r = subprocess.run(["bash", "-n", str(SBATCH)], capture_output=True, text=True)
    assert (r.returncode, r.stderr) == (0, "")


def test_outside_a_slurm_job_exits_2(tmp_path):
    r = _run(tmp_path)
    assert r.returncode == 2
    assert r.stderr == "nodegate: not inside a Slurm job: submit this script with sbatch (see the header)\n"


@pytest.fixture
def job_env(tmp_path) -> dict[str, str]:
    spec = tmp_path / "spec.yml"
    spec.write_text("nodegate: {gpu: {count: 8}}\n")
    return {"SLURM_JOB_ID": "41", "SLURM_JOB_NODELIST": "gpu[01-02]", "NODEGATE_SRC": str(ROOT),
            "NODEGATE_VENV": sys.prefix, "NODEGATE_SPEC": str(spec), "RUN_DIR": str(tmp_path / "run")}


@pytest.mark.parametrize("key, value, message", [
    ("NODEGATE_SRC", "/nonexistent/src",
     "NODEGATE_SRC=/nonexistent/src is not a nodegate checkout (no conftest.py, suites/)"),
    ("NODEGATE_VENV", "/nonexistent/venv",
     "NODEGATE_VENV=/nonexistent/venv has no bin/nodegate-collect (run `make venv` in {src})"),
    ("NODEGATE_SPEC", "/nonexistent/spec.yml", "NODEGATE_SPEC=/nonexistent/spec.yml is not readable"),
])
def test_unusable_configuration_exits_2_before_any_node(tmp_path, job_env, key, value, message):
    r = _run(tmp_path, **{**job_env, key: value})
    assert r.returncode == 2
    assert r.stderr == "nodegate: " + message.format(src=ROOT) + "\n"
    assert not (tmp_path / "run").exists()  # nothing collected, nothing written


def test_run_dir_that_cannot_be_created_exits_2(tmp_path, job_env):
    (tmp_path / "file").write_text("x\n")
    r = _run(tmp_path, **{**job_env, "RUN_DIR": str(tmp_path / "file" / "run")})
    assert r.returncode == 2
    assert r.stderr.endswith(f"nodegate: cannot create {tmp_path / 'file' / 'run'}\n")


def test_script_passes_only_options_that_exist():
    from nodegate.collect_cli import _parser

    from .commands import help_options, invocations

    text = SBATCH.read_text()
    collect = invocations(text, "nodegate-collect\"")
    assert collect == [["--out", "--node", "--spec", "--root", "--command-timeout", "--probe-timeout"],
                       ["--out", "--node", "--spec", "--missing"]]
    assert {o for c in collect for o in c} <= help_options(_parser().format_help())
    report = invocations(text, "-m pytest suites")
    assert report == [["--tb", "--replay", "--reports-dir"]]
