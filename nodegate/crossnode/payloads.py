"""What runs inside a job, and what its output measured: nccl-tests (``all_reduce_perf``,
``alltoall_perf``, the per-rail split) and perftest (``ib_write_bw``, ``ib_write_lat``).

Commands (issue 38 item 4; ../shared/spec/cross-node-anchors.md section 5):

- all_reduce_perf ``-b 1G -e 8G -f 2 -g 1 -c 1``, one process per GPU, ``NCCL_ALGO=RING``: a
  fixed algorithm, so two nodes never report more than the NICs carry (nccl-tests#169) and
  groups of any size compare with one floor.
- the per-rail split: the same with ``NCCL_TESTS_SPLIT="MOD <ranks per node>"`` (one GPU per
  node in each group: the inter-node network only, one rail a group) and ``-a 3`` (the slowest
  group's time is reported: a slow rail is not averaged away; nccl-tests src/common.cu).
- alltoall_perf with the same sizes.
- ``-J``: where ``nccl_json`` is set, the JSON file rank 0 writes is printed after the table by
  a POSIX sh wrapper, between ``#NODEGATE-NCCL-JSON-BEGIN``/``-END`` lines, and judged instead
  of the table (same parser result, nodegate/parsers/nccl_json.py).
- perftest: ``ib_write_bw -d <hca> -p <port> -s 8388608 -n 5000 --report_gbits -F`` (8 MiB,
  Gb/s: Azure NHC and ngc_multinode_perf measure there), then ``ib_write_lat -d <hca> -p <port+1>
  -n 5000 -F``; ``--use_cuda=<gpu>`` when the node has GPUs.

``measure_nccl`` / ``measure_perftest`` turn a LaunchRecord into ``thresholds.Measured``: the
figure, and every reason it cannot be trusted (rule 3).
"""

from __future__ import annotations

import math
import posixpath
import statistics

from ..errors import ParseError
from ..parsers.ib_write_lat import parse_ib_write_lat
from ..parsers.nccl_json import parse_nccl_json
from ..parsers.perf_ib_write_bw import parse_ib_write_bw
from ..parsers.perf_nccl import parse_nccl
from .evidence import LaunchRecord
from .spec import CrossnodeSpec
from .thresholds import Measured

JSON_BEGIN = "#NODEGATE-NCCL-JSON-BEGIN"
JSON_END = "#NODEGATE-NCCL-JSON-END"
PERFTEST_SIZE = 8388608
#: rows of one size further apart than this ((max - min) / median) are two measurements that
#: disagree, not one (nodegate.perf.stable.MAX_SPREAD, the perf phase's bound)
SPREAD = 0.25
PERFTEST_ITERS = 5000
#: perftest's default TCP port (perftest_parameters.h DEF_PORT); pairs of one round take the next ones
PERFTEST_PORT = 18515

_JSON_WRAPPER = ('f="/tmp/nodegate-nccl-$$.json"; "$@" -J "$f"; rc=$?; '
                 'if [ -s "$f" ]; then printf "\\n%s\\n" "' + JSON_BEGIN + '"; cat "$f"; '
                 'printf "\\n%s\\n" "' + JSON_END + '"; fi; rm -f "$f"; exit $rc')


