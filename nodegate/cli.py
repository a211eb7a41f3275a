"""``nodegate``: the installed suites against an inventory, from any directory.

    nodegate --inventory ~/site/hosts.ini --limit rack1 -x
    nodegate --inventory hosts.yml --list-hosts[=json]
    nodegate --replay reports/bundles

Every argument goes to pytest unchanged. pytest runs with the package's own settings
(nodegate/data/pytest.ini via ``-c``, ``--rootdir`` = the directory holding the installed
``nodegate.suites`` package: site-packages/nodegate, or the checkout in an editable install, so
test ids stay ``suites/test_pcie.py::...``), so the current directory's pytest.ini,
pyproject.toml, setup.cfg or conftest.py changes nothing, and an inventory outside any project
cannot move pytest's rootdir (pytest picks the rootdir before plugins add ``--inventory``, and
would read its value as a path). nodegate's plugins are loaded here with ``-p nodegate.plugins``:
installing nodegate registers no pytest plugin (no pytest11 entry point), so other pytest runs of
the environment never load it. Without an inventory, ``--replay`` or ``--target``, the run
targets ``local://`` exactly as ``--target local://`` does (the plugin's ``--target`` default in
this command), whatever the current directory holds: the installed suites run, never the
directory's own test files. The cache (``--lf``) lives in ``<reports-dir>/.pytest_cache``: nothing is written in the
working directory but the reports; reports go to ``./reports`` unless ``--reports-dir`` says otherwise.

Arguments pytest would read otherwise than the operator means:

- ``--limit @FILE`` (Ansible's retry-file pattern): pytest (8.2+) expands every argument that
  starts with ``@`` as a file of arguments itself, so it is passed as ``--limit=@FILE``;
- ``-i SOURCE`` (``-iSOURCE``), Ansible's short form of ``--inventory``: passed as
  ``--inventory=SOURCE`` (pytest defines no ``-i``, and plugins may not add lower-case short options);
- ``suites`` (and ``suites/...``) as a test path names the installed suites when the current
  directory has no ``suites`` of its own: ``nodegate suites site/`` runs nodegate's checks and a
  site's own. Only the test paths pytest parsed are rewritten (by the plugin, after pytest's
  parser: nodegate.cmdline.installed_suites), never an option's value: ``--reports-dir
  suites/out`` is ./suites/out, and ``--deselect suites/...`` is a test id as pytest prints it
  (relative to the rootdir, the installed suites' parent), in both its forms.

Exit codes: README.md's table (nodegate.session.exitcodes: 0 pass, 1 findings, 2 usage/
inventory/spec error or nothing selected, 3 regressions only, 4 internal error, 130/129/143
interrupted); pytest's own usage error (4: an unknown option, a bad option value) and "no tests
collected" (5) are 2 here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: the package whose ``pytest_plugins`` lists nodegate's six plugins (plugins/__init__.py)
PLUGINS = "nodegate.plugins"
#: set for the pytest run of this command: the plugin names the program "nodegate" in usage lines
#: and makes ``--target`` default to local:// (nodegate.plugins.nodegate_plugin)
ENV_FLAG = "NODEGATE_CLI"


def package_paths() -> tuple[Path, Path]:
    """(the pytest ini file, the rootdir: the directory holding the installed ``nodegate.suites``
    package). Nothing that imports testinfra is imported before pytest.main (it would miss
    assertion rewriting)."""
    import importlib.util
    spec = importlib.util.find_spec("nodegate.suites")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("nodegate: the nodegate.suites package is not installed (pip install nodegate)")
    suites = Path(list(spec.submodule_search_locations)[0]).resolve()
    return Path(__file__).resolve().parent / "data" / "pytest.ini", suites.parent


def pytest_args(argv: list[str], cwd: Path | None = None) -> list[str]:
    """The pytest command line for ``nodegate ARGV``."""
    ini, root = package_paths()
    cwd = Path.cwd() if cwd is None else cwd
    # --confcutdir: no conftest.py above or beside the package is loaded (pytest loads the
    # working directory's when no test path is named)
    args = ["-c", str(ini), "--rootdir", str(root), "--confcutdir", str(root), "-p", PLUGINS]
    if not no_cache(argv):   # with the cache plugin off, pytest warns "Unknown config option: cache_dir"
        args[6:6] = ["-o", f"cache_dir={cache_dir(argv, cwd)}"]
    return args + rewrite(list(argv))


def no_cache(argv: list[str]) -> bool:
    """``-p no:cacheprovider`` (also ``-pno:cacheprovider``, ``-p=no:cacheprovider``) before ``--``:
    pytest's cache plugin is off, so it declares no ``cache_dir`` ini option to set."""
    for i, a in enumerate(argv):
        if a == "--":
            break
        v = argv[i + 1] if a == "-p" and i + 1 < len(argv) else a[2:].removeprefix("=") if a.startswith("-p") else None
        if v == "no:cacheprovider":
            return True
    return False


