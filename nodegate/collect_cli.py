"""``nodegate-collect``: run the probe on THIS node and write its bundle (for Slurm/Kubernetes fan-out).

An existing scheduler runs one copy per node (``srun -N 512 --ntasks-per-node=1 nodegate-collect
--out /shared/run42``, or a Kubernetes Job/DaemonSet), every copy writes ``<out>/<node>/``, and one
``pytest --replay <out>`` renders the fleet's report. The evidence and its evaluation are the same
as an SSH run's (same probe, same bundle format).

``--missing REASON`` (run by the job on a node that DID run, for a node that did not) writes a
bundle without evidence, status ``missing``: every check of that node comes out ERROR naming the
reason, as an unreachable node of an SSH run does, instead of the node silently missing from the
report. An existing bundle of that node is left alone.

Exit codes: 0 bundle written (whatever the node's state), 2 usage error, 3 probe could not run
(the bundle is written and names the error), 4 the bundle could not be written (``--out`` unusable).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

import yaml

from . import yamlio
from .bundle import Bundle, now_iso, safe_node_dirname
from .probe import PROBE_VERSION
from .run import GatherOptions, NodeJob, gather_node

EXIT_OK, EXIT_USAGE, EXIT_PROBE, EXIT_WRITE = 0, 2, 3, 4

#: ``meta.json`` ``status`` of a bundle written by ``--missing`` (Bundle.gather_error: "missing: REASON").
MISSING_STATUS = "missing"


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="nodegate-collect", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory that receives <out>/<node>/ (shared filesystem)")
    ap.add_argument("--node", help="node name (default: $SLURMD_NODENAME, else $NODE_NAME (Kubernetes "
                                   "downward API), else the short hostname)")
    ap.add_argument("--spec", help="YAML file with this node's nodegate spec (stored in meta.json for --replay)")
    ap.add_argument("--root", help="host root to chroot into (a container with the host mounted, e.g. /host)")
    ap.add_argument("--missing", metavar="REASON",
                    help="do not probe: record that --node was not collected (no evidence, every check "
                         "ERROR with REASON); an existing bundle of the node is kept")
    ap.add_argument("--command-timeout", type=float, default=30.0)
    ap.add_argument("--probe-timeout", type=float, default=180.0)
    ap.add_argument("--gpu-source", choices=("auto", "nvml", "smi"), default="auto")
    return ap


def _load_spec(path: str | None) -> dict:
    """The ``nodegate:`` mapping of ``path`` (or the whole file when it has no such key); {} without
    a path. Raises ValueError naming the file when it cannot be read or is not a mapping."""
    if not path:
        return {}
    try:
        raw = yamlio.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ValueError(f"{path}: {e}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    spec = raw.get("nodegate", raw)
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: `nodegate:` is not a mapping")
    return spec


def missing_bundle(node: str, reason: str, spec_raw: dict) -> Bundle:
    """A bundle of ``node`` with no evidence and ``meta.status`` ``missing``: replayed, every check of
    the node is ERROR "node not gathered (missing: REASON)" (Bundle.get); the spec decides how many
    per-GPU items it has (``gpu.count``), as for an unreachable node of an SSH run."""
    t = now_iso()
    meta = {"node": node, "target": f"collect://{node}", "started_at": t, "finished_at": t,
            "probe_version": PROBE_VERSION, "spec": spec_raw, "status": MISSING_STATUS, "error": reason,
            "gather_s": 0.0}
    return Bundle(node, {}, meta)


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    node = a.node or os.environ.get("SLURMD_NODENAME") or os.environ.get("NODE_NAME") \
        or socket.gethostname().split(".")[0]
    try:
        safe_node_dirname(node)
        spec_raw = _load_spec(a.spec)
    except ValueError as e:
        print(f"nodegate-collect: {e}", file=sys.stderr)
        return EXIT_USAGE
    if a.missing is not None:
        if not a.node:  # a guess here would mark the wrong node
            print("nodegate-collect: --missing needs --node (the node that was not collected)", file=sys.stderr)
            return EXIT_USAGE
        nd = Path(a.out) / node   # a link planted there is refused by Bundle.write below
        if not nd.is_symlink() and (nd / "meta.json").exists():
            print(f"nodegate-collect: {node}: a bundle exists, not marked missing")
            return EXIT_OK
        b = missing_bundle(node, a.missing.strip() or "not collected", spec_raw)
    else:
        persistence_user = str(((spec_raw.get("persistence") or {}).get("user")) or "")
        url = f"chroot://{a.root}" if a.root else "local://"
        opts = GatherOptions(command_timeout=a.command_timeout, probe_timeout=a.probe_timeout,
                             gpu_source=a.gpu_source)
        job = NodeJob(name=node, url=url, shown_url=f"collect://{node}", spec_raw=spec_raw,
                      persistence_user=persistence_user or "nvidia-persistenced")
        b = gather_node(job, opts)
    try:
        d = b.write(Path(a.out))
    except OSError as e:  # the shared filesystem is not mounted or not writable on this node
        print(f"nodegate-collect: {node}: cannot write the bundle under {a.out}: {e}", file=sys.stderr)
        return EXIT_WRITE
    if a.missing is not None:
        print(f"nodegate-collect: {node}: marked missing ({b.meta['error']}) -> {d}")
        return EXIT_OK
    if b.gather_error:
        print(f"nodegate-collect: {node}: {b.gather_error} (bundle written to {d})", file=sys.stderr)
        return EXIT_PROBE
    print(f"nodegate-collect: {node}: {len(b.items)} evidence items -> {d}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
