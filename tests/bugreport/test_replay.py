"""``pytest suites --replay x.log / x.log.gz`` (several at once, or a folder of them) and ``--save-bundles``:
the real pytest run over the real logs, judged by the same suites as a live node."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "bugreports"
L202 = next(LOGS.glob("202-*.log"))
L203 = next(LOGS.glob("203-*.log"))


def junit(path: Path) -> dict[str, str]:
    """{test name: outcome} per item of nodegate's (compact) JUnit (tests/junit_view.py)."""
    from tests.junit_view import outcomes
    return outcomes(path)


def pytest_run(tmp: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    xml = tmp / f"{name}.xml"
    r = subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--tb=no",
                        "--reports-dir", str(tmp / name), "--junitxml", str(xml), *args],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    return r, (junit(xml) if xml.is_file() else {})


def test_several_logs_plain_and_gzip_judged_and_saved_then_replayed_identically(tmp_path):
    gz = tmp_path / "nvidia-bug-report.log.gz"
    gz.write_bytes(gzip.compress(L203.read_bytes()))
    saved = tmp_path / "saved"
    r, first = pytest_run(tmp_path, "logs", "--replay", str(L202), "--replay", str(gz), "--save-bundles", str(saved))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-2000:]   # findings (legacy persistence mode, ...)
    assert first["test_driver_stack[lab-gpu1-node-1]"] == "pass"
    assert first["test_driver_stack[wkstn01]"] == "pass"
    assert first["test_persistence_mode[lab-gpu1-node-1-gpu0]"] == "fail"
    assert first["test_persistence_mode[wkstn01-gpu0]"] == "pass"
    assert first["test_pcie_link_trained[lab-gpu1-node-1-gpu1]"] == "skip"
    assert first["test_kernel_log_gpu[lab-gpu1-node-1-gpu1]"] == "pass"
    assert first["test_required_modules[wkstn01]"] == "error"        # modules.sys is not in a bug report
    meta = json.loads((saved / "wkstn01" / "meta.json").read_text())
    assert (meta["origin"], meta["bug_report_version"], meta["source_file"]) == \
        ("nvidia-bug-report", "31295035", str(gz))
    assert (saved / "lab-gpu1-node-1" / "smi.q.out").is_file()
    r2, again = pytest_run(tmp_path, "saved", "--replay", str(saved))
    assert r2.returncode == 1
    assert again == first


def test_a_folder_of_logs(tmp_path):
    d = tmp_path / "tickets"
    d.mkdir()
    shutil.copy(L203, d / "wkstn01-2022-08-25.log")
    (d / "README.txt").write_text("notes, not a log")
    r, out = pytest_run(tmp_path, "folder", "--replay", str(d))
    assert r.returncode == 1, r.stdout[-3000:]
    assert {k.split("[", 1)[1].rstrip("]").split("-gpu")[0] for k in out} == {"wkstn01"}
    assert out["test_gpu_count[wkstn01]"] == "pass"


def test_a_path_that_is_neither_bundle_nor_log_exits_2(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    r, _ = pytest_run(tmp_path, "bad", "--replay", str(f))
    assert r.returncode == 2
    assert "neither a bundle directory nor an nvidia-bug-report log" in (r.stdout + r.stderr)
