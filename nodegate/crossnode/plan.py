"""Localisation with a cost that scales: which jobs run in which round, decided from the
outcomes of the rounds before. Pure: no launching, no I/O; the same code drives a real run,
``--replay``, the ``--plan`` printout and the 4,096-node simulation (nodegate/crossnode/simulate.py).

Node stages (NVIDIA Cluster Readiness Engine ADR-055/056, the Azure NCCL diagnosis skill;
../shared/spec/cross-node-anchors.md sections 1.6, 2.1 and 5):

1. ``screen``: one job per domain (rack, leaf or NVLink domain from the inventory or the
   topology; else disjoint groups of ceil(sqrt(N)) nodes), all in one round.
2. ``representatives``: one node of each domain that passed, in one job per payload
   (per-rail split all-reduce, all-to-all): the links between the domains.
3. ``bisect``: a failing group is split in halves, both tested in the next round (a half of
   one node is padded with a known-good node); down to two nodes.
4. ``confirm``: each suspect paired with a known-good partner it has not failed with (a
   distinct partner for each suspect); a suspect that passes is cleared (a transient failure),
   one that fails again is confirmed faulty.
5. ``boundary``: a failing group whose halves both pass has its fault between the halves:
   the halves' halves are crossed (A1+B1, A1+B2, A2+B1, A2+B2) down to the pair that fails
   (CRE ADR-056), a ``path`` fault between two healthy nodes or a ``boundary`` fault between
   two domains.

A node is in at most one job per round (its GPUs are exclusive). Cost for N nodes, d faulty
nodes in distinct domains of k = ceil(sqrt(N)): N/k + 2 + about 2·d·ceil(log2 k) jobs in
about ceil(log2 k) + 3 rounds (docs/crossnode.md "Cost"; measured in bench/crossnode.py).

The per-HCA stage (``LinkLocaliser``) follows Imbue's reshuffled pairs: R rounds of random
node pairs, every rail of a pair tested at once (perftest HCA i to HCA i), an HCA blamed only
after failing with two or more distinct partners and not explained by a partner already
blamed, then confirmed against a known-good HCA of its rail.

One module because the stages are one state machine: each stage's next jobs depend on every
earlier stage's outcomes (suspects, known-good partners, pairs already failed together).
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
from dataclasses import dataclass, field
from typing import Iterable

NODE_PAYLOAD = "all_reduce_perf"
#: the representatives' payloads: per-rail split all-reduce (NCCL_TESTS_SPLIT), then all-to-all
REP_PAYLOADS = ("all_reduce_perf:split", "alltoall_perf")
LINK_PAYLOAD = "perftest"


@dataclass(frozen=True)
class Job:
    """A job to launch. ``hosts`` in rank order; ``core`` the nodes under test (``hosts``
    minus ``partners``, the known-good nodes added to pad or confirm); ``hcas`` for a perftest
    pair (``node:hca`` of the server, then the client); ``rail`` the rail of an HCA pair."""

    stage: str
    round: int
    hosts: tuple[str, ...]
    payload: str
    core: tuple[str, ...] = ()
    partners: tuple[str, ...] = ()
    hcas: tuple[str, ...] = ()
    rail: int | None = None
    task: int = 0

    @functools.cached_property
    def key(self) -> str:
        """What the job is, independent of when it runs: stage, payload, hosts, HCAs. A replay
        finds the evidence of a job by it."""
        return "|".join((self.stage, self.payload, ",".join(self.hosts), ",".join(self.hcas)))

    @functools.cached_property
    def job_id(self) -> str:
        """``r03-bisect-all_reduce_perf-1a2b3c4d5e``: round, stage, payload, a digest of
        ``key``. Usable as a directory name (nodegate.bundle.safe_node_dirname)."""
        digest = hashlib.sha1(self.key.encode()).hexdigest()[:10]
        payload = self.payload.replace(":", "_")
        return f"r{self.round:02d}-{self.stage}-{payload}-{digest}"


@dataclass
class Finding:
    """A fault found by a localiser. ``kind``: path (two nodes or HCAs that fail together and
    pass with others), boundary (between two groups/domains), hca (an HCA confirmed faulty).
    ``ends``: the two ends (a node, ``node:hca``, or a group ``{a,b,c}``); ``jobs``: the jobs
    (``Job.job_id``) that show it."""

    kind: str
    ends: tuple[str, str]
    why: str
    jobs: list[str] = field(default_factory=list)
    rail: int | None = None


def default_domains(nodes: list[str], size: int | None = None) -> dict[str, list[str]]:
    """Disjoint groups of ``size`` (default ceil(sqrt(N))) nodes in the given order, named
    ``g000``...: CRE ADR-055's grouping when no topology is known."""
    n = len(nodes)
    if n == 0:
        return {}
    k = size or max(2, math.ceil(math.sqrt(n)))
    groups = [nodes[i:i + k] for i in range(0, n, k)]
    if len(groups) > 1 and len(groups[-1]) == 1:   # never a domain of one when avoidable
        groups[-2].append(groups.pop()[0])
    return {f"g{i:03d}": g for i, g in enumerate(groups)}


