"""``make bench BENCH_ARGS=--install``: what installing nodegate costs another project's pytest run.

nodegate's wheel is built and installed non-editable into a throw-away environment next to one
without it (tools/isolated_install.py: both see this environment's other packages, offline).
For each project (a one-test project, and tests/install's second project with its own
``plugins/``, ``--target``, ``critical`` marker), ``python -m pytest -q -p no:cacheprovider``
runs ``--repeat`` times in each environment, the environments in turn (a slow spell of the
machine falls on both); the figures are the minimum and the median wall time of each, their
difference (issue 30: under 50 ms), and the modules each run imported (nodegate's among them).

``--against DIR``: also a wheel built from another checkout (e.g. one from before issue 30,
whose install registered pytest11 entry points), measured on the one-test project only.

Prints a table and writes reports/bench-install.json. A benchmark: it reports, it does not gate
(tests/install asserts the structural bound: the same modules imported, none of nodegate's).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.isolated_install import build_wheel, clean_env, deps_dir, make_venv, write_second_project  # noqa: E402

PYTEST = ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
MODULES = ("import sys, pytest\n"
           "pytest.main(['-q', '-p', 'no:cacheprovider'])\n"
           "mods = sorted(sys.modules)\n"
           "print('MODULES', len(mods), sum(1 for m in mods if m == 'nodegate' or m.startswith('nodegate.')))\n")


def one_test_project(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "pytest.ini").write_text("[pytest]\n")
    (dest / "test_one.py").write_text("def test_one():\n    assert True\n")
    return dest


def timed(py: Path, cwd: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = subprocess.run([str(py), *PYTEST], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=300)
    return time.perf_counter() - t0, r.returncode


def modules(py: Path, cwd: Path) -> tuple[int, int]:
    """(modules imported by the run, nodegate's among them)."""
    r = subprocess.run([str(py), "-c", MODULES], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                       timeout=300)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("MODULES ")), "MODULES -1 -1")
    _, n, ours = line.split()
    return int(n), int(ours)


def measure(envs: dict[str, Path], proj: Path, repeat: int) -> dict:
    walls: dict[str, list[float]] = {k: [] for k in envs}
    rcs: dict[str, set[int]] = {k: set() for k in envs}
    for _ in range(repeat):
        for name, py in envs.items():
            w, rc = timed(py, proj)
            walls[name].append(w)
            rcs[name].add(rc)
    out: dict = {}
    for name, py in envs.items():
        n, ours = modules(py, proj)
        out[name] = {"min_ms": round(min(walls[name]) * 1000, 1),
                     "median_ms": round(statistics.median(walls[name]) * 1000, 1),
                     "exit_codes": sorted(rcs[name]), "modules": n, "nodegate_modules": ours}
    for name in envs:
        if name != "without":
            out[name]["min_more_ms"] = round(out[name]["min_ms"] - out["without"]["min_ms"], 1)
            out[name]["median_more_ms"] = round(out[name]["median_ms"] - out["without"]["median_ms"], 1)
    return out


def main(repeat: int = 9, against: Path | None = None, out: Path | None = None) -> int:
    import os
    out = out or ROOT / "reports" / "bench-install.json"
    with tempfile.TemporaryDirectory(prefix="nodegate-bench-install-") as tmp:
        base = Path(tmp)
        t0 = time.monotonic()
        deps = deps_dir(base / "deps")
        envs = {"without": make_venv(base / "without", deps),
                "with": make_venv(base / "with", deps, build_wheel(ROOT, base / "build"))}
        if against is not None:
            envs["against"] = make_venv(base / "against", deps, build_wheel(against, base / "build-against"))
        print(f"environments ready in {time.monotonic() - t0:.0f}s; {repeat} runs each, in turn ...", flush=True)
        rows = {"one-test project": measure(envs, one_test_project(base / "one"), repeat),
                "second project": measure({k: v for k, v in envs.items() if k != "against"},
                                          write_second_project(base / "second"), repeat)}
    doc = {"repeat": repeat, "against": str(against) if against else None, "rows": rows,
           "loadavg_at_end": os.getloadavg(), "nproc": os.cpu_count(), "python": sys.version.split()[0]}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    head = f"{'project':<18} {'env':<8} {'min_ms':>8} {'median_ms':>9} {'+min_ms':>8} {'+median_ms':>10} " \
           f"{'modules':>7} {'nodegate':>8}  exit"
    print(head)
    for proj, r in rows.items():
        for env, f in r.items():
            print(f"{proj:<18} {env:<8} {f['min_ms']:>8} {f['median_ms']:>9} {f.get('min_more_ms', ''):>8} "
                  f"{f.get('median_more_ms', ''):>10} {f['modules']:>7} {f['nodegate_modules']:>8}  {f['exit_codes']}")
    print("\n  min_ms/median_ms: wall of `python -m pytest -q` over the runs; +min_ms/+median_ms: more than the "
          "environment without nodegate;\n  modules: imported by the run; nodegate: nodegate's among them; "
          "exit: the runs' exit codes (the second project fails one test on purpose)")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(prog="bench/install_startup.py", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--against", type=Path, default=None, help="also a wheel built from this checkout")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    sys.exit(main(a.repeat, a.against, a.out))
