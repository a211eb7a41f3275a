"""Parser for perftest ``ib_write_lat`` (and ``ib_send_lat``/``ib_read_lat``) output.

Usage (evidence: a cross-node perftest pair's ``server``/``client`` items)::

    ib_write_lat -d mlx5_0 -p 18516 [--use_cuda=<gpu>]              # server
    ib_write_lat -d mlx5_0 -p 18516 [--use_cuda=<gpu>] <server>     # client

Layout (linux-rdma/perftest@00b55b66 src/perftest_parameters.h ``RESULT_FMT_LAT`` /
``REPORT_FMT_LAT``): a header block (``Device : mlx5_0``, ``Link type : IB``), a column header
``#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99%
percentile[usec] 99.9% percentile[usec]``, one row per size (tabs inside). In duration mode
(``-D``) the header is ``#bytes #iterations t_avg[usec] tps average``: no percentiles. perftest
prints ``Conflicting CPU frequency values detected`` warnings inside the table; they are not
rows. Every figure is microseconds.

Schema::

    parse_ib_write_lat(text) -> IbLatRun(device, link_type, rows={size_b: IbLatRow(iterations, t_min,
                                         t_max, t_typical, t_avg, t_stdev, p99, p999)}, duration_mode)
    IbLatRun.smallest() -> IbLatRow of the smallest size (the latency figure)

ParseError when a row does not have its header's column count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 4 * 1024 * 1024
MAX_ROWS = 4096
_HDR = re.compile(r"#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]\s+t_avg\[usec\]"
                  r"\s+t_stdev\[usec\]\s+99% percentile\[usec\]\s+99\.9% percentile\[usec\]")
_HDR_DUR = re.compile(r"#bytes\s+#iterations\s+t_avg\[usec\]\s+tps average")
_NUM = r"\d+(?:\.\d+)?"
_ROW = re.compile(rf"^\s*(\d{{1,12}})\s+(\d{{1,15}})((?:\s+{_NUM}){{2,7}})\s*$")


@dataclass
class IbLatRow:
    iterations: int
    t_min: float | None = None
    t_max: float | None = None
    t_typical: float | None = None
    t_avg: float | None = None
    t_stdev: float | None = None
    p99: float | None = None
    p999: float | None = None


@dataclass
class IbLatRun:
    device: str | None = None
    link_type: str | None = None
    rows: dict[int, IbLatRow] = field(default_factory=dict)
    duration_mode: bool = False
    #: sizes printed more than once with different figures (a run repeated, outputs joined):
    #: size -> the figures seen; the last row was kept and silently won
    conflicts: dict[int, list[IbLatRow]] = field(default_factory=dict)

    def smallest(self) -> IbLatRow | None:
        return self.rows[min(self.rows)] if self.rows else None


def parse_ib_write_lat(text: str | bytes) -> IbLatRun:
    """Empty -> IbLatRun() (no rows)."""
    text = V.check_text(text, cap=MAX_CHARS, what="ib_write_lat")
    run = IbLatRun()
    cols = 0
    for line in text.replace("\r", "\n").split("\n"):
        if _HDR.search(line):
            cols, run.duration_mode = 9, False
            continue
        if _HDR_DUR.search(line):
            cols, run.duration_mode = 4, True
            continue
        if run.device is None and (m := re.search(r"Device\s*:\s*(\S+)", line)):
            run.device = m.group(1)
        if run.link_type is None and (m := re.search(r"Link type\s*:\s*(\S+)", line)):
            run.link_type = m.group(1)
        if not cols:
            continue
        m = _ROW.match(line)
        if not m:
            continue
        vals = [float(v) for v in m.group(3).split()]
        if len(vals) != cols - 2:
            raise ParseError(f"ib_write_lat: row has {len(vals) + 2} columns, header has {cols}: {line.strip()[:100]!r}")
        row = IbLatRow(int(m.group(2)))
        if cols == 9:
            row.t_min, row.t_max, row.t_typical, row.t_avg, row.t_stdev, row.p99, row.p999 = vals
        else:
            row.t_avg = vals[0]
        size = int(m.group(1))
        prev = run.rows.get(size)
        if prev is not None and (prev.p99, prev.t_typical, prev.t_avg) != (row.p99, row.t_typical, row.t_avg):
            if len(run.conflicts) < 64:
                run.conflicts.setdefault(size, [prev]).append(row)
        run.rows[size] = row
        if len(run.rows) > MAX_ROWS:
            raise ParseError("ib_write_lat: too many rows")
    return run
