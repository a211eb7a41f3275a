"""Localisation with a cost that scales (issue 38 item 5), against simulated job outcomes: every
fault kind found and named, the cost far from all pairs, the 4,096-node simulation."""

from __future__ import annotations

import math

import pytest

from nodegate.crossnode.plan import Job, LinkLocaliser, NodeLocaliser, default_domains
from nodegate.crossnode.simulate import (Faults, all_pairs_cost, expected_cost, random_pairing, run,
                                         spread_faults)

NODES_64 = [f"n{i:03d}" for i in range(64)]


def test_default_domains_are_about_sqrt_n_and_never_one_node():
    d = default_domains([f"x{i}" for i in range(10)])
    assert [len(v) for v in d.values()] == [4, 4, 2]
    d = default_domains([f"x{i}" for i in range(9)])          # 3+3+3
    assert sorted(len(v) for v in d.values()) == [3, 3, 3]
    d = default_domains([f"x{i}" for i in range(5)])          # 3+2, never a domain of one
    assert min(len(v) for v in d.values()) >= 2


@pytest.mark.parametrize("kind", ["slow", "wrong", "hang", "dropout"])
def test_one_faulty_node_is_confirmed_and_every_other_node_cleared(kind):
    f = Faults(nodes={"n017": kind})
    out = run(NODES_64, f, links=False)
    assert out.faulty() == {"n017"}
    assert {s for n, s in out.states.items() if n != "n017"} == {"cleared"}


@pytest.mark.parametrize("d", [1, 5, 20])
def test_d_faults_among_1024_nodes_cost_far_less_than_all_pairs(d):
    nodes = [f"n{i:04d}" for i in range(1024)]
    f = spread_faults(nodes, d, seed=d)
    out = run(nodes, f, links=False)
    assert out.faulty() == set(f.nodes)
    assert all(s == "cleared" for n, s in out.states.items() if n not in f.nodes)
    jobs, rounds = expected_cost(1024, d)
    # the documented estimate holds (faults sharing a domain cost less, never more)
    assert out.node_jobs <= jobs and out.node_rounds <= rounds
    assert out.node_jobs < all_pairs_cost(1024)[0] / 1000


def test_a_bad_cable_between_two_healthy_nodes_is_a_path_and_neither_node_is_blamed():
    f = Faults(paths={frozenset(("n005", "n006")): 2})       # one domain (n000-n007), rail 2
    out = run(NODES_64, f)
    assert out.faulty() == set()
    paths = [x for x in out.findings if x.kind == "path"]
    assert {tuple(sorted(x.ends)) for x in paths} >= {("n005", "n006"), ("n005:mlx5_2", "n006:mlx5_2")}
    railed = [x for x in paths if ":" in x.ends[0]]
    assert [x.rail for x in railed] == [2]                     # pinpointed to the one rail


def test_both_halves_pass_means_a_fault_between_them():
    nodes = [f"n{i}" for i in range(8)]
    doms = {"a": nodes}
    # n1 and n6 fail only together: the screen fails, both halves pass, the crossing finds them
    f = Faults(paths={frozenset(("n1", "n6")): None})
    out = run(nodes, f, domains=doms, links=False)
    assert out.faulty() == set()
    assert [tuple(sorted(x.ends)) for x in out.findings] == [("n1", "n6")]


def test_a_switch_fault_between_two_domains_is_a_boundary_fault():
    doms = default_domains(NODES_64)
    f = Faults(boundaries={frozenset(("g001", "g003"))})
    out = run(NODES_64, f, domains=doms, links=False)
    assert out.faulty() == set()
    (b,) = out.findings
    assert b.kind == "boundary" and "g001" in b.why and "g003" in b.why


def test_a_slow_hca_is_blamed_after_two_partners_and_its_node_confirmed():
    f = Faults(hcas={("n010", 3)})
    out = run(NODES_64, f)
    hca = [x for x in out.findings if x.kind == "hca"]
    assert [x.ends[0] for x in hca] == ["n010:mlx5_3"]
    assert out.faulty() == {"n010"}
    # no healthy HCA paired with it once is blamed
    assert not [x for x in out.findings if x.kind == "hca" and x.ends[0] != "n010:mlx5_3"]


