"""Configuration drift across the fleet: per node driver version, flavor, VBIOS, kernel and
GPU model, each compared with the fleet's most common value (the mode). A node whose value
differs from the mode is an outlier. When the most common values tie there is no mode
(shown as "no majority") and every node with a known value of that field is marked.
Unknown values (``None``) are never outliers.
"""

from __future__ import annotations

from collections import Counter

#: (NodeInfo attribute, column title)
COLUMNS = (("driver_version", "Driver"), ("flavor", "Flavor"), ("vbios", "VBIOS"),
           ("kernel", "Kernel"), ("gpu_model", "GPU model"))


def _counts(infos, attr: str) -> Counter:
    return Counter(v for v in (getattr(i, attr) for i in infos) if v is not None)


def fleet_modes(infos) -> dict[str, str | None]:
    """attribute -> most common known value; None when unknown everywhere or tied."""
    modes: dict[str, str | None] = {}
    for attr, _ in COLUMNS:
        top = _counts(infos, attr).most_common(2)
        modes[attr] = top[0][0] if top and (len(top) == 1 or top[0][1] > top[1][1]) else None
    return modes


def drifting(infos) -> set[str]:
    """Attributes with more than one known value across the fleet."""
    return {a for a, _ in COLUMNS if len(_counts(infos, a)) > 1}


def outliers(info, modes: dict[str, str | None], drift: set[str]) -> set[str]:
    """Attributes of ``info`` to highlight: its known value differs from the mode, or the
    attribute drifts with no majority."""
    out = set()
    for a in drift:
        v = getattr(info, a)
        if v is not None and (modes.get(a) is None or v != modes[a]):
            out.add(a)
    return out
