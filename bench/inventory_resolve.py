"""Inventory resolution through ansible-core at fleet sizes (docs/inventory.md, "Cost").

``python bench/inventory_resolve.py [N ...]`` writes a YAML inventory of N hosts in 64-host
groups (a group var and the all group's nodegate spec, as sites write them), then times
``load_inventory`` (ansible-core parses) and ``select(None)`` (every host's variables, templating,
connection plugin options and the merged spec). Prints one JSON line per size. It reports; it
does not gate.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nodegate.inventory import load_inventory  # noqa: E402


def inventory(n: int) -> dict:
    names = [f"gpu{i:05d}" for i in range(n)]
    racks = {f"rack{r}": {"vars": {"nodegate": {"pcie": {"gen": 5}}},
                          "hosts": {h: {"ansible_host": f"10.{i // 250}.{i % 250}.1"}
                                    for i, h in enumerate(names) if i // 64 == r}}
             for r in range((n + 63) // 64)}
    return {"all": {"vars": {"ansible_user": "ops", "nodegate": {"gpu": {"count": 8}}}, "children": racks}}


def main(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as d:
        for n in sizes:
            p = Path(d) / f"hosts-{n}.yml"
            p.write_text(yaml.safe_dump(inventory(n)))
            t0 = time.perf_counter()
            inv = load_inventory(p)
            t1 = time.perf_counter()
            hosts = inv.select(None)
            t2 = time.perf_counter()
            print(json.dumps({"hosts": len(hosts), "parse_s": round(t1 - t0, 2), "resolve_s": round(t2 - t1, 2),
                              "ms_per_host": round((t2 - t1) / len(hosts) * 1000, 2)}))


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [256, 4096])
