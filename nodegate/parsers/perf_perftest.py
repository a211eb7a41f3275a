"""Parser for perftest (linux-rdma/perftest) bandwidth and latency output: ``ib_write_bw``,
``ib_read_bw``, ``ib_send_bw`` (``-b`` bidirectional too), ``ib_write_lat``, ``ib_read_lat``,
``ib_send_lat``.

Usage (evidence keys ``perf.<tool>.<hca>``, a loopback pair per HCA)::

    ib_write_bw -d mlx5_0 -s 8388608 -n 5000 --report_gbits -F & ib_write_bw -d mlx5_0 ... localhost
    ib_write_lat -d mlx5_0 -s 2 -n 10000 -F & ib_write_lat -d mlx5_0 ... localhost

Layout: a title (``RDMA_Write BW Test``, ``RDMA_Write Bidirectional BW Test``, ``Send BW Test``,
``RDMA_Read Latency Test``...), a header block (``Device : mlx5_0``, ``Link type : IB|Ethernet``;
tabs inside), then a column header and one row per size:

- bandwidth: ``#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]`` with U = ``MB/sec``
  (perftest before 2024), ``MiB/sec`` (the same unit, relabelled in 1d202bb) or ``Gb/sec``
  (``--report_gbits``). perftest's MB is 2^20 bytes: ``format_factor = 0x100000`` in
  src/perftest_parameters.c since 2013 (22fc42c), so MB/sec x 1048576 x 8 / 10^9 = Gb/s;
- latency: ``#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec]
  99% percentile[usec] 99.9% percentile[usec]`` (older builds: the first five; duration mode
  ``-D``: ``t_avg[usec] tps average``).

In duration mode (``-D``) and on a send server ``BW peak`` is ``0.00`` ("WARNING: BW peak won't be
measured in this run"). A bidirectional run reports the sum of both sides (print_full_bw_report adds
the remote report). In a loopback log the server's and the client's output interleave line by
line, the header and rows repeat, CPU-frequency warnings sit inside the table. ``--output=bandwidth``
/ ``--output=latency`` print a bare number and nothing else (``bare``). Sources: ../shared/perf
361-362, tests/perf/fixtures 363-371.

Every figure goes through the bounded reader (``_figures.figure``); a row with a figure that is
not one is dropped and ``bad`` says why.

Schema::

    parse_perftest(text) -> PerftestRun(title, verb ("write"|"read"|"send"|"atomic"|None), kind
        ("bw"|"lat"|None), bidirectional, device, link_type, unit ("MB/sec"|"MiB/sec"|"Gb/sec"),
        bw={size_b: [(peak, average)]}, lat={size_b: [{t_min, t_max, t_typical, t_avg, t_stdev,
        p99, p999}]}, lat_unit, duration, bare=[float], bad=[str], gpu_memory, notes)
    PerftestRun.to_gbits(v) -> Gb/s

Example::

     #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
     8388608    20000            24056.74            24056.72		   0.003007
    -> PerftestRun(kind="bw", unit="MB/sec", bw={8388608: [(24056.74, 24056.72)]}); to_gbits(24056.72) = 201.80
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from ._figures import InvalidFigure, figure
from ._perftext import prepare

MAX_CHARS = 4 * 1024 * 1024
MAX_ROWS = 4096
_TITLE = re.compile(r"^\s*(RDMA_Write|RDMA_Read|Send|Atomic\w*|RDMA_Write_Imm|Send_Imm)\s+(Bidirectional\s+)?"
                    r"(?:Post_List\s+)?(BW|Latency)\s+Test\s*$", re.I)
_BW_HDR = re.compile(r"#bytes\s+(?:#sl\s+)?#iterations\s+BW peak\[(MB/sec|Gb/sec|MiB/sec)\]\s+"
                     r"BW average\[(MB/sec|Gb/sec|MiB/sec)\]")
_LAT_HDR = re.compile(r"#bytes\s+#iterations\s+t_(min|avg)\[(usec|nsec|cycles)\]")
_DEV = re.compile(r"Device\s*:\s*(\S{1,64})")
_LINK = re.compile(r"Link type\s*:\s*(\S{1,32})")
_LAT_COLS = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999")
_VERB = {"rdma_write": "write", "rdma_read": "read", "send": "send", "rdma_write_imm": "write", "send_imm": "send"}


@dataclass
class PerftestRun:
    title: str | None = None
    verb: str | None = None
    kind: str | None = None
    bidirectional: bool = False
    device: str | None = None
    link_type: str | None = None
    unit: str | None = None
    bw: dict[int, list] = field(default_factory=dict)
    lat: dict[int, list] = field(default_factory=dict)
    lat_unit: str | None = None
    lat_cols: list[str] = field(default_factory=list)
    duration: bool = False
    bare: list[float] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    gpu_memory: bool = False
    notes: list[str] = field(default_factory=list)

    def to_gbits(self, v: float) -> float:
        """``v`` in the run's unit -> Gb/s (10^9 bit/s)."""
        if self.unit == "Gb/sec":
            return v
        return v * 1048576 * 8 / 1e9          # MB/sec and MiB/sec are both 2^20 bytes (module docstring)

    # the first parser's API (ib_write_bw): rows={size: (peak, average)} of the last row per size
    @property
    def rows(self) -> dict[int, tuple[float, float]]:
        return {s: v[-1] for s, v in self.bw.items()}

    def largest(self) -> tuple[int, float] | None:
        if not self.bw:
            return None
        size = max(self.bw)
        return size, round(self.to_gbits(max(a for _, a in self.bw[size])), 2)


