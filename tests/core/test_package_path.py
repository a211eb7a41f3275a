"""nodegate's package path holds the package alone in an installed (editable) checkout: appending
the checkout root (what a bare PYTHONPATH checkout needs for nodegate.plugins/nodegate.suites)
would make nodegate.tests, nodegate.nodegate, ... importable and pkgutil.walk_packages endless."""

from __future__ import annotations

import itertools
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import nodegate

ROOT = Path(__file__).resolve().parents[2]


def test_installed_package_path_is_the_package_alone():
    assert [Path(p).resolve() for p in nodegate.__path__] == [ROOT / "nodegate"]
    names = [m.name for m in itertools.islice(pkgutil.walk_packages(nodegate.__path__, "nodegate."), 5000)]
    assert len(names) < 5000, "walk_packages does not end"
    assert not any(n.startswith(("nodegate.nodegate", "nodegate.tests", "nodegate.tools")) for n in names)


def test_bare_checkout_on_pythonpath_still_finds_plugins_and_suites(tmp_path):
    """device/run.sh: a checkout on PYTHONPATH, no install (-S: no site-packages, no editable finder)."""
    code = ("import nodegate.plugins, nodegate.suites, os; "
            "print(os.path.dirname(nodegate.plugins.__file__)); print(os.path.dirname(nodegate.suites.__file__))")
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(ROOT / "plugins"), str(ROOT / "suites")]


def test_no_tracked_symlink_leaves_the_checkout():
    """A symlink into one machine's paths (.venv-main -> /work/main/.venv) is not the project's."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-s"], capture_output=True, text=True)
    if out.returncode:
        pytest.skip("git ls-files failed")
    links = [line.split("\t", 1)[1] for line in out.stdout.splitlines() if line.startswith("120000 ")]
    outside = [p for p in links if not (ROOT / p).resolve().is_relative_to(ROOT.resolve())]
    assert outside == []
