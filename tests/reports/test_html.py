"""html.py, nodepage.py, findings.py: the first page (verdict, matrix, findings) and the node
pages escape every node string, print a root cause once, and show values as values."""

import re
from collections import Counter

from nodegate.reports import findings, html, nodepage
from nodegate.reports.live import finalize
from nodegate.reports.records import NodeInfo

from .fleetgen import HOSTILE_NODE, IMG_SERIAL, SCRIPT_NAME
from .helpers import rec

RAW_MARKUP = re.compile(r"<(script|img)\b", re.I)


def _recs(node):
    return [finalize(r) for r in (
        rec(node=node, check_id="NG-DRV-001", outcome="pass", scope="node", observed="580.159.04"),
        *[rec(node=node, gpu=str(i), check_id="NG-PCIE-002", outcome="pass", scope="gpu", observed="Gen5 x16")
          for i in (0, 1, 2)],
        rec(node=node, gpu="3", check_id="NG-PCIE-002", outcome="fail", scope="gpu", observed="Gen1 x16",
            expected="Gen5 x16", gpu_serial=IMG_SERIAL, remediation="Reseat the GPU or replace the riser."),
        *[rec(node=node, gpu=str(i), check_id=f"NG-ECC-00{i}", outcome="error", scope="gpu",
              message="nvidia-smi failed (driver_library_mismatch): Failed to initialize NVML") for i in (1, 2)])]


def test_node_findings_one_per_root_cause_worst_first():
    got = findings.node_findings("n1", _recs("n1"))
    assert [(f.outcome, f.key, f.action, f.gpus, len(f.items)) for f in got] == [
        ("fail", "NG-PCIE-002", "reseat", ["gpu3"], 1),
        ("error", "nvidia-smi failed (driver_library_mismatch): Failed to initialize NVML", "obtain evidence",
         ["gpu1", "gpu2"], 2)]
    assert got[1].remediation.startswith("nvidia-smi cannot talk to the loaded driver")


def test_node_page_escapes_and_prints_remediation_once():
    recs = _recs(HOSTILE_NODE)
    info = NodeInfo(node=HOSTILE_NODE, status="need action", gpu_model=SCRIPT_NAME, system_serial=IMG_SERIAL,
                    counts=Counter(pass_=4))
    page = nodepage.node_page(info, recs, findings.node_findings(HOSTILE_NODE, recs), back="../report.html#x",
                              archive_href="../bundles/x.tar.gz", title="t")
    assert not RAW_MARKUP.search(page)
    assert page.count("nvidia-smi cannot talk to the loaded driver") == 1
    assert page.count("Reseat the GPU or replace the riser.") == 1
    # three GPUs passed with one observed value: one row; the failing GPU its own row
    assert '<td>3 of 4 GPUs</td><td>PASS</td><td>good</td><td>Gen5 x16</td>' in page
    assert "observed <b>Gen1 x16</b>, expected Gen5 x16" in page


def test_matrix_rows_cells_and_links_escape_node_strings():
    rows = [html.MatrixRow(HOSTILE_NODE, "need action", "major", "RMA", 'nodes/a".html',
                           {"NG-A": ("fail", 2), "NG-B": ("pass", 8)}),
            html.MatrixRow("ok", "accepted", "", "", "nodes/ok.html", {"NG-A": ("pass", 1), "NG-B": ("pass", 8)})]
    out = html.matrix_html(rows, [("NG-A", "<b>A</b>"), ("NG-B", "B"), ("NG-C", "C")])
    assert not RAW_MARKUP.search(out)
    # a passed cell is a bare <td> (the table's colour), end tags left out
    assert '<td class=f title="NG-A: fail (2)"><td><td class=n>' in out
    assert 'href="nodes/a&quot;.html"' in out
    assert 'title="&lt;b&gt;A&lt;/b&gt;"' in out
    assert out.count("<tbody>") == 1


def test_matrix_comes_in_blocks_for_the_browser():
    rows = [html.MatrixRow(f"n{i}", "accepted", "", "", f"nodes/n{i}.html", {}) for i in range(300)]
    out = html.matrix_html(rows, [("NG-A", "A")])
    assert out.count("<tbody>") == 3   # ROWS_PER_BLOCK 128: content-visibility lays out the visible ones


def test_rows_of_the_most_common_healthy_pattern_are_one_cell():
    ok = {"NG-A": ("pass", 8), "NG-B": ("skip", 8)}
    rows = [html.MatrixRow(f"n{i}", "accepted", "", "", f"nodes/n{i}.html", dict(ok)) for i in range(3)]
    rows.append(html.MatrixRow("bad", "need action", "major", "RMA", "nodes/bad.html",
                               {"NG-A": ("fail", 1), "NG-B": ("skip", 8)}))
    out = html.matrix_html(rows, [("NG-A", "A"), ("NG-B", "B")])
    assert out.count('data-cells="ps"><td class="nm">') == 3 and out.count("<td class=same colspan=2>") == 3
    assert 'data-cells="fs"' in out and '<td class=f title="NG-A: fail (1)"><td class=s title="NG-B: skip (8)">' in out
    # the gradient draws the pattern: pass then skip, 16 px a column with a 1 px gap
    assert ("linear-gradient(to right,#4caf50 0px 15px,#fff 15px 16px,#bdbdbd 16px 31px,#fff 31px 32px)"
            in out)


