"""report.html's Performance section (nodegate.reports.perf_fleet): rendered from synthetic
results.jsonl records through ``render_all``, one chart per SKU x metric, the outliers drawn red
and linked to their node pages, the SKU table's floor drawn, hostile node names escaped."""

from __future__ import annotations

import json
import re

import defusedxml.ElementTree as ET
import pytest

from nodegate.reports import perf_fleet
from nodegate.reports.records import NodeInfo, Record
from nodegate.reports.render import RenderContext, render_all
from nodegate.reports.results import to_line

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
H2D = "performance: host-to-device (copy engine, GB/s)"
H2D_AFTER = "performance (after burn-in): host-to-device (copy engine, GB/s)"
P2P = "performance: device-to-device read (copy engine, GB/s)"
HOSTILE = 'evil"><script>alert(1)</script><img src=x onerror=alert(2)>'


def _rec(node: str, title: str, subject: str, value: float, outcome: str = "pass", rule: str = "") -> Record:
    scope = "NG-PERF-LINK" if subject.count("gpu") == 2 else "NG-PERF-GPU"
    gpu = re.match(r"gpu(\d+)", subject)
    return Record(nodeid=f"suites/test_perf.py::test_perf_x[{node}-nvbandwidth-h2d-ce-{subject}]", outcome=outcome,
                  node=node, check_id=scope, title=title, gpu_index=gpu.group(1) if gpu else "",
                  value=f"{value:g}", unit="GB/s", threshold="48", rule=rule, has_nodegate=True)


def _fleet() -> tuple[list[str], dict[str, NodeInfo], list[Record]]:
    recs, infos, nodes = [], {}, []
    for sku, prefix, n in ((H100, "h100-", 4), (H200, "h200-", 3)):
        for i in range(n):
            node = f"{prefix}n{i}"
            nodes.append(node)
            infos[node] = NodeInfo(node=node, gpu_model=sku)
            for g in range(8):
                slow = node == "h100-n3" and g == 3
                recs.append(_rec(node, H2D, f"gpu{g}", 35.1 if slow else 55.0 + g * 0.1,
                                 "fail" if slow else "pass", "sku_floor,in_node_peers" if slow else ""))
            recs.append(_rec(node, P2P, "gpu0-gpu1", 380.0))
            if sku == H200:
                recs.append(_rec(node, H2D_AFTER, "gpu0", 54.0))
    # one node with a hostile name: its slow GPU is an outlier of the H100 chart
    infos[HOSTILE] = NodeInfo(node=HOSTILE, gpu_model=H100)
    nodes.append(HOSTILE)
    recs.append(_rec(HOSTILE, H2D, "gpu5", 20.0, "fail", "sku_floor"))
    recs.append(_rec(HOSTILE, H2D, "gpu6", 1.0, "error"))   # invalid measurement: counted, not drawn
    # items that are not perf figures are ignored
    recs.append(Record(nodeid="suites/test_x.py::t[h100-n0]", node="h100-n0", check_id="NG-PCIE-002",
                       title="link", has_nodegate=True))
    return nodes, infos, recs


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    d = tmp_path_factory.mktemp("perf-fleet")
    nodes, infos, recs = _fleet()
    results = d / "results.jsonl"
    with results.open("w") as fh:
        for r in sorted(recs, key=lambda r: nodes.index(r.node)):
            fh.write(json.dumps(to_line(r)) + "\n")
    render_all(RenderContext(reports_dir=d, results_path=results, nodes=nodes, infos=infos,
                             html_path=d / "report.html", write_rma=False))
    return (d / "report.html").read_text()


def _charts(page: str) -> list[str]:
    return re.findall(r'<div class="ng-perf-chart">.*?</svg>(?:<p class="small">Outliers.*?</p>)?</div>', page, re.S)


def test_one_chart_per_sku_and_metric(report):
    assert '<h2 id="ng-perf">Performance</h2>' in report
    charts = _charts(report)
    heads = [re.search(r'<h3 class="ng-perf-dist">(.*?)</h3>', c).group(1) for c in charts]
    assert heads == [
        "H100 SXM: performance: device-to-device read (copy engine, GB/s)",
        "H100 SXM: performance: host-to-device (copy engine, GB/s)",
        "H200: performance (after burn-in): host-to-device (copy engine, GB/s)",
        "H200: performance: device-to-device read (copy engine, GB/s)",
        "H200: performance: host-to-device (copy engine, GB/s)",
    ]
    h100_h2d = charts[1]
    # every judged GPU is a mark (4 nodes x 8 + the hostile node's one judged GPU), the ERROR is not
    assert 'data-n="33"' in h100_h2d and 'data-outliers="2"' in h100_h2d
    assert len(re.findall(r'<circle class="v"', h100_h2d)) == 33
    assert "1 invalid measurement(s) not drawn" in h100_h2d
    assert "on 5 node(s)" in h100_h2d
    # the SKU table's floor (perf_floors.yaml h100_sxm h2d: 48) and the median are drawn
    assert '<line class="floor"' in h100_h2d and "<title>floor 48.0</title>" in h100_h2d
    assert '<line class="median"' in h100_h2d
    # no floor where the table has none (H200 p2p_read): said, not drawn
    assert '<line class="floor"' not in charts[3] and "no floor (SKU table or site)" in charts[3]
    for c in charts:   # every SVG is well-formed XML
        ET.fromstring(re.search(r"<svg.*?</svg>", c, re.S).group(0))


