"""What a baseline comparison produces: Change, Regression, GpuRef, NodeComparison.

Pure data; no I/O. Values (``before``/``after``) are JSON-ready (str, int, bool, None, lists,
dicts) so changes.json is a plain dump; ``N/A`` stands for a value the driver reports as
unsupported (facts.NA).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Regression kinds: one pytest item per node (NODE_KINDS) or per node and baseline GPU
#: (GPU_KINDS). Test function = ``test_regression_<kind>``; check id = ``NG-REG-<KIND>``.
NODE_KINDS = ("node_presence", "checks", "xid", "flavor", "persistence", "site")
GPU_KINDS = ("pcie", "gpu_missing", "ecc", "remapped_rows")
KINDS = NODE_KINDS + GPU_KINDS

#: (title, severity, remediation) per kind, for reports (severity as in nodegate.checks).
KIND_INFO: dict[str, tuple[str, str, str]] = {
    "node_presence": ("Node present in this run (in the baseline and the inventory)", "critical",
                      "Find out why the node was not gathered/replayed (down, removed, renamed); gather it or "
                      "remove it from the inventory."),
    "checks": ("No check that passed on the baseline fails now", "major",
               "Fix what the failing check names; the upgrade broke a state that was accepted before."),
    "xid": ("No new critical Xid / driver failure in the kernel log", "critical",
            "Drain the node and act on the Xid's action (nodegate/data/xid.yaml); compare with the baseline log."),
    "flavor": ("Kernel module flavor unchanged unless the spec asks for it", "critical",
               "Install the flavor the spec names (driver.flavor) and reboot, or declare the switch "
               "(baseline.planned: [flavor] / driver.flavor)."),
    "persistence": ("Persistence configuration unchanged (unit ExecStart, user, drop-ins, persistence mode)",
                    "major",
                    "Restore the drop-in override (ExecStart= reset, then one command with --user) that the upgrade "
                    "replaced, systemctl daemon-reload and restart nvidia-persistenced; or declare it "
                    "(baseline.planned: [persistence])."),
    "site": ("No site check that passed on the baseline fails now", "major",
             "Fix what the failing site check names (its own item in this run); the upgrade broke a state the "
             "site's own checks accepted before."),
    "pcie": ("PCIe link not lower than on the baseline", "major",
             "Reseat the GPU / riser, check slot and BIOS link settings; compare with the baseline bundle."),
    "gpu_missing": ("Every baseline GPU still present (by UUID, serial, bus id)", "critical",
                    "Drain and reboot; a GPU that stays missing: reseat, check power, RMA."),
    "ecc": ("ECC counters not grown beyond baseline.allowed_ecc_growth", "critical",
            "Drain the node and reset the GPU; run field diagnostics; recurring uncorrectable errors: RMA."),
    "remapped_rows": ("Remapped rows / retired pages not increased", "critical",
                      "Drain and reset the GPU; run field diagnostics; a GPU that keeps remapping rows: RMA."),
}


def check_id(kind: str) -> str:
    return "NG-REG-" + kind.upper().replace("_", "-")


@dataclass(frozen=True)
class GpuRef:
    """A GPU of the comparison, named by its baseline identity. ``index`` is the baseline
    index (the item label ``gpu<index>``, stable while GPUs vanish and indexes shift);
    ``after_index``/``after_bus_id`` where it is seen now; ``matched_by`` uuid|serial|bus_id
    (empty when missing now)."""

    index: int
    pci_bus_id: str | None = None
    serial: str | None = None
    uuid: str | None = None
    after_index: int | None = None
    after_bus_id: str | None = None
    matched_by: str = ""

    @property
    def label(self) -> str:
        return f"gpu{self.index}"

    def describe(self) -> str:
        """``GPU 3 (0000:19:00.0, serial 1650...)`` (baseline identity; current index when it moved)."""
        s = f"GPU {self.index} ({self.pci_bus_id or 'bus id unknown'}"
        if self.serial:
            s += f", serial {self.serial}"
        s += ")"
        if self.after_index is not None and self.after_index != self.index:
            s += f" [now GPU {self.after_index}]"
        return s

    def to_json(self) -> dict:
        return asdict(self) | {"label": self.label}


@dataclass
class Change:
    """A difference between baseline and now that is not (by itself) a regression.
    ``planned``: True when the spec asked for it (driver.version, driver.flavor,
    baseline.planned), False when not, None when planning does not apply (e.g. counters)."""

    kind: str                    # driver | kernel | flavor | vbios | gpu_serial | gpu_new | gpu_moved | link | ecc
    #                              | remapped_rows | retired_pages | persistence | node | xid
    field: str
    before: Any
    after: Any
    gpu: GpuRef | None = None
    planned: bool | None = None
    note: str = ""

    def to_json(self) -> dict:
        return {"kind": self.kind, "field": self.field, "gpu": self.gpu.to_json() if self.gpu else None,
                "before": self.before, "after": self.after, "planned": self.planned, "note": self.note}


@dataclass
class Regression:
    """A change that makes the node worse than its accepted state: FAIL of the item
    ``test_regression_<kind>[<node>]`` / ``[<node>-gpu<i>]``."""

    kind: str
    field: str
    before: Any
    after: Any
    message: str
    gpu: GpuRef | None = None

    def item_label(self, node: str) -> str:
        return f"{node}-{self.gpu.label}" if self.gpu and self.kind in GPU_KINDS else node

    def to_json(self, node: str) -> dict:
        return {"kind": self.kind, "check_id": check_id(self.kind),
                "item": f"test_regression_{self.kind}[{self.item_label(node)}]", "field": self.field,
                "gpu": self.gpu.to_json() if self.gpu else None, "before": self.before, "after": self.after,
                "message": self.message}


@dataclass
class Row:
    """One line of the per-node change table: status same | change | planned | regression | unknown."""

    field: str
    gpu: str
    before: str
    after: str
    status: str
    kind: str = ""


@dataclass
class NodeComparison:
    """Everything compared for one node.

    presence: ``both`` | ``new`` (only in this run) | ``missing`` (baseline only, in the
    inventory: node_presence FAILs) | ``gone`` (baseline only, not in the inventory: change).
    ``errors`` maps (kind, gpu label or None) to why that item could not be evaluated;
    ``notes`` the same for what was not compared on both sides (shown, not failing);
    ``gpus`` the baseline GPUs (per-GPU items), ``new_gpus`` GPUs only seen now.
    """

    node: str
    presence: str = "both"
    changes: list[Change] = field(default_factory=list)
    regressions: list[Regression] = field(default_factory=list)
    errors: dict[tuple[str, str | None], str] = field(default_factory=dict)
    notes: dict[tuple[str, str | None], list[str]] = field(default_factory=dict)
    gpus: list[GpuRef] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    checked: dict[tuple[str, str | None], str] = field(default_factory=dict)   # what each item compared

    def regressions_for(self, kind: str, label: str | None) -> list[Regression]:
        """Regressions of one item: node kinds take every regression of the kind (some name a
        GPU, e.g. persistence mode), GPU kinds those of the GPU ``label``."""
        if kind in NODE_KINDS:
            return [r for r in self.regressions if r.kind == kind]
        return [r for r in self.regressions if r.kind == kind and r.gpu is not None and r.gpu.label == label]

    def error(self, kind: str, label: str | None, reason: str) -> None:
        self.errors.setdefault((kind, label), reason)

    def note(self, kind: str, label: str | None, text: str) -> None:
        self.notes.setdefault((kind, label), []).append(text)

    def to_json(self) -> dict:
        return {"presence": self.presence,
                "changes": [c.to_json() for c in self.changes],
                "regressions": [r.to_json(self.node) for r in self.regressions],
                "errors": [{"kind": k, "gpu": g, "reason": v} for (k, g), v in self.errors.items()],
                "gpus": [g.to_json() for g in self.gpus]}
