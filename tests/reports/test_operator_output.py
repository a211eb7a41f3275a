"""Small things an operator meets (issue 32): ``--help`` with nodegate first, the local-mode line
on a machine without an NVIDIA driver, progress lines without ``\\r`` in a log, pytest's cache
kept with the reports, a reports directory inside a directory inventory refused, ``make clean``
removing ``__pycache__`` and stopping ``make fleet``."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

from nodegate.cli import cache_dir
from nodegate.reports.terminal import local_mode_line
from nodegate.session.terminal import progress_line

ROOT = Path(__file__).resolve().parents[2]


def _nodegate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="100", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "nodegate.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_help_lists_nodegate_first_and_marks_refused_testinfra_options(tmp_path):
    p = _nodegate(tmp_path, "--help")
    assert p.returncode == 0, p.stderr
    groups = [ln for ln in p.stdout.splitlines() if ln and not ln.startswith(" ") and ln.endswith(":")]
    assert groups[:3] == ["positional arguments:", "nodegate GPU node acceptance:",
                          "nodegate burn-in (checks under load):"], groups
    text = " ".join(p.stdout.split())
    for flag in ("--hosts=HOSTS", "--connection=CONNECTION", "--ssh-config=SSH_CONFIG", "--force-ansible"):
        assert f"{flag} [refused by nodegate" in text, flag
    assert "--nagios [refused by nodegate: exit codes and output are nodegate's" in text
    assert "--sudo [nodegate: the probe and the site checks run through sudo -n]" in text
    assert not (tmp_path / ".pytest_cache").exists()


def test_local_mode_line_only_without_a_driver(tmp_path):
    opt = types.SimpleNamespace(inventory=None, replay=None, target=None)
    absent = str(tmp_path / "version")
    assert local_mode_line(opt, absent).startswith("nodegate: local mode (no --inventory): this machine has no "
                                                   "NVIDIA driver loaded")
    Path(absent).write_text("NVRM version: 580.159.04\n")
    assert local_mode_line(opt, absent) == ""
    for other in (dict(inventory="hosts.yml"), dict(replay="b/"), dict(target="paramiko://n1")):
        assert local_mode_line(types.SimpleNamespace(**{**vars(opt), **other}), str(tmp_path / "none")) == ""


def test_local_mode_first_line_from_any_directory(tmp_path):
    if Path("/proc/driver/nvidia/version").exists():
        import pytest
        pytest.skip("this machine has an NVIDIA driver: the line is for machines without one")
    p = _nodegate(tmp_path, "-k", "driver_stack", "-q", "--tb=no", "--reports-dir", str(tmp_path / "r"))
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.splitlines()[0].startswith("nodegate: local mode (no --inventory): this machine has no NVIDIA")
    assert not (tmp_path / ".pytest_cache").exists() and (tmp_path / "r" / ".pytest_cache").is_dir()


class _TW:
    def __init__(self, tty: bool):
        self._file = types.SimpleNamespace(isatty=lambda: tty)
        self.hasmarkup = False
        self.out = io.StringIO()

    def write(self, s, flush=False):  # noqa: ARG002
        self.out.write(s)

    def line(self, s=""):
        self.out.write(s + "\n")


def test_progress_lines_in_a_log_are_whole_lines():
    tw = _TW(tty=False)
    line = progress_line(tw, every_s=0)
    for done in (0, 0, 1, 2, 2):
        line(f"nodegate: gathered {done}/2 nodes, 0 unreachable/errors, {done * 0.5:.1f}s ")
    line("nodegate: gathered 2/2 nodes, 0 unreachable/errors, 1.3s ", True)
    got = tw.out.getvalue()
    assert "\r" not in got
    assert got.splitlines() == ["nodegate: gathered 0/2 nodes, 0 unreachable/errors, 0.0s",
                                "nodegate: gathered 1/2 nodes, 0 unreachable/errors, 0.5s",
                                "nodegate: gathered 2/2 nodes, 0 unreachable/errors, 1.0s",
                                "nodegate: gathered 2/2 nodes, 0 unreachable/errors, 1.3s"]
    tty = _TW(tty=True)
    progress_line(tty)("nodegate: gathered 1/2 nodes ")
    assert tty.out.getvalue() == "\rnodegate: gathered 1/2 nodes "


def test_pytest_cache_lives_in_the_reports_dir(tmp_path):
    assert cache_dir([], tmp_path) == tmp_path / "reports" / ".pytest_cache"
    assert cache_dir(["--reports-dir", "out/x", "-q"], tmp_path) == tmp_path / "out" / "x" / ".pytest_cache"
    assert cache_dir(["--reports-dir=/abs/r"], tmp_path) == Path("/abs/r/.pytest_cache")
    assert cache_dir(["--", "--reports-dir", "no"], tmp_path) == tmp_path / "reports" / ".pytest_cache"


def test_cache_provider_off_sets_no_cache_dir(tmp_path):
    """`nodegate -p no:cacheprovider` printed pytest's "Unknown config option: cache_dir": with
    the cache plugin off, no cache_dir is set (pytest declares the option in that plugin)."""
    from nodegate.cli import no_cache, pytest_args
    for argv in (["-p", "no:cacheprovider"], ["-pno:cacheprovider"], ["-p=no:cacheprovider", "-q"]):
        assert no_cache(argv)
        assert not any(a.startswith("cache_dir=") for a in pytest_args(argv, tmp_path)), argv
    assert not no_cache(["-q", "--", "-p", "no:cacheprovider"])
    assert any(a.startswith("cache_dir=") for a in pytest_args(["-q"], tmp_path))
    p = _nodegate(tmp_path, "--collect-only", "-q", "-p", "no:cacheprovider")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "cache_dir" not in p.stdout + p.stderr


def test_reports_dir_inside_a_directory_inventory_is_refused(tmp_path):
    inv = tmp_path / "site"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all:\n  hosts:\n    n1: {ansible_host: 127.0.0.1}\n")
    p = _nodegate(inv, "--inventory", ".", "-q")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "--reports-dir reports is inside the inventory directory .: ansible-core reads every file" in (
        p.stdout + p.stderr)
    assert not (inv / "reports").exists()
    # a file inventory beside its reports is fine (--collect-only: the jobs are built, nobody contacted)
    p = _nodegate(tmp_path, "--inventory", "site/hosts.yml", "--reports-dir", "site/reports", "--collect-only", "-q")
    assert p.returncode == 0, p.stdout + p.stderr


def test_make_clean_removes_pycache_and_stops_the_fleet():
    p = subprocess.run(["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "tools.fleet.cli stop --out fleet" in p.stdout
    assert "-name __pycache__" in p.stdout and " fleet " in p.stdout
