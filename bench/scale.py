"""``make bench BENCH_ARGS=--scale`` (``bench/run.py --scale``): nodegate at cluster scale, replayed.

For each size (default 256, 1,024 and 4,096 nodes x 8 GPUs), N copies of the healthy 8-GPU sample
bundle (inventories/samples/fleet/h200-580-open-healthy, node name changed in meta.json) are
generated under a temporary directory (never committed), then

    python -m pytest suites --replay <copies> --reports-dir <tmp> -q -p timing_plugin

runs as a child process: wall, CPU and peak RSS from ``os.wait4`` (bench/measure.py), phases
from bench/timing_plugin.py, and what it wrote: results.jsonl, the JUnit file(s) (bytes, XML
objects as GitLab counts them: every element; test cases), report.html and the node pages, and
how long headless chromium takes to open report.html (``--dump-dom``, minus chromium's own start
on an empty page, both measured here). Prints a table, writes reports/bench-scale.json. It
reports; it does not gate.

``--repeat N`` runs every size N times, the sizes in turn (256, 1,024, 4,096, 256, ...), so that
a slow spell of the machine falls on all sizes alike; a size's ``wall_s``/``cpu_s`` are then the
medians of its runs (each run's figures in ``runs``) and the ratios are those of the medians. On
the 2-core bench machine one 256-node replay took 25.3-30.8 s over fifteen runs: a 20 %
spread, more than the margin of the 17x bound the ratio is read against (docs/performance.md
"Round 8").
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.measure import run_measured  # noqa: E402

SAMPLE = ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy"
SIZES = (256, 1024, 4096)
COLUMNS = ("nodes", "wall_s", "cpu_s", "peak_rss_mb", "items", "junit_mb", "junit_objects", "junit_files",
           "html_mb", "html_open_s", "node_pages_mb", "results_mb", "report_s", "ms_per_node", "engine_ms_per_node",
           "ratio_to_engine", "pytest_alone_ms_per_node", "fast_lane_alone_ms_per_node", "ratio_bound")
#: nodes the engine floor judges (bench/engine_floor.py); the copies are alike, so a larger fleet's
#: floor a node is that of its first ENGINE_SAMPLE nodes
ENGINE_SAMPLE = 256


def _ids_of(src: Path) -> dict[str, str]:
    """The sample's identifiers that must differ per node (boot id, machine id, GPU serials and
    UUIDs): value -> a format string of the same length for copy ``i``."""
    import re
    text = "".join(p.read_text(errors="replace") for p in src.iterdir() if p.suffix == ".out")
    out: dict[str, str] = {}
    for v in set(re.findall(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", text)):
        out[v] = v[:-6] + "{i:06x}"
    for v in set(re.findall(r"<serial>(\d{10,})</serial>", (src / "smi.qx.out").read_text())):
        out[v] = v[:-11] + "{i:06d}" + v[-5:]   # the last digits tell the GPUs apart
    for f in ("meta.boot_id.out", "meta.machine_id.out"):
        p = src / f
        if p.is_file():
            v = p.read_text().strip()
            if len(v) >= 8:
                out[v] = v[:-6] + "{i:06x}"
    return out


def make_copies(dst: Path, n: int, src: Path = SAMPLE) -> list[str]:
    """``n`` copies of the sample bundle as nodes ``s00000``...; files copied (not linked: a
    bundle reader may refuse hard links). Each copy is a machine of its own: its boot id, machine
    id and GPU serials and UUIDs get a node number in their last digits (same length, so meta.json's
    item sizes still hold), else the run's identity checks see one machine answering for all.
    Returns the node names."""
    meta = json.loads((src / "meta.json").read_text())
    ids = _ids_of(src)
    files = [(p, p.read_bytes()) for p in sorted(src.iterdir()) if p.is_file() and p.name != "meta.json"]
    names = []
    for i in range(n):
        name = f"s{i:05d}"
        d = dst / name
        d.mkdir(parents=True, exist_ok=True)
        for f, data in files:
            if f.suffix == ".out" and ids:
                text = data.decode("utf-8", "surrogateescape")
                for old, fmt in ids.items():
                    if old in text:
                        text = text.replace(old, fmt.format(i=i))
                data = text.encode("utf-8", "surrogateescape")
            (d / f.name).write_bytes(data)
        (d / "meta.json").write_text(json.dumps(dict(meta, node=name), indent=1))
        names.append(name)
    return names


def xml_objects(path: Path) -> tuple[int, int]:
    """(elements, testcases): GitLab's object count (text nodes are none) of a JUnit file."""
    import defusedxml.ElementTree as DET
    elements = cases = 0
    for ev, el in DET.iterparse(str(path), events=("start", "end")):
        if ev == "start":
            elements += 1
            cases += el.tag == "testcase"
        else:
            el.clear()   # the bench process stays small (140 MB after a 4,096-node file, kept whole)
    return elements, cases