@dataclass
class _Task:
    tid: int
    kind: str                 # screen | rep | bisect | confirm | cross
    core: tuple[str, ...]
    other: tuple[str, ...] = ()    # cross: the second side
    payload: str = NODE_PAYLOAD
    parent: int | None = None
    pad: bool = False               # needs one known-good partner (a group of one)
    exclude: frozenset = frozenset()  # partners it must not get (confirm: those it failed with)
    done: bool = False
    passed: bool | None = None
    children: list[int] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    stage: str = ""
    domain_pair: tuple[str, str] | None = None


class NodeLocaliser:
    """Node stages 1-5 (module docstring). ``next_round()`` gives the jobs of the next round
    ([] when done); ``record(job, passed)`` takes each job's outcome (``passed`` False for a
    FAIL and for an ERROR the nodes caused: a timeout, a rank that died). ``states()`` /
    ``findings`` at the end.

    ``nodes``: the eligible nodes (not excluded by per-node prerequisites); ``domains``: name ->
    nodes (every eligible node in exactly one; None: ``default_domains``); ``rep_payloads``:
    the representatives' payloads ((): no representatives stage)."""

    def __init__(self, nodes: Iterable[str], domains: dict[str, list[str]] | None = None, *,
                 payload: str = NODE_PAYLOAD, rep_payloads: tuple[str, ...] = REP_PAYLOADS):
        self.nodes = list(dict.fromkeys(nodes))
        self._order = {n: i for i, n in enumerate(self.nodes)}
        known = set(self.nodes)
        doms = domains if domains is not None else default_domains(self.nodes)
        self.domains: dict[str, list[str]] = {}
        seen: set[str] = set()
        for name, members in doms.items():
            ms = [m for m in members if m in known and m not in seen]
            seen.update(ms)
            if ms:
                self.domains[name] = ms
        rest = [n for n in self.nodes if n not in seen]
        if rest:
            self.domains["unassigned"] = rest
        self.domain_of = {m: d for d, ms in self.domains.items() for m in ms}
        self.payload = payload
        self.rep_payloads = tuple(rep_payloads)
        self.tasks: dict[int, _Task] = {}
        self.pending: list[int] = []
        self.round = 0
        self.cleared: dict[str, str] = {}        # node -> job that cleared it
        self.confirmed: dict[str, list[str]] = {}  # node -> jobs that failed with it
        self.failed_with: dict[str, set[str]] = {}  # node -> partners it failed with
        self.suspect_why: dict[str, str] = {}
        self.in_job: set[str] = set()
        self.findings: list[Finding] = []
        self.partner_use: dict[str, int] = {}
        self._reps_started = False
        self._running: dict[str, _Task] = {}
        self._roots: list[tuple[tuple, tuple, list[str]]] = []
        self._seed_screens()

    # ------------------------------------------------------------------ tasks
    def _task(self, kind: str, core, **kw) -> _Task:
        t = _Task(len(self.tasks) + 1, kind, tuple(core), **kw)
        t.stage = {"screen": "screen", "rep": "representatives", "bisect": "bisect", "confirm": "confirm",
                   "cross": "boundary"}[kind]
        self.tasks[t.tid] = t
        self.pending.append(t.tid)
        if t.parent is not None:
            self.tasks[t.parent].children.append(t.tid)
        return t

    def _seed_screens(self) -> None:
        singles: list[str] = []
        for members in self.domains.values():
            if len(members) >= 2:
                self._task("screen", members, payload=self.payload)
            else:
                singles.extend(members)
        # domains of one node: screened in pairs, the last one padded with a known-good node
        for i in range(0, len(singles) - 1, 2):
            self._task("screen", singles[i:i + 2], payload=self.payload)
        if len(singles) % 2:
            self._task("screen", singles[-1:], payload=self.payload, pad=True)

    # ------------------------------------------------------------------ scheduling
    @property
    def done(self) -> bool:
        return not self.pending and not self._running

    def _known_good(self) -> list[str]:
        return [n for n in self.cleared if n not in self.confirmed]

    def _partner(self, busy: set[str], exclude: frozenset) -> str | None:
        cands = [n for n in self._known_good() if n not in busy and n not in exclude]
        if not cands:
            return None
        best = min(cands, key=lambda n: (self.partner_use.get(n, 0), self._order[n]))
        self.partner_use[best] = self.partner_use.get(best, 0) + 1
        return best

    def next_round(self) -> list["Job"]:
        """The jobs of the next round (every node in at most one); [] when nothing is left.
        Tasks that need a known-good partner when none exists and none can appear any more
        are closed: their nodes stay suspects (ERROR, never PASS)."""
        if self._running:
            raise RuntimeError("record every job of the round before asking for the next")
        self._maybe_representatives()
        if not self.pending:
            return []
        self.round += 1
        busy: set[str] = set()
        jobs: list[Job] = []
        waiting: list[int] = []
        for tid in self.pending:
            t = self.tasks[tid]
            nodes = set(t.core) | set(t.other)
            if nodes & busy:
                waiting.append(tid)
                continue
            partners: tuple[str, ...] = ()
            if t.pad or t.kind == "confirm":
                p = self._partner(busy | nodes, t.exclude)
                if p is None:
                    waiting.append(tid)
                    continue
                partners = (p,)
            hosts = tuple(t.core) + tuple(t.other) + partners
            busy.update(hosts)
            job = Job(t.stage, self.round, hosts, t.payload, core=tuple(t.core) + tuple(t.other),
                      partners=partners, task=tid)
            t.jobs.append(job.job_id)
            self._running[job.job_id] = t
            jobs.append(job)
        self.pending = waiting
        if not jobs and waiting:
            # nothing could be scheduled: every waiting task needs a partner that does not exist
            self.round -= 1
            for tid in waiting:
                t = self.tasks[tid]
                t.done, t.passed = True, None
                for n in t.core:
                    self.suspect_why.setdefault(n, "failed, and no known-good partner was left to confirm it")
            self.pending = []
            self._maybe_representatives()
            return self.next_round() if self.pending else []
        return jobs

    def _maybe_representatives(self) -> None:
        if self._reps_started or any(self.tasks[t].kind == "screen" and not self.tasks[t].done
                                     for t in list(self.tasks)):
            return
        self._reps_started = True
        reps = []
        for members in self.domains.values():
            good = [m for m in members if m in self.cleared and m not in self.confirmed]
            if good:
                reps.append(good[0])
        if len(reps) >= 2:
            for p in self.rep_payloads:
                self._task("rep", reps, payload=p)

    # ------------------------------------------------------------------ outcomes
    def record(self, job: Job, passed: bool) -> None:
        """The outcome of one job of the current round."""
        t = self._running.pop(job.job_id)
        t.done, t.passed = True, bool(passed)
        if passed:
            for n in job.hosts:
                self.cleared.setdefault(n, job.job_id)
                self.suspect_why.pop(n, None)
        else:
            for n in job.core:
                self.failed_with.setdefault(n, set()).update(job.partners)
                if n not in self.cleared:
                    self.suspect_why.setdefault(n, f"failed in {job.job_id}")
        self._after(t, job)

    def _after(self, t: _Task, job: Job) -> None:
        if t.kind == "confirm":
            (x,) = t.core
            if not t.passed:
                self.confirmed.setdefault(x, []).extend([j for j in self._failed_jobs(x)] + [job.job_id])
                self.cleared.pop(x, None)
            self._close_parent(t)
            return
        if t.kind == "cross":
            self._cross_done(t, job)
            return
        if t.passed:
            self._close_parent(t)
            return
        self._group_failed(t, job)

    def _failed_jobs(self, node: str) -> list[str]:
        return [jid for tid, tt in self.tasks.items() if tt.done and tt.passed is False and node in tt.core
                for jid in tt.jobs[-1:]]

    def _group_failed(self, t: _Task, job: Job) -> None:
        core = t.core
        if all(n in self.cleared for n in core) and len(core) == 2:
            self._pair_fault(core[0], core[1], [job.job_id])
            self._close_parent(t)
            return
        if len(core) == 1:
            self._task("confirm", core, parent=t.tid, exclude=frozenset(job.partners))
            return
        if len(core) == 2:
            for n in core:
                if n in self.cleared:
                    continue
                self._task("confirm", (n,), parent=t.tid, exclude=frozenset(job.partners))
            if not t.children:
                self._close_parent(t)
            return
        h = len(core) // 2
        for half in (core[:h], core[h:]):
            if all(n in self.cleared for n in half) and len(half) >= 2:
                # passed already (e.g. the representatives' halves): known good as a whole
                self._task("bisect", half, parent=t.tid, payload=t.payload)
            else:
                self._task("bisect", half, parent=t.tid, payload=t.payload, pad=len(half) == 1)

    def _close_parent(self, t: _Task) -> None:
        if t.parent is None:
            return
        p = self.tasks[t.parent]
        kids = [self.tasks[c] for c in p.children]
        if not all(k.done for k in kids) or p.passed is not False:
            return
        if p.kind == "cross":
            return
        if all(k.passed for k in kids):
            if all(k.kind == "confirm" for k in kids) and len(p.core) == 2:
                # a pair that failed together while each passed with a known-good partner
                self._pair_fault(p.core[0], p.core[1], p.jobs[-1:] + [j for k in kids for j in k.jobs])
            elif len(kids) == 2 and all(k.kind == "bisect" for k in kids):
                # both halves pass: the fault is between them (CRE ADR-056)
                a, b = kids[0].core, kids[1].core
                self._roots.append((a, b, p.jobs[-1:] + [j for k in kids for j in k.jobs]))
                self._expand_cross(a, b, p.payload, p.jobs[-1:])
            self._close_parent(p)
        elif all(k.done for k in kids):
            self._close_parent(p)

    def _cross_done(self, t: _Task, job: Job) -> None:
        if not t.passed:
            self._expand_cross(t.core, t.other, t.payload, [job.job_id])

    def _expand_cross(self, a: tuple, b: tuple, payload: str, jobs: list[str]) -> None:
        """``a`` and ``b`` each pass and fail together: the pair that fails, or the crossed
        quarters to test next."""
        if len(a) == 1 and len(b) == 1:
            self._pair_fault(a[0], b[0], jobs)
            return
        halves_a = [a] if len(a) == 1 else [a[:len(a) // 2], a[len(a) // 2:]]
        halves_b = [b] if len(b) == 1 else [b[:len(b) // 2], b[len(b) // 2:]]
        for x in halves_a:
            for y in halves_b:
                self._task("cross", x, other=y, payload=payload)

    def _pair_fault(self, a: str, b: str, jobs: list[str]) -> None:
        for f in self.findings:
            if set(f.ends) == {a, b}:
                f.jobs.extend(j for j in jobs if j not in f.jobs)
                return
        da, db = self.domain_of.get(a, ""), self.domain_of.get(b, "")
        if da != db and da and db:
            why = (f"{a} (domain {da}) and {b} (domain {db}) fail together and each passes with other "
                   f"nodes: a link or switch fault between domains {da} and {db}")
            self.findings.append(Finding("boundary", (a, b), why, list(jobs)))
        else:
            why = f"{a} and {b} fail together and each passes with other nodes: a fault on the path between them"
            self.findings.append(Finding("path", (a, b), why, list(jobs)))

    # ------------------------------------------------------------------ results
    def unreproduced(self) -> list[Finding]:
        """Boundary faults no pair below reproduced: a group that failed while both halves
        passed, and no cross of their parts failed (a fault needing more than two nodes, or a
        transient one). Reported between the two halves, never dropped."""
        out = []
        paired = [set(f.ends) for f in self.findings]
        for ta, tb, jobs in self._roots:
            a, b = set(ta), set(tb)
            if any(e & a and e & b for e in paired):
                continue
            why = (f"{{{', '.join(ta)}}} and {{{', '.join(tb)}}} each pass, together fail, "
                   "and no pair of them reproduced it")
            out.append(Finding("boundary", ("{" + ",".join(ta) + "}", "{" + ",".join(tb) + "}"), why, list(jobs)))
        return out

    def states(self) -> dict[str, tuple[str, str, list[str]]]:
        """node -> (state, why, job ids): ``cleared``, ``confirmed_faulty``, ``suspect``,
        ``untested`` (model.NodeState values)."""
        out = {}
        for n in self.nodes:
            if n in self.confirmed:
                jobs = list(dict.fromkeys(self.confirmed[n]))
                partners = sorted(self.failed_with.get(n, ()))
                why = "failed again with a distinct known-good partner" + (
                    f" (failed with {', '.join(partners)})" if partners else "")
                out[n] = ("confirmed_faulty", why, jobs)
            elif n in self.cleared:
                out[n] = ("cleared", "passed every rule in a job", [self.cleared[n]])
            elif n in self.suspect_why:
                out[n] = ("suspect", self.suspect_why[n], self._failed_jobs(n))
            else:
                out[n] = ("untested", "no job it was in was judged", [])
        return out


class LinkLocaliser:
    """The per-HCA stage: ``rounds`` rounds of random node pairs (seeded: a replay asks for
    the same pairs), every rail the two nodes share tested at once (one perftest job per HCA
    pair), then a confirm round for the HCAs blamed, then the pinpoint jobs asked for by the
    node stages (``pinpoint(a, b)``: every rail between two nodes that failed together).

    ``hcas``: node -> {rail: hca name}. Blame rule: an HCA whose failures are with two or more
    distinct partners, after discounting failures explained by a partner blamed on more
    evidence; a pair that fails while both ends pass with every other partner is a ``path``
    finding. Confirmation: the blamed HCA against a known-good HCA of its rail it has not
    failed with; pass clears it, fail makes it a ``hca`` finding."""

    def __init__(self, hcas: dict[str, dict[int, str]], *, rounds: int = 3, seed: int = 0,
                 payload: str = LINK_PAYLOAD, round_offset: int = 0):
        self.hcas = {n: dict(sorted(r.items())) for n, r in hcas.items()}
        self.nodes = list(self.hcas)
        self.rounds_wanted = rounds
        self.rng = random.Random(seed)
        self.payload = payload
        self.round = round_offset
        self.results: dict[tuple[str, str], list[tuple[str, bool, str]]] = {}  # hca -> [(partner, ok, job)]
        self.findings: list[Finding] = []
        self._phase = "rounds"
        self._done_rounds = 0
        self._running: dict[str, Job] = {}
        self._pinpoint: list[tuple[str, str]] = []
        self._confirm_jobs: dict[str, tuple[str, int]] = {}
        self.blamed: dict[str, int] = {}
        self.confirmed_hcas: dict[str, list[str]] = {}
        self.unconfirmed_why: dict[str, str] = {}
        self._paired: set[frozenset] = set()
        self._rail_of: dict[str, int | None] = {}

    @staticmethod
    def end(node: str, hca: str) -> str:
        return f"{node}:{hca}"

    def pinpoint(self, a: str, b: str) -> None:
        """Ask for every shared rail between ``a`` and ``b`` (a node-level path finding)."""
        if a in self.hcas and b in self.hcas:
            self._pinpoint.append((a, b))

    @property
    def done(self) -> bool:
        return self._phase == "done"

    def _pair_jobs(self, stage: str, a: str, b: str, rails=None) -> list[Job]:
        shared = sorted(set(self.hcas[a]) & set(self.hcas[b]))
        jobs = []
        for r in shared if rails is None else [r for r in rails if r in shared]:
            ha, hb = self.end(a, self.hcas[a][r]), self.end(b, self.hcas[b][r])
            jobs.append(Job(stage, self.round, (a, b), self.payload, core=(a, b), hcas=(ha, hb), rail=r))
        return jobs

    def next_round(self) -> list[Job]:
        if self._running:
            raise RuntimeError("record every job of the round before asking for the next")
        while True:
            if self._phase == "rounds":
                if self._done_rounds >= self.rounds_wanted or len(self.nodes) < 2:
                    self._phase = "confirm"
                    self._blame()
                    continue
                self._done_rounds += 1
                self.round += 1
                jobs = []
                for a, b in self._pairing():
                    jobs += self._pair_jobs("links", a, b)
                return self._start(jobs)
            if self._phase == "confirm":
                self._phase = "pinpoint"
                jobs = self._confirm_round()
                if jobs:
                    return jobs
                continue
            if self._phase == "pinpoint":
                if not self._pinpoint:
                    self._phase = "done"
                    continue
                self.round += 1
                busy: set[str] = set()
                jobs, left = [], []
                for a, b in self._pinpoint:
                    if a in busy or b in busy:
                        left.append((a, b))
                        continue
                    busy.update((a, b))
                    jobs += self._pair_jobs("links-pinpoint", a, b)
                self._pinpoint = left
                if jobs:
                    return self._start(jobs)
                self.round -= 1
                continue
            return []

    def _pairing(self) -> list[tuple[str, str]]:
        """Random pairs (seeded), avoiding pairs of earlier rounds where another partner is free:
        each round then brings new partners (Imbue reshuffles for the same reason)."""
        order = list(self.nodes)
        self.rng.shuffle(order)
        free = list(order)
        pairs = []
        while len(free) >= 2:
            a = free.pop(0)
            pick = next((b for b in free if frozenset((a, b)) not in self._paired), free[0])
            free.remove(pick)
            self._paired.add(frozenset((a, pick)))
            pairs.append((a, pick))
        return pairs

    def _start(self, jobs: list[Job]) -> list[Job]:
        for j in jobs:
            self._running[j.job_id] = j
            self._rail_of[j.job_id] = j.rail
        return jobs

    def record(self, job: Job, passed: bool) -> None:
        self._running.pop(job.job_id)
        ha, hb = job.hcas
        if job.stage == "links-pinpoint":
            if not passed:
                self._path(ha, hb, job.rail, f"{ha} and {hb} (rail {job.rail}) fail together; both nodes "
                           "pass with other partners", job.job_id)
            return
        self.results.setdefault(ha, []).append((hb, bool(passed), job.job_id))
        self.results.setdefault(hb, []).append((ha, bool(passed), job.job_id))
        if job.stage == "links-confirm":
            suspect = self._confirm_jobs.get(job.job_id)
            if suspect is not None:
                hca, _ = suspect
                if not passed:
                    fails = [jid for p, ok, jid in self.results[hca] if not ok]
                    self.confirmed_hcas[hca] = fails

    def _path(self, a: str, b: str, rail, why: str, jid: str) -> None:
        for f in self.findings:
            if f.kind == "path" and set(f.ends) == {a, b}:
                if jid not in f.jobs:
                    f.jobs.append(jid)
                return
        self.findings.append(Finding("path", (a, b), why, [jid], rail=rail))

    def _blame(self) -> None:
        """HCAs with failures with >= 2 distinct partners, strongest first; a failure with a
        partner already blamed does not count against the other end."""
        fails = {h: {p for p, ok, _ in rs if not ok} for h, rs in self.results.items()}
        order = sorted(fails, key=lambda h: (-len(fails[h]), h))
        blamed: dict[str, int] = {}
        for h in order:
            unexplained = {p for p in fails[h] if p not in blamed}
            if len(unexplained) >= 2:
                blamed[h] = len(unexplained)
        self.blamed = blamed
        # pairs that fail while both ends pass with every other partner: the path between them
        for h, rs in self.results.items():
            for p, ok, jid in rs:
                if ok or h > p or h in blamed or p in blamed:
                    continue
                others_h = [o for q, o, _ in self.results.get(h, []) if q != p]
                others_p = [o for q, o, _ in self.results.get(p, []) if q != h]
                if others_h and others_p and all(others_h) and all(others_p):
                    self._path(h, p, self._rail_of.get(jid), f"{h} and {p} fail together; each passes with "
                               "its other partners", jid)

    def _confirm_round(self) -> list[Job]:
        if not self.blamed:
            return []
        self.round += 1
        busy: set[str] = set()
        jobs = []
        good_by_rail: dict[int, list[tuple[str, str]]] = {}
        for n, rails in self.hcas.items():
            for r, h in rails.items():
                e = self.end(n, h)
                rs = self.results.get(e, [])
                if rs and all(ok for _, ok, _ in rs) and e not in self.blamed:
                    good_by_rail.setdefault(r, []).append((n, h))
        used: set[str] = set()
        for e in sorted(self.blamed):
            node, hca = e.split(":", 1)
            rail = next((r for r, h in self.hcas.get(node, {}).items() if h == hca), None)
            failed_with = {p for p, ok, _ in self.results.get(e, []) if not ok}
            if node in busy:
                continue
            cand = [(n, h) for n, h in good_by_rail.get(rail, [])
                    if n not in busy and n != node and self.end(n, h) not in failed_with and n not in used]
            if not cand:
                # no known-good HCA of its rail is free: blamed on the rounds' evidence alone
                # (failures with >= 2 distinct partners, the rule's minimum)
                self.confirmed_hcas[e] = [jid for p, ok, jid in self.results.get(e, []) if not ok]
                self.unconfirmed_why[e] = "no known-good HCA of its rail was free to confirm against"
                continue
            pn, ph = cand[0]
            used.add(pn)
            busy.update((node, pn))
            j = Job("links-confirm", self.round, (node, pn), self.payload, core=(node,), partners=(pn,),
                    hcas=(e, self.end(pn, ph)), rail=rail)
            self._confirm_jobs[j.job_id] = (e, rail)
            jobs.append(j)
        if not jobs:
            self.round -= 1
            return []
        return self._start(jobs)

    def hca_findings(self) -> list[Finding]:
        """The confirmed HCAs as ``hca`` findings (after the confirm round)."""
        out = []
        for e, jobs in sorted(self.confirmed_hcas.items()):
            partners = sorted({p for p, ok, _ in self.results.get(e, []) if not ok})
            how = self.unconfirmed_why.get(e) or "the last one a known-good HCA of its rail"
            out.append(Finding("hca", (e, ""), f"{e} failed with {len(partners)} distinct partners "
                                                f"({', '.join(partners)}); {how}", list(jobs)))
        return out

