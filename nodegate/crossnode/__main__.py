"""``python -m nodegate.crossnode``: the cross-node phase on its own, without the per-node run
(``nodegate --inventory ... --crossnode FILE`` runs it with the inventory and the per-node
results: plugins/nodegate_crossnode.py).

    python -m nodegate.crossnode --nodes nodes.txt --spec crossnode.yaml --plan
    python -m nodegate.crossnode --nodes nodes.txt --spec crossnode.yaml --evidence reports/bundles \\
        --ssh-user root --ssh-key ~/.ssh/id_ed25519 --known-hosts ~/.ssh/known_hosts
    python -m nodegate.crossnode --nodes nodes.txt --spec crossnode.yaml --evidence reports/bundles --replay RUN_ID

``--ibnetdiscover FILE``: the fabric as discovered (compared with the spec's ``topology_file``);
``--ibdiagnet FILE``: an ibdiagnet log. ``--nodes``: one node a line, ``name [address] [key=value ...]`` (``gpus=8``, ``gpu=H100``,
``domain=rack3``); ``--spec``: the ``crossnode:`` section as YAML (docs/crossnode.md).
Exit status: 0 every node cleared and every cable as planned; 1 a fault was found; 2 bad input;
3 the phase could not judge everything (ERROR).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from pathlib import Path

from ..errors import SpecError
from ..outcomes import Outcome
from ..textsafe import shown
from .phase import PhaseError, PhaseNode, plan_text, replay_phase, run_phase


_KEYS = ("gpu", "gpus", "domain")


def _nodes(path: str, user: str | None, key: str | None) -> list[PhaseNode]:
    """The node list; ValueError naming ``path:line`` for a line it cannot take."""
    out = []
    for no, ln in enumerate(Path(path).read_text().splitlines(), 1):
        parts = ln.split("#", 1)[0].split()
        if not parts:
            continue
        name, rest = parts[0], parts[1:]
        addr = rest.pop(0) if rest and "=" not in rest[0] else name
        kv = dict(p.split("=", 1) for p in rest if "=" in p)
        words = [p for p in rest if "=" not in p]
        if words:
            raise ValueError(f"{path}:{no}: node {name!r}: {words[0]!r}: one address, then key=value only")
        keys = [k for k in kv if k not in _KEYS]
        if keys:
            raise ValueError(f"{path}:{no}: node {name!r}: unknown key {keys[0]!r} "
                             f"(known: {', '.join(k + '=' for k in _KEYS)})")
        if not kv.get("gpus", "0").isdigit():
            raise ValueError(f"{path}:{no}: node {name!r}: gpus={kv['gpus']!r} is not a number")
        q = f"?ssh_identity_file={key}" if key else ""
        out.append(PhaseNode(name, addr, f"paramiko://{user + '@' if user else ''}{addr}{q}", kv.get("gpu", ""),
                             int(kv.get("gpus", "0") or 0), kv.get("domain")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nodegate.crossnode", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", required=True)
    ap.add_argument("--spec", required=True, help="YAML: the crossnode: section")
    ap.add_argument("--evidence", default="reports/bundles")
    ap.add_argument("--plan", action="store_true", help="print the jobs and rounds; launch nothing")
    ap.add_argument("--replay", metavar="RUN_ID", help="re-judge a recorded run; launch nothing")
    ap.add_argument("--run-id", default="")
    ap.add_argument("--ssh-user")
    ap.add_argument("--ssh-key")
    ap.add_argument("--known-hosts")
    ap.add_argument("--ibnetdiscover", metavar="FILE",
                    help="the fabric as discovered: ibnetdiscover's output from any node (compared with "
                         "topology_file; names each HCA's switch port)")
    ap.add_argument("--ibdiagnet", metavar="FILE", help="an ibdiagnet log (its link errors become cable rows)")
    ap.add_argument("--json", action="store_true", help="print result.json's rows")
    a = ap.parse_args(argv)
    from .inputs import load_spec, phase_config
    try:
        spec = load_spec(a.spec)
        nodes = _nodes(a.nodes, a.ssh_user, a.ssh_key)
        cfg = phase_config(spec, a.replay or a.run_id, ibnetdiscover=a.ibnetdiscover, ibdiagnet=a.ibdiagnet)
    except (OSError, UnicodeDecodeError, ValueError, SpecError, PhaseError) as e:
        print(f"nodegate-crossnode: bad input: {shown(str(e))[:2000]}", file=sys.stderr)
        return 2
    if a.plan:
        sys.stdout.write(plan_text(nodes, cfg))
        return 0
    try:
        if a.replay:
            res = replay_phase(nodes, cfg, a.evidence)
        else:
            from ..transport import HostKeyPolicy
            from .launchers import MpirunLauncher, SrunLauncher, SshPairLauncher
            stop = threading.Event()
            signal.signal(signal.SIGINT, lambda *_: stop.set())
            if spec.launcher == "srun":
                launcher = SrunLauncher(mpi=spec.mpi, partition=spec.partition)
                pair = None
            elif spec.launcher == "mpirun":
                launcher = MpirunLauncher(ssh_user=a.ssh_user, identity_file=a.ssh_key, known_hosts=a.known_hosts,
                                          extra_args=spec.mpirun_args)
                pair = SshPairLauncher({n.name: n.target for n in nodes},
                                       HostKeyPolicy(files=[Path(a.known_hosts)] if a.known_hosts else []))
            else:
                print("nodegate-crossnode: launcher mpijob: write the manifests with nodegate.crossnode.k8s; "
                      "nodegate does not apply them", file=sys.stderr)
                return 2
            res = run_phase(nodes, cfg, launcher=launcher, pair_launcher=pair, evidence_dir=a.evidence, stop=stop)
    except PhaseError as e:
        print(f"nodegate-crossnode: bad input: {shown(str(e))[:2000]}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(res.to_dict(), indent=1))
    for err in res.errors:
        print(f"ERROR {shown(err)}")
    for n in res.nodes:
        print(f"{n.outcome.value.upper():5} {shown(n.node, newlines=False)}: {n.state.value} ({shown(n.why)})")
    for f in res.faults:
        print(f"FAULT {f.fault_id} {f.kind} {shown(f.end_a)} <-> {shown(f.end_b)}: {shown(f.why)}")
    for c in res.cables:
        if c.verdict is not Outcome.PASS:
            print(f"CABLE {c.verdict.value.upper()} {shown(c.node_end)} <-> {shown(c.switch_end)}: {c.problem} "
                  f"({shown(c.observed)})")
    print(f"evidence: {res.evidence}")
    return {Outcome.PASS: 0, Outcome.FAIL: 1}.get(res.outcome, 3)


if __name__ == "__main__":
    sys.exit(main())
