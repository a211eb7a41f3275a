"""``make bench``: nodegate on simulated fleets of 16, 64 and 256 nodes x 8 GPUs, against the SSH floor.
``make bench BENCH_ARGS=--scale``: the replay at 256, 1,024 and 4,096 nodes instead (bench/scale.py).
``make bench BENCH_ARGS=--install``: another project's pytest start-up with and without nodegate
installed instead (bench/install_startup.py).

For each fleet size, on the same fleet (tools/fleet: chroot nodes behind real sshd on 127.0.x.y):

1. nodegate: ``python -m pytest suites --inventory ... --known-hosts ... --reports-dir <tmp>`` as a
   child process; wall time, CPU time and peak RSS from ``os.wait4``; phase times from
   bench/timing_plugin.py; exec channels per node from the sshd logs (``Fleet.exec_counts``);
   report sizes; CPU the simulated nodes spent (sshd + probe, which on a real fleet runs on each
   node's own CPUs but here shares the controller's cores).
2. floors: ``ssh_floor_s`` (same pool running ``true`` on every node) and ``pytest_floor_s`` (a
   bare pytest run of as many trivial items as the nodegate run's pytest items, counted as pytest
   ran them by bench/timing_plugin.py, not JUnit testcases, which fold a node's passed GPUs;
   same skips, same report options); ``floor_wall_s`` is their sum. The floor run counts its own
   items the same way and the benchmark stops when the two counts differ (``same_items``).
3. at 64 nodes: the naive testinfra suite, one ``host.run`` per check (``naive_wall_s``), and
   nodegate with ``--gather-first`` (every node gathered before collection) for comparison.
4. at the largest size: the HTML loaded in headless chromium (``--dump-dom``), when installed.
5. at 64 nodes: the site-checks row (bench/site.py): a site file of 10 ``host`` commands per node
   run by nodegate alone and next to its suites, and by testinfra's own ``--hosts`` run; wall time,
   SSH connections and exec channels per node (``--site-only``: this row alone).
6. at 64 nodes (``--perf-at``): the ``--perf`` row (bench/perf_row.py): a fleet of ``perf-healthy``
   nodes run with and without ``--perf``; the overhead beyond the tools' own run time (target
   under 10 % of the tools' run time; the shims take the real tools' time, gpu_burn the spec's 60 s)
   (``--perf-only``: this row alone; ``--no-perf``: without it; ``--perf-gpu-burn-seconds``,
   ``--perf-tool-seconds``: shorter tools).

Prints a table and writes reports/bench.json (a list, one object per fleet size). Needs root,
openssh-server, busybox-static and dash (tools/fleet). The benchmark reports; it does not gate.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import floors, naive, perf_row, scale, site  # noqa: E402
from bench.common import _env, _phases, machine  # noqa: E402,F401  (tests import them here)
from bench.execs import sessions_per_node  # noqa: E402
from bench.measure import proc_cpu_s, run_measured  # noqa: E402
from tools.fleet import Fleet, sshd_available  # noqa: E402

PROFILE = "h200-580-open-healthy"  # 8x H200, every check passes or skips by spec
SIZES = (16, 64, 256)
NAIVE_AT = 64
JUNIT_LIMIT_MB = 30.0  # GitLab: JUnit report files over 30 MB are not parsed


def _mb(p: Path) -> float:
    return round(p.stat().st_size / 1e6, 2) if p.exists() else 0.0


def _junit_counts(p: Path) -> dict[str, int]:
    """JUnit ``<testcase>`` elements and their outcomes in a JUnit file (regex: the files can be
    large). nodegate's JUnit folds the passed GPUs of a check into one testcase: these are not
    pytest items (``item_counts``)."""
    text = p.read_text(errors="replace") if p.exists() else ""
    n = len(re.findall(r"<testcase ", text))
    out = {"tests": n, "failed": len(re.findall(r"<failure", text)), "errors": len(re.findall(r"<error", text)),
           "skipped": len(re.findall(r"<skipped", text))}
    out["passed"] = n - out["failed"] - out["errors"] - out["skipped"]
    return out


def item_counts(timing: Path) -> dict[str, int]:
    """The items of a run as pytest ran them, from bench/timing_plugin.py's file: ``items``
    (one per item, whatever its outcome), ``passed``, ``failed``, ``skipped``, ``errors``.
    Raises RuntimeError when the file is missing (the timing plugin did not run)."""
    try:
        t = json.loads(timing.read_text())
    except (OSError, ValueError) as e:
        raise RuntimeError(f"no item counts from bench/timing_plugin.py ({timing}): {e}") from e
    return {k: int(t[f"run_{k}"]) for k in ("items", "passed", "failed", "skipped", "errors")}


def floor_split(items: dict[str, int]) -> tuple[int, int]:
    """(passing, skipping) trivial items for the pytest floor of a run with these ``item_counts``:
    as many items as it ran, its skips as skips (a FAIL or ERROR costs pytest what a pass does)."""
    return items["items"] - items["skipped"], items["skipped"]


def same_items(run: dict[str, int], floor: dict[str, int]) -> None:
    """Raise RuntimeError unless the floor ran as many items, and as many skips, as the run it
    is the floor of (a ratio to a floor of another size measures nothing)."""
    if (run["items"], run["skipped"]) != (floor["items"], floor["skipped"]):
        raise RuntimeError(f"pytest floor ran {floor['items']} items ({floor['skipped']} skipped), the nodegate "
                           f"run {run['items']} ({run['skipped']} skipped): not the same item count")


def _plugin_args() -> list[str]:
    """nodegate's plugins by name: the root conftest loads them only when pytest's rootdir is the
    checkout (a site file outside it moves the rootdir), and installing nodegate registers none."""
    return ["-p", "nodegate.plugins"]





def run_nodegate(fleet: Fleet, work: Path, forks: int, extra: list[str] = ()) -> dict:
    """One nodegate run against ``fleet``; returns its measurements."""
    reports = work / "reports"
    timing = work / "timing.json"
    sshd_pids = [g.pid for g in fleet.groups if g.pid]
    before = sessions_per_node(fleet)
    fleet_before = fleet.exec_counts()
    node_cpu0 = proc_cpu_s(sshd_pids)
    argv = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "-p", "timing_plugin",
            *_plugin_args(), "--inventory", str(fleet.inventory_path),
            "--known-hosts", str(fleet.known_hosts_path), "--reports-dir", str(reports), "--forks", str(forks),
            *extra]
    started = time.time()
    m = run_measured(argv, cwd=ROOT, env=_env(timing))
    after = sessions_per_node(fleet)
    fleet_after = fleet.exec_counts()
    per_node = [after[n] - before.get(n, 0) for n in after]
    junit = reports / "junit.xml"
    html = reports / "report.html"
    counts = _junit_counts(junit)
    items = item_counts(timing) if m.rc in (0, 1) else {}
    return {"rc": m.rc, "wall_s": m.wall_s, "cpu_s": m.cpu_s, "peak_rss_mb": m.peak_rss_mb,
            "node_cpu_s": round(proc_cpu_s(sshd_pids) - node_cpu0, 2),
            "exec_channels_per_node": max(per_node) if per_node else 0,
            "exec_channels_min": min(per_node) if per_node else 0,
            # tools.fleet's own counter (client-port attribution), kept as a cross-check
            "fleet_exec_counts": sorted({fleet_after[k] - fleet_before.get(k, 0) for k in fleet_after}),
            "pytest_items": items.get("items", 0), "items": items, "junit_testcases": counts["tests"],
            "outcomes": counts, "html_mb": _mb(html), "junit_mb": _mb(junit),
            "phases": _phases(timing, started), "html": html, "junit": junit, "output": m.output}


def run_pytest_floor(work: Path, passed: int, skipped: int) -> dict:
    """The bare pytest run (floors.pytest_floor_suite) with nodegate's report options; its
    ``items`` as pytest ran them (``item_counts``)."""
    d = work / "pytest-floor"
    floors.pytest_floor_suite(d, passed, skipped)
    timing = d / "timing.json"
    argv = [sys.executable, "-m", "pytest", "test_floor.py", "-p", "no:cacheprovider", "-q", "-p", "timing_plugin",
            "--html", str(d / "report.html"), "--self-contained-html", "--junitxml", str(d / "junit.xml")]
    started = time.time()
    m = run_measured(argv, cwd=d, env=_env(timing))
    if m.rc != 0:
        raise RuntimeError(f"pytest floor run failed (rc {m.rc}):\n{m.output[-3000:]}")
    return {"wall_s": m.wall_s, "cpu_s": m.cpu_s, "phases": _phases(timing, started), "items": item_counts(timing),
            "html_mb": _mb(d / "report.html"), "junit_mb": _mb(d / "junit.xml")}


def run_naive(fleet: Fleet, work: Path) -> tuple[float, dict]:
    d = work / "naive"
    naive.naive_suite(d)
    argv = [sys.executable, "-m", "pytest", "test_naive.py", "-p", "no:cacheprovider", "-q",
            f"--hosts={naive.hosts_arg(fleet)}", "--html", str(d / "report.html"), "--self-contained-html",
            "--junitxml", str(d / "junit.xml")]
    before = sessions_per_node(fleet)
    m = run_measured(argv, cwd=d, env=_env())
    after = sessions_per_node(fleet)
    counts = _junit_counts(d / "junit.xml")
    if m.rc != 0 or counts["passed"] != len(naive.COMMANDS) * len(after):
        raise RuntimeError(f"naive run failed (rc {m.rc}, {counts}):\n{m.output[-3000:]}")
    return m.wall_s, {"naive_exec_channels_per_node": max(after[n] - before.get(n, 0) for n in after)}


def load_in_chromium(html: Path, timeout_s: float = 120.0) -> dict:
    """Open the report in headless chromium (``--dump-dom``): seconds until the DOM was dumped and
    the number of result rows rendered by pytest-html's script."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        return {"html_load": "chromium not installed"}
    with tempfile.TemporaryDirectory(prefix="nodegate-chromium-") as prof:
        argv = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={prof}", "--virtual-time-budget=60000", "--dump-dom", html.as_uri()]
        t0 = time.monotonic()
        try:
            p = subprocess.run(argv, capture_output=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"html_load": f"timed out after {timeout_s:.0f}s"}
        dt = round(time.monotonic() - t0, 2)
    dom = p.stdout.decode(errors="replace")
    rows = len(re.findall(r'<tbody class="results-table-row', dom))
    return {"html_load_s": dt, "html_rows_rendered": rows, "html_dom_mb": round(len(dom) / 1e6, 2),
            "html_load": "ok" if p.returncode == 0 else f"chromium exit {p.returncode}"}


