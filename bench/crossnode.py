"""Cross-node phase benchmarks (issue 38): not timed tests, figures.

1. ``plan``: planning the localisation of 4,096 nodes (the no-fault plan and a 20-fault run of
   the simulation), seconds and jobs.
2. ``localise``: jobs and rounds to localise d = 1, 5, 20 faulty nodes among 1,024: ours (node
   stages), against all pairs (ClusterKit FULL, n(n-1)/2) and random pairing with a second pass
   (Google cluster-health-scanner); the mean over ``--seeds`` fault placements.
3. ``overhead`` (``--fleet``, root + openssh-server + busybox-static + openmpi-bin/libopenmpi-dev):
   a real run (mpirun over SSH into an MpiFleet) whose stand-ins last ``--job-seconds`` each:
   nodegate's time beyond the jobs' own (wall minus the sum over rounds of the longest job),
   goal under 5 %.

    .venv/bin/python bench/crossnode.py [--fleet] [--nodes 8] [--job-seconds 10] [--seeds 5]

Prints a table and writes reports/bench-crossnode.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from nodegate.crossnode.phase import PhaseConfig, PhaseNode, plan_text  # noqa: E402
from nodegate.crossnode.simulate import all_pairs_cost, random_pairing, run, spread_faults  # noqa: E402
from nodegate.crossnode.spec import CrossnodeSpec  # noqa: E402


def bench_plan() -> dict:
    nodes = [f"n{i:04d}" for i in range(4096)]
    t0 = time.perf_counter()
    text = plan_text([PhaseNode(n) for n in nodes], PhaseConfig(CrossnodeSpec()))
    plan_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = run(nodes, spread_faults(nodes, 20, seed=1), links=True)
    sim_s = time.perf_counter() - t0
    return {"nodes": 4096, "plan_s": round(plan_s, 3), "plan_lines": text.count("\n"),
            "sim20_s": round(sim_s, 3), "sim20_node_jobs": out.node_jobs, "sim20_node_rounds": out.node_rounds,
            "sim20_link_jobs": out.link_jobs, "sim20_link_rounds": out.link_rounds}


def bench_localise(seeds: int) -> list[dict]:
    nodes = [f"n{i:04d}" for i in range(1024)]
    rows = []
    for d in (1, 5, 20):
        ours, rnd = [], []
        for s in range(seeds):
            f = spread_faults(nodes, d, seed=100 * d + s)
            o = run(nodes, f, links=False)
            assert o.faulty() == set(f.nodes)
            ours.append((o.node_jobs, o.node_rounds))
            r = random_pairing(nodes, f, seed=s)
            rnd.append((r.jobs, r.rounds))
        ap = all_pairs_cost(1024)
        rows.append({"d": d, "ours_jobs": statistics.mean(j for j, _ in ours),
                     "ours_rounds": statistics.mean(r for _, r in ours),
                     "random_jobs": statistics.mean(j for j, _ in rnd), "random_rounds": statistics.mean(r for _, r in rnd),
                     "all_pairs_jobs": ap[0], "all_pairs_rounds": ap[1]})
    return rows


def bench_overhead(n: int, job_seconds: float) -> dict:
    import shutil
    import tempfile
    from nodegate.crossnode.launchers import MpirunLauncher
    from nodegate.crossnode.phase import run_phase
    from tools.mpi import MpiFleet
    from tests.crossnode.helpers import fleet_nodes
    from tests.crossnode.test_fleet_mpirun import MCA
    fleet = MpiFleet([f"b{i:02d}" for i in range(n)])
    fleet.start()
    ev = Path(tempfile.mkdtemp(prefix="nodegate-bench-xn-"))
    try:
        nodes = fleet_nodes(fleet)
        spec = CrossnodeSpec(fabric="ib-ndr400", rails={0: "leaf-r0", 1: "leaf-r1"}, min_bytes="1G", max_bytes="8G",
                             job_timeout_s=job_seconds * 4 + 60, nccl_tests_dir="/usr/local/bin",
                             floors={"alltoall_busbw_gbs": 300.0},
                             env={"NODEGATE_SHIM_SECONDS": str(job_seconds)})
        launcher = MpirunLauncher(ssh_user=fleet.user, identity_file=str(fleet.client_key_path),
                                  known_hosts=str(fleet.known_hosts_path), extra_args=MCA, connect_timeout=30)
        res = run_phase(nodes, PhaseConfig(spec, run_id="bench", stages=("static", "nodes")), launcher=launcher,
                        evidence_dir=ev)
        over = res.wall_s - res.jobs_s
        return {"nodes": n, "job_seconds": job_seconds, "jobs": len(res.jobs), "rounds": len(res.rounds),
                "wall_s": round(res.wall_s, 2), "jobs_s": round(res.jobs_s, 2), "overhead_s": round(over, 2),
                "overhead_pct": round(100 * over / res.jobs_s, 2) if res.jobs_s else None,
                "outcome": res.outcome.value}
    finally:
        fleet.stop()
        shutil.rmtree(ev, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fleet", action="store_true", help="also the overhead row on a real MPI fleet (root)")
    ap.add_argument("--nodes", type=int, default=8)
    ap.add_argument("--job-seconds", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=5)
    a = ap.parse_args(argv)
    out = {"plan": bench_plan(), "localise": bench_localise(a.seeds)}
    if a.fleet:
        out["overhead"] = bench_overhead(a.nodes, a.job_seconds)
    p = out["plan"]
    print(f"plan 4,096 nodes: {p['plan_s']} s; simulation with 20 faults: {p['sim20_s']} s, "
          f"{p['sim20_node_jobs']} node jobs / {p['sim20_node_rounds']} rounds, "
          f"{p['sim20_link_jobs']} perftest jobs / {p['sim20_link_rounds']} rounds")
    print(f"{'d':>3} {'ours jobs':>10} {'rounds':>7} {'random jobs':>12} {'rounds':>7} {'all pairs':>10} {'rounds':>7}")
    for r in out["localise"]:
        print(f"{r['d']:>3} {r['ours_jobs']:>10.1f} {r['ours_rounds']:>7.1f} {r['random_jobs']:>12.1f} "
              f"{r['random_rounds']:>7.1f} {r['all_pairs_jobs']:>10} {r['all_pairs_rounds']:>7}")
    if "overhead" in out:
        o = out["overhead"]
        print(f"overhead: {o['nodes']} nodes, {o['jobs']} jobs in {o['rounds']} rounds, wall {o['wall_s']} s, "
              f"jobs {o['jobs_s']} s, overhead {o['overhead_s']} s = {o['overhead_pct']} % (goal < 5 %)")
    dest = ROOT / "reports" / "bench-crossnode.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
