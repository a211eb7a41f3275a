"""Conversion figures behind issue 31 item 4 (``python bench/bugreport_bounds.py``): CPU time and
tracemalloc peak of converting hostile nvidia-bug-report logs, and the peak over the largest kept
section. Measured on the 2-core development machine (2026-12-02, shared with other jobs):

- 256 MB of newlines in a dmesg block (a 249 KB gzip): before 7.8 GB RSS; now 0.5 MB peak, 27.7 CPU s
  (C-level skipping);
- 100,000 persistenced Started + Shutdown lines in the journal (1 MB gzip): before O(n^2) (an 806 KB
  log stalled a replay 3 min 36 s); now 4.1 CPU s, peak 48 MB = 10.5x the largest kept item;
- an 8 MB nvidia-smi -q section of 2-character lines: 3.0 CPU s, peak 3.0x the kept section;
- 250,000 distinct short dmesg lines and as many journal lines: 8.4 CPU s, peak 83 MB = 13.5x the
  largest kept item (the de-duplication holds an entry per kept kernel line; kernel lines are capped
  at stream.MAX_KERNEL_LINES per source).
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from nodegate.bugreport import load_bug_report  # noqa: E402

SEP = "_" * 44


def cases(scale: int) -> dict:
    scan = f"{SEP}\n\nScanning kernel log files for NVIDIA kernel messages:\n\n  journalctl -b -0:\n"
    return {
        "newlines in dmesg": lambda: f"{SEP}\n\ndmesg:\n" + "\n" * (256 * scale),
        "persistenced journal": lambda: scan + "".join(f"x nvidia-persistenced[{i}]: Started ({i})\n"
                                                       for i in range(scale // 10)) +
        "".join(f"x nvidia-persistenced[{i}]: Shutdown ({i})\n" for i in range(scale // 10)),
        "short lines kept (nvidia-smi -q)": lambda: f"{SEP}\n\nnvidia-smi -q\n" + "a\n" * (4 * scale),
        "dmesg + journal, distinct short lines": lambda: f"{SEP}\n\ndmesg:\n" + "".join(
            f"[{i}.0] NVRM: x{i}\n" for i in range(scale // 4)) + scan + "".join(
            f"Nov 16 11:34:34 h kernel: NVRM: y{i}\n" for i in range(scale // 4)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=1_000_000, help="lines per case (newlines: 256x)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ng-bench-br-") as tmp:
        for name, make in cases(a.scale).items():
            p = Path(tmp) / "x.log.gz"
            with gzip.open(p, "wb", compresslevel=6) as f:
                f.write(make().encode())
            tracemalloc.start()
            t0 = time.process_time()
            b = load_bug_report(p)
            dt = time.process_time() - t0
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            largest = max((len(ev.stdout) for ev in b.items.values()), default=0)
            print(f"{name:40s} {p.stat().st_size / 1e3:9.0f} KB gzip  {dt:6.1f} CPU s  peak {peak / 1e6:7.1f} MB  "
                  f"largest kept {largest / 1e6:6.1f} MB  ({peak / max(largest, 1):.1f}x)  {b.meta['status']}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
