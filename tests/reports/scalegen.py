"""Synthetic fleets of any size for the report writers (JUnit, HTML, RMA): the records an 8-GPU
node's 120 items give (16 node checks, 13 GPU checks; names from nodegate's registry), so the
writers are tested at 4,096 nodes without running 490,000 pytest items."""

from __future__ import annotations

import json
from pathlib import Path

from nodegate import checks as ng_checks
from nodegate.reports.records import NodeInfo, Record
from nodegate.reports.results import LINE_FIELDS

MODULE = {"driver": "test_driver", "fabricmanager": "test_driver", "persistenced": "test_persistence",
          "persistence": "test_persistence", "required": "test_modules", "peermem": "test_modules",
          "module": "test_modules", "dkms": "test_dkms", "gsp": "test_gsp", "pcie": "test_pcie",
          "clocks": "test_clocks", "ecc": "test_memory", "row": "test_memory", "retired": "test_memory",
          "gpu": "test_inventory", "kernel": "test_kernel_log"}


def _module(name: str) -> str:
    return MODULE.get(name.split("_", 1)[0], "test_misc")


def node_records(node: str, *, gpus: int = 8, fail: set[str] = frozenset(), error: bool = False,
                 skip_check: str = "NG-MEM-002") -> list[Record]:
    """One node's records: every check passes, ``skip_check`` skips on every GPU, the check ids in
    ``fail`` FAIL on gpu3 (GPU checks) or the node (node checks); ``error``: every item ERRORs
    (a driver/library mismatch)."""
    out = []
    for c in ng_checks.load_all().values():
        targets = [None] if c.scope == "node" else list(range(gpus))
        for g in targets:
            gid = "" if g is None else str(g)
            nodeid = f"suites/{_module(c.name)}.py::test_{c.name}[{node}{'' if g is None else f'-gpu{g}'}]"
            r = Record(nodeid=nodeid, node=node, check_id=c.id, check_name=c.name, title=c.title, severity=c.severity,
                       scope=c.scope, gpu_index=gid, pci_bus_id="" if g is None else f"0000:{0x19 + 0x11 * g:02x}:00.0",
                       gpu_serial="" if g is None else f"16524200{g:05d}", has_nodegate=True,
                       expected="as specified", observed="as specified", driver_version="580.159.04")
            if error:
                r.outcome, r.message, r.action = "error", "nvidia-smi failed (driver_library_mismatch): Failed to " \
                    "initialize NVML: Driver/library version mismatch", "obtain evidence"
                r.remediation = "nvidia-smi cannot talk to the loaded driver"
            elif c.id in fail and (g is None or g == 3):
                r.outcome, r.message, r.observed, r.action = "fail", f"{c.id} failed", "bad", "reseat"
                r.remediation = c.remediation
            elif c.id == skip_check and g is not None:
                r.outcome, r.message = "skip", "memory.repair=auto: retired pages do not apply"
            out.append(r)
    return out


def info(node: str, status: str) -> NodeInfo:
    return NodeInfo(node=node, status=status, system_vendor="Supermicro", system_model="SYS-821GE-TNHR",
                    system_serial="S1", driver_version="580.159.04")


def write_results(path: Path, nodes: int, *, failing_every: int = 0, erroring_every: int = 0) -> list[str]:
    """results.jsonl of ``nodes`` nodes (``n00000``...): every ``failing_every``-th node FAILs NG-PCIE-002
    on gpu3, every ``erroring_every``-th ERRORs throughout. Returns the node names."""
    names = [f"n{i:05d}" for i in range(nodes)]
    with open(path, "w", encoding="ascii") as fh:
        for i, n in enumerate(names):
            fail = {"NG-PCIE-002"} if failing_every and i % failing_every == 1 else set()
            err = bool(erroring_every and i % erroring_every == 2)
            for r in node_records(n, fail=fail, error=err):
                d = {f: getattr(r, f) for f in LINE_FIELDS}
                d["gpu_index"] = int(r.gpu_index) if r.gpu_index else None
                d["xids"] = []
                fh.write(json.dumps(d, separators=(",", ":")) + "\n")
    return names
