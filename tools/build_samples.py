"""Build the committed sample bundles of the simulated fleet.

    .venv/bin/python -m tools.build_samples [--out inventories/samples/fleet] [--check]

Builds every profile of tools/fleet/profiles as a node root (needs root, busybox-static, dash),
runs the real probe in each root (``chroot <root> /bin/sh -s``, command timeout 5 s, client
deadline 45 s), and writes ``<out>/<node>/`` (nodegate.bundle.Bundle) plus ``<out>/expected.yaml``
({test id: outcome} from each profile's ``expect:``) and ``<out>/inventory.yml`` (the nodes' specs,
for --replay). ``--check`` compares a fresh build with ``<out>`` instead of writing (exit 1 on a
difference); time fields of meta.json are ignored.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

# `python tools/build_samples.py` (make samples) runs with tools/ first on sys.path, not the repo root
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.fleet import Fleet, load_profiles  # noqa: E402
from tools.fleet.local import VOLATILE_META, probe_chroot  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "inventories" / "samples" / "fleet"


def build(out: Path, *, workers: int = 4) -> None:
    """Write bundles, expected.yaml and inventory.yml for every profile under ``out``."""
    profiles = load_profiles()
    fleet = Fleet(profiles.values(), run_id="samples-" + next(tempfile._get_candidate_names()))
    try:
        fleet.build()
        out.mkdir(parents=True, exist_ok=True)
        for d in out.iterdir():
            if d.is_dir():
                shutil.rmtree(d)

        def one(name: str):
            prof = profiles[name]
            b = probe_chroot(name, fleet.root(name), prof.spec, command_timeout=5, deadline_s=45.0)
            b.write(out)

        with ThreadPoolExecutor(max_workers=workers) as ex:
            list(ex.map(one, sorted(profiles)))
        exp = fleet.expected()
        (out / "expected.yaml").write_text(yaml.safe_dump(exp, sort_keys=True))
        inv = {"all": {"hosts": {n: {"nodegate": p.spec} for n, p in sorted(profiles.items())}}}
        (out / "inventory.yml").write_text(yaml.safe_dump(inv, sort_keys=False))
    finally:
        fleet.stop()


#: A command killed by the node's `timeout -k` exits 137 (SIGKILL) or, seen under heavy load with
#: busybox's timeout, 124: both mean "timed out on the node"; compared as equal.
_KILLED_RCS = {124: 137}


def snapshot(d: Path) -> dict[str, bytes]:
    """Every file under ``d`` by relative path; meta.json without its time fields."""
    snap = {}
    for f in sorted(p for p in d.rglob("*") if p.is_file()):
        data = f.read_bytes()
        if f.name == "meta.json":
            meta = json.loads(data)
            for k in VOLATILE_META:
                meta.pop(k, None)
            for it in (meta.get("items") or {}).values():
                it["rc"] = _KILLED_RCS.get(it.get("rc"), it.get("rc"))
            data = json.dumps(meta, sort_keys=True).encode()
        elif f.name.endswith(".rc") and data.strip().isdigit():
            rc = int(data)
            data = f"{_KILLED_RCS.get(rc, rc)}\n".encode()
        snap[str(f.relative_to(d))] = data
    return snap


def diff(a: Path, b: Path) -> list[str]:
    sa, sb = snapshot(a), snapshot(b)
    out = [f"only in {a}: {k}" for k in sorted(set(sa) - set(sb))]
    out += [f"only in {b}: {k}" for k in sorted(set(sb) - set(sa))]
    out += [f"differs: {k}" for k in sorted(set(sa) & set(sb)) if sa[k] != sb[k]]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--check", action="store_true", help="compare a fresh build with --out; write nothing")
    a = ap.parse_args(argv)
    if not a.check:
        build(a.out)
        print(f"wrote {a.out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        problems = diff(a.out, Path(tmp))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
