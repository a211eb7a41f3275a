"""Issue 37 item 1: impossible numbers never pass. NaN, inf, 1e308 and 26-digit figures (and a
negative where a figure has no sign) from every perf parser go through the bounded reader
(nodegate/parsers/_figures.py) and make that subject ERROR "invalid figure", while the other
subjects are judged as usual. Inputs: real fixtures with ONE figure replaced (synthetic variants,
said so per test)."""

from __future__ import annotations

import json

import pytest

from nodegate.outcomes import Outcome
from nodegate.parsers._figures import InvalidFigure, checked, figure
from nodegate.perf.extract import extract
from nodegate.perf.model import Measurement, ToolReport
from nodegate.perf.rules import NodeInput, judge_node

from .test_samples import body

E, F, P = Outcome.ERROR, Outcome.FAIL, Outcome.PASS
BAD = ["nan", "-nan", "inf", "1e308", "9" * 26, "NaN", "Infinity"]


def _judge(tool, text, sku="h100_sxm", hca=None, rates=None, hint=None, gpus=8):
    rep = extract(tool, text, hca=hca, hint=hint)
    return judge_node(NodeInput("n", sku, "H100 SXM", {tool: rep}, gpu_count=gpus, hca_rates=rates or {}), {})


@pytest.mark.parametrize("tok", ["nan", "-nan", "inf", "-inf", "1e308", "1e999", "9" * 26, "0x10", "1_000", "٣",
                                 "", "-3", "+", "."])
def test_the_reader_refuses_every_impossible_figure(tok):
    with pytest.raises(InvalidFigure):
        figure(tok)


@pytest.mark.parametrize("tok,want", [("55.20", 55.2), ("0.00", 0.0), ("2e-06", 2e-06), ("1.89e+05", 189000.0),
                                      ("-0", 0.0), ("99999999999999", 99999999999999.0)])
def test_the_reader_keeps_real_figures(tok, want):
    assert figure(tok) == want


@pytest.mark.parametrize("v", [float("nan"), float("inf"), 1e308, -1.0, True, "55", 10 ** 30])
def test_json_numbers_are_held_to_the_same_rules(v):
    with pytest.raises(InvalidFigure):
        checked(v)


@pytest.mark.parametrize("tok", BAD)
def test_nvbandwidth_text_cell(tok):
    # synthetic variant of fixture 323: GPU 0 -> GPU 1's cell replaced
    text = body("323").replace("0       N/A    370.90", f"0       N/A    {tok}", 1)
    assert text != body("323")
    items = {i.id: i for i in _judge("nvbandwidth", text)}
    bad = items["nvbandwidth-p2p_read-ce-gpu0-gpu1"]
    assert bad.outcome is E and bad.value is None and bad.message.startswith("invalid figure ")
    assert items["nvbandwidth-p2p_read-ce-gpu0-gpu2"].outcome is P            # the others judged
    assert items["nvbandwidth-p2p_read-ce-gpu0-gpu2"].node_peers == 54        # ... without the bad cell


@pytest.mark.parametrize("tok", BAD)
def test_nvbandwidth_json_cell(tok):
    # synthetic variant of fixture 322 (JSON): the host-to-device cell replaced
    obj = json.loads(body("322"))
    tc = next(t for t in obj["nvbandwidth"]["testcases"] if t["name"] == "host_to_device_memcpy_ce")
    tc["bandwidth_matrix"][0][0] = tok
    items = {i.id: i for i in _judge("nvbandwidth", json.dumps(obj), sku=None)}
    assert items["nvbandwidth-h2d-ce-gpu0"].outcome is E
    assert items["nvbandwidth-h2d-ce-gpu0"].message.startswith("invalid figure ")


@pytest.mark.parametrize("tok", BAD)
def test_nccl_busbw_cell(tok):
    # synthetic variant of fixture 306: the 16 GiB out-of-place busbw replaced
    text = body("306").replace("276.03  483.05", f"276.03  {tok}", 1)
    assert text != body("306")
    items = {i.id: i for i in _judge("nccl", text)}
    it = items["nccl-allreduce_busbw-oop-node"]
    assert it.outcome is E and it.message.startswith("invalid figure: out-of-place busbw ")
    assert items["nccl-allreduce_busbw-ip-node"].outcome is P


@pytest.mark.parametrize("tok", ["nan", "inf", "9" * 26, "-3"])
def test_nccl_wrong_count(tok):
    # synthetic variant of fixture 306: one row's out-of-place #wrong replaced
    text = body("306").replace("483.05      0", f"483.05 {tok:>6}", 1)
    assert text != body("306")
    items = {i.id: i for i in _judge("nccl", text)}
    it = items["nccl-integrity-node"]
    assert it.outcome is E and it.message.startswith("invalid figure: out-of-place #wrong ")