def _chromium_s(url: str, exe: str) -> float | None:
    with tempfile.TemporaryDirectory(prefix="nodegate-chromium-") as prof:
        argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={prof}", "--dump-dom", url]
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, capture_output=True, timeout=180)
        except subprocess.TimeoutExpired:
            return None
        return round(time.monotonic() - t0, 2) if p.returncode == 0 else None


def html_open(html: Path, tries: int = 3) -> dict:
    """Best of ``tries`` headless chromium loads of ``html`` and of an empty page (its start-up)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return {"html_open": "chromium not installed"}
    empty = html.parent / ".empty.html"
    empty.write_text("<!DOCTYPE html><html><body>x</body></html>")
    page = [t for t in (_chromium_s(html.as_uri(), exe) for _ in range(tries)) if t is not None]
    base = [t for t in (_chromium_s(empty.as_uri(), exe) for _ in range(tries)) if t is not None]
    empty.unlink()
    if not page:
        return {"html_open": "chromium failed"}
    out = {"html_load_s": min(page), "chromium_start_s": min(base) if base else None}
    # chromium's own start varies by more than a small page takes: below it, the page is "< 0.01"
    # of the start's noise, reported as 0 (html_load_s keeps the raw figure)
    out["html_open_s"] = max(0.0, round(min(page) - (min(base) if base else 0), 2))
    return out


def _mb(n: int) -> float:
    return round(n / 1e6, 2)


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file()) if d.is_dir() else 0


#: hypothesis is a test-only dependency of this checkout (pyproject's ``test`` extra) and registers
#: a pytest plugin (a makereport wrapper around every report, a terminal summary): an operator's
#: ``pip install nodegate`` has none, so neither the replay nor pytest alone is measured with it
NO_TEST_ONLY_PLUGINS = ["-p", "no:hypothesispytest"]


def replay_argv(fleet: Path, reports: Path, extra: list[str] = (), plugin: str = "timing_plugin") -> list[str]:
    """The measured command: nodegate's suites replaying ``fleet`` into ``reports``, with one of
    bench/'s plugins (``timing_plugin``: phases; ``shardlog_plugin``: shards, bench/paired.py)."""
    return [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", *NO_TEST_ONLY_PLUGINS, "-q", "-p", plugin,
            "--replay", str(fleet), "--reports-dir", str(reports), *extra]


