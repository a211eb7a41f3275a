"""Configuration drift across the fleet: per node driver version, flavor, VBIOS, kernel, GPU
model, and (issue 19) InfoROM image, enforced power limit, MIG mode and compute mode, each compared
with the fleet's most common value (the mode). A node whose value
differs from the mode is an outlier. When the most common values tie there is no mode
(shown as "no majority") and every node with a known value of that field is marked.
Unknown values (``None``) are never outliers.
"""

from __future__ import annotations

from collections import Counter

#: (NodeInfo attribute, column title)
COLUMNS = (("driver_version", "Driver"), ("flavor", "Flavor"), ("vbios", "VBIOS"),
           ("kernel", "Kernel"), ("gpu_model", "GPU model"), ("inforom", "InfoROM"),
           ("power_limit", "Power limit"), ("mig_mode", "MIG"), ("compute_mode", "Compute mode"))


def _word(v) -> str | None:
    """A GPU fact as the drift cell shows it: None (not reported) stays unknown; NA is "N/A";
    booleans are nvidia-smi's Enabled/Disabled; watts without trailing zeros."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "Enabled" if v else "Disabled"
    if isinstance(v, float):
        return f"{v:g} W"
    return str(v).strip() or None


def gpu_config_values(info, gpus) -> None:
    """Fill ``info.inforom/power_limit/mig_mode/compute_mode`` with the distinct values of the node's
    GPUs (GpuFacts ``inforom_image``, ``power_limit_w``, ``mig_mode_current``, ``compute_mode``),
    ", "-joined; None when no GPU reports the field."""
    for attr, field in (("inforom", "inforom_image"), ("power_limit", "power_limit_w"),
                        ("mig_mode", "mig_mode_current"), ("compute_mode", "compute_mode")):
        vals = sorted({w for w in (_word(getattr(g, field, None)) for g in gpus) if w is not None})
        setattr(info, attr, ", ".join(vals)[:300] if vals else None)


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
