"""Parser for perftest ``ib_write_bw`` output (loopback: server and client on one host).

Usage (evidence key ``perf.ib_write_bw`` or ``perf.ib_write_bw.<hca>``)::

    ib_write_bw -d mlx5_0 -s 8388608 --report_gbits [--use_cuda=0] & ib_write_bw -d mlx5_0 ... localhost

Layout: a header block (``Device : mlx5_0``, ``Link type``, ``Mtu``...; tabs inside), a column
header ``#bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]`` (``[Gb/sec]``
with ``--report_gbits``), one row per size. In a loopback log the server's and the client's
output interleave line by line, the header and the last row repeat, CPU-frequency warnings sit
inside the table, and in duration mode (``-D``) ``BW peak`` is ``0.00``. Sources:
../shared/perf/361-362. perftest's MB is 10^6 bytes (perftest_parameters.c), so MB/sec x 8 / 1000
= Gb/s.

Schema::

    parse_ib_write_bw(text) -> IbBwRun(device, unit ("MB/sec"|"Gb/sec"), rows={size_b: (peak, average)},
                                       link_type, gpu_memory: bool)
    IbBwRun.largest() -> (size_b, average in Gb/s)

A size seen twice keeps the higher average (server and client report the same transfer).

Example::

     #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
     8388608    20000            24056.74            24056.72		   0.003007
    -> IbBwRun(device="ib0", unit="MB/sec", rows={8388608: (24056.74, 24056.72)}); largest() = (8388608, 192.45)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from . import _values as V

MAX_CHARS = 4 * 1024 * 1024
_HDR = re.compile(r"#bytes\s+#iterations\s+BW peak\[(MB/sec|Gb/sec|MiB/sec)\]\s+BW average\[(MB/sec|Gb/sec|MiB/sec)\]")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s*$")
_DEV = re.compile(r"Device\s*:\s*(\S+)")


@dataclass
class IbBwRun:
    device: str | None = None
    unit: str | None = None
    rows: dict[int, tuple[float, float]] = field(default_factory=dict)
    link_type: str | None = None
    gpu_memory: bool = False

    def to_gbits(self, v: float) -> float:
        if self.unit == "Gb/sec":
            return v
        if self.unit == "MiB/sec":
            return v * 1048576 * 8 / 1e9
        return v * 8 / 1000.0

    def largest(self) -> tuple[int, float] | None:
        if not self.rows:
            return None
        size = max(self.rows)
        return size, round(self.to_gbits(self.rows[size][1]), 2)


def parse_ib_write_bw(text: str | bytes) -> IbBwRun:
    """Empty -> IbBwRun() (no rows). ParseError when the two header lines disagree on the unit."""
    text = V.check_text(text, cap=MAX_CHARS, what="ib_write_bw")
    run = IbBwRun()
    for line in text.replace("\r", "\n").split("\n"):
        if m := _HDR.search(line):
            if m.group(1) != m.group(2) or (run.unit and run.unit != m.group(1)):
                raise ParseError(f"ib_write_bw: inconsistent units {line.strip()[:120]!r}")
            run.unit = m.group(1)
            continue
        if run.device is None and (m := _DEV.search(line)):
            run.device = m.group(1)
        if m := re.search(r"Link type\s*:\s*(\S+)", line):
            run.link_type = m.group(1)
        if "CUDA" in line and ("allocat" in line.lower() or "using cuda" in line.lower()):
            run.gpu_memory = True
        if run.unit and (m := _ROW.match(line)):
            size, peak, avg = int(m.group(1)), float(m.group(3)), float(m.group(4))
            old = run.rows.get(size)
            if old is None or avg > old[1]:
                run.rows[size] = (peak, avg)
            if len(run.rows) > 4096:
                raise ParseError("ib_write_bw: too many rows")
    return run
