"""Each performance rule alone, with the numbers it reports (nodegate.perf.rules, locate)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.perf.locate import localise
from nodegate.perf.model import DataError, Measurement, ToolReport
from nodegate.perf.rules import NodeInput, Thresholds, fleet_stats, judge_node
from nodegate.perf.validity import gpu_states


def h2d(values, tool="nvbandwidth", engine="ce", direction="uni"):
    return ToolReport(tool, [Measurement(tool, "h2d", v, "GB/s", "gpu", g, engine=engine, direction=direction)
                             for g, v in enumerate(values)])


def by_subject(items):
    return {i.subject: i for i in items}


def test_sku_floor_fails_below_the_table_value_with_its_source():
    it = by_subject(judge_node(NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 47.0])}), {}))["gpu1"]
    assert it.outcome is Outcome.FAIL and "sku_floor" in it.rules
    assert "below the H200 floor 48.0" in it.message and "Azure NHC" in it.message


def test_spec_override_replaces_the_floor():
    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 54.0])}, overrides={"h2d": 56})
    assert {i.outcome for i in judge_node(ni, {})} == {Outcome.FAIL}


def test_in_node_peers_catch_one_slow_gpu_without_any_sku_table():
    items = by_subject(judge_node(NodeInput("n", None, "", {"nvbandwidth": h2d([55.2] * 7 + [35.1])}), {}))
    assert items["gpu7"].outcome is Outcome.FAIL and items["gpu7"].rules == ["in_node_peers"]
    assert "35.1 < 0.90 x the median 55.2 of 7 in-node peers" in items["gpu7"].message
    assert all(items[f"gpu{g}"].outcome is Outcome.PASS for g in range(7))


def test_peer_ratio_is_configurable():
    ni = NodeInput("n", None, "", {"nvbandwidth": h2d([55.0, 55.0, 52.0])})
    assert by_subject(judge_node(ni, {}, th=Thresholds(peer_ratio=0.96)))["gpu2"].outcome is Outcome.FAIL
    assert by_subject(judge_node(ni, {}))["gpu2"].outcome is Outcome.PASS


def _fleet(n_nodes, outlier=None):
    nodes = []
    for k in range(n_nodes):
        vals = [55.0 + 0.1 * ((k + g) % 3) for g in range(8)]
        if outlier is not None and k == 0:
            vals[3] = outlier
        nodes.append(NodeInput(f"n{k:02d}", "h200", "H200", {"nvbandwidth": h2d(vals)}))
    return nodes


def test_fleet_rule_catches_an_8_percent_outlier_the_peer_rule_misses():
    nodes = _fleet(32, outlier=55.0 * 0.92)
    fs = fleet_stats(nodes)
    it = by_subject(judge_node(nodes[0], fs))["gpu3"]
    assert it.outcome is Outcome.FAIL and it.rules == ["fleet"]
    assert "below the fleet median 55.1 of 256 on 32 nodes" in it.message
    assert all(i.outcome is Outcome.PASS for n in nodes[1:] for i in judge_node(n, fs))


def test_fleet_rule_needs_its_minimum_node_count():
    nodes = _fleet(5, outlier=55.0 * 0.92)
    it = by_subject(judge_node(nodes[0], fleet_stats(nodes)))["gpu3"]
    assert it.outcome is Outcome.PASS and "fleet rule needs 10 nodes, 5 here" in it.message


def test_baseline_flags_a_6_percent_drop_not_a_3_percent_one():
    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 55.0])})
    ids = {i.subject: i.id for i in judge_node(ni, {})}
    base = {ids["gpu0"]: 55.0 / 0.94, ids["gpu1"]: 55.0 / 0.97}
    items = by_subject(judge_node(ni, {}, base))
    assert items["gpu0"].rules == ["baseline"] and "6.0% below this node's baseline" in items["gpu0"].message
    assert items["gpu1"].outcome is Outcome.PASS


def test_data_corruption_fails_whatever_the_bandwidth():
    rep = ToolReport("nccl", [Measurement("nccl", "allreduce_busbw", 480.0, "GB/s", "node")],
                     errors=[DataError("nccl", "#wrong 3 (data corruption)")])
    (it,) = judge_node(NodeInput("n", "h100_sxm", "H100 SXM", {"nccl": rep}), {})
    assert it.outcome is Outcome.FAIL and it.rules == ["data_corruption"] and "#wrong 3" in it.message


STATE = """# fields: index,pci.bus_id,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max
# sample 1 epoch=1
0, 00000000:19:00.0, 0x0000000000000000, 5, 5, 16, 16
1, 00000000:3B:00.0, {m}, {g}, 5, 16, 16
# sample 2 epoch=2
0, 00000000:19:00.0, 0x0000000000000004, 5, 5, 16, 16
1, 00000000:3B:00.0, {m}, {g}, 5, 16, 16
# apps
{apps}
"""


def test_throttled_shared_or_downtrained_gpu_is_an_invalid_measurement_never_fail():
    for state, why in ((STATE.format(m="0x48", g=5, apps=""), "throttled (hw slowdown, hw thermal slowdown)"),
                       (STATE.format(m="0x0", g=5, apps="00000000:3B:00.0, 4242, python3"), "another compute process"),
                       (STATE.format(m="0x0", g=4, apps=""), "PCIe link Gen4 x16 below Gen5 x16")):
        ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 20.0])},
                       states={"nvbandwidth": gpu_states(state)})
        items = by_subject(judge_node(ni, {}))
        assert items["gpu1"].outcome is Outcome.ERROR and why in items["gpu1"].message
        assert items["gpu1"].message.startswith("invalid measurement: GPU 1: ")
        assert items["gpu0"].outcome is Outcome.PASS   # SW power cap (0x4) is not throttling


def test_copy_engine_and_sm_or_uni_and_bidir_are_never_compared():
    rep = h2d([55.0, 55.0])
    rep.measurements += h2d([20.0, 20.0], engine="sm").measurements + h2d([100.0, 100.0], direction="bidir").measurements
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": rep}), {})
    assert len(items) == 6 and {i.outcome for i in items} == {Outcome.PASS}
    assert len({i.id for i in items}) == 6


def _matrix(n, low=(), value=370.0, bad=200.0):
    ms = [Measurement("nvbandwidth", "p2p_read", bad if (i, j) in low or i in low or j in low else value, "GB/s",
                      "link", i, j, engine="ce") for i in range(n) for j in range(n) if i != j]
    return ToolReport("nvbandwidth", ms)


def test_low_row_and_column_names_the_gpu_single_low_cell_names_the_link():
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": _matrix(8, low=(3,))}), {})
    (summary,) = localise(items)
    assert summary.outcome is Outcome.FAIL and "GPU 3 (row and column low)" in summary.message
    assert "link" not in summary.message.split(":", 1)[1]
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": _matrix(8, low=((1, 5),))}), {})
    (summary,) = localise(items)
    assert summary.message.endswith("1 of 56 cells low: link GPU 1 -> GPU 5")
    bad = [i for i in items if i.outcome is Outcome.FAIL]
    assert [i.subject for i in bad] == ["gpu1-gpu5"] and "a single low cell" in bad[0].message


def test_low_allreduce_with_fine_p2p_names_the_fabric():
    nccl = ToolReport("nccl", [Measurement("nccl", "allreduce_busbw", 250.0, "GB/s", "node")],
                      info={"plateau_size_b": 17179869184})
    items = judge_node(NodeInput("n", "h100_sxm", "H100 SXM", {"nvbandwidth": _matrix(8), "nccl": nccl}), {})
    localise(items)
    (it,) = [i for i in items if i.tool == "nccl"]
    assert it.outcome is Outcome.FAIL and it.message.startswith("localised to the node's fabric (NVSwitch / topology)")


def test_missing_tool_is_an_error_naming_it():
    (it,) = judge_node(NodeInput("n", problems={"nvbandwidth": "nvbandwidth not found (not in PATH nor perf.tools)"}), {})
    assert it.outcome is Outcome.ERROR and "nvbandwidth not found" in it.message
