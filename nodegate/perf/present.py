"""An Item as the reports show it: the ``report.nodegate`` info fields, the RMA line, and the
check ids (docs/perf.md "Items"). Pure."""

from __future__ import annotations

from ..outcomes import Outcome, Result
from .rules import Item

CHECK_IDS = {"gpu": "NG-PERF-GPU", "link": "NG-PERF-LINK", "hca": "NG-PERF-HCA", "node": "NG-PERF-NODE"}
REMEDIATION = ("Re-run the test on the idle node to confirm; a GPU or link confirmed low goes to the vendor with "
               "the RMA line (serial, figure, floor, peers' median, link state); a low all-reduce with every P2P "
               "cell fine points at NVSwitch / fabric manager / topology.")


def scope_of(it: Item) -> str:
    if it.peer is not None:
        return "link"
    if it.hca is not None:
        return "hca"
    return "gpu" if it.gpu is not None else "node"


def _f(v: float | None) -> str:
    return "" if v is None else (f"{v:.2f}".rstrip("0").rstrip(".") if abs(v) < 1000 else f"{v:.0f}")


def rma_line(it: Item) -> str:
    """'GPU 3 serial X: host-to-device (copy engine, GB/s) 35.1 GB/s; floor 48; 7 peers median 55.2; ...'."""
    who = (f"GPU {it.gpu}" + (f" serial {it.serial}" if it.serial else "") if it.peer is None else
           f"link GPU {it.gpu} -> GPU {it.peer}" + (f" (GPU {it.gpu} serial {it.serial})" if it.serial else ""))
    if it.hca is not None:
        who = f"HCA {it.hca}"
    elif it.gpu is None:
        who = "node"
    parts = [f"{who}: {it.label} {_f(it.value)} {it.unit}".rstrip()]
    if it.floor is not None and it.floor.value is not None:
        parts.append(f"{'ceiling' if it.floor.ceiling else 'floor'} {_f(it.floor.value)}")
    if it.node_median is not None:
        parts.append(f"{it.node_peers} peers median {_f(it.node_median)}")
    if it.fleet_median is not None:
        parts.append(f"fleet median {_f(it.fleet_median)} of {it.fleet_n}")
    if it.baseline is not None:
        parts.append(f"baseline {_f(it.baseline)}")
    if it.validity:
        parts.append(it.validity)
    return "; ".join(parts)


def expected_text(it: Item) -> str:
    if it.metric == "integrity":
        return "the tool's own data check clean"
    if it.value is None and not it.kind:
        return "tool ran and reported no failure"
    if it.value is None:
        return "a valid measured figure"
    low = bool(it.floor and it.floor.ceiling) or (len(it.kind) > 5 and it.kind[5] in ("typical", "p99", "avg"))
    bits = [f"{'<=' if low else '>='} {_f(it.threshold)} {it.unit}" if it.threshold is not None
            else "a reference to judge against"]
    return bits[0] + " (SKU floor, 0.90x in-node peers' median, fleet, baseline: whichever apply)"


def to_result(it: Item) -> Result:
    observed = rma_line(it) if it.value is not None else it.message[:300]
    return Result(it.outcome, expected_text(it), observed, it.message,
                  details={"value": it.value, "unit": it.unit, "threshold": it.threshold, "rules": list(it.rules)})


def info_fields(it: Item) -> dict:
    """Extra fields for results.jsonl / JUnit (records.FIELDS): value, unit, threshold, rule, and the
    absolute floor that judged the item (``floor``: the SKU table's or the site's perf.floors, so the
    fleet chart draws what judged each node: issue 36 item 9)."""
    fl = it.floor.value if it.floor is not None and it.floor.value is not None else None
    return {"value": _f(it.value), "unit": it.unit, "threshold": _f(it.threshold), "rule": ",".join(it.rules),
            "scope": "gpu" if it.gpu is not None and it.peer is None else "node", "floor": _f(fl),
            "floor_source": "site" if it.floor is not None and it.floor.site and fl is not None else
                            ("table" if fl is not None else "")}


def is_failure(it: Item) -> bool:
    return it.outcome is Outcome.FAIL