def site_row(fleet: Fleet, work: Path, forks: int) -> dict:
    """bench/site.py's row on ``fleet`` (nodegate site file alone, with the suites, testinfra)."""
    return site.run_site_row(fleet, work, forks, run_measured=run_measured, env=_env, junit_counts=_junit_counts,
                             root=ROOT, plugin_args=_plugin_args)


def perf_size(n: int, args, base: Path) -> dict:
    """The --perf row (bench/perf_row.py) on its own fleet of ``n`` perf-healthy nodes."""
    work = base / f"perf{n}"
    work.mkdir(parents=True)
    t0 = time.monotonic()
    with perf_row.perf_fleet(n, f"bench-perf-{os.getpid()}-{n}", args.perf_gpu_burn_seconds,
                             args.perf_tool_seconds) as fleet:
        print(f"[{n:>3} nodes] perf fleet up in {time.monotonic() - t0:.1f}s; with and without --perf ...",
              flush=True)
        return perf_row.run_perf_row(fleet, n, work, args.forks, run_nodegate, args.perf_gpu_burn_seconds,
                                     args.perf_tool_seconds)


def bench_size(n: int, args, base: Path) -> dict:
    if args.perf_only:
        return {"nodes": n, **perf_size(n, args, base)}
    work = base / f"n{n}"
    work.mkdir(parents=True)
    t0 = time.monotonic()
    fleet = Fleet(run_id=f"bench-{os.getpid()}-{n}")
    fleet.add_copies(PROFILE, n, prefix=f"b{n}")
    with fleet:
        fleet_s = round(time.monotonic() - t0, 2)
        if args.site_only:
            print(f"[{n:>3} nodes] fleet up in {fleet_s}s; site checks row ...", flush=True)
            return {"nodes": n, "fleet_start_s": fleet_s, **site_row(fleet, work, args.forks)}
        print(f"[{n:>3} nodes] fleet up in {fleet_s}s ({len(fleet.groups)} sshd); nodegate ...", flush=True)
        ng = run_nodegate(fleet, work, args.forks)
        if ng["rc"] not in (0, 1) or not ng["pytest_items"]:
            raise RuntimeError(f"nodegate run at {n} nodes: rc {ng['rc']}\n{ng['output'][-4000:]}")
        if ng["outcomes"]["failed"] or ng["outcomes"]["errors"]:  # a healthy fleet: all pass or skip by spec
            print(f"[{n:>3} nodes] WARNING: not all items passed/skipped on the healthy fleet: {ng['outcomes']}",
                  flush=True)
            for line in re.findall(r"^(?:ERROR|FAILED) .*$", ng["output"], re.M)[:8]:
                print(f"[{n:>3} nodes]   {line[:300]}", flush=True)
        print(f"[{n:>3} nodes] nodegate {ng['wall_s']}s; ssh floor ...", flush=True)
        cpu0, ex0 = proc_cpu_s([g.pid for g in fleet.groups if g.pid]), sessions_per_node(fleet)
        ssh_s, ok = floors.ssh_floor(fleet.inventory_path, fleet.known_hosts_path, args.forks)
        ssh_node_cpu = round(proc_cpu_s([g.pid for g in fleet.groups if g.pid]) - cpu0, 2)
        ex1 = sessions_per_node(fleet)
        if {ex1[k] - ex0.get(k, 0) for k in ex1} != {1}:
            raise RuntimeError("ssh floor: expected exactly one session per node in the sshd logs")
        if ok != n:
            raise RuntimeError(f"ssh floor: {ok}/{n} nodes answered")
        row: dict = {"nodes": n, "gpus_per_node": 8, "wall_s": ng["wall_s"], "cpu_s": ng["cpu_s"],
                     "peak_rss_mb": ng["peak_rss_mb"], "ssh_floor_s": ssh_s}
        print(f"[{n:>3} nodes] ssh floor {ssh_s}s; pytest floor ...", flush=True)
        o = ng["outcomes"]
        pf = run_pytest_floor(work, *floor_split(ng["items"]))
        same_items(ng["items"], pf["items"])
        row["pytest_floor_s"] = pf["wall_s"]
        row["floor_wall_s"] = round(row["ssh_floor_s"] + row["pytest_floor_s"], 3)
        row["ratio_to_floor"] = round(row["wall_s"] / row["floor_wall_s"], 2)
        row.update(exec_channels_per_node=ng["exec_channels_per_node"], pytest_items=ng["pytest_items"],
                   pytest_floor_items=pf["items"]["items"], junit_testcases=ng["junit_testcases"], items=ng["items"],
                   html_mb=ng["html_mb"], junit_mb=ng["junit_mb"],
                   junit_under_gitlab_limit=ng["junit_mb"] < JUNIT_LIMIT_MB,
                   report_gen_s=ng["phases"].get("report_s"), phases=ng["phases"], node_cpu_s=ng["node_cpu_s"],
                   ssh_floor_node_cpu_s=ssh_node_cpu, pytest_floor_cpu_s=pf["cpu_s"],
                   pytest_floor_phases=pf["phases"], pytest_floor_html_mb=pf["html_mb"], exec_channels_fleet_counter=ng["fleet_exec_counts"],
                   outcomes=o, forks=args.forks, fleet_start_s=fleet_s)
        if n == args.naive_at and not args.no_naive:
            print(f"[{n:>3} nodes] naive testinfra suite ({len(naive.COMMANDS)} host.run per node) ...", flush=True)
            row["naive_wall_s"], extra = run_naive(fleet, work)
            row.update(extra)
            row["speedup_vs_naive"] = round(row["naive_wall_s"] / row["wall_s"], 1)
        if n == max(args.sizes) and not args.no_chromium:
            row.update(load_in_chromium(ng["html"]))
        if n == args.naive_at and not args.no_gather_first:
            gf = run_nodegate(fleet, work / "gather-first", args.forks, ["--gather-first"])
            row.update(gather_first_wall_s=gf["wall_s"], gather_first_cpu_s=gf["cpu_s"],
                       gather_first_outcomes_equal=gf["outcomes"] == o, gather_first_phases=gf["phases"])
        if n == args.naive_at and not args.no_site:
            print(f"[{n:>3} nodes] site checks row (nodegate vs testinfra --hosts) ...", flush=True)
            row.update(site_row(fleet, work, args.forks))
        if args.xdist and n == args.naive_at:
            xd = run_nodegate(fleet, work / "xdist", args.forks, ["-n", str(args.xdist), "--dist", "loadgroup"])
            row.update(xdist_workers=args.xdist, xdist_wall_s=xd["wall_s"], xdist_cpu_s=xd["cpu_s"],
                       xdist_exec_channels_per_node=xd["exec_channels_per_node"],
                       xdist_outcomes_equal=xd["outcomes"] == o)
    if n == args.perf_at and not args.no_perf:
        row.update(perf_size(n, args, base))
    return row