def cache_dir(argv: list[str], cwd: Path) -> Path:
    """pytest's cache (``--lf``, ``--ff``) of a nodegate run: ``<reports-dir>/.pytest_cache``, with
    the run's other output, never a ``.pytest_cache`` in the working directory (issue 32)."""
    reports = "reports"
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == "--reports-dir" and i + 1 < len(argv):
            reports = argv[i + 1]
        elif a.startswith("--reports-dir="):
            reports = a.split("=", 1)[1]
    return (cwd / Path(reports).expanduser()) / ".pytest_cache"


def rewrite(argv: list[str]) -> list[str]:
    """``--limit @FILE`` -> ``--limit=@FILE``; ``-i X`` -> ``--inventory=X`` (module docstring).
    Everything after ``--`` is left alone. ``suites`` test paths are not rewritten here: only
    pytest's parser knows which arguments are paths and which are an option's value
    (``--reports-dir suites/out``); the plugin rewrites the paths it parsed
    (nodegate.cmdline.installed_suites)."""
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
        if a == "-i" and i + 1 < len(argv) or a.startswith("-i") and len(a) > 2:
            # Ansible's short form of --inventory (pytest has no -i; its plugins may not add
            # lower-case short options); = form: pytest would read a separate value as a path
            out.append(f"--inventory={argv[i + 1] if a == '-i' else a[2:].removeprefix('=')}")
            i += 2 if a == "-i" else 1
            continue
        out.append(a)
        i += 1
    return out


def raise_internal(e: BaseException) -> None:
    """Print ``e``'s traceback and README's exit 4 line (the caller returns 4)."""
    import traceback
    traceback.print_exception(e)
    sys.stderr.write("nodegate: internal error (exit 4)\n")


def option_clash(e: ValueError) -> str | None:
    """The usage error to print when ``e`` is pytest's refusal of an option that a conftest.py or
    plugin of this run declares again (``_pytest.config.argparsing``: "option dest 'x' already
    used", "option names {...} already added"), naming the file whose ``pytest_addoption`` did it
    (e.g. a testinfra or molecule project's own ``--inventory``); None for any other ValueError."""
    text = str(e)
    if "already used" not in text and "already added" not in text:
        return None
    where = ""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "pytest_addoption":
            where = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    from .textsafe import shown
    return shown(f"nodegate: {where or 'a conftest.py or plugin of this run'} declares an option nodegate already has "
                 f"({text.split(';')[0]}): run nodegate from another directory or name no test path under it, or "
                 "rename that option (nothing was contacted; exit 2)")


def main(argv: list[str] | None = None) -> int:
    import pytest
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--version"], ["-V"]):
        from importlib.metadata import version
        print(f"nodegate {version('nodegate')} (pytest {pytest.__version__})")
        return 0
    before = os.environ.get(ENV_FLAG)
    os.environ[ENV_FLAG] = "1"   # inherited by xdist workers; restored for a caller in this process
    try:
        rc = int(pytest.main(pytest_args(argv)))
    except ValueError as e:
        clash = option_clash(e)
        if clash is None:
            raise_internal(e)
            return 4
        sys.stderr.write(clash + "\n")
        return 2
    except Exception as e:   # noqa: BLE001 - a crash past pytest's own INTERNALERROR handling
        # (e.g. in a session-finish hook): README's exit 4, never Python's 1 ("findings")
        raise_internal(e)
        return 4
    finally:
        if before is None:
            os.environ.pop(ENV_FLAG, None)
        else:
            os.environ[ENV_FLAG] = before
    # pytest's usage error (4: an unknown option, before nodegate's plugin is active) and "no
    # tests collected" (5) are nodegate's usage error; an active run already returns README's
    # codes (nodegate.session.exitcodes)
    if rc == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        sys.stderr.write("nodegate: no test collected in the paths given; no node was contacted (exit 2)\n")
    return 2 if rc in (int(pytest.ExitCode.USAGE_ERROR), int(pytest.ExitCode.NO_TESTS_COLLECTED)) else rc


if __name__ == "__main__":
    raise SystemExit(main())
