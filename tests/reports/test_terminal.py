"""terminal.py: one screen, problems first, no escape sequences."""

from collections import Counter

from nodegate.reports.records import NodeInfo
from nodegate.reports.terminal import lines


def test_worst_nodes_first_and_capped():
    infos = [NodeInfo(node=f"ok{i:02d}", counts=Counter({"pass": 5})) for i in range(30)]
    infos.append(NodeInfo(node="bad\x1b[2J", counts=Counter({"pass": 4, "fail": 1, "fail_minor": 1})))
    infos.append(NodeInfo(node="rma", counts=Counter({"pass": 4, "fail": 1, "fail_critical": 1})))
    infos.append(NodeInfo(node="down", gather_status="unreachable: timeout", counts=Counter({"error": 5})))
    out = lines(infos, [("HTML report", "reports/report.html")], max_nodes=4)
    assert out == [
        "33 node(s): 30 healthy, 3 with problems; checks: 158 pass, 2 fail, 0 skip, 5 error",
        "node         pass  fail  skip error  gather",
        "down            0     0     0     5  unreachable: timeout",
        "rma             4     1     0     0  ok",
        "bad\\x1b[2J      4     1     0     0  ok",
        "ok00            5     0     0     0  ok",
        "... 29 more node(s) not listed (0 with problems): see the HTML report",
        "HTML report: reports/report.html"]


def test_problem_lines_past_the_cap_are_counted_not_dropped():
    infos = [NodeInfo(node=f"bad{i}", counts=Counter({"pass": 4, "fail": 1}), problem=f"[NG-X-001] fault {i}")
             for i in range(5)]
    out = lines(infos, [], max_nodes=2)
    head = out.index("problems (one line a node, worst first; the fix after '->'; every finding in the HTML report):")
    assert out[head + 1:] == ["  bad0: [NG-X-001] fault 0", "  bad1: [NG-X-001] fault 1",
                              "  ... 3 more node(s) with problems: see the HTML report"]
