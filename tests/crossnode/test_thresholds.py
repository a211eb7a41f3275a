"""Three thresholds per measurement, each with its rule and source; fail-closed (issue 38 item 6).
Real nccl-tests outputs (tests/perf/fixtures, copies of ../shared/perf) and the stand-in's."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodegate.crossnode.evidence import Item, LaunchRecord
from nodegate.crossnode.payloads import measure_nccl, measure_perftest, nccl_command
from nodegate.crossnode.spec import CrossnodeSpec
from nodegate.crossnode.thresholds import RunBest, combine, judge, resolve_floors
from nodegate.outcomes import Outcome
from nodegate.parsers import parse_corpus_file

PERF = Path(__file__).resolve().parents[1] / "perf" / "fixtures"
GIB = 1 << 30


def rec(stdout: str, rc: int | None = 0, *, timed_out=False, stderr="") -> LaunchRecord:
    r = LaunchRecord("mpirun", items={"launch": Item(stdout.encode(), stderr.encode(), rc,
                                                     "timeout" if timed_out else "ok")})
    r.timed_out = timed_out
    r.duration_s = 3.0
    return r


def table(busbw: float, *, ranks=16, wrong=0, sizes=(GIB, 2 * GIB, 4 * GIB), validation=1, hosts=("gpu01", "gpu02")) -> str:
    lines = ["# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703",
             f"# nThread 1 nGpus 1 minBytes {sizes[0]} maxBytes {sizes[-1]} step: 2(factor) warmup iters: 1 iters: 20 "
             f"agg iters: 1 validation: {validation} graph: 0 unalign: 0", "#", "# Using devices"]
    for r in range(ranks):
        # nccl-tests pads the host name to 10 (util.cu "on %10s"): short names get spaces
        lines.append(f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {hosts[r * len(hosts) // ranks]:>10s} device "
                     f"{r % 8:2d} [0000:18:00] NVIDIA H100 80GB HBM3")
    lines += ["#", "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]
    for s in sizes:
        w = wrong if validation else "N/A"
        lines.append(f"{s:12d}  {s // 4:12d}     float     sum      -1   1000.0  {busbw / 1.875:6.2f}  {busbw * (s / sizes[-1]):6.2f}  {w:>6}"
                     f"   1000.0  {busbw / 1.875:6.2f}  {busbw * (s / sizes[-1]):6.2f}  {w:>6}")
    lines += [f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}", "# Avg bus bandwidth    : 12.3 ", "#"]
    return "\n".join(lines) + "\n"


H100 = ["NVIDIA H100 80GB HBM3"] * 2


def verdict(stdout, *, rc=0, payload="all_reduce_perf", timed_out=False, ranks=16, skus=H100, fabric="ib-ndr400",
            best=None, floors=None):
    m = measure_nccl(rec(stdout, rc, timed_out=timed_out), payload, ranks, GIB)
    f = resolve_floors(skus, fabric, floors)
    checks = judge(m, f, payload, best or RunBest())
    return combine(checks), checks, m


def test_each_measurement_gets_three_rules_each_with_rule_and_source():
    out, checks, m = verdict(table(380.0))
    assert out is Outcome.PASS and m.value == 380.0
    assert [c.kind for c in checks] == ["absolute", "relative", "fail-closed"]
    ab = checks[0]
    assert ab.limit == pytest.approx(368.0)          # 0.92 x 8 rails x 400 Gb/s / 8
    assert "CRE ADR-021" in ab.source and ab.rule == "busbw >= 368 GB/s"
    assert "ClusterKit" in checks[1].source


def test_busbw_is_the_maximum_over_sizes_of_at_least_1_gib_never_the_avg_line():
    out, checks, m = verdict(table(380.0, sizes=(GIB // 2, GIB, 2 * GIB, 4 * GIB)))
    assert m.value == 380.0                           # the Avg bus bandwidth line says 12.3


def test_below_the_floor_fails_the_absolute_rule():
    out, checks, _ = verdict(table(300.0))
    assert out is Outcome.FAIL and checks[0].passed is False and "300 GB/s below 368" in checks[0].why


def test_below_93_percent_of_the_runs_best_fails_the_relative_rule():
    best = RunBest()
    best.offer("busbw", "all_reduce_perf", 450.0)
    out, checks, _ = verdict(table(400.0), best=best)   # above the floor, 89 % of the best
    assert out is Outcome.FAIL and checks[0].passed and checks[1].passed is False


def test_a_latency_above_2_1x_the_lowest_fails_the_relative_rule():
    best = RunBest()
    best.offer("ib_write_lat_p99", "perftest", 1.5, lower_is_better=True)
    r = LaunchRecord("ssh", items={
        "bw_server": Item(b"", b"", 0), "lat_server": Item(b"", b"", 0),
        "bw_client": Item(b" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                          b" 8388608    5000           392.39             392.00\t\t   0.005\n", b"", 0),
        "lat_client": Item(b" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
                           b"t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n"
                           b" 2       5000          3.00           9.00         3.20              3.30             "
                           b"0.07            3.40                 5.00\n", b"", 0)})
    m = measure_perftest(r)
    checks = judge(m, resolve_floors(H100, "ib-ndr400"), "perftest", best, port_rate_gbps=400.0)
    assert [c.kind for c in checks] == ["absolute", "relative", "fail-closed"] * 2
    assert checks[0].limit == 360.0 and checks[0].passed               # 90 % of the negotiated 400 Gb/s
    assert checks[3].passed is True                                     # p99 3.4 <= 4.2 us (Imbue)
    assert checks[4].passed is False and checks[4].limit == pytest.approx(3.15)   # > 2.1 x 1.5
    assert combine(checks) is Outcome.FAIL


@pytest.mark.parametrize("case, expect, why", [
    ("wrong", Outcome.FAIL, "#wrong"),
    ("rc", Outcome.ERROR, "exit code 1"),
    ("timeout", Outcome.ERROR, "timed out"),
    ("empty", Outcome.ERROR, "no result rows"),
    ("ranks", Outcome.ERROR, "did not form one communicator"),
    ("small", Outcome.ERROR, "no size >= 1073741824"),
    ("validation0", Outcome.ERROR, "validation off"),
    ("sku", Outcome.ERROR, "no floor profile for the GPU"),
    ("fabric", Outcome.ERROR, "unknown fabric"),
    ("alltoall", Outcome.ERROR, "set nodegate.crossnode.floors.alltoall_busbw_gbs"),
])
def test_fail_closed_never_passes(case, expect, why):
    kw = {}
    text = table(380.0)
    if case == "wrong":
        text, kw["rc"] = table(380.0, wrong=3), 1         # nccl-tests exits non-zero on errors
    elif case == "rc":
        kw["rc"] = 1
    elif case == "timeout":
        kw["timed_out"], kw["rc"] = True, None
    elif case == "empty":
        text = "# nccl-tests version 2.19.6\n"
    elif case == "ranks":
        text = table(380.0, ranks=8)                       # 16 launched, 8 in one table: split runs
    elif case == "small":
        text = table(380.0, sizes=(1 << 20, 8 << 20))
    elif case == "validation0":
        text = table(380.0, validation=0)
    elif case == "sku":
        kw["skus"] = ["NVIDIA Quadro RTX 8000"] * 2
    elif case == "fabric":
        kw["fabric"] = "ib-tdr"
    elif case == "alltoall":
        kw["payload"] = "alltoall_perf"
    out, checks, _ = verdict(text, **kw)
    assert out is expect
    assert any(why in (c.why + c.source) for c in checks), [c.why for c in checks]


def test_site_floor_in_the_spec_wins_and_names_the_spec_key():
    _, checks, _ = verdict(table(330.0), payload="alltoall_perf", floors={"alltoall_busbw_gbs": 300})
    assert checks[0].passed and checks[0].source == "spec: nodegate.crossnode.floors.alltoall_busbw_gbs"


def test_a_job_over_two_skus_takes_the_lower_floor():
    f = resolve_floors(["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"], "ib-ndr400")
    assert f.busbw_gbs["all_reduce_perf"][0] is None       # A100 has no ib-ndr400 profile: fail closed
    f = resolve_floors(["NVIDIA H100 80GB HBM3", "NVIDIA B200"], "ib-ndr400")
    assert f.busbw_gbs["all_reduce_perf"][0] == pytest.approx(368.0)


def test_real_a100_pre213_output_validation_off_is_error_with_its_large_size_figure():
    _, body = parse_corpus_file(PERF / "301-nccl-allreduce-a100x8-pre213-validation0-superbench.txt")
    out, checks, m = verdict(body, ranks=8, skus=["A100-SXM4-40GB"], fabric="ib-hdr200")
    assert m.value == pytest.approx(235.0, abs=1.0)         # the 8 GiB plateau, not Avg 68.4
    assert out is Outcome.ERROR and any("validation off" in c.why for c in checks)


def test_real_2_node_h100_output_without_rank_lines_is_error():
    """An excerpt without the '# Rank' lines cannot show the 16 ranks formed one communicator."""
    _, body = parse_corpus_file(PERF / "304-nccl-allreduce-2x-p5-h100-srun-0-prefix-487gbs.txt")
    out, checks, m = verdict(body, ranks=16)
    assert m.value == pytest.approx(487.26, abs=0.01) and out is Outcome.ERROR
    assert any("names no ranks" in c.why for c in checks)


def test_nccl_commands_fix_the_algorithm_and_split_per_rail():
    spec = CrossnodeSpec(min_bytes="1G", max_bytes="8G")
    argv, env = nccl_command("all_reduce_perf", spec, 8)
    assert argv[:1] == ["all_reduce_perf"] and env["NCCL_ALGO"] == "RING" and "-c" in argv
    argv, env = nccl_command("all_reduce_perf:split", spec, 8)
    assert env["NCCL_TESTS_SPLIT"] == "MOD 8" and argv[-2:] == ["-a", "3"]
    argv, env = nccl_command("alltoall_perf", spec.model_copy(update={"nccl_json": True}), 8)
    assert argv[:2] == ["sh", "-c"] and "-J" in argv[2] and "NCCL_ALGO" not in env
