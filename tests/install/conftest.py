"""nodegate's wheel in throw-away virtual environments (tools/isolated_install.py), built once
per test session: ``bare`` sees this environment's packages without nodegate, ``installed``
the same plus nodegate installed from its wheel (``pip install``, not editable)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.isolated_install import build_wheel, deps_dir, make_venv

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Envs:
    wheel: Path
    bare: Path        # python of the environment without nodegate
    installed: Path   # python of the environment with nodegate's wheel installed


def _setuptools_builds_wheels() -> str | None:
    """Why the offline wheel build cannot work here (None when it can): setuptools 70.1 builds
    wheels without the ``wheel`` package (pyproject's ``test`` extra installs it)."""
    try:
        import setuptools
    except ImportError:
        return "setuptools is not installed (pip install -e '.[test]')"
    major, minor = (int(x) for x in setuptools.__version__.split(".")[:2])
    return None if (major, minor) >= (70, 1) else \
        f"setuptools {setuptools.__version__} < 70.1 cannot build the wheel offline (pip install -e '.[test]')"


@pytest.fixture(scope="session")
def envs(tmp_path_factory) -> Envs:
    why = _setuptools_builds_wheels()
    if why:   # the test extra pins it: a stale venv, not a reason to pass over the test
        pytest.fail(why)
    base = tmp_path_factory.mktemp("install")
    wheel = build_wheel(ROOT, base / "build")
    deps = deps_dir(base / "deps")
    return Envs(wheel=wheel, bare=make_venv(base / "bare", deps), installed=make_venv(base / "installed", deps, wheel))