#: a conftest that runs each trivial item as nodegate's fast lane runs a check item
#: (nodegate/session/fastlane.py): pytest's public runtest hooks only, no phase hooks
FAST_LANE_CONFTEST = """import pytest


def _phase(item, ihook, when, func):
    call = pytest.CallInfo.from_call(func, when=when, reraise=(pytest.exit.Exception, KeyboardInterrupt))
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    return report


def pytest_collection_modifyitems(items):
    for item in items:   # the direct parameter in funcargs, as nodegate's prefill_verdict_item does
        item.funcargs["i"] = item.callspec.params["i"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    if _phase(item, ihook, "setup", lambda: None).passed:
        _phase(item, ihook, "call", item.runtest)
    _phase(item, ihook, "teardown", lambda: None)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""


def pytest_alone(base: Path, timing: Path) -> dict | None:
    """Bare pytest runs (bench/floors.py ``pytest_floor_suite``: trivial items, as many passes
    and skips as the replay ran, read from its ``timing`` file) with no report option: what
    pytest's per-item machinery alone costs, with its own protocol (``wall_s``) and with the
    fast lane's (``fast_lane_wall_s``: FAST_LANE_CONFTEST). None when the replay's counts are
    missing or a run failed."""
    try:
        t = json.loads(timing.read_text())
        items, skipped = int(t["run_items"]), int(t["run_skipped"])
    except (OSError, ValueError, KeyError):
        return None
    from bench.floors import pytest_floor_suite
    out = {"items": items}
    for key, conftest in (("wall_s", None), ("fast_lane_wall_s", FAST_LANE_CONFTEST)):
        d = base / "pytest-alone"
        pytest_floor_suite(d, items - skipped, skipped)
        if conftest:
            (d / "conftest.py").write_text(conftest)
        m = run_measured([sys.executable, "-m", "pytest", "test_floor.py", "-p", "no:cacheprovider", *NO_TEST_ONLY_PLUGINS,
                          "-q"], cwd=d,
                         env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), timeout_s=3600)
        shutil.rmtree(d, ignore_errors=True)
        if m.rc != 0:
            return None
        out[key] = m.wall_s
    return out


def run_size(n: int, base: Path, extra: list[str] = (), *, keep: bool = False) -> dict:
    """One replay of ``n`` generated nodes (generated once under ``base``; removed afterwards
    unless ``keep``, for a next repetition): its row of figures."""
    fleet, reports, timing = base / f"fleet{n}", base / f"reports{n}", base / f"timing{n}.json"
    t0 = time.monotonic()
    if not fleet.is_dir():
        make_copies(fleet, n)
    gen_s = round(time.monotonic() - t0, 1)
    print(f"[scale {n:>5}] {n} bundles ready in {gen_s}s; nodegate --replay ...", flush=True)
    from bench.common import _env, _phases
    from bench.engine_floor import engine_floor
    # the engine's floor just before the replay and again just after (below): this machine's speed
    # drifts by 20-40 % within minutes, so the ratio divides by the mean of the two
    floor_before = engine_floor(fleet, ENGINE_SAMPLE)
    argv = replay_argv(fleet, reports, extra)
    started = time.time()
    load = os.getloadavg()[0]
    m = run_measured(argv, cwd=ROOT, env=_env(timing), timeout_s=3600)
    if m.rc not in (0, 1):
        raise RuntimeError(f"nodegate --replay at {n} nodes: rc {m.rc}\n{m.output[-4000:]}")
    phases = _phases(timing, started)
    junit = reports / "junit.xml"
    files = [junit] + sorted((reports / "junit").glob("part-*.xml"))
    objects = [xml_objects(f) for f in files if f.exists()]
    row = {"nodes": n, "wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_rss_mb": m.peak_rss_mb, "rc": m.rc,
           "items": sum(1 for _ in open(reports / "results.jsonl")),
           "junit_mb": _mb(sum(f.stat().st_size for f in files if f.exists())),
           "junit_objects": max(o[0] for o in objects), "junit_testcases": max(o[1] for o in objects),
           "junit_files": len(objects), "html_mb": _mb((reports / "report.html").stat().st_size),
           "node_pages_mb": _mb(_dir_bytes(reports / "nodes")),
           "results_mb": _mb((reports / "results.jsonl").stat().st_size),
           "report_s": phases.get("report_s"), "phases": phases, "bundles_generated_s": gen_s,
           "loadavg_at_start": round(load, 2)}
    row.update(html_open(reports / "report.html"))
    # issue 40 item 5: the replay's cost a node against the engine alone on the same bundles
    floor_after = engine_floor(fleet, ENGINE_SAMPLE)
    floor = {k: floor_after[k] for k in ("nodes", "results")}
    for k in ("wall_s", "cpu_s"):
        floor[k] = round((floor_before[k] + floor_after[k]) / 2, 3)
    floor["ms_per_node"] = round(1000 * floor["wall_s"] / max(1, floor["nodes"]), 2)
    row["engine_ms_per_node_before_after"] = [floor_before["ms_per_node"], floor_after["ms_per_node"]]
    row["ms_per_node"] = round(1000 * m.wall_s / n, 1)
    row["engine_ms_per_node"] = floor["ms_per_node"]
    row["ratio_to_engine"] = round(row["ms_per_node"] / floor["ms_per_node"], 2) if floor["ms_per_node"] else None
    # the same in CPU: the replay's whole process tree (its prefetching child's parsing included,
    # nodegate.fleetrun.prefetch) against the engine's own CPU; the wall ratio is what an
    # operator waits, this one what the run costs the machine
    engine_cpu_ms = 1000 * floor["cpu_s"] / max(1, floor["nodes"])
    row["cpu_ms_per_node"] = round(1000 * m.cpu_s / n, 1)
    row["cpu_ratio_to_engine"] = round(row["cpu_ms_per_node"] / engine_cpu_ms, 2) if engine_cpu_ms else None
    # and without the prefetching child (NODEGATE_PREFETCH=0): what the second process buys
    shutil.rmtree(reports, ignore_errors=True)
    off = run_measured(argv, cwd=ROOT, env=dict(_env(None), NODEGATE_PREFETCH="0"), timeout_s=3600)
    if off.rc in (0, 1):
        row["no_prefetch_ms_per_node"] = round(1000 * off.wall_s / n, 1)
        row["no_prefetch_cpu_ms_per_node"] = round(1000 * off.cpu_s / n, 1)
        row["no_prefetch_ratio_to_engine"] = (round(row["no_prefetch_ms_per_node"] / floor["ms_per_node"], 2)
                                              if floor["ms_per_node"] else None)
    # what pytest alone costs for as many items (trivial ones, no report plugin, no checks): the
    # ratio cannot go below (engine + pytest alone) / engine while a node has that many items
    alone = pytest_alone(base, timing)
    if alone is not None and floor["ms_per_node"]:
        row["pytest_alone_ms_per_node"] = round(1000 * alone["wall_s"] / n, 1)
        row["fast_lane_alone_ms_per_node"] = round(1000 * alone["fast_lane_wall_s"] / n, 1)
        row["pytest_alone_items"] = alone["items"]
        row["ratio_bound"] = round((floor["ms_per_node"] + row["fast_lane_alone_ms_per_node"]) / floor["ms_per_node"], 2)
    print(f"[scale {n:>5}] {row['ms_per_node']} ms a node; the engine alone {floor['ms_per_node']} ms a node "
          f"({floor['nodes']} nodes): ratio {row['ratio_to_engine']}; as many trivial items, pytest alone "
          f"{row.get('pytest_alone_ms_per_node')} ms a node, in the fast lane {row.get('fast_lane_alone_ms_per_node')}: "
          f"no ratio below {row.get('ratio_bound')}", flush=True)
    print(f"[scale {n:>5}] {m.wall_s}s wall, {m.cpu_s}s CPU, {m.peak_rss_mb} MB peak RSS; CPU ratio "
          f"{row['cpu_ratio_to_engine']}; without the prefetching child {row.get('no_prefetch_ms_per_node')} ms "
          f"a node (ratio {row.get('no_prefetch_ratio_to_engine')})", flush=True)
    if not keep:
        shutil.rmtree(fleet, ignore_errors=True)
    shutil.rmtree(reports, ignore_errors=True)
    return row


def combine(runs: list[dict]) -> dict:
    """One size's row from its runs: the first run's figures, ``wall_s``/``cpu_s``/``peak_rss_mb``
    the medians of all runs, and every run's (wall, CPU, RSS) in ``runs``."""
    row = dict(runs[0])
    if len(runs) > 1:
        for k in ("wall_s", "cpu_s", "peak_rss_mb"):
            row[k] = round(statistics.median(r[k] for r in runs), 2)
        row["runs"] = [{k: r[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "loadavg_at_start")} for r in runs]
    return row


