"""``nodegate-collect``: run the probe on THIS node and write its bundle (for Slurm/Kubernetes fan-out).

An existing scheduler runs one copy per node (``srun -N 512 --ntasks-per-node=1 nodegate-collect
--out /shared/run42``, or a Kubernetes Job/DaemonSet), every copy writes ``<out>/<node>/``, and one
``pytest --replay <out>`` renders the fleet's report. The evidence and its evaluation are the same
as an SSH run's (same probe, same bundle format).

Exit codes: 0 bundle written (whatever the node's state), 2 usage error, 3 probe could not run.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from pathlib import Path

import yaml

from . import yamlio
from .bundle import safe_node_dirname
from .run import GatherOptions, NodeJob, gather_node


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nodegate-collect", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="directory that receives <out>/<node>/ (shared filesystem)")
    ap.add_argument("--node", help="node name (default: $SLURMD_NODENAME, else $NODE_NAME (Kubernetes "
                                   "downward API), else the short hostname)")
    ap.add_argument("--spec", help="YAML file with this node's nodegate spec (stored in meta.json for --replay)")
    ap.add_argument("--root", help="host root to chroot into (a container with the host mounted, e.g. /host)")
    ap.add_argument("--command-timeout", type=float, default=30.0)
    ap.add_argument("--probe-timeout", type=float, default=180.0)
    ap.add_argument("--gpu-source", choices=("auto", "nvml", "smi"), default="auto")
    a = ap.parse_args(argv)

    node = a.node or os.environ.get("SLURMD_NODENAME") or os.environ.get("NODE_NAME") \
        or socket.gethostname().split(".")[0]
    try:
        safe_node_dirname(node)
    except ValueError as e:
        print(f"nodegate-collect: {e}", file=sys.stderr)
        return 2
    spec_raw: dict = {}
    persistence_user = ""
    if a.spec:
        try:
            spec_raw = yamlio.safe_load(Path(a.spec).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            print(f"nodegate-collect: {a.spec}: {e}", file=sys.stderr)
            return 2
        if not isinstance(spec_raw, dict):
            print(f"nodegate-collect: {a.spec}: expected a mapping", file=sys.stderr)
            return 2
        spec_raw = spec_raw.get("nodegate", spec_raw)
        persistence_user = str(((spec_raw.get("persistence") or {}).get("user")) or "")
    url = f"chroot://{a.root}" if a.root else "local://"
    opts = GatherOptions(command_timeout=a.command_timeout, probe_timeout=a.probe_timeout, gpu_source=a.gpu_source)
    job = NodeJob(name=node, url=url, shown_url=f"collect://{node}", spec_raw=spec_raw,
                  persistence_user=persistence_user or "nvidia-persistenced")
    b = gather_node(job, opts)
    d = b.write(Path(a.out))
    if b.gather_error:
        print(f"nodegate-collect: {node}: {b.gather_error} (bundle written to {d})", file=sys.stderr)
        return 3
    print(f"nodegate-collect: {node}: {len(b.items)} evidence items -> {d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
