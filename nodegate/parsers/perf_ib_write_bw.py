"""Parser for perftest ``ib_write_bw`` output: the perftest parser (perf_perftest.py), under the
name and bundle key the performance phase first used (``perf.ib_write_bw[.<hca>]``).

Usage (evidence key ``perf.ib_write_bw`` or ``perf.ib_write_bw.<hca>``)::

    ib_write_bw -d mlx5_0 -s 8388608 --report_gbits -F & ib_write_bw -d mlx5_0 ... localhost

Schema: ``parse_ib_write_bw(text) -> PerftestRun`` (see perf_perftest.py: ``bw={size: [(peak,
average)]}``, ``unit``, ``bidirectional``, ``to_gbits()``; MB/sec is 2^20 bytes/s).

Example::

     #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
     8388608    5000             392.30             392.00  		   5.841728
    -> PerftestRun(kind="bw", unit="Gb/sec", bw={8388608: [(392.3, 392.0)]})
"""

from __future__ import annotations

from .perf_perftest import PerftestRun, parse_perftest

#: the first parser's result type
IbBwRun = PerftestRun


def parse_ib_write_bw(text: str | bytes) -> PerftestRun:
    """Empty -> PerftestRun() (no rows). ParseError when the two header lines disagree on the unit."""
    return parse_perftest(text)
