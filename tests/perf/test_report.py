"""The node page's performance table and SVG charts (nodegate.perf.report; the fleet page:
tests/reports/test_perf_fleet.py)."""

from __future__ import annotations

from nodegate.outcomes import Outcome
from nodegate.perf.model import Measurement, ToolReport
from nodegate.perf.report import node_html
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


def test_every_item_is_pass_or_fail():
    assert all(i.outcome in (Outcome.PASS, Outcome.FAIL) for i in _items())
