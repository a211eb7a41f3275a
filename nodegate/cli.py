"""``nodegate``: the installed suites against an inventory, from any directory.

    nodegate --inventory ~/site/hosts.ini --limit rack1 -x
    nodegate --inventory hosts.yml --list-hosts[=json]
    nodegate --replay reports/bundles

Every argument goes to pytest unchanged. pytest runs with the package's own settings
(nodegate/data/pytest.ini via ``-c``, ``--rootdir`` = the directory holding the installed
``suites`` and ``plugins`` packages), so the current
directory's pytest.ini, pyproject.toml, setup.cfg or conftest.py changes nothing, and an
inventory outside any project cannot move pytest's rootdir (pytest picks the rootdir before
plugins add ``--inventory``, and would read its value as a path). nodegate's plugins come from
their entry points (``-p`` each when PYTEST_DISABLE_PLUGIN_AUTOLOAD is set). Without a test path the
installed suites run (``testpaths``); the cache (``--lf``) lives in ``./.pytest_cache``;
reports go to ``./reports`` unless ``--reports-dir`` says otherwise.

Arguments pytest would read otherwise than the operator means:

- ``--limit @FILE`` (Ansible's retry-file pattern): pytest (8.2+) expands every argument that
  starts with ``@`` as a file of arguments itself, so it is passed as ``--limit=@FILE``;
- ``suites`` (and ``suites/...``) names the installed suites when the current directory has no
  ``suites`` of its own: ``nodegate suites site/`` runs nodegate's checks and a site's own.

Exit codes: pytest's, as documented in README.md (0 pass, 1 findings, 2 usage/inventory/spec
error or nothing selected, 3 regressions only); pytest's own usage error (4: an unknown option,
a bad option value) is 2 here, as README's table says.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

PLUGINS = ("plugins.nodegate_plugin", "plugins.nodegate_reports", "plugins.nodegate_baseline",
           "plugins.nodegate_burnin", "plugins.nodegate_site", "plugins.nodegate_perf")
#: set for the pytest run of this command (the plugin names the program "nodegate" in usage lines)
ENV_FLAG = "NODEGATE_CLI"


def package_paths() -> tuple[Path, Path]:
    """(the pytest ini file, the rootdir: where the installed ``suites`` package lives). Nothing
    that imports testinfra is imported before pytest.main (it would miss assertion rewriting)."""
    import importlib.util
    spec = importlib.util.find_spec("suites")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nodegate: the suites package is not installed (pip install nodegate)")
    suites = Path(list(spec.submodule_search_locations)[0]).resolve()
    return Path(__file__).resolve().parent / "data" / "pytest.ini", suites.parent


def pytest_args(argv: list[str], cwd: Path | None = None) -> list[str]:
    """The pytest command line for ``nodegate ARGV``."""
    ini, root = package_paths()
    cwd = Path.cwd() if cwd is None else cwd
    # --confcutdir: no conftest.py above or beside the package is loaded (pytest loads the
    # working directory's when no test path is named)
    args = ["-c", str(ini), "--rootdir", str(root), "--confcutdir", str(root),
            "-o", f"cache_dir={cwd / '.pytest_cache'}"]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        # otherwise the entry points register them (-p here would import testinfra before
        # pytest marks its plugin for assertion rewriting: a warning in every run)
        for p in PLUGINS:
            args += ["-p", p]
    return args + rewrite(list(argv), root, cwd)


def rewrite(argv: list[str], root: Path, cwd: Path) -> list[str]:
    """``--limit @FILE`` -> ``--limit=@FILE``; a bare ``suites`` path -> the installed suites
    (module docstring). Everything after ``--`` is left alone."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out += argv[i:]
            break
        if a == "--limit" and i + 1 < len(argv):
            out.append(f"--limit={argv[i + 1]}")
            i += 2
            continue
        if (a == "suites" or a.startswith("suites/") or a.startswith("suites::")) and not (cwd / "suites").exists():
            a = str(root / a)
        out.append(a)
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    import pytest
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--version"], ["-V"]):
        from importlib.metadata import version
        print(f"nodegate {version('nodegate')} (pytest {pytest.__version__})")
        return 0
    os.environ[ENV_FLAG] = "1"
    rc = int(pytest.main(pytest_args(argv)))
    return 2 if rc == int(pytest.ExitCode.USAGE_ERROR) else rc


if __name__ == "__main__":
    raise SystemExit(main())
