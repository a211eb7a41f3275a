"""Run a suite in a pytest subprocess on replayed bundles, as CI does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SYNTH = Path(__file__).resolve().parent / "synthsuite"


@dataclass
class Run:
    rc: int
    output: str
    out: Path          # --reports-dir

    @property
    def html(self) -> Path:
        return self.out / "report.html"

    @property
    def junit(self) -> Path:
        return self.out / "junit.xml"


def synth_suite(dest: Path) -> Path:
    """Copy the synthetic suite (synthsuite/README.md) into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(SYNTH / "suite_conftest.py", dest / "conftest.py")
    shutil.copy(SYNTH / "suite_tests.py", dest / "test_synth.py")
    return dest


def run_pytest(cwd: Path, suite: str, replay: Path, out: Path, *extra: str) -> Run:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1", COLUMNS="120")
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", suite, "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
           "--replay", str(replay), "--reports-dir", str(out), "--html", str(out / "report.html"),
           "--self-contained-html", "--junitxml", str(out / "junit.xml"), *extra]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    return Run(p.returncode, p.stdout + p.stderr, out)
