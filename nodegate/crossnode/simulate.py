"""Simulated job outcomes: the localisation of nodegate/crossnode/plan.py run against a fault
model instead of launched jobs. What the 4,096-node test and bench/crossnode.py measure (jobs
and rounds to localise d faults), and the baselines they are compared with (all pairs, random
pairing with a second pass). No processes, no I/O.

Fault model (``Faults``), the kinds the phase must tell apart (issue 38 item 8):

- ``nodes``: node -> kind (slow, wrong, hang, dropout): every node-level job with it fails;
  perftest pairs of its HCAs pass (a GPU-side fault).
- ``hcas``: (node, rail) of a slow HCA: node-level jobs with the node fail (the slowest rail
  limits a ring), perftest pairs of that HCA fail.
- ``paths``: {a, b} (optionally one rail): jobs holding both nodes fail, perftest between them
  fails (on that rail); each passes with anyone else (a bad cable between two healthy nodes).
- ``boundaries``: {domain A, domain B}: jobs spanning both fail (a switch or uplink fault).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .plan import Job, LinkLocaliser, NodeLocaliser, default_domains


@dataclass
class Faults:
    nodes: dict[str, str] = field(default_factory=dict)
    hcas: set[tuple[str, int]] = field(default_factory=set)
    paths: dict[frozenset, int | None] = field(default_factory=dict)
    boundaries: set[frozenset] = field(default_factory=set)

    def job_passes(self, job: Job, domain_of: dict[str, str]) -> bool:
        hosts = set(job.hosts)
        if job.hcas:   # a perftest pair on one rail
            a, b = job.hosts
            if (a, job.rail) in self.hcas or (b, job.rail) in self.hcas:
                return False
            rail = self.paths.get(frozenset((a, b)), "none")
            return rail == "none" or (rail is not None and rail != job.rail)
        if hosts & set(self.nodes) or any(n in hosts for n, _ in self.hcas):
            return False
        for pair in self.paths:
            if pair <= hosts:
                return False
        doms = {domain_of.get(h) for h in hosts}
        return not any(b <= doms for b in self.boundaries)


@dataclass
class Outcome:
    """What a simulated localisation produced and cost."""

    jobs: int = 0
    rounds: int = 0
    node_jobs: int = 0
    node_rounds: int = 0
    link_jobs: int = 0
    link_rounds: int = 0
    states: dict[str, str] = field(default_factory=dict)
    findings: list = field(default_factory=list)

    def faulty(self) -> set[str]:
        return {n for n, s in self.states.items() if s == "confirmed_faulty"}


def run(nodes: list[str], faults: Faults, *, domains: dict[str, list[str]] | None = None,
        rails: int = 8, link_rounds: int = 3, seed: int = 0, links: bool = True) -> Outcome:
    """The phase's localisation on ``nodes`` against ``faults``: node stages, then the
    per-HCA stage (every node, ``rails`` HCAs), then the pinpoint of node-level path findings."""
    doms = domains if domains is not None else default_domains(nodes)
    loc = NodeLocaliser(nodes, doms)
    out = Outcome()
    while True:
        jobs = loc.next_round()
        if not jobs:
            break
        out.node_rounds += 1
        out.node_jobs += len(jobs)
        for j in jobs:
            loc.record(j, faults.job_passes(j, loc.domain_of))
    out.findings = list(loc.findings) + loc.unreproduced()
    out.states = {n: s for n, (s, _, _) in loc.states().items()}
    if links:
        link = LinkLocaliser({n: {r: f"mlx5_{r}" for r in range(rails)} for n in nodes}, rounds=link_rounds,
                             seed=seed, round_offset=loc.round)
        for f in loc.findings:
            if f.kind in ("path", "boundary") and all(":" not in e and "{" not in e for e in f.ends):
                link.pinpoint(*f.ends)
        while True:
            jobs = link.next_round()
            if not jobs:
                break
            out.link_rounds += 1
            out.link_jobs += len(jobs)
            for j in jobs:
                link.record(j, faults.job_passes(j, loc.domain_of))
        out.findings += link.findings + link.hca_findings()
        for f in link.hca_findings():
            node = f.ends[0].split(":", 1)[0]
            out.states[node] = "confirmed_faulty"
    out.jobs = out.node_jobs + out.link_jobs
    out.rounds = out.node_rounds + out.link_rounds
    return out


def all_pairs_cost(n: int) -> tuple[int, int]:
    """Every pair once (ClusterKit FULL, the circle method): n(n-1)/2 jobs in n-1 rounds (n even)."""
    return n * (n - 1) // 2, (n - 1 if n % 2 == 0 else n)


def random_pairing(nodes: list[str], faults: Faults, *, seed: int = 0, max_rounds: int = 50) -> Outcome:
    """Google cluster-health-scanner's scheme (random_pairs + second pass): every round pairs
    each unresolved node with a random partner (a passed node once there are some); a node that
    fails twice with different partners is confirmed, one that passes is cleared. Returns the
    cost; path and boundary faults are only found when the pair happens to be drawn."""
    rng = random.Random(seed)
    domain_of: dict[str, str] = {}
    passed: set[str] = set()
    fails: dict[str, set[str]] = {}
    confirmed: set[str] = set()
    unresolved = list(nodes)
    out = Outcome()
    while unresolved and out.rounds < max_rounds:
        out.rounds += 1
        rng.shuffle(unresolved)
        pool = [p for p in passed]
        rng.shuffle(pool)
        pairs = []
        busy: set[str] = set()
        for n in unresolved:
            if n in busy:
                continue
            partner = next((p for p in pool if p not in busy and p not in fails.get(n, ())), None)
            if partner is None:
                partner = next((m for m in unresolved if m != n and m not in busy), None)
            if partner is None:
                continue
            busy.update((n, partner))
            pairs.append((n, partner))
        if not pairs:
            break
        for a, b in pairs:
            out.jobs += 1
            ok = faults.job_passes(Job("random", out.rounds, (a, b), "all_reduce_perf"), domain_of)
            for x, y in ((a, b), (b, a)):
                if ok:
                    passed.add(x)
                else:
                    fails.setdefault(x, set()).add(y)
                    if len(fails[x]) >= 2 and y in passed:
                        confirmed.add(x)
        unresolved = [n for n in unresolved if n not in passed and n not in confirmed]
    out.states = {n: ("confirmed_faulty" if n in confirmed else "cleared" if n in passed else "suspect")
                  for n in nodes}
    out.node_jobs, out.node_rounds = out.jobs, out.rounds
    return out


def spread_faults(nodes: list[str], d: int, *, seed: int = 0, kinds=("slow", "wrong", "hang", "dropout")) -> Faults:
    """``d`` node faults at random nodes (seeded), kinds cycled."""
    rng = random.Random(seed)
    picks = rng.sample(nodes, d)
    return Faults(nodes={n: kinds[i % len(kinds)] for i, n in enumerate(picks)})


def expected_cost(n: int, d: int) -> tuple[int, int]:
    """The documented estimate (docs/crossnode.md "Cost"): jobs ~ N/k + 2 + 2·d·ceil(log2 k)
    and rounds ~ ceil(log2 k) + 3 for k = ceil(sqrt(N)), faults in distinct domains."""
    k = max(2, math.ceil(math.sqrt(n)))
    lg = math.ceil(math.log2(k))
    return math.ceil(n / k) + 2 + 2 * d * lg, lg + 3