def test_one_failure_never_blames_an_hca():
    link = LinkLocaliser({n: {0: "mlx5_0"} for n in ("a", "b", "c", "d")}, rounds=1, seed=1)
    (jobs) = link.next_round()
    for j in jobs:
        link.record(j, "a" not in j.hosts)     # a's one pairing fails: one partner only
    while link.next_round():
        raise AssertionError("no confirm round for an HCA with a single failure")
    assert link.hca_findings() == []


def test_a_healthy_partner_of_two_bad_hcas_is_not_blamed():
    bad = {"b", "c"}
    link = LinkLocaliser({n: {0: "mlx5_0"} for n in "abcdefgh"}, rounds=3, seed=7)
    while True:
        jobs = link.next_round()
        if not jobs:
            break
        for j in jobs:
            link.record(j, not (set(j.hosts) & bad))
    blamed = {x.ends[0].split(":")[0] for x in link.hca_findings()}
    assert blamed == bad


def test_a_suspect_without_any_known_good_partner_stays_suspect_never_cleared():
    loc = NodeLocaliser(["a", "b"], {"d": ["a", "b"]})
    while True:
        jobs = loc.next_round()
        if not jobs:
            break
        for j in jobs:
            loc.record(j, False)                 # everything fails: nobody is known good
    assert {n: s for n, (s, _, _) in loc.states().items()} == {"a": "suspect", "b": "suspect"}


def test_every_node_is_in_at_most_one_job_per_round():
    f = spread_faults([f"n{i:03d}" for i in range(300)], 9, seed=3)
    nodes = [f"n{i:03d}" for i in range(300)]
    loc = NodeLocaliser(nodes, default_domains(nodes))
    while True:
        jobs = loc.next_round()
        if not jobs:
            break
        hosts = [h for j in jobs for h in j.hosts]
        assert len(hosts) == len(set(hosts))
        for j in jobs:
            assert len(j.hosts) >= 2
            loc.record(j, f.job_passes(j, loc.domain_of))


def test_job_ids_are_stable_and_directory_safe():
    j = Job("bisect", 3, ("a", "b"), "all_reduce_perf:split")
    assert j.job_id == Job("bisect", 3, ("a", "b"), "all_reduce_perf:split").job_id
    assert j.job_id.startswith("r03-bisect-all_reduce_perf_split-")
    assert all(c.isalnum() or c in "-_" for c in j.job_id)


def test_4096_node_simulation_job_count_and_rounds(capsys):
    """The 4,096-node simulation of job outcomes (issue 38 item 8): 20 faults of every node kind,
    a bad path and a slow HCA; the figures are printed (bench/crossnode.py measures the rest)."""
    nodes = [f"n{i:04d}" for i in range(4096)]
    f = spread_faults(nodes, 20, seed=11)
    f.hcas.add(("n4000", 5))
    out = run(nodes, f, link_rounds=3, seed=5)
    assert set(f.nodes) | {"n4000"} == out.faulty()
    with capsys.disabled():
        print(f"\n4,096 nodes, 21 faults: {out.node_jobs} node jobs in {out.node_rounds} rounds; "
              f"{out.link_jobs} perftest jobs in {out.link_rounds} rounds; all pairs: {all_pairs_cost(4096)[0]} jobs")
    assert out.node_jobs < 600 and out.node_rounds <= expected_cost(4096, 21)[1]
    # per-HCA: R rounds of N/2 pairs x 8 rails, then the confirm round
    assert out.link_rounds <= 3 + 2
    assert out.link_jobs <= 3 * 2048 * 8 + 64


def test_random_pairing_baseline_costs_more_jobs():
    nodes = [f"n{i:04d}" for i in range(1024)]
    f = spread_faults(nodes, 5, seed=2)
    ours = run(nodes, f, links=False)
    rnd = random_pairing(nodes, f, seed=1)
    assert rnd.faulty() == set(f.nodes)
    assert ours.node_jobs * 4 < rnd.jobs
    assert math.isclose(all_pairs_cost(1024)[0], 523776)