def table(rows: list[dict]) -> str:
    lines = [list(COLUMNS)] + [[str(r.get(c, "")) for c in COLUMNS] for r in rows]
    w = [max(len(x[i]) for x in lines) for i in range(len(COLUMNS))]
    return "\n".join("  ".join(x[i].rjust(w[i]) for i in range(len(COLUMNS))) for x in lines)


def main(sizes=SIZES, out: Path | None = None, extra: list[str] = (), repeat: int = 1) -> int:
    out = out or ROOT / "reports" / "bench-scale.json"
    t0 = time.monotonic()
    repeat = max(1, int(repeat))
    runs: dict[int, list[dict]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory(prefix="nodegate-scale-") as tmp:
        for k in range(repeat):   # the sizes in turn: a slow spell of the machine hits each alike
            for n in sizes:
                runs[n].append(run_size(n, Path(tmp), list(extra), keep=k < repeat - 1))
    rows = [combine(runs[n]) for n in sizes]
    from bench.common import machine
    info = machine()
    if len(rows) > 1:
        first = rows[0]
        for r in rows[1:]:
            r["wall_ratio_to_first"] = round(r["wall_s"] / first["wall_s"], 2)
            r["cpu_ratio_to_first"] = round(r["cpu_s"] / first["cpu_s"], 2)
            r["nodes_ratio_to_first"] = round(r["nodes"] / first["nodes"], 2)
    for r in rows:
        r["machine"] = info
        r["repeat"] = repeat
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print()
    print(table(rows))
    if repeat > 1:
        print(f"\nwall_s, cpu_s, peak_rss_mb: medians of {repeat} runs, the sizes in turn; each run:")
        for r in rows:
            print(f"{r['nodes']:>5}: " + ", ".join(f"{x['wall_s']}s/{x['cpu_s']}s/{x['peak_rss_mb']} MB"
                                                   for x in r["runs"]))
    for r in rows[1:]:
        print(f"{r['nodes']:>5}: wall x{r['wall_ratio_to_first']} (CPU x{r['cpu_ratio_to_first']}) for "
              f"x{r['nodes_ratio_to_first']} the nodes")
    print(f"\nwrote {out} in {time.monotonic() - t0:.0f}s ({info['nproc']} CPUs, load "
          f"{info['loadavg_at_start'][0]:.1f} at start)")
    return 0


if __name__ == "__main__":
    sys.exit(main(tuple(int(x) for x in sys.argv[1].split(",")) if len(sys.argv) > 1 else SIZES))
