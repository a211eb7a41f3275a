"""Issue 36 item 8: outputs that went through a ticket. Pasted with quote markers ('> '), trimmed
with '...', or a JSON result wrapped by a terminal: where what ran is still named it is read (and
the note says what was done to it); where it cannot be, the ERROR names the missing part, never
"unparsable" alone. Inputs: the real fixtures quoted, trimmed and wrapped as a ticket would
(synthetic variants, said so), and nccl-tests -J JSON in the shape src/util.cu writes."""

from __future__ import annotations

import json
import textwrap

import pytest

from nodegate.outcomes import Outcome
from nodegate.perf.extract import extract
from nodegate.perf.rules import NodeInput, judge_node

from .test_samples import body

E, F, P = Outcome.ERROR, Outcome.FAIL, Outcome.PASS


def quoted(text: str) -> str:
    return "".join(f"> {ln}\n" for ln in text.splitlines())


def wrapped(text: str, width: int = 80) -> str:
    """A terminal's hard wrap: a line break every ``width`` characters, inside strings and numbers."""
    flat = text.replace("\n", "")
    return "\n".join(flat[i:i + width] for i in range(0, len(flat), width)) + "\n"


def _items(tool, text, sku=None, gpus=8, **kw):
    rep = extract(tool, text, **kw)
    return rep, {i.id: i for i in judge_node(NodeInput("n", sku, str(sku), {tool: rep}, gpu_count=gpus,
                                                      hca_rates={"ib0": 200.0}), {})}


@pytest.mark.parametrize("n,tool,sku,kw", [("306", "nccl", "h100_sxm", {}), ("323", "nvbandwidth", "h100_sxm", {}),
                                           ("341", "dcgmi", None, {}), ("351", "gpu_burn", "a100_80gb", {}),
                                           ("361", "ib_write_bw", None, {"hca": "ib0"}),
                                           ("345", "dcgmi", None, {})])
def test_a_quoted_output_gives_the_same_verdicts_and_says_it_was_quoted(n, tool, sku, kw):
    rep0, plain = _items(tool, body(n), sku, **kw)
    rep1, got = _items(tool, quoted(body(n)), sku, **kw)
    assert {k: (i.outcome, i.value) for k, i in got.items()} == {k: (i.outcome, i.value) for k, i in plain.items()}
    assert "quoted output ('> ' markers removed)" in rep1.notes


def test_a_trimmed_nccl_table_is_read_and_the_trim_named():
    lines = body("306").splitlines()
    trimmed = "\n".join(lines[:6] + ["..."] + lines[20:]) + "\n"
    rep, items = _items("nccl", trimmed, "h100_sxm")
    assert items["nccl-allreduce_busbw-oop-node"].outcome is P
    assert "output trimmed at line 7: rows may be missing" in rep.notes


def test_a_trimmed_nccl_output_without_its_rows_names_what_is_missing():
    lines = body("306").splitlines()
    rep, items = _items("nccl", "\n".join(lines[:3] + ["[...]"]) + "\n", "h100_sxm")
    (it,) = items.values()
    assert it.outcome is E and it.message == ("invalid measurement: nccl-tests printed no result row (no table: the "
                                              "run ended before its first size)")


@pytest.mark.parametrize("width", [60, 80, 132])
def test_a_terminal_wrapped_nvbandwidth_json_is_rejoined(width):
    rep0, plain = _items("nvbandwidth", body("322"))
    rep, got = _items("nvbandwidth", wrapped(body("322"), width))
    assert {k: (i.outcome, i.value) for k, i in got.items()} == {k: (i.outcome, i.value) for k, i in plain.items()}
    assert "JSON rejoined from terminal-wrapped lines" in rep.notes


