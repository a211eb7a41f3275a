"""Issue 36 items 6 and 7: HCA floors from the port's negotiated rate whatever it is, perftest's
bandwidth and latency tools, and dcgmproftester: parsed, judged, run by --perf (spec, script,
bundle keys) and replayed. Output shapes from perftest_parameters.h / DCGM's PhysicalGpu.cpp and
the real fixtures 363-383."""

from __future__ import annotations

import pytest

from nodegate.outcomes import Outcome
from nodegate.parsers.perf_dcgmproftester import parse_dcgmproftester
from nodegate.parsers.perf_perftest import parse_perftest
from nodegate.perf.extract import extract
from nodegate.perf.judge import _TOOL_KEY
from nodegate.perf.model import Measurement
from nodegate.perf.rules import NodeInput, judge_node
from nodegate.perf.script import commands, deadline_s, render
from nodegate.perf.spec import load_perf_spec

E, F, P = Outcome.ERROR, Outcome.FAIL, Outcome.PASS


def bw_text(avg: float, unit="Gb/sec", title="RDMA_Write BW Test", link="IB", peak=None) -> str:
    peak = avg * 1.002 if peak is None else peak
    return (f"                    {title}\n Link type       : {link}\n"
            f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]\n"
            f" 8388608    5000             {peak:.2f}             {avg:.2f}  \t\t   0.005000\n")


def _hca(tool, text, rate, floors=None):
    rep = extract(tool, text, hca="mlx5_0")
    (it,) = [i for i in judge_node(NodeInput("n", "h200", "H200", {tool: rep}, hca_rates={"mlx5_0": rate} if rate else {},
                                             overrides=floors or {}), {})]
    return it


@pytest.mark.parametrize("rate", [25, 50, 100, 200, 400, 800])
@pytest.mark.parametrize("link", ["IB", "Ethernet"])
def test_every_negotiated_rate_has_a_90_percent_floor(rate, link):
    ok = _hca("ib_write_bw", bw_text(rate * 0.93, link=link), rate)
    low = _hca("ib_write_bw", bw_text(rate * 0.85, link=link), rate)
    assert (ok.outcome, ok.threshold) == (P, round(0.9 * rate, 2))
    assert low.outcome is F and low.rules == ["sku_floor"]
    assert f"90% of the port's {rate} Gb/s" in low.message


@pytest.mark.parametrize("tool", ["ib_write_bw", "ib_read_bw", "ib_send_bw"])
def test_bidirectional_is_held_to_twice_the_line_rate(tool):
    title = {"ib_write_bw": "RDMA_Write", "ib_read_bw": "RDMA_Read", "ib_send_bw": "Send"}[tool]
    it = _hca(tool, bw_text(380.0, title=f"{title} Bidirectional BW Test"), 400)
    assert it.kind[4] == "bidir" and it.threshold == 720.0 and it.outcome is F
    it = _hca(tool, bw_text(760.0, title=f"{title} Bidirectional BW Test"), 400)
    assert it.outcome is P


def test_an_unknown_rate_is_no_floor_never_pass():
    it = _hca("ib_write_bw", bw_text(390.0), None)
    assert it.outcome is E and it.message.startswith(
        "no floor: HCA mlx5_0 ib_write_bw (set perf.floors.ib_write_bw in Gb/s to judge it): 390.0 Gb/s not judged; "
        "the negotiated rate of HCA mlx5_0 is unknown")
    assert _hca("ib_write_bw", bw_text(390.0), None, floors={"ib_write_bw": 370}).outcome is P


@pytest.mark.parametrize("unit,avg,gbits", [("MB/sec", 24056.72, 201.8), ("MiB/sec", 24056.72, 201.8),
                                            ("Gb/sec", 201.8, 201.8)])
def test_units_mib_and_gbit(unit, avg, gbits):
    run = parse_perftest(bw_text(avg, unit=unit))
    assert round(run.to_gbits(avg), 2) == gbits


def test_the_test_run_must_be_the_test_asked_for():
    rep = extract("ib_write_bw", bw_text(390.0, title="Send BW Test"), hca="mlx5_0")
    assert rep.invalid == ["the output is an RDMA send test (Send BW Test) where ib_write_bw was run"]
    rep = extract("ib_write_lat", bw_text(390.0), hca="mlx5_0")
    assert rep.invalid == ["the output is a bandwidth test (RDMA_Write BW Test) where ib_write_lat was run"]


LAT = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
       "99% percentile[usec]   99.9% percentile[usec] \n")


def lat_text(typ: float, p99: float, title="RDMA_Write Latency Test") -> str:
    return f"                    {title}\n{LAT} 2       10000          1.00           9.00         {typ:.2f}     \t" \
           f"       {typ:.2f}        \t0.04\t\t{p99:.2f} \t\t5.00\n"


@pytest.mark.parametrize("tool,ceiling", [("ib_write_lat", 2.5), ("ib_send_lat", 2.5), ("ib_read_lat", 4.5)])
def test_latency_typical_against_ngc_ceilings(tool, ceiling):
    title = {"ib_write_lat": "RDMA_Write", "ib_send_lat": "Send", "ib_read_lat": "RDMA_Read"}[tool] + " Latency Test"
    rep = extract(tool, lat_text(ceiling * 0.8, ceiling, title), hca="mlx5_0")
    items = {i.kind[5]: i for i in judge_node(NodeInput("n", "h200", "H200", {tool: rep}), {})}
    assert (items["typical"].outcome, items["typical"].threshold) == (P, ceiling)
    assert items["p99"].outcome is E
    rep = extract(tool, lat_text(ceiling * 1.2, ceiling * 2, title), hca="mlx5_0")
    items = {i.kind[5]: i for i in judge_node(NodeInput("n", "h200", "H200", {tool: rep}), {})}
    assert items["typical"].outcome is F and "above the HCA mlx5_0 ceiling" in items["typical"].message