#: the table's columns and what each is (printed under the table; docs/performance.md, "What is measured")
COLUMN_LABELS = {
    "nodes": "simulated nodes, 8 GPUs each",
    "wall_s": "nodegate run, wall seconds",
    "cpu_s": "nodegate run, CPU seconds (user+sys, its process tree)",
    "peak_rss_mb": "nodegate run, peak RSS of its process tree, MB",
    "ssh_floor_s": "floor: `true` over SSH on every node, same pool, wall seconds",
    "pytest_floor_s": "floor: bare pytest, as many trivial items as pytest_items, wall seconds",
    "floor_wall_s": "ssh_floor_s + pytest_floor_s",
    "ratio_to_floor": "wall_s / floor_wall_s",
    "exec_channels_per_node": "SSH exec channels per node during the nodegate run (sshd log)",
    "pytest_items": "items pytest ran in the nodegate run (= the floor's items)",
    "junit_testcases": "<testcase> elements in nodegate's JUnit (a node's passed GPUs folded into one)",
    "html_mb": "report.html, MB",
    "junit_mb": "junit.xml, MB",
    "report_gen_s": "pytest_sessionfinish (HTML, JUnit, RMA files), wall seconds",
    "node_cpu_s": "CPU the simulated nodes spent (sshd + probe), seconds",
    "naive_wall_s": "naive testinfra suite (one host.run per check), wall seconds",
}
COLUMNS = tuple(COLUMN_LABELS)


