"""The cross-node phase's driver: static fabric, then the node stages, then the per-HCA stage,
each round's jobs launched together, judged by three rules, recorded as evidence; the rows at
the end. ``replay_phase`` runs the same driver on recorded evidence and launches nothing.

    result = run_phase(nodes, PhaseConfig(spec, run_id="..."), launcher=MpirunLauncher(...),
                       pair_launcher=SshPairLauncher(...), evidence_dir=Path("reports/bundles"))

Fail-closed throughout: a node is PASS only when a job it was in passed every rule; a launcher
that cannot run (missing, a partition that does not exist) stops the phase with an ERROR naming
it and every node not yet cleared stays ERROR; a replay that asks for a job never recorded stops
the same way (nothing is accepted that was not measured).

One module because the driver is one loop over rounds: launching, judging and recording a
round share its state (cleared, suspect, lost nodes); the rules are thresholds.py, the plan plan.py.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ..bundle import Bundle
from ..errors import NodegateError
from ..outcomes import Outcome
from ..parsers.ibdiagnet import parse_ibdiagnet
from ..parsers.ibnetdiscover import parse_ibnetdiscover
from .evidence import EvidenceStore, LaunchRecord, record_from_bundle
from .launchers import LaunchRequest, PhaseSetupError
from .model import FaultRow, JobRow, NodeRow, NodeState, PhaseResult
from .payloads import PERFTEST_PORT, measure_nccl, measure_perftest, nccl_command, perftest_commands
from .plan import Job, LinkLocaliser, NodeLocaliser, default_domains
from .spec import CableSpec, CrossnodeSpec
from .static import StaticResult, static_fabric
from .thresholds import Floors, RunBest, combine, floors_data, judge, offer_all, resolve_floors


class PhaseError(NodegateError):
    """The phase could not run at all (bad input): the message names what."""


@dataclass
class PhaseNode:
    """One inventory node as the phase sees it. ``address``: what mpirun's ssh and a perftest
    client connect to (for srun: the Slurm node name); ``target``: nodegate's target URL (the
    perftest execs); ``gpu_model``: the GPU product name (the floors' SKU); ``gpus``: GPUs (ranks
    per node unless the spec sets it); ``domain``: rack/leaf/NVLink domain; ``excluded``: why it
    is not used as a partner (a per-node prerequisite failed), '' when usable; ``bundle``: its
    probe evidence (Stage A); ``cables``: its planned cables."""

    name: str
    address: str = ""
    target: str = ""
    gpu_model: str = ""
    gpus: int = 0
    domain: str | None = None
    excluded: str = ""
    bundle: Bundle | None = None
    cables: list[CableSpec] = field(default_factory=list)


@dataclass
class PhaseConfig:
    """The phase's settings: ``spec`` (the ``crossnode:`` section), the run id, the site's cable
    plan (node -> cables, beside each node's own), the discovered/expected topologies and an
    ibdiagnet log (texts), which stages run, how many jobs at once."""

    spec: CrossnodeSpec = field(default_factory=CrossnodeSpec)
    run_id: str = ""
    cable_plan: dict[str, list[CableSpec]] = field(default_factory=dict)
    discovered_topology: str | None = None
    expected_topology: str | None = None
    ibdiagnet_log: str | None = None
    #: where each input came from, for the error that names it: node -> "file:line" of the cable
    #: plan's entry (static.cable_plan_where); the discovered topology's and ibdiagnet log's files
    cable_plan_where: dict[str, str] = field(default_factory=dict)
    discovered_topology_file: str = ""
    ibdiagnet_file: str = ""
    stages: tuple[str, ...] = ("static", "nodes", "links")
    max_parallel: int = 64
    rep_payloads: tuple[str, ...] = ("all_reduce_perf:split", "alltoall_perf")


class _Abort(Exception):
    pass


_LINE = re.compile(r"^line (\d+): ")


def where(name: str, e: Exception) -> str:
    """``name:line`` when the parser's message starts ``line N:`` (nodegate.parsers.ibnetdiscover),
    else ``name``."""
    m = _LINE.match(str(e))
    return f"{name}:{m.group(1)}" if m else name


def _without_line(e: Exception) -> str:
    return _LINE.sub("", str(e), count=1)


def _rate(spec: CrossnodeSpec) -> float | None:
    fab = (floors_data().get("fabrics") or {}).get(spec.fabric or "")
    return float(fab["rate_gbps"]) if fab else None


class _Run:
    def __init__(self, nodes: list[PhaseNode], config: PhaseConfig, launcher, pair_launcher, store: EvidenceStore,
                 stop: threading.Event | None, replay: bool):
        self.nodes = {n.name: n for n in nodes}
        self.cfg = config
        self.spec = config.spec
        self.launcher = launcher
        self.pair = pair_launcher
        self.store = store
        self.stop = stop or threading.Event()
        self.replay = replay
        self.result = PhaseResult(config.run_id, evidence=str(store.dir), replayed=replay)
        self.best = RunBest()
        self.static: StaticResult | None = None
        self.excluded: dict[str, str] = {n.name: n.excluded for n in nodes if n.excluded}
        self.job_rows: dict[str, JobRow] = {}
        self.stopped = ""   # what stopped the phase (a launcher missing, a partition, an interruption)
        #: nodes a launch could not reach after the pre-flight (node -> why): what failed with
        #: them was not measured, so they are never blamed (not_used, ERROR) and no fault names them
        self.lost: dict[str, str] = {}

    # ------------------------------------------------------------------ stage A
    def run_static(self) -> None:
        bundles = {n: b.bundle for n, b in self.nodes.items() if b.bundle is not None}
        plan = {n: list(b.cables) for n, b in self.nodes.items() if b.cables}
        for n, cables in self.cfg.cable_plan.items():
            plan.setdefault(n, []).extend(cables)
        discovered = expected = diag = None
        for what, name, text in (("discovered", self.cfg.discovered_topology_file or "discovered topology (ibnetdiscover)",
                                  self.cfg.discovered_topology),
                                 ("expected", self.spec.topology_file or "expected topology", self.cfg.expected_topology),
                                 ("ibdiagnet", self.cfg.ibdiagnet_file or "ibdiagnet log", self.cfg.ibdiagnet_log)):
            if text is None:
                continue
            try:
                if what == "ibdiagnet":
                    diag = parse_ibdiagnet(text)
                elif what == "discovered":
                    discovered = parse_ibnetdiscover(text)
                else:
                    expected = parse_ibnetdiscover(text)
            except NodegateError as e:
                # nothing of that file is compared: its cables stay ERROR (no neighbour evidence)
                # or uncompared, never PASS; the per-node rows are kept
                kind = "topology file" if what == "expected" else "file"
                self.result.errors.append(f"{kind} {where(name, e)} does not parse: {_without_line(e)}")
        if not bundles and not plan and discovered is None:
            return
        self.static = static_fabric(bundles, plan, rails=self.spec.rails, rate_gbps=_rate(self.spec),
                                    discovered=discovered, expected=expected, ibdiagnet=diag,
                                    known_nodes=list(self.nodes), where=self.cfg.cable_plan_where)
        self.result.cables = list(self.static.cables)
        self.result.errors += [e for e in self.static.errors if "not in the inventory" in e]
        # a node without one Active InfiniBand port cannot take part: not used as a partner
        for n, ports in self.static.ports.items():
            ib = [p for p in ports if p.ib]
            if n in bundles and n not in self.excluded and not any((p.state or "").upper() == "ACTIVE" for p in ib):
                down = ", ".join(f"{p.hca} {p.state or '?'}" for p in ib) or "no InfiniBand HCA"
                self.excluded[n] = f"no Active InfiniBand port (ib.ports: {down})"

    # ------------------------------------------------------------------ jobs
    def _ranks(self, hosts) -> int:
        if self.spec.ranks_per_node:
            return self.spec.ranks_per_node
        g = [self.nodes[h].gpus for h in hosts if self.nodes[h].gpus]
        return min(g) if g else 1

    def _floors(self, hosts) -> Floors:
        return resolve_floors([self.nodes[h].gpu_model for h in hosts], self.spec.fabric,
                              self.spec.floors.model_dump())

    def _job_meta(self, job: Job) -> dict:
        return {"run_id": self.cfg.run_id, "job_id": job.job_id, "stage": job.stage, "round": job.round,
                "payload": job.payload, "job_hosts": list(job.hosts), "core": list(job.core),
                "partners": list(job.partners), "hcas": list(job.hcas), "rail": job.rail, "key": job.key}

    def _launch(self, job: Job, port: int) -> LaunchRecord:
        if self.replay:
            b = self.store.load_job(job.job_id)
            if b is None:
                rec = LaunchRecord("replay", hosts=list(job.hosts))
                rec.missing = f"job {job.job_id} was not recorded ({job.key})"
                return rec
            rec = record_from_bundle(b)
            if not rec.missing and str(b.meta.get("key", "")) != job.key:
                # a refused directory (a link) or meta.json says why above; here meta.json was read
                got = b.meta.get("key")
                rec.missing = (f"job {job.job_id}'s evidence is of another job ({str(got)[:300]!r})"
                               if got is not None else
                               f"job {job.job_id}'s meta.json names no job (missing, or without 'key'): not judged")
            return rec
        if job.hcas:
            if self.pair is None:
                rec = LaunchRecord("ssh", hosts=list(job.hosts))
                rec.setup_error = "no SSH pair launcher for perftest"
                return rec
            a, b = job.hosts
            ha, hb = (h.split(":", 1)[1] for h in job.hcas)
            gpu = (lambda n: None if self.spec.use_cuda is False or (self.spec.use_cuda is None and not self.nodes[n].gpus)
                   else (job.rail or 0) % max(1, self.nodes[n].gpus or 1))
            cmds = perftest_commands(ha, hb, self.nodes[a].address or a, port, self.spec, gpu_server=gpu(a),
                                     gpu_client=gpu(b))
            return self.pair.run_pair(job.job_id, a, b, cmds, self.spec.job_timeout_s, self.stop)
        argv, env = nccl_command(job.payload, self.spec, self._ranks(job.hosts))
        req = LaunchRequest(job.job_id, list(job.hosts), {h: self.nodes[h].address or h for h in job.hosts},
                            self._ranks(job.hosts), argv, env, self.spec.job_timeout_s,
                            self.store.jobs / job.job_id)
        return self.launcher.launch(req, self.stop)

    def _judge(self, job: Job, rec: LaunchRecord, evidence: str) -> JobRow:
        row = JobRow(job.job_id, job.stage, job.round, list(job.hosts), job.payload, rec.launcher, rec.command,
                     list(job.hcas), job.rail, dict(rec.versions), evidence=evidence,
                     duration_s=round(rec.duration_s, 3))
        it = rec.items.get("launch")
        row.rc = it.rc if it is not None else None
        floors = self._floors(job.hosts)
        if job.hcas:
            m = measure_perftest(rec)
            rates = []
            for h in job.hcas:
                node, hca = h.split(":", 1)
                hp = self.static.port(node, hca) if self.static else None
                rates.append(hp.rate_gbps if hp is not None else None)
            port_rate = min(rates) if all(r is not None for r in rates) else None
            checks = judge(m, floors, "perftest", self.best, port_rate_gbps=port_rate)
        else:
            m = measure_nccl(rec, job.payload, len(job.hosts) * self._ranks(job.hosts), floors.min_size_bytes)
            checks = judge(m, floors, job.payload, self.best)
        row.metric, row.value, row.unit, row.checks = m.metric, m.value, m.unit, checks
        if m.detail:
            row.versions.setdefault("format", m.detail)
        for k, v in m.versions.items():
            row.versions.setdefault(k, v)
        row.verdict = combine(checks)
        if row.verdict is Outcome.PASS:
            offer_all(m, checks, job.payload if not job.hcas else "perftest", self.best)
        fired = [c for c in checks if c.passed is not True]
        row.message = "; ".join(f"{c.kind}: {c.why or c.rule}" for c in fired) or "every rule passed"
        if row.verdict is not Outcome.PASS:
            row.suspects = list(job.hcas) if job.hcas else list(job.core)
        return row

    def run_round(self, jobs: list[Job]) -> dict[str, bool]:
        """Launch the round's jobs together; returns job id -> passed (for the localiser)."""
        ports = {j.job_id: PERFTEST_PORT + 2 * i for i, j in enumerate(jobs)}
        self.result.rounds.append([j.job_id for j in jobs])

        def one(job: Job):
            return job, self._launch(job, ports[job.job_id])

        with ThreadPoolExecutor(max_workers=max(1, min(self.cfg.max_parallel, len(jobs)))) as ex:
            done = list(ex.map(one, jobs))
        out: dict[str, bool] = {}
        abort = ""
        for job, rec in done:
            if rec.missing:
                abort = abort or f"replay: {rec.missing}; nothing is judged from a job that was not recorded"
                continue
            if rec.setup_error:
                abort = abort or f"{rec.launcher}: {rec.setup_error}"
                ev = ""
            elif self.replay:
                ev = self.store.rel(job.job_id)
            else:
                try:
                    ev = self.store.write_job(job.job_id, self._job_meta(job), rec)
                except OSError as e:   # safeio.LinkRefused: a link planted where evidence goes
                    abort = abort or f"evidence of {job.job_id} not written: {e}"
                    ev = ""
            row = self._judge(job, rec, ev)
            if rec.setup_error:
                row.verdict, row.message = Outcome.ERROR, f"not launched: {rec.setup_error}"
            self.result.jobs.append(row)
            self.job_rows[job.job_id] = row
            out[job.job_id] = row.verdict is Outcome.PASS
            for n, why in rec.unreachable.items():
                if n in self.nodes:
                    self.lost.setdefault(n, why)
                if n in self.nodes and n not in self.excluded:
                    self.excluded[n] = f"launcher could not reach it: {why}"
        self.result.jobs_s += max((rec.duration_s for _, rec in done), default=0.0)
        if self.stop.is_set():
            abort = abort or "interrupted: every launched process was stopped"
        if abort:
            raise _Abort(abort)
        return out

    # ------------------------------------------------------------------ the stages
    def domains(self, eligible: list[str]) -> dict[str, list[str]]:
        given = {n: self.nodes[n].domain for n in eligible if self.nodes[n].domain}
        if len(given) == len(eligible) and eligible:
            doms: dict[str, list[str]] = {}
            for n in eligible:
                doms.setdefault(given[n], []).append(n)
            return doms
        if self.static is not None:
            leaf: dict[str, list[str]] = {}
            for n in eligible:
                ports = [p for p in self.static.ports.get(n, []) if p.rail == 0 and p.neighbour_name]
                if not ports:
                    leaf = {}
                    break
                leaf.setdefault(ports[0].neighbour_guid or ports[0].neighbour_name, []).append(n)
            if leaf and len(leaf) > 1:
                return {f"leaf:{k}": v for k, v in leaf.items()}
        return default_domains(eligible)

    def run(self, *, plan_only: bool = False) -> PhaseResult:
        t0 = time.monotonic()
        if "static" in self.cfg.stages:
            self.run_static()
        eligible = [n for n in self.nodes if n not in self.excluded]
        node_loc = link_loc = None
        try:
            if not self.replay and eligible and "nodes" in self.cfg.stages:
                why = self.launcher.available()
                if why:
                    raise _Abort(f"{self.launcher.name}: {why}")
                try:
                    bad = self.launcher.preflight({n: self.nodes[n].address or n for n in eligible}, self.stop)
                except PhaseSetupError as e:
                    raise _Abort(f"{self.launcher.name}: {e}") from None
                self.excluded.update(bad)
                eligible = [n for n in eligible if n not in self.excluded]
            doms = self.domains(eligible)
            run_links = "links" in self.cfg.stages and (self.pair is not None or self.replay)
            if not self.replay:
                self.store.write_json("plan.json", {
                    "run_id": self.cfg.run_id, "nodes": eligible, "domains": doms, "excluded": self.excluded,
                    "seed": self.spec.seed, "rails": self.static.rails if self.static else {},
                    "stages": [s for s in self.cfg.stages if s != "links" or run_links]})
            if "nodes" in self.cfg.stages and len(eligible) >= 2:
                node_loc = NodeLocaliser(eligible, doms, rep_payloads=self.cfg.rep_payloads)
                while True:
                    jobs = node_loc.next_round()
                    if not jobs:
                        break
                    out = self.run_round(jobs)
                    for j in jobs:
                        node_loc.record(j, out.get(j.job_id, False))
            if run_links:
                rails = {n: r for n, r in (self.static.rails if self.static else {}).items() if n in eligible and r}
                if len(rails) >= 2:
                    link_loc = LinkLocaliser(rails, rounds=self.spec.link_rounds, seed=self.spec.seed,
                                             round_offset=node_loc.round if node_loc else 0)
                    for f in (node_loc.findings if node_loc else []):
                        if all(":" not in e for e in f.ends):
                            link_loc.pinpoint(*f.ends)
                    while True:
                        jobs = link_loc.next_round()
                        if not jobs:
                            break
                        out = self.run_round(jobs)
                        for j in jobs:
                            link_loc.record(j, out.get(j.job_id, False))
        except OSError as e:   # plan.json refused (a link planted on the way): nothing launched
            self.result.errors.append(f"evidence not written: {e}")
        except _Abort as e:
            self.result.errors.append(str(e))
            self.stopped = str(e)
            if not self.replay:
                cancel = getattr(self.launcher, "cancel", None)
                if cancel:
                    cancel([j for r in self.result.rounds[-1:] for j in r])
        self.rows(eligible, node_loc, link_loc)
        self.result.wall_s = time.monotonic() - t0
        try:
            self.store.write_json("result.json", self.result.to_dict())
        except OSError as e:
            self.result.errors.append(f"result.json not written: {e}")
        return self.result

    # ------------------------------------------------------------------ rows
    def rows(self, eligible: list[str], node_loc: NodeLocaliser | None, link_loc: LinkLocaliser | None) -> None:
        res = self.result
        states = node_loc.states() if node_loc else {}
        fid = 0
        node_faults: dict[str, list[str]] = {}
        findings = []
        if node_loc:
            findings += node_loc.findings + node_loc.unreproduced()
        if link_loc:
            refined = link_loc.findings + link_loc.hca_findings()
            # a node-level path the pinpoint jobs narrowed to a rail: one fault, the narrower one
            for f in refined:
                pair = {e.split(":", 1)[0] for e in f.ends if e}
                for g in list(findings):
                    if g.kind in ("path", "boundary") and set(g.ends) == pair and len(pair) == 2:
                        f.jobs = list(dict.fromkeys(g.jobs + f.jobs))
                        if g.kind == "boundary":
                            f.why += f" ({g.why})"
                        findings.remove(g)
            findings += refined
        for f in findings:
            if any(e.split(":", 1)[0] in self.lost for e in f.ends):
                continue   # a path/HCA "fault" of a node that could not be reached: nothing was measured
            fid += 1
            row = FaultRow(f"F{fid:03d}", f.kind, f.ends[0], f.ends[1], f.why, list(f.jobs))
            self._cross_check(row)
            res.faults.append(row)
            for e in f.ends:
                node = e.split(":", 1)[0]
                if node in self.nodes:
                    node_faults.setdefault(node, []).append(row.fault_id)
        for name in self.nodes:
            if name in self.lost and states.get(name, ("untested",))[0] != "cleared":
                res.nodes.append(NodeRow(name, NodeState.NOT_USED, f"not judged: the launcher could not reach it "
                                         f"during the run ({self.lost[name]}); the jobs with it are ERROR",
                                         self._jobs_with(name)))
                continue
            if name in self.excluded and (name not in states or states[name][0] == "untested"):
                res.nodes.append(NodeRow(name, NodeState.NOT_USED, f"not used as a partner: {self.excluded[name]}"))
                continue
            st, why, jobs = states.get(name, ("untested", "no job it was in was judged", []))
            if len(eligible) < 2 and name in eligible:
                st, why = "untested", "fewer than two usable nodes: no cross-node job is possible"
            state = NodeState(st)
            faults = node_faults.get(name, [])
            hca_faults = [r for r in res.faults if r.fault_id in faults and r.kind in ("hca", "cable")
                          and r.end_a.split(":", 1)[0] == name]
            if hca_faults and state in (NodeState.CLEARED, NodeState.CONFIRMED_FAULTY, NodeState.SUSPECT):
                state = NodeState.CONFIRMED_FAULTY
                why = "; ".join(f"{r.kind} {r.end_a} at fault ({r.fault_id})" for r in hca_faults)
                jobs = list(dict.fromkeys(jobs + [j for r in hca_faults for j in r.jobs]))
            if res.errors and state is NodeState.UNTESTED:
                why = f"{why} ({self.stopped or res.errors[0]})"
            res.nodes.append(NodeRow(name, state, why, list(jobs), faults))

    def _jobs_with(self, node: str) -> list[str]:
        return [j.job_id for j in self.result.jobs if node in j.hosts]

    def _cross_check(self, row: FaultRow) -> None:
        """A fault below the node against the static cable map: an HCA whose cable the map shows
        degraded or miswired is a cable fault (both ends named); a path names the cables on it."""
        if self.static is None:
            return
        ends = [e for e in (row.end_a, row.end_b) if ":" in e]
        notes, cables = [], []
        for e in ends:
            node, hca = e.split(":", 1)
            hp = self.static.port(node, hca)
            if hp is not None:
                cables.append(f"{hp.end} <-> {hp.neighbour or 'switch port unknown'}")
                if row.kind == "hca":
                    row.guid = hp.port_guid or ""
                    row.end_b = hp.neighbour or row.end_b
            probs = self.static.problems(node, hca)
            for c in probs:
                notes.append(f"{c.node_end} <-> {c.switch_end}: {c.problem} ({c.observed})")
        row.cables = cables
        if notes:
            row.static = "; ".join(notes)
            if row.kind == "hca":
                row.kind = "cable"
                row.why += f"; the cable map shows it: {row.static}"
        elif ends:
            row.static = "the cable map shows these cables as planned" if cables else "no cable map evidence"


def _new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def run_phase(nodes: list[PhaseNode], config: PhaseConfig, *, launcher, pair_launcher=None,
              evidence_dir: Path | str, stop: threading.Event | None = None) -> PhaseResult:
    """Run the phase (module docstring). Never raises for what nodes or launchers do: errors
    are in ``PhaseResult.errors`` and the rows. Raises PhaseError only for input that makes no
    run possible (no nodes, duplicate names)."""
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise PhaseError(f"duplicate node names in the phase's node list: {', '.join(dup[:10])}")
    config.run_id = config.run_id or _new_run_id()
    store = EvidenceStore(evidence_dir, config.run_id)
    return _Run(nodes, config, launcher, pair_launcher, store, stop, replay=False).run()


class _NoLauncher:
    name = "replay"

    def available(self):
        return None


def replay_phase(nodes: list[PhaseNode], config: PhaseConfig, evidence_dir: Path | str) -> PhaseResult:
    """Re-judge a recorded run (``config.run_id``) without launching anything: the same
    localisation asks for the same jobs and reads their evidence (nodegate.bundle's safe reader)."""
    if not config.run_id:
        raise PhaseError("replay needs the run id of the recorded run")
    store = EvidenceStore(evidence_dir, config.run_id)
    why: list[str] = []
    plan = store.read_json("plan.json", why)
    if plan is None:
        raise PhaseError(f"no recorded cross-node run {config.run_id!r} under {evidence_dir} "
                         f"(plan.json {why[0] if why else 'missing'})")
    if isinstance(plan.get("seed"), int):
        config.spec = config.spec.model_copy(update={"seed": plan["seed"]})
    if isinstance(plan.get("stages"), list):
        config.stages = tuple(s for s in config.stages if s in plan["stages"])
    run = _Run(nodes, config, _NoLauncher(), None, store, None, replay=True)
    if isinstance(plan.get("excluded"), dict):
        run.excluded.update({str(k): str(v) for k, v in plan["excluded"].items() if str(k) in run.nodes})
    return run.run()


def plan_text(nodes: list[PhaseNode], config: PhaseConfig) -> str:
    """The ``--plan`` printout: domains, the first rounds' jobs, the link rounds' pairs, and the
    cost bound for d faults. Nothing is launched (the localisation is run against an
    all-passing oracle: the no-fault plan; each fault adds what the bound says)."""
    from .simulate import expected_cost
    eligible = [n.name for n in nodes if not n.excluded]
    run = _Run(nodes, config, _NoLauncher(), None, EvidenceStore("/nonexistent", "plan"), None, replay=True)
    doms = run.domains(eligible)
    loc = NodeLocaliser(eligible, doms, rep_payloads=config.rep_payloads)
    lines = [f"cross-node plan: {len(eligible)} nodes in {len(loc.domains)} domains "
             f"({', '.join(f'{d}={len(m)}' for d, m in list(loc.domains.items())[:8])}"
             f"{', ...' if len(loc.domains) > 8 else ''})"]
    for n in nodes:
        if n.excluded:
            lines.append(f"  not used: {n.name}: {n.excluded}")
    jobs_total = 0
    while True:
        jobs = loc.next_round()
        if not jobs:
            break
        jobs_total += len(jobs)
        lines.append(f"round {loc.round} ({jobs[0].stage}): {len(jobs)} jobs")
        for j in jobs[:20]:
            lines.append(f"  {j.job_id}: {j.payload} on {', '.join(j.hosts)}")
        if len(jobs) > 20:
            lines.append(f"  ... {len(jobs) - 20} more")
        for j in jobs:
            loc.record(j, True)
    n = len(eligible)
    per_fault = expected_cost(n, 1)[0] - expected_cost(n, 0)[0]
    lines.append(f"no faults: {jobs_total} jobs in {loc.round} rounds; each faulty node adds about {per_fault} "
                 f"jobs (bisect and confirm) and at most {expected_cost(n, 1)[1] - loc.round} rounds; "
                 f"all pairs would be {n * (n - 1) // 2} jobs")
    rails = {}
    for node in nodes:
        if node.bundle is not None and not node.excluded:
            from .static import node_ports
            ports = [p for p in node_ports(node.name, node.bundle, []) if p.ib]
            rails[node.name] = {i: p.hca for i, p in enumerate(sorted(ports, key=lambda p: (p.pci or "", p.hca)))}
    if len(rails) >= 2:
        link = LinkLocaliser(rails, rounds=config.spec.link_rounds, seed=config.spec.seed, round_offset=loc.round)
        while True:
            jobs = link.next_round()
            if not jobs:
                break
            pairs = sorted({j.hosts for j in jobs})
            lines.append(f"round {link.round} ({jobs[0].stage}): {len(jobs)} perftest jobs over {len(pairs)} node pairs")
            for p in pairs[:10]:
                lines.append(f"  {p[0]} <-> {p[1]}")
            for j in jobs:
                link.record(j, True)
    return "\n".join(lines) + "\n"
