"""Install the system packages the live tests need, from THE one list (tools/system_packages.txt).

    python3 tools/system_packages.py ensure    # as root with apt-get: install what is missing
    python3 tools/system_packages.py missing   # print what is missing (exit 0)

Run by ``make test`` before the tests (stdlib only: it runs before the venv is used). Without
root or apt-get it installs nothing and says why; a failed install is reported and not fatal:
the tests that need a package then SKIP naming it (issue 40.7: on a fresh machine ``make test``
exits 0 and the skip reasons say what did not run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

LIST = Path(__file__).with_name("system_packages.txt")


def packages(path: Path = LIST) -> list[str]:
    """The package names of the list, in order (comments and blank lines dropped)."""
    out = []
    for line in path.read_text().splitlines():
        name = line.split("#", 1)[0].strip()
        if name:
            out.append(name)
    return out


def installed(pkg: str) -> bool:
    """dpkg's own answer: status "install ok installed"."""
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and r.stdout.strip() == "install ok installed"


def missing(pkgs: list[str] | None = None) -> list[str]:
    if shutil.which("dpkg-query") is None:
        return list(pkgs if pkgs is not None else packages())
    return [p for p in (pkgs if pkgs is not None else packages()) if not installed(p)]


def why_not(pkgs: list[str]) -> str | None:
    """Why nothing can be installed here, or None."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("apt-get") is None or shutil.which("dpkg-query") is None:
        return "no apt-get/dpkg (not a Debian/Ubuntu machine)"
    return None


def ensure() -> int:
    need = missing()
    if not need:
        print("system packages: all installed (tools/system_packages.txt)")
        return 0
    why = why_not(need)
    if why:
        print(f"system packages: {' '.join(need)} missing and not installed ({why}): the tests that need them "
              "SKIP naming the package")
        return 0
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print(f"system packages: installing {' '.join(need)} (apt-get, as root)", flush=True)
    steps = (["apt-get", "update", "-qq"],
             ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *need])
    for argv in steps:
        try:
            r = subprocess.run(argv, env=env, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            print(f"system packages: {' '.join(argv[:2])} failed ({e}): the tests that need them SKIP")
            return 0
        if r.returncode != 0:
            print(f"system packages: {' '.join(argv[:2])} exited {r.returncode}: the tests that need "
                  f"{' '.join(missing(need))} SKIP naming them")
            return 0
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[1] if len(argv) > 1 else "ensure"
    if cmd == "ensure":
        return ensure()
    if cmd == "missing":
        print(" ".join(missing()))
        return 0
    if cmd == "list":
        print(" ".join(packages()))
        return 0
    print(f"usage: {argv[0]} ensure|missing|list", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