def _row_figs(toks: list[str], run: PerftestRun, what: str) -> list[float] | None:
    out = []
    for i, t in enumerate(toks):
        try:
            out.append(float(figure(t, what=f"{what} column {i + 1}")))
        except InvalidFigure as e:
            if len(run.bad) < 50:
                run.bad.append(f"{what} size {toks[0][:20]}: {e}")
            return None
    return out


def parse_perftest(text: str | bytes) -> PerftestRun:
    """Empty -> PerftestRun() (no rows). ParseError when the bandwidth headers disagree on the unit."""
    p = prepare(text, cap=MAX_CHARS, what="perftest")
    run = PerftestRun(notes=list(p.notes))
    nrows = 0
    for line in p.text.replace("\r", "\n").split("\n"):
        st = line.strip()
        if not st:
            continue
        if m := _TITLE.match(st):
            verb = m.group(1).lower()
            run.title = " ".join(st.split())
            run.verb = _VERB.get(verb, "atomic" if verb.startswith("atomic") else verb)
            run.kind = "bw" if m.group(3).upper() == "BW" else "lat"
            run.bidirectional = run.bidirectional or bool(m.group(2))
            continue
        if "BW peak won't be measured" in st:
            run.duration = True
            continue
        if m := _BW_HDR.search(st):
            if m.group(1) != m.group(2) or (run.unit and run.unit != m.group(1)):
                raise ParseError(f"perftest: inconsistent units {st[:120]!r}")
            run.unit = m.group(1)
            run.kind = run.kind or "bw"
            continue
        if m := _LAT_HDR.search(st):
            run.kind = run.kind or "lat"
            run.lat_unit = m.group(2)
            hdr = st.replace("99% percentile", "p99").replace("99.9% percentile", "p999")
            cols = re.findall(r"(t_min|t_max|t_typical|t_avg|t_stdev|p999|p99|tps average)", hdr)
            run.lat_cols = [c.replace("tps average", "tps") for c in cols]
            continue
        if run.device is None and (m := _DEV.search(st)):
            run.device = m.group(1)
        if run.link_type is None and (m := _LINK.search(st)):
            run.link_type = m.group(1)
        if "CUDA" in st and ("allocat" in st.lower() or "using cuda" in st.lower()):
            run.gpu_memory = True
        toks = st.split()
        if not toks or not re.fullmatch(r"[0-9]{1,20}", toks[0]):
            if len(toks) == 1 and re.fullmatch(r"[0-9]{1,20}\.[0-9]{1,20}", toks[0]) and run.kind is None:
                try:
                    run.bare.append(float(figure(toks[0], what="bare figure")))
                except InvalidFigure as e:
                    run.bad.append(str(e))
            continue
        if run.unit and len(toks) >= 5 and (run.kind == "bw" or not run.lat_cols):
            figs = _row_figs(toks[:5], run, "bandwidth row")
            if figs is None:
                continue
            run.bw.setdefault(int(figs[0]), []).append((figs[2], figs[3]))
        elif run.lat_cols and len(toks) >= 2 + len(run.lat_cols):
            figs = _row_figs(toks[:2 + len(run.lat_cols)], run, "latency row")
            if figs is None:
                continue
            run.lat.setdefault(int(figs[0]), []).append(dict(zip(run.lat_cols, figs[2:])))
        else:
            continue
        nrows += 1
        if nrows > MAX_ROWS:
            raise ParseError("perftest: too many rows")
    return run
