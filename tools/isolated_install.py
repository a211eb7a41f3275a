"""nodegate installed from its wheel into throw-away virtual environments, offline, next to a
second project of its own: what tests/install and bench/install_startup.py compare (issue 30,
"installing nodegate changes no other pytest run").

- ``build_wheel(root, dest)``: ``pip wheel --no-deps --no-build-isolation --no-index`` of a copy
  of the sources (the checkout gets no build/ or egg-info), with this environment's setuptools
  (the ``test`` extra pins one that builds wheels itself: >= 70.1).
- ``deps_dir(dest)``: this environment's site-packages as a folder of links, nodegate left out
  (its dist-info, its editable finder, any top-level ``plugins``/``suites`` an old install left):
  nodegate's dependencies and every other pytest plugin installed here, without nodegate.
- ``make_venv(path, deps, wheel=None)``: ``python -m venv --without-pip`` whose own
  site-packages holds a ``.pth`` line naming ``deps`` (a folder named by a .pth line is put on
  sys.path; its own .pth files are not run, so the editable finder stays out), then the wheel
  installed non-editable (``pip install --no-deps --no-index``, pip taken from ``deps``).
- ``write_second_project(dest)``: a project with its own ``plugins/`` and ``suites/`` packages,
  its own ``--target`` option, ``critical`` marker and ``target`` fixture, strict markers: each
  of them clashes with nodegate's were nodegate's plugins loaded by installation.
- ``clean_env()``: the environment for the child processes (no PYTHON*/PYTEST*/NODEGATE* of
  the caller's; fixed COLUMNS so help text wraps alike).

Nothing here reaches the network: ``--no-index`` everywhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

#: what a wheel is built from (setup.py maps plugins/ and suites/ into the nodegate package)
SOURCES = ("pyproject.toml", "setup.py", "nodegate", "plugins", "suites")
#: site-packages entries of nodegate itself, kept out of ``deps_dir``
OWN = ("nodegate", "plugins", "suites")


def clean_env(**extra: str) -> dict[str, str]:
    """The caller's environment without PYTHON*, PYTEST* and NODEGATE* variables, with
    PYTHONDONTWRITEBYTECODE=1 (no .pyc files to compare) and COLUMNS=100."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYTEST", "NODEGATE"))}
    env.update(PYTHONDONTWRITEBYTECODE="1", COLUMNS="100", LC_ALL="C.UTF-8", **extra)
    return env


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 600), **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def build_wheel(root: Path, dest: Path) -> Path:
    """nodegate's wheel from the sources under ``root``, built in ``dest`` (offline); pip's
    output goes to ``dest/build.log``. Raises RuntimeError with pip's output when the build fails."""
    src = dest / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        p = root / name
        if not p.exists():   # a checkout from before setup.py (bench/install_startup.py --against)
            continue
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=ignore)
        else:
            src.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, src / name)
    out = dest / "wheel"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
              "-w", str(out), str(src)], env=clean_env())
    # the build's own output (setuptools' warnings), for tests/install to read
    (dest / "build.log").write_text(r.stdout + r.stderr)
    wheels = sorted(out.glob("nodegate-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one nodegate wheel in {out}, found {wheels}")
    return wheels[0]


def _is_own(name: str) -> bool:
    base = name.split("-")[0].split(".")[0]
    return base in OWN or ("nodegate" in name and name.startswith("__editable__"))


def deps_dir(dest: Path) -> Path:
    """A folder of links to every entry of this environment's site-packages but nodegate's."""
    dest.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for key in ("purelib", "platlib"):
        site = Path(sysconfig.get_paths()[key])
        if not site.is_dir():
            continue
        for entry in sorted(site.iterdir()):
            if entry.name in seen or _is_own(entry.name) or entry.suffix == ".pth":
                continue
            seen.add(entry.name)
            (dest / entry.name).symlink_to(entry)
    return dest


def make_venv(path: Path, deps: Path, wheel: Path | None = None) -> Path:
    """A virtual environment at ``path`` seeing ``deps``, with ``wheel`` installed when given.
    Returns its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(path)], env=clean_env())
    py = path / "bin" / "python"
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     env=clean_env()).stdout.strip())
    (site / "_nodegate_test_deps.pth").write_text(f"{deps.resolve()}\n")
    if wheel is not None:
        _run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile", "-q", str(wheel)],
             env=clean_env())
    return py


#: the second project: its own plugins/ package (with a --target option, a ``target`` fixture
#: and the ``critical`` marker), its own suites/ package, tests that write files
SECOND_PROJECT = {
    "pytest.ini": "[pytest]\naddopts = --strict-markers\nmarkers =\n    critical: our own severity\n"
                  "testpaths = tests suites\n",
    "conftest.py": 'pytest_plugins = ["plugins.ours"]\n',
    "plugins/__init__.py": "",
    "plugins/ours.py": (
        "import pytest\n\n\n"
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--target', default='staging', help='where our app runs')\n\n\n"
        "@pytest.fixture\n"
        "def target(request):\n"
        "    return request.config.getoption('target')\n"),
    "suites/__init__.py": "",
    "suites/test_suite.py": (
        "def test_suite_is_ours():\n"
        "    import suites\n"
        "    assert suites.__file__.endswith('suites/__init__.py')\n"),
    "tests/__init__.py": "",
    "tests/test_app.py": (
        "import pathlib\n\nimport pytest\n\n\n"
        "@pytest.mark.critical\n"
        "def test_target(target):\n"
        "    pathlib.Path('out').mkdir(exist_ok=True)\n"
        "    pathlib.Path('out/target.txt').write_text(target)\n"
        "    assert target in ('staging', 'prod')\n\n\n"
        "def test_plugins_package_is_ours():\n"
        "    import plugins.ours\n"
        "    assert hasattr(plugins.ours, 'pytest_addoption')\n\n\n"
        "def test_fails_on_purpose():\n"
        "    assert 1 == 2\n"),
}


def write_second_project(dest: Path) -> Path:
    """Write SECOND_PROJECT under ``dest`` (replacing what is there)."""
    if dest.exists():
        shutil.rmtree(dest)
    for rel, text in SECOND_PROJECT.items():
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return dest


__all__ = ["SECOND_PROJECT", "SOURCES", "build_wheel", "clean_env", "deps_dir", "make_venv", "write_second_project"]