@pytest.mark.parametrize("tok", BAD)
def test_gpu_burn_gflops(tok):
    # synthetic variant of fixture 351: GPU 3's rate in every record replaced
    text = body("351").replace("(16926 Gflop/s) - 4522 (16890", f"({tok} Gflop/s) - 4522 (16890")
    assert text != body("351")
    items = {i.id: i for i in _judge("gpu_burn", text, sku="a100_80gb")}
    it = items["gpu_burn-gflops-sm-gpu3"]
    assert it.outcome is E and it.message.startswith("invalid figure: Gflop/s ")
    assert items["gpu_burn-gflops-sm-gpu0"].outcome is P


@pytest.mark.parametrize("tok", ["9" * 26, "-5"])
def test_gpu_burn_error_count(tok):
    # synthetic: an error count that is no count (26 digits, or negative without DIED) is never "0 errors"
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\n"
            f"100.0%  proc'd: 100 (50000 Gflop/s)   errors: {tok}   temps: 60 C \n")
    items = {i.id: i for i in _judge("gpu_burn", text)}
    assert items["gpu_burn-integrity-gpu0"].outcome is E
    assert items["gpu_burn-integrity-gpu0"].message.startswith("invalid figure: ")


@pytest.mark.parametrize("tok", BAD)
def test_perftest_bandwidth(tok):
    # synthetic variant of fixture 361: the 8 MiB average replaced on both lines
    text = body("361").replace("24056.72", tok)
    items = _judge("ib_write_bw", text, hca="ib0", rates={"ib0": 200.0})
    assert [i.outcome for i in items] == [E]
    assert items[0].subject == "hca-ib0" and items[0].message.startswith(
        "invalid figure: bandwidth row size 8388608: bandwidth row column 4: invalid figure ")


@pytest.mark.parametrize("tok", BAD)
def test_perftest_latency(tok):
    # synthetic variant of fixture 371: the typical latency replaced
    text = body("371").replace("1.79                1.80", f"{tok}                1.80")
    items = _judge("ib_read_lat", text, hca="ib0")
    assert {i.outcome for i in items} == {E} and "invalid figure" in items[0].message


@pytest.mark.parametrize("tok", ["NaN", "Infinity", "1e308", "-55.1", '"55.1"', "1" * 26])
def test_builtin_json_value(tok):
    # synthetic variant of fixture 391: GPU 0's h2d value replaced (Python's json reads NaN/Infinity)
    text = body("391").replace('"value": 54.43', f'"value": {tok}')
    assert text != body("391")
    items = {i.id: i for i in _judge("builtin", text, sku="h200", gpus=1)}
    it = items["builtin-h2d-ce-gpu0"]
    assert it.outcome is E and it.message.startswith("invalid figure ")
    assert items["builtin-d2h-ce-gpu0"].outcome is P


@pytest.mark.parametrize("tok", ["nan", "inf", "1e308", "9" * 26])
def test_dcgmproftester_gflops(tok):
    # synthetic variant of fixture 383: every figure replaced
    text = body("383").replace("(252917.0 gflops)", f"({tok} gflops)")
    items = _judge("dcgmproftester", text, hint="t1004", gpus=1)
    assert items[0].value is not None                            # the nine real lines still give the median
    text = "\n".join(ln for ln in body("383").splitlines() if "gflops" not in ln) + \
        f"\nWorker 0:0[1004]: TensorEngineActive: generated ???, dcgm 0.000 ({tok} gflops)\n"
    (it,) = _judge("dcgmproftester", text, hint="t1004", gpus=1)
    assert it.outcome is E and it.message.startswith("not measured: dcgmproftester printed no figure")


@pytest.mark.parametrize("v", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_value_reaching_the_rules_is_error_never_pass(v):
    # whatever a parser lets through, a comparison with NaN never fires: the rules refuse the figure
    rep = ToolReport("command", [Measurement("command", "h2d", v, "GB/s", "gpu", 0, engine="ce")]
                     + [Measurement("command", "h2d", 55.0, "GB/s", "gpu", g, engine="ce") for g in range(1, 5)])
    items = {i.subject: i for i in judge_node(NodeInput("n", "h100_sxm", "H100 SXM", {"command": rep}), {})}
    assert items["gpu0"].outcome is E and items["gpu0"].message.startswith("invalid figure ")
    assert items["gpu1"].outcome is P and items["gpu1"].node_peers == 3


def test_a_non_finite_baseline_is_no_rule():
    rep = ToolReport("command", [Measurement("command", "h2d", 55.0, "GB/s", "gpu", 0, engine="ce")])
    ni = NodeInput("n", "h100_sxm", "H100 SXM", {"command": rep})
    (it,) = judge_node(ni, {}, {"command-h2d-ce-gpu0": float("nan")})
    assert it.outcome is P and it.baseline is None and it.message == "55.0 GB/s: floor 48.0"


def test_a_nan_site_floor_is_refused_by_the_spec():
    from nodegate.errors import SpecError
    from nodegate.perf.spec import load_perf_spec
    for v in (float("nan"), float("inf"), 0, -1):
        with pytest.raises(SpecError, match="perf.floors"):
            load_perf_spec({"floors": {"h2d": v}})