def nccl_command(payload: str, spec: CrossnodeSpec, ranks_per_node: int) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of one nccl-tests payload: ``all_reduce_perf``, ``all_reduce_perf:split``,
    ``alltoall_perf``."""
    name = payload.split(":", 1)[0]
    binary = posixpath.join(spec.nccl_tests_dir, name) if spec.nccl_tests_dir else name
    argv = [binary, "-b", spec.min_bytes, "-e", spec.max_bytes, "-f", "2", "-g", "1", "-c", "1"]
    env = dict(spec.env)
    if name == "all_reduce_perf":
        env.setdefault("NCCL_ALGO", "RING")
    if payload.endswith(":split"):
        env["NCCL_TESTS_SPLIT"] = f"MOD {ranks_per_node}"
        argv += ["-a", "3"]
    if spec.nccl_json:
        argv = ["sh", "-c", _JSON_WRAPPER, "sh"] + argv
    return argv, env


def perftest_commands(hca_server: str, hca_client: str, server_addr: str, port: int, spec: CrossnodeSpec, *,
                      gpu_server: int | None, gpu_client: int | None) -> dict[str, list[str]]:
    """The four commands of one HCA pair: ``bw_server``, ``bw_client``, ``lat_server``,
    ``lat_client`` (the server side first; the client names the server's address)."""
    def tool(t):
        return posixpath.join(spec.perftest_dir, t) if spec.perftest_dir else t

    def cuda(g):
        return [f"--use_cuda={g}"] if g is not None else []

    bw = ["-s", str(PERFTEST_SIZE), "-n", str(PERFTEST_ITERS), "--report_gbits", "-F"]
    lat = ["-n", str(PERFTEST_ITERS), "-F"]
    return {
        "bw_server": [tool("ib_write_bw"), "-d", hca_server, "-p", str(port), *bw, *cuda(gpu_server)],
        "bw_client": [tool("ib_write_bw"), "-d", hca_client, "-p", str(port), *bw, *cuda(gpu_client), server_addr],
        "lat_server": [tool("ib_write_lat"), "-d", hca_server, "-p", str(port + 1), *lat, *cuda(gpu_server)],
        "lat_client": [tool("ib_write_lat"), "-d", hca_client, "-p", str(port + 1), *lat, *cuda(gpu_client),
                       server_addr],
    }


def _split_json(text: str) -> tuple[str, str | None]:
    i = text.rfind(JSON_BEGIN)
    if i < 0:
        return text, None
    j = text.find(JSON_END, i)
    return text[:i], text[i + len(JSON_BEGIN): j if j >= 0 else len(text)]


def _run_problems(rec: LaunchRecord, key: str) -> list[str]:
    it = rec.items.get(key)
    if it is None:
        return [f"no {key} output was recorded"]
    out = []
    if rec.timed_out or it.status == "timeout":
        out.append(f"timed out (the job's deadline ended it after {rec.duration_s:.1f} s)")
    if rec.interrupted:
        out.append(f"interrupted ({rec.interrupted})")
    if it.status == "truncated":
        out.append("output over the cap: not judged")
    if it.rc is None and not rec.timed_out:
        out.append("no exit status")
    elif it.rc not in (0, None):
        lines = (it.stderr or it.stdout).decode("utf-8", "replace").splitlines()
        said = [ln.strip() for ln in lines if ln.strip() and not set(ln.strip()) <= set("-*=# ")]
        out.append(f"exit code {it.rc}" + (f": {said[0][:200]}" if said else ""))
    return out


def measure_nccl(rec: LaunchRecord, payload: str, expected_ranks: int, min_size: int) -> Measured:
    """busbw (GB/s): the maximum over sizes >= ``min_size`` of the better of out-of-place and
    in-place (CRE ADR-021: max over sizes; never the 'Avg bus bandwidth' line)."""
    m = Measured("busbw", "GB/s")
    m.problems += _run_problems(rec, "launch")
    it = rec.items.get("launch")
    text = (it.stdout if it else b"").decode("utf-8", "replace")
    table, js = _split_json(text)
    try:
        run = parse_nccl_json(js) if js is not None else parse_nccl(table)
        m.detail = "nccl-tests -J JSON" if js is not None else "nccl-tests text table"
    except ParseError as e:
        m.problems.append(f"output not readable: {e}")
        return m
    if getattr(run, "version", None):
        m.versions["nccl-tests"] = str(run.version)
    if not run.rows:
        m.problems.append("no result rows in the output (missing output)")
        return m
    if run.nranks is None:
        m.problems.append("the output names no ranks ('# Rank' lines): one communicator not shown")
    elif run.nranks != expected_ranks:
        m.problems.append(f"{run.nranks} ranks in the output, {expected_ranks} launched: the ranks did not form "
                          "one communicator (an MPI build or launcher mismatch, nccl-tests#213)")
    # every result table of the output (the text parser's; -J JSON has one): a table after the
    # first (the test run twice, two outputs joined) was ignored, its #wrong with it
    tables = [t for t in getattr(run, "tables", None) or [] if t.rows] or [run]
    if len(tables) > 1:
        m.problems.append(f"{len(tables)} result tables in one output (a run repeated, or outputs joined): which one "
                          "is this job's measurement is unknown")
    wrong = run.wrong_total() or sum(1 for t in tables for r in t.rows for w in (r.oop_wrong, r.ip_wrong)
                                     if w is not None and w > 0)
    oob = [t for t in tables if t.oob_ok is False or (t.oob_values or 0) > 0]
    if wrong:
        m.corruption = f"#wrong = {wrong} (data corruption reported by nccl-tests)"
    elif oob:
        m.corruption = f"out of bounds values: {oob[0].oob_values} FAILED"
    for why in getattr(run, "failures", None) or []:   # the text parser's own findings (an abort line)
        m.problems.append(str(why))
    if run.validation == 0 or all(r.oop_wrong is None and r.ip_wrong is None for t in tables for r in t.rows):
        m.problems.append("validation off (-c 0): the results were not checked")
    big = [r for r in run.rows if r.size_b >= min_size]
    if not big:
        m.problems.append(f"no size >= {min_size} bytes was run (largest {max(r.size_b for r in run.rows)})")
        return m
    vals = [r.best_busbw for r in big]
    if any(not math.isfinite(v) for v in vals):
        m.problems.append("a bandwidth figure is not a number")
        return m
    m.value = max(vals)
    if m.value <= 0:
        m.problems.append("bus bandwidth 0: nothing was measured")
    return m


def measure_perftest(rec: LaunchRecord) -> Measured:
    """ib_write_bw (Gb/s, the 8 MiB average of the client's report) with ib_write_lat p99 (us)
    in ``extra``."""
    bw = Measured("ib_write_bw", "Gb/s")
    for k in ("bw_server", "bw_client"):
        bw.problems += [f"{k}: {p}" for p in _run_problems(rec, k)]
    try:
        it = rec.items.get("bw_client")
        run = parse_ib_write_bw(it.stdout if it else b"")
        got = run.largest()
        if got is None:
            bw.problems.append("bw_client: no result rows (missing output)")
        else:
            bw.value = got[1]
            avgs = [round(run.to_gbits(a), 2) for _, a in run.bw[got[0]]]
            if max(avgs) - min(avgs) > SPREAD * statistics.median(avgs):
                # two runs of one size that disagree: the best of them is no measurement
                bw.problems.append(f"bw_client: {len(avgs)} rows at {got[0]} B disagree "
                                   f"({', '.join(f'{a:g}' for a in avgs[:4])} Gb/s): contradictory output")
            if bw.value <= 0:
                bw.problems.append(f"bw_client: average {bw.value:g} Gb/s at {got[0]} B: nothing was measured")
    except ParseError as e:
        bw.problems.append(f"bw_client: output not readable: {e}")
    lat = Measured("ib_write_lat_p99", "us")
    for k in ("lat_server", "lat_client"):
        lat.problems += [f"{k}: {p}" for p in _run_problems(rec, k)]
    try:
        it = rec.items.get("lat_client")
        lrun = parse_ib_write_lat(it.stdout if it else b"")
        row = lrun.smallest()
        if row is None or row.p99 is None:
            lat.problems.append("lat_client: no 99% percentile row (missing output, or duration mode)")
        else:
            lat.value = row.p99
            size = min(lrun.rows)
            if size in lrun.conflicts:
                seen = ", ".join(f"{r.p99:g}" for r in lrun.conflicts[size][:4] if r.p99 is not None)
                lat.problems.append(f"lat_client: {len(lrun.conflicts[size])} rows at {size} B disagree "
                                    f"(p99 {seen} us): contradictory output")
            if not row.p99 > 0:
                # a latency of 0 is a round trip never timed (a 0 passed the ceiling rule)
                lat.problems.append(f"lat_client: p99 {row.p99:g} us at {size} B: nothing was measured")
    except ParseError as e:
        lat.problems.append(f"lat_client: output not readable: {e}")
    bw.extra.append(lat)
    return bw

