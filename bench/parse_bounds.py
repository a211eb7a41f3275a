"""Parse-time figures behind issue 31 item 3 (``python bench/parse_bounds.py [--chars N]``).

Every public parser (tests/hostile/test_parser_properties.py's enumeration) is fed the worst-case
lines of tests/hostile/test_parse_bounds.py at the full per-item cap (8 MiB, one line) and the CPU
time of the slowest case per parser is printed, then the slowest overall. The test asserts 5 s
(64 KiB lines) and 30 s (8 MiB); measured on the 2-core development machine (2026-12-02, Python
3.11, ``--prefixes 1``: the six fills at 8 MiB): the slowest parser took 2.8 CPU s
(persistenced.parse_daemon_argv: shlex, pure Python, linear), every other one 0.6 s or less. Before the rewrite: the systemctl show argv
pattern took 1 min 57 s on 100 KB (quadratic: hours at 8 MiB), as did the ibstat key/value, nvlink
-e counter and --query-gpu unit-suffix patterns.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hostile.test_parse_bounds import PREFIXES, PRELUDE, _fills  # noqa: E402
from tests.hostile.test_parser_properties import FUNCS, _allowed, _call  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=8 * 1024 * 1024, help="length of each hostile line")
    ap.add_argument("--prefixes", type=int, default=len(PREFIXES), help="how many of the prefixes to try")
    a = ap.parse_args()
    slowest = (0.0, "")
    for name, fn in sorted(FUNCS.items()):
        worst = (0.0, "")
        for prefix in PREFIXES[:a.prefixes]:
            for fill in _fills(a.chars):
                t0 = time.process_time()
                try:
                    _call(name, fn, PRELUDE.get(name, "") + prefix + fill + "\n")
                except _allowed(name):
                    pass
                dt = time.process_time() - t0
                if dt > worst[0]:
                    worst = (dt, f"{prefix!r} + {fill[:8]!r}...")
        print(f"{name:48s} {worst[0]:7.2f} CPU s  ({worst[1]})", flush=True)
        if worst[0] > slowest[0]:
            slowest = (worst[0], name)
    print(f"slowest: {slowest[1]} {slowest[0]:.2f} CPU s on {a.chars}-character lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
