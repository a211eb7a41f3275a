"""The node page's performance table and SVG charts, and the fleet distribution (nodegate.perf.report)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.perf.model import Measurement, ToolReport
from nodegate.perf.report import fleet_distribution, fleet_html, node_html
from nodegate.perf.rules import NodeInput, judge_node


def _items(node="n<script>1"):
    rep = ToolReport("nvbandwidth", [Measurement("nvbandwidth", "h2d", v, "GB/s", "gpu", g, engine="ce")
                                     for g, v in enumerate([55.2] * 7 + [35.1])])
    return judge_node(NodeInput(node, "h200", "H200", {"nvbandwidth": rep}), {})


def test_node_html_has_table_and_one_chart_per_metric_with_floor_and_median_escaped():
    html = node_html("n<script>1", _items())
    assert "<script>" not in html and "n&lt;script&gt;1" in html
    assert html.count("<svg") == 1 and "floor 48.0" in html and "median 55.2" in html
    assert html.count("<tr>") == 9 and ">FAIL<" in html and "sku_floor" in html


def test_fleet_distribution_marks_and_links_outliers():
    dist = fleet_distribution({"a": _items("a"), "b": _items("b")}, {"a": "h200", "b": "h200"})
    (d,) = dist
    assert (d["n"], d["min"], d["max"]) == (16, 35.1, 55.2)
    assert [(o["node"], o["subject"]) for o in d["outliers"]] == [("a", "gpu7"), ("b", "gpu7")]
    assert 'href="nodes/a.html"' in fleet_html(dist)
    assert all(i.outcome in (Outcome.PASS, Outcome.FAIL) for i in _items())
