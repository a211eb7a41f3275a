"""Cross-node job outputs that look like a measurement but are not one job's: the launcher's
stdout is node output (untrusted): every result table in it is read, never only the first
(nodegate's rule: contradictory evidence is ERROR, corruption anywhere is FAIL)."""

from __future__ import annotations

from nodegate.crossnode.evidence import Item, LaunchRecord
from nodegate.crossnode.payloads import measure_nccl
from nodegate.crossnode.thresholds import fail_closed

HEAD = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1 on     nodeA device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on     nodeB device  0 [0x1b] NVIDIA H100 80GB HBM3
"""
TABLE = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   {bw}      {w}    100.0   10.49   {bw}      {w}
  1073741824     268435456     float     sum      -1   20000.0   53.69   {bw}      {w}   20000.0   53.69   {bw}      {w}
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {bw}
#
"""


def _measure(text: str):
    rec = LaunchRecord("srun", items={"launch": Item(text.encode(), b"", 0)})
    return measure_nccl(rec, "all_reduce_perf", 2, 1 << 20)


def test_one_clean_table_is_a_measurement():
    m = _measure(HEAD + TABLE.format(bw="45.00", w=0))
    assert (m.value, m.corruption, m.problems) == (45.0, "", [])
    assert fail_closed(m).passed is True


def test_wrong_rows_in_a_second_table_are_corruption_not_ignored():
    # the first table was the only one read: a job whose output also held a table with #wrong 7 passed
    m = _measure(HEAD + TABLE.format(bw="45.00", w=0) + TABLE.format(bw="44.00", w=7))
    assert m.corruption.startswith("#wrong = ") and fail_closed(m).passed is False


def test_two_tables_with_different_figures_are_error_naming_them():
    m = _measure(HEAD + TABLE.format(bw="5.00", w=0) + TABLE.format(bw="45.00", w=0))
    assert fail_closed(m).passed is None
    assert any(p.startswith("2 result tables in one output") for p in m.problems), m.problems
