"""Each performance rule alone, with the numbers it reports (nodegate.perf.rules, locate)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.perf.locate import localise
from nodegate.perf.model import Integrity, Measurement, ToolReport
from nodegate.perf.rules import NodeInput, Thresholds, fleet_stats, judge_node
from nodegate.perf.validity import gpu_states

E, F, P = Outcome.ERROR, Outcome.FAIL, Outcome.PASS


def h2d(values, tool="nvbandwidth", engine="ce", direction="uni"):
    return ToolReport(tool, [Measurement(tool, "h2d", v, "GB/s", "gpu", g, engine=engine, direction=direction,
                                         why="" if v is not None else "not measured: N/A")
                             for g, v in enumerate(values)])


def by_subject(items):
    return {i.subject: i for i in items}


def test_sku_floor_fails_below_the_table_value_with_its_source():
    it = by_subject(judge_node(NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 47.0])}), {}))["gpu1"]
    assert it.outcome is F and "sku_floor" in it.rules
    assert "below the H200 floor 48.0" in it.message and "Azure NHC" in it.message


def test_spec_override_replaces_the_floor():
    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 54.0])}, overrides={"h2d": 56})
    assert {i.outcome for i in judge_node(ni, {})} == {F}


def test_in_node_peers_catch_one_slow_gpu_without_any_sku_table_and_say_no_floor_exists():
    items = by_subject(judge_node(NodeInput("n", None, "", {"nvbandwidth": h2d([55.2] * 7 + [35.1])}), {}))
    assert items["gpu7"].outcome is F and items["gpu7"].rules == ["in_node_peers"]
    assert "35.1 < 0.90 x the median 55.2 of 7 in-node peers" in items["gpu7"].message
    assert all(items[f"gpu{g}"].outcome is P for g in range(7))
    assert items["gpu0"].message.startswith("55.2 GB/s: no absolute floor (the GPU model is unknown (no single SKU); "
                                            "set perf.floors.h2d.ce): judged by in-node peers only: 7 peers median 55.2")


def test_peer_ratio_is_configurable_and_needs_min_peers():
    ni = NodeInput("n", None, "", {"nvbandwidth": h2d([55.0, 55.0, 55.0, 52.0])})
    assert by_subject(judge_node(ni, {}, th=Thresholds(peer_ratio=0.96)))["gpu3"].outcome is F
    assert by_subject(judge_node(ni, {}))["gpu3"].outcome is P
    # two peers only: the rule does not apply (needs 3), says so; no other rule: no floor
    ni = NodeInput("n", None, "", {"nvbandwidth": h2d([55.0, 55.0, 20.0])})
    it = by_subject(judge_node(ni, {}))["gpu2"]
    assert it.outcome is E and "in-node peers: 2 valid figure(s) of other subjects, 3 needed" in it.message
    assert by_subject(judge_node(ni, {}, th=Thresholds(min_peers=2)))["gpu2"].outcome is F


def test_peers_are_only_valid_figures_of_other_subjects():
    # GPU 0-6 never measured (0 / N/A): GPU 7 has no peer whatever they print; they are ERROR
    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([None] * 7 + [20.0])})
    items = by_subject(judge_node(ni, {}))
    assert {items[f"gpu{g}"].outcome for g in range(7)} == {E}
    assert items["gpu7"].node_peers == 0 and items["gpu7"].outcome is F     # the H200 floor still applies


def _fleet(n_nodes, outlier=None, values=None):
    nodes = []
    for k in range(n_nodes):
        vals = list(values) if values else [55.0 + 0.1 * ((k + g) % 3) for g in range(8)]
        if outlier is not None and k == 0:
            vals[3] = outlier
        nodes.append(NodeInput(f"n{k:02d}", "h200", "H200", {"nvbandwidth": h2d(vals)}))
    return nodes


def test_fleet_rule_catches_an_8_percent_outlier_the_peer_rule_misses():
    nodes = _fleet(32, outlier=55.0 * 0.92)
    fs = fleet_stats(nodes)
    it = by_subject(judge_node(nodes[0], fs))["gpu3"]
    assert it.outcome is F and it.rules == ["fleet"]
    assert "below the fleet median 55.1 of 248 on 31 other nodes" in it.message
    assert all(i.outcome is P for n in nodes[1:] for i in judge_node(n, fs))


def test_fleet_rule_needs_its_minimum_count_of_other_nodes():
    nodes = _fleet(10, outlier=55.0 * 0.92)          # 9 OTHER nodes: not enough
    it = by_subject(judge_node(nodes[0], fleet_stats(nodes)))["gpu3"]
    assert it.outcome is P and it.message == "50.6 GB/s: floor 48.0, 7 peers median 55.1, fleet rule needs 10 other nodes, 9 here"


def test_fleet_median_leaves_the_node_itself_out():
    # 11 nodes: 10 at 55, one at 40 on every GPU: its own figures never pull the median it is held to
    nodes = _fleet(10, values=[55.0] * 8) + [NodeInput("low", "h200", "H200", {"nvbandwidth": h2d([47.9] * 8)})]
    fs = fleet_stats(nodes)
    it = by_subject(judge_node(nodes[-1], fs))["gpu0"]
    assert it.fleet_median == 55.0 and it.fleet_n == 80 and "fleet" in it.rules
    assert fs[next(iter(fs))].excluding("n00") == (55.0, 80, 10)


def test_baseline_flags_a_6_percent_drop_not_a_3_percent_one():
    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0, 55.0])})
    ids = {i.subject: i.id for i in judge_node(ni, {})}
    base = {ids["gpu0"]: 55.0 / 0.94, ids["gpu1"]: 55.0 / 0.97}
    items = by_subject(judge_node(ni, {}, base))
    assert items["gpu0"].rules == ["baseline"] and "6.0% below this node's baseline" in items["gpu0"].message
    assert items["gpu1"].outcome is P


def test_data_corruption_is_its_own_item_whatever_the_bandwidth():
    rep = ToolReport("nccl", [Measurement("nccl", "allreduce_busbw", 480.0, "GB/s", "node", mode="oop")],
                     integrity=[Integrity("nccl", False, "#wrong 3 at 1024 B")], info={"plateau_size_b": 17179869184})
    items = {i.metric: i for i in judge_node(NodeInput("n", "h100_sxm", "H100 SXM", {"nccl": rep}, gpu_count=8), {})}
    assert items["integrity"].outcome is F and items["integrity"].rules == ["data_corruption"]
    assert items["integrity"].message == "rule data_corruption: #wrong 3 at 1024 B (FAIL whatever the throughput)"
    assert items["allreduce_busbw"].outcome is P                   # throughput judged on its own


def test_integrity_is_judged_without_any_floor():
    rep = ToolReport("gpu_burn", [Measurement("gpu_burn", "gflops", 52000.0, "Gflop/s", "gpu", 0, engine="sm")],
                     integrity=[Integrity("gpu_burn", True, "0 errors in every progress record", 0)])
    items = {i.metric: i for i in judge_node(NodeInput("n", "h200", "H200", {"gpu_burn": rep}), {})}
    assert items["integrity"].outcome is P and items["gflops"].outcome is E
    assert items["gflops"].message.startswith("no floor: H200 gflops (set perf.floors.gflops.sm in Gflop/s")


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
        assert items["gpu1"].outcome is E and why in items["gpu1"].message
        assert items["gpu1"].message.startswith("invalid measurement: GPU 1: ")
        assert items["gpu0"].outcome is P   # SW power cap (0x4) is not throttling


def test_an_invalid_measurement_is_no_peer_of_the_others():
    state = STATE.format(m="0x48", g=5, apps="")
    rep = h2d([55.0, 20.0, 55.0, 55.0, 55.0])
    ni = NodeInput("n", None, "", {"nvbandwidth": rep}, states={"nvbandwidth": gpu_states(state)})
    items = by_subject(judge_node(ni, {}))
    assert items["gpu0"].node_peers == 3 and items["gpu0"].node_median == 55.0


def test_copy_engine_and_sm_or_uni_and_bidir_are_never_compared():
    rep = h2d([55.0] * 4)
    rep.measurements += h2d([20.0] * 4, engine="sm").measurements + h2d([100.0] * 4, direction="bidir").measurements
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": rep}), {})
    assert len(items) == 12 and {i.outcome for i in items} == {P}
    assert len({i.id for i in items}) == 12


def test_latency_is_judged_the_other_way_round():
    lat = ToolReport("ib_write_lat", [Measurement("ib_write_lat", "ib_write_lat", v, "usec", "hca", hca=f"mlx5_{k}",
                                                  higher_is_better=False, mode="typical")
                                      for k, v in enumerate([1.6, 1.65, 1.62, 1.64, 2.2])])
    items = by_subject(judge_node(NodeInput("n", "h200", "H200", {"ib_write_lat": lat}), {}))
    assert items["hca-mlx5_0"].outcome is P and round(items["hca-mlx5_0"].threshold, 3) == 1.828  # min(2.5, 1.645/0.9)
    bad = items["hca-mlx5_4"]
    assert bad.outcome is F and bad.rules == ["in_node_peers"]
    assert "2.20 > 1/0.90 x the median 1.63 of 4 in-node peers" in bad.message


def test_missing_tool_is_an_error_naming_it():
    (it,) = judge_node(NodeInput("n", problems={"nvbandwidth": "nvbandwidth not found (not in PATH nor perf.tools)"}), {})
    assert it.outcome is E and "nvbandwidth not found" in it.message


def test_an_exception_judging_one_tool_is_contained_to_its_items():
    class Boom(ToolReport):
        @property
        def measurements(self):
            raise ZeroDivisionError("boom")

        @measurements.setter
        def measurements(self, v):
            pass

    ni = NodeInput("n", "h200", "H200", {"nvbandwidth": h2d([55.0] * 4), "zz": Boom("zz")})
    items = judge_node(ni, {})
    assert [i.outcome for i in items if i.tool == "nvbandwidth"] == [P] * 4
    (bad,) = [i for i in items if i.key == "zz"]
    assert bad.outcome is E and bad.message.startswith("internal error judging zz: ZeroDivisionError: boom")


def _matrix(n, low=(), value=370.0, bad=200.0):
    ms = [Measurement("nvbandwidth", "p2p_read", bad if (i, j) in low or i in low or j in low else value, "GB/s",
                      "link", i, j, engine="ce") for i in range(n) for j in range(n) if i != j]
    return ToolReport("nvbandwidth", ms)


def test_low_row_and_column_names_the_gpu_single_low_cell_names_the_link():
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": _matrix(8, low=(3,))}), {})
    (summary,) = localise(items)
    assert summary.outcome is F and "GPU 3 (row and column low)" in summary.message
    assert "link" not in summary.message.split(":", 1)[1]
    items = judge_node(NodeInput("n", None, "", {"nvbandwidth": _matrix(8, low=((1, 5),))}), {})
    (summary,) = localise(items)
    assert summary.message.endswith("1 of 56 cells low: link GPU 1 -> GPU 5")
    bad = [i for i in items if i.outcome is F]
    assert [i.subject for i in bad] == ["gpu1-gpu5"] and "a single low cell" in bad[0].message


def test_low_allreduce_with_fine_p2p_names_the_fabric():
    nccl = ToolReport("nccl", [Measurement("nccl", "allreduce_busbw", 250.0, "GB/s", "node", mode="oop")],
                      info={"plateau_size_b": 17179869184})
    items = judge_node(NodeInput("n", "h100_sxm", "H100 SXM", {"nvbandwidth": _matrix(8), "nccl": nccl}, gpu_count=8), {})
    localise(items)
    (it,) = [i for i in items if i.tool == "nccl"]
    assert it.outcome is F and it.message.startswith("localised to the node's fabric (NVSwitch / topology)")


def test_current_generation_floors_resolve_with_their_sources():
    # issue 39.7: DCGM's diag SKU table (NVIDIA/DCGM@72fa3fe nvvs/diag-skus.yaml.in) per product name
    from nodegate.perf.floors import load_table, sku_for
    want = {"NVIDIA GH200 480GB": ("gh200", 37.075), "NVIDIA B300 SXM6 AC": ("b300", 36.825),
            "NVIDIA GB300": ("gb300", 46.631), "NVIDIA H20": ("h20", 17.7),
            "NVIDIA RTX PRO 6000 Blackwell Server Edition": ("rtx_pro_6000_server", 54.543)}
    fl = load_table()
    for name, (key, fp32) in want.items():
        assert sku_for(name) == key, name
        (e,) = [e for e in fl.skus[key]["entries"] if e["metric"] == "fp32"]
        assert e["floor"] == fp32 and "diag-skus.yaml.in" in e["source"]
    assert sku_for("NVIDIA GB200") is None and sku_for("NVIDIA H200 NVL") is None   # no public floor: none invented
