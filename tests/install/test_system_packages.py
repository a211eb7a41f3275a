"""Issue 40.7: `make test` on a fresh machine. ONE list of system packages
(tools/system_packages.txt) that `make test` installs as root with apt-get
(tools/system_packages.py ensure) and .ci/run leaves to it; every test that needs a package and
finds it missing SKIPs naming it ("apt-get install <package>"), never fails."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tools import system_packages as sp  # noqa: E402

#: "apt-get install PKG..." in a skip reason or a message telling what to install
_NAMED = re.compile(r"apt-get install ((?:[a-z0-9][a-z0-9.+-]*[ ]?)+)")


def _named_packages() -> set[str]:
    out: set[str] = set()
    for base in ("tests", "tools", "bench", "nodegate"):
        for f in (ROOT / base).rglob("*.py"):
            for m in _NAMED.finditer(f.read_text(errors="replace")):
                out.update(p for p in m.group(1).split() if p not in ("-y", "-qq"))
    out.update(p for m in _NAMED.finditer((ROOT / "Makefile").read_text()) for p in m.group(1).split())
    return out


def test_every_package_a_skip_reason_names_is_in_the_one_list():
    listed = set(sp.packages())
    named = _named_packages() - {"package", "pkg"}
    assert named, "no skip reason names a package: the scan is broken"
    assert named <= listed, f"named in skip reasons but not in tools/system_packages.txt: {sorted(named - listed)}"


def test_ci_installs_only_what_make_needs_and_make_test_installs_the_rest():
    ci = (ROOT / ".ci" / "run").read_text()
    for p in sp.packages():
        assert re.search(rf"\b{re.escape(p)}\b", ci.split("make test")[0].split("for p in", 1)[-1].split("; do")[0]) \
            is None, f".ci/run installs {p} itself: the one list is tools/system_packages.txt"
    assert "make test" in ci
    make = (ROOT / "Makefile").read_text()
    recipe = make.split("\ntest: ", 1)[1].split("\n\n", 1)[0]
    assert "tools/system_packages.py ensure" in recipe.splitlines()[1], recipe


def test_ensure_without_root_installs_nothing_and_says_what_skips(monkeypatch, capsys):
    monkeypatch.setattr(sp, "missing", lambda pkgs=None: ["busybox-static"])
    monkeypatch.setattr(sp.os, "geteuid", lambda: 1000)
    ran = []
    monkeypatch.setattr(sp.subprocess, "run", lambda *a, **k: ran.append(a))
    assert sp.ensure() == 0
    assert ran == []
    out = capsys.readouterr().out
    assert "busybox-static missing and not installed (not root)" in out and "SKIP naming the package" in out


def test_a_failed_install_is_reported_and_not_fatal(monkeypatch, capsys):
    monkeypatch.setattr(sp, "missing", lambda pkgs=None: ["no-such-package-ng"])
    monkeypatch.setattr(sp, "why_not", lambda pkgs: None)

    class R:
        returncode = 100
    monkeypatch.setattr(sp.subprocess, "run", lambda *a, **k: R())
    assert sp.ensure() == 0
    assert "exited 100" in capsys.readouterr().out


def test_the_list_parses_and_the_command_runs():
    assert "openssh-server" in sp.packages() and "busybox-static" in sp.packages()
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "system_packages.py"), "list"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == sp.packages()