def test_outlier_marked_and_linked_to_its_node_page(report):
    h100_h2d = _charts(report)[1]
    assert re.search(r'<a href="nodes/h100-n3.html"><circle class="outlier" [^>]*><title>h100-n3 gpu3: 35.1 GB/s '
                     r"\(sku_floor,in_node_peers\)</title>", h100_h2d)
    assert ('<a class="outlier" href="nodes/h100-n3.html">h100-n3 gpu3 35.1</a> (sku_floor,in_node_peers)'
            in h100_h2d)
    # the healthy charts have no outlier
    for c in _charts(report)[2:]:
        assert 'class="outlier"' not in c


def test_hostile_node_name_escaped_and_linked_to_its_page(report):
    section = report[report.index('<h2 id="ng-perf">'):report.index("<h2>Drift</h2>")]
    assert "<script" not in section and "<img" not in section
    assert "evil&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in section
    # the link is the node page the matrix links to
    href = re.search(r'<td class="nm"><a href="([^"]*)">evil&quot;', report).group(1)
    assert f'<a class="outlier" href="{href}">evil&quot;' in section
    assert href.startswith("nodes/") and "<" not in href and '"' not in href


def test_no_perf_figures_no_section(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps(to_line(Record(nodeid="t[n0]", node="n0", check_id="NG-PCIE-002",
                                                 title="link", has_nodegate=True))) + "\n")
    render_all(RenderContext(reports_dir=tmp_path, results_path=results, nodes=["n0"], html_path=tmp_path / "r.html",
                             write_rma=False))
    assert "ng-perf" not in (tmp_path / "r.html").read_text()


def test_many_figures_drawn_per_pixel_column_and_bounded():
    pf = perf_fleet.PerfFleet()
    for n in range(400):   # 400 nodes x 56 GPU pairs: past DOTS_MAX
        node = f"n{n:04d}"
        pf.add(node, H100, f"nodes/{node}.html", [_rec(node, P2P, f"gpu{a}-gpu{b}", 380.0 + (a * b + n) % 17,
                                                       "fail" if (n, a, b) == (7, 2, 5) else "pass", "fleet")
                                                  for a in range(8) for b in range(8) if a != b])
    d = next(iter(pf.dists.values()))
    assert len(d.values) == 400 * 56 and d.values.itemsize == 8 and d.n_outliers == 1
    page = pf.html()
    assert page.count('<svg class="ng-perf-dist"') == 1
    assert "<circle class=\"v\"" not in page and page.count('<rect class="v"') <= perf_fleet.WIDTH
    assert '<a href="nodes/n0007.html"><circle class="outlier"' in page
    ET.fromstring(re.search(r"<svg.*?</svg>", page, re.S).group(0))


def test_charts_and_outliers_capped():
    pf = perf_fleet.PerfFleet()
    recs = [_rec("n0", f"performance: metric {i} (GB/s)", "gpu0", 1.0) for i in range(perf_fleet.MAX_CHARTS + 5)]
    recs += [_rec("n0", H2D, f"gpu{i}", 1.0, "fail", "sku_floor") for i in range(perf_fleet.MAX_OUTLIERS + 7)]
    pf.add("n0", H100, "", recs)
    assert len(pf.dists) == perf_fleet.MAX_CHARTS
    page = pf.html()
    assert "figure(s) of further metrics not charted" in page
    assert f"Outliers ({perf_fleet.MAX_OUTLIERS + 7})" not in page   # the H2D chart came past the cap


def test_outliers_listed_up_to_the_cap():
    pf = perf_fleet.PerfFleet()
    pf.add("n0", H100, "nodes/n0.html",
           [_rec("n0", H2D, f"gpu{i}", 1.0, "fail", "sku_floor") for i in range(perf_fleet.MAX_OUTLIERS + 7)])
    page = pf.html()
    assert f"Outliers ({perf_fleet.MAX_OUTLIERS + 7})" in page and "and 7 more" in page
    assert page.count('<circle class="outlier"') == perf_fleet.MAX_OUTLIERS


def test_sku_of_mixed_and_unknown_models():
    assert perf_fleet.sku_of(H100) == ("h100_sxm", "H100 SXM")
    assert perf_fleet.sku_of(None) == (None, "unknown SKU")
    assert perf_fleet.sku_of("NVIDIA H100 80GB HBM3 x4, NVIDIA H200 x4")[0] is None
    assert perf_fleet.sku_of("Some Future GPU") == (None, "Some Future GPU")


def test_site_floor_overrides_are_drawn_with_the_nodes_they_judged():
    # issue 36 item 9: each record carries the absolute floor that judged it (the table's 48, or a
    # site's perf.floors: here two nodes judged against 52): the chart draws both, labelled
    pf = perf_fleet.PerfFleet()
    for n in range(5):
        node = f"n{n}"
        recs = [_rec(node, H2D, f"gpu{g}", 55.0) for g in range(8)]
        for r in recs:
            r.floor = "52" if n < 2 else "48"
        pf.add(node, H100, f"nodes/{node}.html", recs)
    page = pf.html()
    assert page.count('<line class="floor"') == 2
    assert "<title>floor 48.0 (3 nodes)</title>" in page and "<title>floor 52.0 (2 nodes)</title>" in page
    assert "floors 48.0 GB/s (3 nodes), 52.0 GB/s (2 nodes) (site perf.floors)" in page
    # records without the field (results.jsonl of an older run): the SKU table's floor
    pf = perf_fleet.PerfFleet()
    pf.add("n0", H100, "", [_rec("n0", H2D, "gpu0", 55.0)])
    assert "<title>floor 48.0</title>" in pf.html()


def test_the_floor_field_travels_through_results_jsonl():
    rec = _rec("n0", H2D, "gpu0", 55.0)
    rec.floor = "52"
    from nodegate.reports.results import from_line
    assert from_line(json.loads(json.dumps(to_line(rec)))).floor == "52"
