"""Several rows for one figure are a distribution, not a choice of the best (issue 36 item 4).

nccl-tests run with ``-N`` (run_cycles: the whole sweep again, nccl-tests src/common.cu TimeTest)
prints each size once per cycle; a perftest loopback log holds the server's and the client's row
of one size; gpu_burn reports each GPU's rate again and again; dcgmproftester prints one figure
per second. Taking the best row lets a tenfold spread pass. ``stable(values)`` gives:

- one row: that figure;
- rows within ``MAX_SPREAD`` (25 %: (max - min) / median) of each other: their median, the spread
  reported;
- two rows further apart: a contradiction (two measurements of one thing disagree) -> ``unstable``
  naming both values (issue 37 item 3: "two blocks of one size disagreeing");
- three or more rows further apart: split at the largest gap between neighbours; if both sides hold
  at least two rows the run is bimodal -> ``unstable``; otherwise the lone outlier is left out and
  the median of all rows is the figure (the median is not moved by one row, the max is), unless
  the rest is itself scattered beyond ``MAX_SPREAD`` -> ``unstable``.

Returns ``Stable(value, samples, unstable, note)``. Pure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: (max - min) / median above which rows of one figure are no longer one measurement.
MAX_SPREAD = 0.25


@dataclass(frozen=True)
class Stable:
    value: float | None
    samples: tuple = ()
    unstable: str = ""
    note: str = ""


def _f(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1e5 else f"{v:.4g}"


def stable(values, what: str = "rows") -> Stable:
    vals = [float(v) for v in values]
    if not vals:
        return Stable(None)
    if len(vals) == 1:
        return Stable(vals[0], tuple(vals))
    med = statistics.median(vals)
    lo, hi = min(vals), max(vals)
    spread = (hi - lo) / med if med > 0 else (0.0 if hi == lo else float("inf"))
    samples = tuple(vals)
    if spread <= MAX_SPREAD:
        note = f"median of {len(vals)} {what} {_f(lo)}-{_f(hi)} (spread {spread * 100:.1f}%)" if hi != lo else ""
        return Stable(med, samples, "", note)
    if len(vals) == 2:
        return Stable(med, samples, f"two {what} of one measurement disagree: {_f(vals[0])} and {_f(vals[1])}")
    s = sorted(vals)
    gaps = [(s[i + 1] - s[i], i) for i in range(len(s) - 1)]
    _, cut = max(gaps)
    low, high = s[:cut + 1], s[cut + 1:]
    if len(low) >= 2 and len(high) >= 2:
        return Stable(med, samples, f"bimodal {what}: {len(low)} around {_f(statistics.median(low))} and "
                                    f"{len(high)} around {_f(statistics.median(high))}")
    out, rest = (low[0], high) if len(low) == 1 else (high[0], low)
    rmed = statistics.median(rest)
    if rmed <= 0 or (rest[-1] - rest[0]) / rmed > MAX_SPREAD:
        return Stable(med, samples, f"scattered {what}: {len(vals)} from {_f(lo)} to {_f(hi)}, no stable value")
    return Stable(med, samples, "", f"median of {len(vals)} {what} (one outlier {_f(out)} left out of the spread)")