def test_latency_of_eight_hcas_is_judged_by_peers_including_p99():
    reps = {}
    for k in range(8):
        p99 = 6.0 if k == 5 else 1.9
        reps[f"ib_write_lat.mlx5_{k}"] = extract("ib_write_lat", lat_text(1.65, p99), hca=f"mlx5_{k}")
    items = judge_node(NodeInput("n", "h200", "H200", reps), {})
    p99 = {i.hca: i for i in items if i.kind[5] == "p99"}
    assert p99["mlx5_5"].outcome is F and p99["mlx5_5"].rules == ["in_node_peers"]
    assert {p99[f"mlx5_{k}"].outcome for k in range(8) if k != 5} == {P}
    assert "no absolute floor" in p99["mlx5_0"].message


def test_older_perftest_without_percentiles_is_judged_on_typical_and_says_so():
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
            " 2       1000          1.60           5.00         1.65\n")
    rep = extract("ib_send_lat", text, hca="mlx5_0")
    assert [m.mode for m in rep.measurements] == ["typical"]
    assert "no 99th percentile column (perftest before 4.x): judged on the typical latency only" in rep.notes


@pytest.mark.parametrize("line,gpu,field,value", [
    ("Worker 0:0 [1004]: TensorEngineActive:  generated ???, dcgm 0 (1.89e+05 gflops).", 0, 1004, 189000.0),
    ("Worker 3:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 (12254.6 gflops).", 3, 1007, 12254.6),
    ("TensorEngineActive: generated ???, dcgm 0.000 (27334.5 gflops)", 0, 1004, 27334.5),
    ("Worker 1:0[1006]: Fp64EngineActive: generated ???, dcgm 0.000 (45000.0 gflops).", 1, 1006, 45000.0),
])
def test_dcgmproftester_layouts(line, gpu, field, value):
    run = parse_dcgmproftester(line + "\n")
    assert run.gflops == {(gpu, field): [value]}


def test_dcgmproftester_judged_per_gpu_and_test_against_dcgms_sku_targets():
    lines = "".join(f"Worker {g}:0 [1007]: Fp32EngineActive:  generated ???, dcgm 0 ({4.9e4 if g != 2 else 3.0e4:#.3} "
                    f"gflops).\n" for g in range(8) for _ in range(3))
    rep = extract("dcgmproftester", lines, hint="t1007")
    items = {i.subject: i for i in judge_node(NodeInput("n", "h200", "H200", {"dcgmproftester.t1007": rep}), {})}
    assert items["gpu0"].outcome is P and items["gpu0"].threshold == 44.1          # 0.90 x peers 49 > floor 37.5
    assert items["gpu2"].outcome is F and set(items["gpu2"].rules) == {"sku_floor", "in_node_peers"}
    assert "DCGM diag-skus.yaml.in H200 sm_stress target_stress 37500" in items["gpu2"].message


def test_spec_script_and_keys_for_the_new_tools():
    spec = load_perf_spec({"tests": ["ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat",
                                     "dcgmproftester"], "dcgmproftester_tests": [1004, 1006],
                           "tools": {"dcgmproftester": "/usr/bin/dcgmproftester13"}})
    keys = [k for k, _, _ in commands(spec)]
    assert keys == ["perf.dcgmproftester.t1004", "perf.dcgmproftester.t1006"]
    cmd = dict((k, c) for k, _, c in commands(spec))["perf.dcgmproftester.t1004"]
    assert cmd == "/usr/bin/dcgmproftester13 --no-dcgm-validation -d 15 -t 1004"
    script, _ = render(spec)
    for tool in ("ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat"):
        assert f"ng_ib_tests {tool} " in script and script.count(f" {tool}\n") >= 1
    assert "ng_test perf.dcgmproftester.t1006 /usr/bin/dcgmproftester13" in script
    assert deadline_s(spec, n_hcas=2) > deadline_s(load_perf_spec({"tests": ["ib_read_bw"]}), n_hcas=2)
    for key in ("perf.ib_read_lat.mlx5_0", "perf.after.ib_send_bw.mlx5_3", "perf.dcgmproftester.t1004"):
        assert _TOOL_KEY.match(key), key


def test_a_hca_without_any_figure_is_its_own_error_item():
    it = _hca("ib_read_bw", " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n", 400)
    assert (it.subject, it.outcome) == ("hca-mlx5_0", E)
    assert it.message == "not measured: ib_read_bw on mlx5_0 printed no result row"


def test_model_labels_of_the_new_metrics():
    m = Measurement("ib_read_lat", "ib_read_lat", 1.8, "usec", "hca", hca="mlx5_0", higher_is_better=False, mode="p99")
    assert m.label == "RDMA read latency (99th percentile, usec)" and m.subject == "hca-mlx5_0"
    assert Measurement("dcgmproftester", "tensor", 650.0, "TFLOPS", engine="sm", gpu=0).label == \
        "tensor-core throughput (dcgmproftester -t 1004) (SM, TFLOPS)"
