"""results.jsonl read back one node at a time, also when a node's lines are not consecutive
(each shard's node-identity items come after its nodes' own): the groups are those of reading
every record and grouping them, in first-appearance order (nodegate.reports.results)."""

from __future__ import annotations

from nodegate.reports.records import Record
from nodegate.reports.results import ResultsWriter, node_groups, read


def test_interleaved_lines_group_by_node_in_first_appearance_order(tmp_path):
    w = ResultsWriter(tmp_path / "results.jsonl")
    order = [("a", "t1"), ("a", "t2"), ("b", "t1"), ('c "q"', "t1"), ("a", "id"), ("b", "id"), ('c "q"', "id")]
    for node, t in order:
        w.write(Record(nodeid=f"suites/test_x.py::{t}[{node}]", node=node, outcome="pass"))
    w.close()
    assert w.interleaved
    got = [(n, [r.nodeid.split("::")[1].split("[")[0] for r in recs]) for n, recs in node_groups(w.path, True)]
    assert got == [("a", ["t1", "t2", "id"]), ("b", ["t1", "id"]), ('c "q"', ["t1", "id"])]
    whole: dict = {}
    for r in read(w.path):
        whole.setdefault(r.node, []).append(r.nodeid)
    assert [(n, [r.nodeid for r in recs]) for n, recs in node_groups(w.path, True)] == list(whole.items())
