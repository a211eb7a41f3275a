"""The engine's floor (issue 40 item 5): what judging a node costs without pytest.

For each node bundle of a fleet directory: load the bundle, make its facts, and have the pure
engine (nodegate.engine.evaluate) judge every check of the catalog on every GPU slot, exactly the
(check, GPU) pairs a replay's items select, with the bundle's own spec (as ``--replay`` without
``--spec`` judges it). The replay bench (bench/scale.py) divides its wall time a node by this:
the ratio is what pytest, the session and the reports add on top of the judging itself.

    python bench/engine_floor.py DIR [--limit N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nodegate.bundle import Bundle  # noqa: E402
from nodegate.checks import gpu_slots, load_all  # noqa: E402
from nodegate.collect import NodeFacts  # noqa: E402
from nodegate.engine import NodeContext, evaluate  # noqa: E402
from nodegate.spec import load_spec  # noqa: E402


def judge_node(d: Path) -> int:
    """Every (check, GPU) pair of the node at ``d`` through the engine; the number of results."""
    b = Bundle.load(d)
    facts = NodeFacts(b)
    spec = load_spec(b.meta.get("spec") or {}, f"{d}/meta.json")
    defs = load_all()
    slots = gpu_slots(facts, spec)
    selection = [(cid, s) for cid, c in defs.items() for s in ([None] if c.scope == "node" else slots)]
    ctx = NodeContext(node=b.node, gather_error=b.gather_error, bundle_dir=str(d), spec_source="bundle meta.json")
    return len(evaluate(facts, spec, selection, ctx))


def engine_floor(fleet: Path, limit: int | None = None) -> dict:
    """``{"nodes", "results", "wall_s", "cpu_s", "ms_per_node"}`` over the node directories of
    ``fleet`` (the first ``limit`` of them, in name order)."""
    dirs = sorted(p for p in Path(fleet).iterdir() if p.is_dir() and (p / "meta.json").is_file())
    if limit:
        dirs = dirs[:limit]
    load_all()   # the catalog's import is start-up, not a node's cost (a replay pays it once too)
    w0, c0 = time.perf_counter(), time.process_time()
    results = sum(judge_node(d) for d in dirs)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    return {"nodes": len(dirs), "results": results, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "ms_per_node": round(1000 * wall / max(1, len(dirs)), 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fleet", type=Path)
    ap.add_argument("--limit", type=int, default=None)
    a = ap.parse_args(argv)
    print(engine_floor(a.fleet, a.limit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