def table(rows: list[dict]) -> str:
    """The rows as a table, one column per COLUMNS, then a legend: what each column is."""
    head = [c.replace("_per_node", "/node") for c in COLUMNS]
    lines = [head] + [[str(r.get(c, "")) for c in COLUMNS] for r in rows]
    w = [max(len(x[i]) for x in lines) for i in range(len(COLUMNS))]
    out = ["  ".join(x[i].rjust(w[i]) for i in range(len(COLUMNS))) for x in lines]
    return "\n".join(out + [""] + [f"  {h}: {COLUMN_LABELS[c]}" for h, c in zip(head, COLUMNS)])


SITE_RUNS = (("nodegate, site file", "site"), ("nodegate, suites + site file", "site_suites"),
             ("testinfra --hosts, site file", "site_testinfra"))


def site_table(r: dict) -> str:
    """The site-checks row: one line per run."""
    out = [f"site checks at {r['nodes']} nodes, {r['site_commands_per_node']} host commands per node:",
           f"  {'run':<30} {'wall_s':>7} {'cpu_s':>7} {'conn/node':>9} {'exec/node':>9}  outcomes"]
    for label, k in SITE_RUNS:
        o = r[f"{k}_outcomes"]
        out.append(f"  {label:<30} {r[f'{k}_wall_s']:>7} {r[f'{k}_cpu_s']:>7} {r[f'{k}_connections_per_node']:>9} "
                   f"{r[f'{k}_exec_channels_per_node']:>9}  {o['passed']} passed, {o['failed']} failed, "
                   f"{o['errors']} errors")
    out.append(f"  testinfra / nodegate (site file): x{r['site_speedup_vs_testinfra']}; "
               f"testinfra / nodegate (suites + site file): x{r['site_suites_speedup_vs_testinfra']}")
    return "\n".join(out)