def test_a_terminal_wrapped_dcgmi_json_is_rejoined():
    doc = json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Stress", "tests": [
        {"name": "memory_bandwidth", "results": [
            {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
            {"entity_group": "GPU", "entity_id": 1, "status": "Fail",
             "warnings": [{"warning": "GPU 1 memory bandwidth 1520000 MB/s is below the minimum 1905000 MB/s",
                           "error_id": 92}]}]}]}]}}, indent=2)
    rep, items = _items("dcgmi", wrapped(doc, 70))
    assert "JSON rejoined from terminal-wrapped lines" in rep.notes
    assert items["dcgmi-memory_bandwidth-gpu0"].outcome is P
    # a JSON Fail for one GPU with a measured value below DCGM's threshold is a FAIL of that GPU (36.5)
    assert items["dcgmi-memory_bandwidth-gpu1"].outcome is F
    assert "below the minimum 1905000 MB/s" in items["dcgmi-memory_bandwidth-gpu1"].message


def _nccl_json(busbw: float, wrong=0) -> str:
    # nccl-tests -J output in the shape src/util.cu writes it (synthetic figures)
    return json.dumps({"version": 1, "start_time": "2026-01-01 00:00:00", "args": ["/opt/nccl-tests/all_reduce_perf",
                       "-b", "8G", "-e", "16G", "-J", "out.json"], "env": [], "nccl_version": 22703,
                       "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 8589934592, "maximum_bytes": 17179869184,
                                  "step_factor": 2, "validation": 1, "devices": [
                                      {"rank": r, "group": 0, "pid": 1, "hostname": "gpu-1", "device": r,
                                       "device_hex": "0x00", "device_info": "NVIDIA H100 80GB HBM3"} for r in range(8)]},
                       "results": [{"size": s, "count": s // 4, "type": "float", "redop": "sum", "root": "    -1",
                                    "out_of_place": {"time": 1.0, "alg_bw": busbw / 1.75, "bus_bw": busbw, "nwrong": wrong},
                                    "in_place": {"time": 1.0, "alg_bw": busbw / 1.75, "bus_bw": busbw, "nwrong": 0},
                                    "actual_iterations": 20, "experiment_name": ""}
                                   for s in (8589934592, 17179869184)],
                       "out_of_bounds": {"count": 1 if wrong else 0, "okay": not wrong},
                       "average_bus_bandwidth": {"bandwidth": busbw, "okay": "unchecked"}, "errors": []}, indent=1)


def test_nccl_tests_json_output_is_read_with_its_binary_and_ranks():
    rep, items = _items("nccl", _nccl_json(478.0), "h100_sxm")
    assert rep.info["collective"] == "all_reduce" and rep.info["nranks"] == 8
    assert items["nccl-allreduce_busbw-oop-node"].outcome is P and items["nccl-allreduce_busbw-oop-node"].value == 478.0
    assert items["nccl-integrity-node"].outcome is P
    rep, items = _items("nccl", wrapped(_nccl_json(478.0, wrong=7)), "h100_sxm")
    assert "JSON rejoined from terminal-wrapped lines" in rep.notes
    assert items["nccl-integrity-node"].outcome is F and "#wrong 7" in items["nccl-integrity-node"].message


def test_nccl_tests_json_nan_is_an_invalid_figure():
    doc = _nccl_json(478.0).replace('"bus_bw": 478.0', '"bus_bw": "nan"')
    _, items = _items("nccl", doc, "h100_sxm")
    assert items["nccl-allreduce_busbw-oop-node"].outcome is E
    assert items["nccl-allreduce_busbw-oop-node"].message.startswith("invalid figure: out-of-place busbw 'nan'")


def test_a_wrapped_perf_json_is_rejoined_and_a_broken_one_names_why():
    rep, items = _items("builtin", wrapped(body("391"), 64), "h200")
    assert items["builtin-h2d-ce-gpu0"].outcome is P
    rep, items = _items("builtin", body("391")[: len(body("391")) // 2], "h200")
    (it,) = items.values()
    assert it.outcome is E and it.message == ("invalid measurement: builtin output unparsable: perf JSON: no JSON "
                                              "object at the start of a line")


def test_a_dcgmi_table_quoted_in_an_email_reply_is_read():
    text = textwrap.indent(body("342"), "> ")
    rep, items = _items("dcgmi", text, gpus=4)
    assert {i.outcome for i in items.values() if i.metric == "pcie"} == {E}
    assert {i.outcome for i in items.values() if i.metric == "memory"} == {P}
