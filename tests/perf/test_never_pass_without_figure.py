"""Issue 36's property, for every tool: an output with no valid figure for a subject never yields
PASS for it, whatever its peers show (in-node peers, a fleet of other nodes, a baseline, a site
floor). The subject's figure is made invalid the ways the tools print it: 0 / 0.00, N/A, nan, inf,
a negative, a died worker, a missing line. Synthetic outputs in each tool's real format."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.rules import NodeInput, fleet_stats, judge_node

SKUS = st.sampled_from([None, "h200", "h100_sxm", "a100_80gb"])
PEER = st.floats(min_value=0.5, max_value=5000, allow_nan=False, allow_infinity=False)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(tool, text, subject, sku, peer_value, hca=None, hint=None, floors=None, fleet_nodes=0):
    """Judge ``text`` on a node (with ``fleet_nodes`` other nodes whose every figure is ``peer_value``
    and a baseline of ``peer_value`` for every id): no item of ``subject`` may PASS."""
    rep = extract(tool, text, hca=hca, hint=hint)
    node = NodeInput("n", sku, str(sku), {tool: rep}, gpu_count=8, overrides=floors or {},
                     hca_rates={"mlx5_0": 400.0, "mlx5_1": 400.0, "mlx5_2": 400.0, "mlx5_3": 400.0})
    others = []
    for k in range(fleet_nodes):
        orep = extract(tool, text, hca=hca, hint=hint)
        orep.measurements = [m.__class__(**{**m.__dict__, "value": peer_value, "why": ""}) for m in orep.measurements]
        others.append(NodeInput(f"o{k}", sku, str(sku), {tool: orep}, gpu_count=8))
    fs = fleet_stats([node, *others])
    ids = [i.id for i in judge_node(node, fs)]
    items = judge_node(node, fs, {i: peer_value for i in ids})
    mine = [i for i in items if i.subject == subject]
    assert mine, (subject, [i.id for i in items])
    for i in mine:
        assert i.outcome is not Outcome.PASS, (i.id, i.message)


@SETTINGS
@given(n=st.integers(2, 8), bad=st.integers(0, 7), tok=st.sampled_from(["0.00", "N/A", "nan", "inf", "-5.00", "1e308"]),
       peer=PEER, sku=SKUS, fleet=st.sampled_from([0, 11]))
def test_nvbandwidth(n, bad, tok, peer, sku, fleet):
    bad %= n
    cells = [tok if g == bad else f"{peer:.2f}" for g in range(n)]
    text = ("Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n"
            "           " + "".join(f"{g:>10}" for g in range(n)) + "\n 0" + "".join(f"{c:>10}" for c in cells) + "\n")
    _check("nvbandwidth", text, f"gpu{bad}", sku, peer, fleet_nodes=fleet)


@SETTINGS
@given(tok=st.sampled_from(["0.00", "nan", "inf", "-1.00", "9" * 26]), peer=PEER, sku=SKUS,
       floors=st.sampled_from([{}, {"allreduce_busbw": 1.0}]))
def test_nccl(tok, peer, sku, floors):
    row = "  17179869184    4294967296     float     sum      -1   66132  259.78  {b}      0    66109  259.87  {b}      0\n"
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
            "busbw #wrong\n" + row.format(b=tok))
    _check("nccl", text, "node", sku, peer, floors=floors)


@SETTINGS
@given(n=st.integers(2, 8), bad=st.integers(0, 7), how=st.sampled_from(["zero", "died", "nan", "absent"]),
       peer=PEER, sku=SKUS)
def test_gpu_burn(n, bad, how, peer, sku):
    bad %= n
    names = "".join(f"GPU {g}: NVIDIA H200 (UUID: GPU-{g})\n" for g in range(n))
    gf, er = [], []
    for g in range(n if how != "absent" else n - 1):
        if g == bad and how != "absent":
            gf.append({"zero": "0 (0 Gflop/s)", "died": "-1 (0 Gflop/s)", "nan": "5 (nan Gflop/s)"}[how])
            er.append("0  (DIED!)" if how == "died" else "0")
        else:
            gf.append(f"100 ({int(peer * 10)} Gflop/s)")
            er.append("0")
    if how == "absent":
        bad = n - 1
    rec = f"100.0%  proc'd: {' - '.join(gf)}   errors: {' - '.join(er)}   temps: {' - '.join('60 C' for _ in gf)} \n"
    text = names + rec + f"Tested {n} GPUs:\n" + "".join(f"\tGPU {g}: OK\n" for g in range(n))
    _check("gpu_burn", text, f"gpu{bad}", sku, peer * 10)


@SETTINGS
@given(tok=st.sampled_from(["0.00", "nan", "inf", "-3.00"]), peer=PEER,
       tool=st.sampled_from(["ib_write_bw", "ib_read_bw", "ib_send_bw"]))
def test_perftest_bandwidth(tok, peer, tool):
    text = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            f" 8388608    5000             {peer:.2f}             {tok}  \t\t   5.841728\n")
    _check(tool, text, "hca-mlx5_0", "h200", peer, hca="mlx5_0", floors={tool: 1.0})


@SETTINGS
@given(tok=st.sampled_from(["0.00", "nan", "inf", "-1.00"]), peer=st.floats(0.5, 10.0),
       tool=st.sampled_from(["ib_write_lat", "ib_read_lat", "ib_send_lat"]))
def test_perftest_latency(tok, peer, tool):
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
            "99% percentile[usec]   99.9% percentile[usec] \n"
            f" 2       10000          1.00           9.00         {tok}     \t       1.70        \t0.04\t\t{tok} \t\t4.10\n")
    _check(tool, text, "hca-mlx5_0", "h200", peer, hca="mlx5_0", floors={f"{tool}.p99": 100.0})


@SETTINGS
@given(n=st.integers(2, 8), bad=st.integers(0, 7), how=st.sampled_from(["zero", "nofigure", "nan"]), peer=PEER,
       sku=SKUS)
def test_dcgmproftester(n, bad, how, peer, sku):
    bad %= n
    lines = []
    for g in range(n):
        if g == bad:
            lines.append({"zero": f"Worker {g}:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 (0.0 gflops).",
                          "nofigure": f"Worker {g}:0[1007]: Fp32EngineActive: target max, dcgm 0",
                          "nan": f"Worker {g}:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 (nan gflops)."}[how])
        else:
            lines.append(f"Worker {g}:0[1007]: Fp32EngineActive: generated ???, dcgm 0.000 ({peer * 10:.1f} gflops).")
    _check("dcgmproftester", "\n".join(lines) + "\n", f"gpu{bad}", sku, peer / 100, hint="t1007")


@SETTINGS
@given(n=st.integers(2, 8), bad=st.integers(0, 7), tok=st.sampled_from(["0", "NaN", "Infinity", "-1", '"x"', "null"]),
       peer=PEER, sku=SKUS, tool=st.sampled_from(["builtin", "command"]))
def test_perf_json(n, bad, tok, peer, sku, tool):
    bad %= n
    ms = [f'{{"metric": "h2d", "value": {tok if g == bad else repr(peer)}, "unit": "GB/s", "gpu": {g}, "engine": "ce"}}'
          for g in range(n)]
    text = '{"nodegate_perf": 1, "measurements": [' + ", ".join(ms) + '], "errors": [], "invalid": []}'
    if tok == "null":
        json.loads(text)
    _check(tool, text, f"gpu{bad}", sku, peer)
