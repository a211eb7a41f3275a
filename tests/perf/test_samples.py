"""Golden: every real published output in ../shared/perf (copied into tests/perf/fixtures) gives
the verdict its header states, through parser -> model -> rules.

Mapping of the headers' words: "PASS (uncertain: no published floor)" on a known SKU is PASS with
"uncertain" in the message (valid, uncorrupted, no floor to hold it to; a spec floor makes it
relative and can FAIL it). "UNKNOWN without the SKU" = ERROR "nothing to judge it against";
"Waived = SKIP" = SKIP.
"""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.floors import sku_name
from nodegate.perf.rules import NodeInput, judge_node

FIX = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "perf"
TOOL = {"30": "nccl", "32": "nvbandwidth", "34": "dcgmi", "35": "gpu_burn", "36": "ib_write_bw"}


def body(n: str) -> str:
    f = next(FIX.glob(f"{n}-*.txt"))
    return f.read_bytes().decode().split("\n---\n", 1)[1]


def judge(n: str, sku=None, op="all_reduce", floors=None, in_node=True, rates=None):
    tool = TOOL[n[:2]]
    hca = "ib0" if tool == "ib_write_bw" else None
    rep = extract(tool, body(n), hca=hca, op=op)
    ni = NodeInput("n1", sku=sku, sku_label=sku_name(sku) if sku else "", reports={tool: rep},
                   overrides=floors or {}, in_node_nranks_ok=in_node, hca_rates=rates or {})
    return rep, judge_node(ni, {})


def outcomes(items):
    return {i.outcome for i in items}


def test_every_shared_sample_is_copied_byte_exact():
    if not SHARED.is_dir():
        pytest.skip(f"{SHARED} absent: nothing to compare the copies with")
    names = sorted(p.name for p in SHARED.iterdir() if p.is_file())
    assert names == sorted(p.name for p in FIX.iterdir())
    for n in names:
        assert filecmp.cmp(SHARED / n, FIX / n, shallow=False), n


def test_301_a100_allreduce_plateau_passes_not_the_avg_line():
    rep, items = judge("301", sku="a100_40gb")
    (it,) = items
    assert (it.outcome, it.value, it.threshold) == (Outcome.PASS, 235.26, 228.0)
    assert "correctness unverified" in it.message  # error column N/A: unverified, not 0 errors
    assert rep.info["avg_busbw"] == 68.4048


def test_302_allgather_has_no_floor_so_it_passes_uncertain_until_the_spec_gives_one():
    rep, items = judge("302", sku="a100_40gb", op="all_gather")
    assert items[0].value == 230.07 and items[0].outcome is Outcome.PASS
    assert "uncertain" in items[0].message and items[0].threshold is None
    _, items = judge("302", sku="a100_40gb", op="all_gather", floors={"allgather_busbw": 200})
    assert outcomes(items) == {Outcome.PASS} and items[0].threshold == 200
    _, items = judge("302", sku="a100_40gb", op="all_gather", floors={"allgather_busbw": 240})
    assert outcomes(items) == {Outcome.FAIL}


@pytest.mark.parametrize("n,value", [("303", 78.33), ("307", 338.82)])
def test_multi_node_runs_never_get_the_single_node_floor(n, value):
    rep, items = judge(n, sku="h100_sxm", in_node=False)
    assert items[0].value == value and items[0].outcome is Outcome.PASS
    assert not items[0].rules and "uncertain" in items[0].message
    _, items = judge(n, sku="h100_sxm", in_node=False, floors={"allreduce_busbw": value * 0.9})
    assert outcomes(items) == {Outcome.PASS}


@pytest.mark.parametrize("n,value", [("304", 487.26), ("306", 483.35)])
def test_h100_16g_plateau_clears_the_460_floor(n, value):
    _, items = judge(n, sku="h100_sxm")
    assert [(i.outcome, i.value, i.threshold) for i in items] == [(Outcome.PASS, value, 460.0)]


def test_305_sweep_stopping_at_2g_is_not_failed_against_the_16g_floor():
    _, (it,) = judge("305", sku="h100_sxm")
    assert it.value == 437.89 and it.outcome is Outcome.PASS  # "PASS w/ caveat"
    assert "not applied: the sweep stopped at 2147483648 B" in it.message


def test_321_edited_matrix_is_an_inconsistent_measurement():
    rep, items = judge("321")
    assert any("2x3 matrix" in w for w in rep.invalid)
    judged = [i for i in items if i.outcome is not Outcome.SKIP]
    assert judged and {i.outcome for i in judged} == {Outcome.ERROR}
    assert all("invalid measurement" in i.message for i in judged)


def test_322_json_single_gpu_unknown_sku_and_waived_tests():
    rep, items = judge("322")
    h2d = [i for i in items if i.metric == "h2d" and i.kind[3:] == ("ce", "uni")]
    assert [i.value for i in h2d] == [12.3964] and h2d[0].outcome is Outcome.ERROR
    waived = [i for i in items if i.metric == "waived"]
    assert len(waived) == 17 and {i.outcome for i in waived} == {Outcome.SKIP}
    _, items = judge("322", floors={"h2d.ce": 11.0, "d2h.ce": 11.0})   # a PCIe Gen3 x16 part
    assert {i.outcome for i in items if i.metric in ("h2d", "d2h") and i.kind[3:] == ("ce", "uni")} == {Outcome.PASS}


def test_323_h100_p2p_read_all_56_pairs_pass_with_na_diagonal():
    _, items = judge("323", sku="h100_sxm")
    assert len(items) == 56 and outcomes(items) == {Outcome.PASS}
    assert min(i.value for i in items) == 370.26 and {i.threshold for i in items} >= {335.0}


def test_324_zero_diagonal_is_not_measured():
    _, items = judge("324", sku="a100_80gb")
    assert len(items) == 56 and outcomes(items) == {Outcome.PASS}
    assert min(i.value for i in items) == 274.89


def test_341_dcgmi_table_all_pass_fans_out_to_8_gpus():
    rep, items = judge("341")
    assert rep.info["gpu_count"] == 8 and outcomes(items) == {Outcome.PASS}
    assert {i.subject for i in items if i.metric == "gpu_memory"} == {f"gpu{g}" for g in range(8)}


def test_351_gpu_burn_cr_joined_judges_the_last_record():
    rep, items = judge("351", sku="a100_80gb")
    assert len(items) == 8 and outcomes(items) == {Outcome.PASS}
    assert min(i.value for i in items) == 16890.0 and not rep.errors


@pytest.mark.parametrize("n,gbits", [("361", 192.45), ("362", 185.93)])
def test_ib_write_bw_mb_per_sec_converted_and_counted_once(n, gbits):
    _, items = judge(n, rates={"ib0": 200.0})
    assert [(i.outcome, i.value, i.threshold, i.unit) for i in items] == [(Outcome.PASS, gbits, 180.0, "Gb/s")]