def _exit_on_sigterm() -> None:
    """SIGTERM (a CI timeout) ends the bench as Ctrl-C does: ``with fleet`` stops its simulated
    fleet on the way out (issue 37.9: Python's default for SIGTERM is to die on the spot, which
    left 16 sshd daemons and a 4 GB tmpfs behind; tools/reaper.py stops any such leftover)."""
    import signal

    def handler(signum, frame):  # noqa: ARG001
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGHUP, handler)


def main(argv: list[str] | None = None) -> int:
    _exit_on_sigterm()
    ap = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=lambda s: tuple(int(x) for x in s.split(",")), default=SIZES)
    ap.add_argument("--forks", type=int, default=None, help="pool size (default: nodegate's --forks default)")
    ap.add_argument("--naive-at", type=int, default=NAIVE_AT)
    ap.add_argument("--no-naive", action="store_true")
    ap.add_argument("--no-chromium", action="store_true")
    ap.add_argument("--no-gather-first", action="store_true",
                    help="skip the --gather-first comparison run at --naive-at")
    ap.add_argument("--xdist", default="0", metavar="N[,N...]",
                    help="also run nodegate with -n N --dist loadgroup at --naive-at; with --scale: instead, each size "
                         "serially and with each -n N, wall, CPU and every process's peak RSS (bench/xdist_scale.py, "
                         "reports/bench-xdist.json)")
    ap.add_argument("--no-site", action="store_true", help="skip the site-checks row at --naive-at")
    ap.add_argument("--site-only", action="store_true", help="only the site-checks row, at each --sizes")
    ap.add_argument("--perf-at", type=int, default=perf_row.PERF_AT,
                    help="size at which the --perf row runs (bench/perf_row.py)")
    ap.add_argument("--no-perf", action="store_true", help="skip the --perf row")
    ap.add_argument("--perf-only", action="store_true", help="only the --perf row, at each --sizes")
    ap.add_argument("--perf-gpu-burn-seconds", type=int, default=None, metavar="S",
                    help="the --perf row's gpu_burn duration (spec perf.gpu_burn_seconds, 5..7200; default: the "
                         "spec's default, 60)")
    ap.add_argument("--perf-tool-seconds", type=float, default=None, metavar="S",
                    help="the --perf row's other shims' run time each (default: the real tools' times, "
                         "tools/fleet/perf.py TOOL_SECONDS)")
    ap.add_argument("--out", default=None, help="JSON written (default reports/bench.json, with --scale "
                                                "reports/bench-scale.json)")
    ap.add_argument("--scale", nargs="?", const=",".join(str(n) for n in scale.SIZES), default=None,
                    metavar="N,N,...", help="instead: --replay of generated copies of the healthy 8-GPU bundle at "
                                            "these sizes (default 256,1024,4096): wall, CPU, RSS, report sizes "
                                            "(bench/scale.py, reports/bench-scale.json)")
    ap.add_argument("--repeat", type=int, default=1, metavar="N",
                    help="with --scale: every size N times, the sizes in turn; figures are the medians")
    ap.add_argument("--paired", default=None, metavar="BIG,SMALL",
                    help="instead: one --replay of BIG generated nodes while SMALL-node replays run back to back "
                         "beside it (bench/paired.py, reports/bench-paired.json)")
    ap.add_argument("--install", action="store_true",
                    help="instead: what installing nodegate costs another project's pytest start-up "
                         "(bench/install_startup.py, reports/bench-install.json)")
    args = ap.parse_args(argv)
    if args.install:
        from bench import install_startup
        return install_startup.main(out=Path(args.out) if args.out else None)
    if args.paired:
        from bench import paired
        big, small = (int(x) for x in args.paired.split(","))
        return paired.main(big, small, Path(args.out) if args.out else None)
    xdist_ns = tuple(int(x) for x in str(args.xdist).split(",") if x.strip())
    args.xdist = xdist_ns[0] if xdist_ns else 0
    if args.scale and args.xdist:
        from bench import xdist_scale
        return xdist_scale.run(tuple(int(x) for x in args.scale.split(",")), xdist_ns,
                               Path(args.out) if args.out else None)
    if args.scale:
        return scale.main(tuple(int(x) for x in args.scale.split(",")), Path(args.out) if args.out else None,
                          repeat=args.repeat)
    args.out = args.out or str(ROOT / "reports" / "bench.json")
    why = sshd_available()
    if why:
        print(f"bench: cannot build a simulated fleet here: {why}", file=sys.stderr)
        return 2
    if args.forks is None:
        from nodegate.run import GatherOptions
        args.forks = GatherOptions().forks
    t0 = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="nodegate-bench-") as tmp:
        for n in args.sizes:
            rows.append(bench_size(n, args, Path(tmp)))
    info = machine()
    for r in rows:
        r["machine"] = info
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print()
    if not args.site_only and not args.perf_only:
        print(table(rows))
    for r in rows:
        extra = {k: r[k] for k in ("phases", "html_load_s", "html_rows_rendered", "html_load", "speedup_vs_naive",
                                   "gather_first_wall_s", "gather_first_outcomes_equal",
                                   "xdist_wall_s", "xdist_exec_channels_per_node", "xdist_outcomes_equal") if k in r}
        if not args.site_only and not args.perf_only:
            print(f"{r['nodes']:>4}: {extra}")
        if "site_wall_s" in r:
            print(site_table(r))
        if "perf_wall_s" in r:
            print(perf_row.perf_table(r))
    print(f"\nwrote {out} in {time.monotonic() - t0:.0f}s total "
          f"({info['nproc']} CPUs, {info['cpu_model']}, load {info['loadavg_at_start'][0]:.1f} at start)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