def test_fleet_findings_group_nodes_and_link_them():
    ff = findings.FleetFindings()
    for n in ("a", "b", HOSTILE_NODE):
        ff.add(findings.node_findings(n, _recs(n)))
    got = ff.sorted()
    assert [(g.outcome, g.n_nodes, g.n_items) for g in got] == [("fail", 3, 3), ("error", 3, 6)]
    out = html.findings_html(got, {HOSTILE_NODE: "nodes/evil.html", "a": "nodes/a.html"})
    assert not RAW_MARKUP.search(out)
    assert out.count("Reseat the GPU or replace the riser.") == 1
    assert '<a href="nodes/evil.html">evil&lt;img' in out


def test_a_findings_row_never_gives_one_node_the_action_of_another():
    # the demo's NG-MEM-001: a remapping failure on one node (RMA, rma.csv) and rows pending on
    # another (reset, actions.csv): one row per (check, action), each naming its own nodes
    def remap(node, gpu, action):
        return finalize(rec(node=node, gpu=gpu, check_id="NG-MEM-001", outcome="fail", scope="gpu",
                            severity="critical", action=action, remediation="Reset the GPU; RMA on a failure."))
    ff = findings.FleetFindings()
    ff.add(findings.node_findings("row-remap-failure", [remap("row-remap-failure", "5", "RMA")]))
    ff.add(findings.node_findings("row-remap-pending", [remap("row-remap-pending", "2", "reset")]))
    # one node, two GPUs, two actions: a row each, never the node's strongest for both
    ff.add(findings.node_findings("both", [remap("both", "0", "RMA"), remap("both", "1", "reset")]))
    got = [(g.key, g.action, g.nodes, g.n_items) for g in ff.sorted()]
    assert got == [("NG-MEM-001", "RMA", ["row-remap-failure", "both"], 2),
                   ("NG-MEM-001", "reset", ["row-remap-pending", "both"], 2)]
    out = html.findings_html(ff.sorted(), {})
    rows = re.findall(r"<tr class=\"fail\">.*?</tr>", out)
    assert len(rows) == 2
    assert "<td>RMA</td>" in rows[0] and "row-remap-pending" not in rows[0]
    assert "<td>reset</td>" in rows[1] and "row-remap-failure" not in rows[1]
    per_node = findings.node_findings("both", [remap("both", "0", "RMA"), remap("both", "1", "reset")])
    assert [(f.key, f.action, f.gpus) for f in per_node] == [("NG-MEM-001", "RMA", ["gpu0"]),
                                                              ("NG-MEM-001", "reset", ["gpu1"])]


def test_drift_table_escapes_and_marks_outliers():
    a = NodeInfo(node="a", driver_version="580.159.04", gpu_model="NVIDIA H200", counts=Counter(pass_=1))
    b = NodeInfo(node=HOSTILE_NODE, driver_version="580.159.04", gpu_model=SCRIPT_NAME)
    c = NodeInfo(node="c", driver_version="580.159.04", gpu_model="NVIDIA H200")
    out = html.drift_table([a, b, c])
    assert not RAW_MARKUP.search(out)
    assert ('<td class="outlier">&lt;script&gt;document.documentElement.dataset.pwned=1&lt;/script&gt; ≠</td>'
            in out)


def test_drift_table_lists_only_outliers_at_scale():
    infos = [NodeInfo(node=f"n{i}", driver_version="580") for i in range(10)] + [
        NodeInfo(node="odd", driver_version="570")]
    out = html.drift_table(infos, max_rows=5)
    assert "<td>odd</td>" in out and "<td>n1</td>" not in out
    assert "10 more node(s) not listed" in out


def test_page_verdict_line_and_environment_escaped():
    env = html.escape_environment({"Plugins": {"<b>": "<i>"}, "CI_X": "<img src=x>", "K\x07": "v"})
    assert env == {"Plugins": {"<b>": "<i>"}, "CI_X": "<img src=x>", "K\\x07": "v"}
    out = html.page(title="t <b>", statuses=Counter({"accepted": 2, "need action": 1}), totals=Counter(pass_=3),
                    findings=[], rows=[], checks=[], infos=[], per_check={}, hrefs={}, env=env, files=[])
    assert not RAW_MARKUP.search(out) and "<b>" not in out.split("<body>", 1)[1].split('id="ng-verdict"')[0]
    assert ('<b class="st-ok">2 accepted</b>, <b class="st-bad">1 need action</b>, '
            '<b class="st-ne">0 not evaluated</b>') in out
    assert "&lt;img src=x&gt;" in out
