"""The phase driver on an in-process launcher (fast): bad input (issue 38 item 9), evidence
written and replayed only through the safe readers, the --plan printout, the entry point."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nodegate.crossnode import __main__ as cli
from nodegate.crossnode.evidence import Item, LaunchRecord
from nodegate.crossnode.model import NodeState
from nodegate.crossnode.phase import PhaseConfig, PhaseError, PhaseNode, plan_text, replay_phase, run_phase
from nodegate.crossnode.spec import CableSpec, CrossnodeSpec
from nodegate.outcomes import Outcome

from .helpers import node_bundle, plan_of, rail_hcas
from .test_thresholds import table

SPEC = CrossnodeSpec(fabric="ib-ndr400", rails={0: "leaf-r0", 1: "leaf-r1"}, floors={"alltoall_busbw_gbs": 300.0})


class FakeLauncher:
    """Prints nccl-tests tables: 380 GB/s, 190 where a ``slow`` node takes part."""

    name = "fake"

    def __init__(self, slow=(), unreachable=None):
        self.slow, self.unreachable, self.launched = set(slow), dict(unreachable or {}), []

    def available(self):
        return None

    def preflight(self, addresses, stop=None):
        return {n: w for n, w in self.unreachable.items() if n in addresses}

    def launch(self, req, stop=None):
        self.launched.append(req.job_id)
        bw = 190.0 if set(req.hosts) & self.slow else 380.0
        out = table(bw, ranks=len(req.hosts) * req.ranks_per_node, hosts=tuple(req.hosts))
        rec = LaunchRecord(self.name, ["fake", *req.argv], list(req.hosts), dict(req.env),
                           {"launch": Item(out.encode(), b"", 0)})
        rec.duration_s = 0.01
        return rec

    def cancel(self, jobs):
        pass


def nodes(n=6, **kw):
    return [PhaseNode(f"g{i}", f"10.0.0.{i}", gpu_model="NVIDIA H100 80GB HBM3", gpus=8,
                      bundle=node_bundle(f"g{i}", rail_hcas(i)), cables=plan_of(f"g{i}", rail_hcas(i)), **kw)
            for i in range(n)]


def test_a_run_writes_its_evidence_and_a_replay_reads_it_back(tmp_path):
    ns = nodes()
    fl = FakeLauncher(slow={"g4"})
    res = run_phase(ns, PhaseConfig(SPEC, run_id="r1", stages=("static", "nodes")), launcher=fl, evidence_dir=tmp_path)
    assert res.node("g4").state is NodeState.CONFIRMED_FAULTY
    assert {n.state for n in res.nodes if n.node != "g4"} == {NodeState.CLEARED}
    run_dir = tmp_path / "crossnode" / "r1"
    assert {p.name for p in run_dir.iterdir()} == {"plan.json", "result.json", "jobs"}
    result = json.loads((run_dir / "result.json").read_text())
    assert result["outcome"] == "fail" and len(result["jobs"]) == len(fl.launched)
    meta = json.loads((run_dir / "jobs" / fl.launched[0] / "meta.json").read_text())
    assert meta["command"][0] == "fake" and meta["stage"] == "screen" and meta["env"]["NCCL_ALGO"] == "RING"
    again = replay_phase(ns, PhaseConfig(SPEC, run_id="r1", stages=("static", "nodes")), tmp_path)
    assert [(n.node, n.state) for n in again.nodes] == [(n.node, n.state) for n in res.nodes]


def test_a_job_records_each_item_status_and_duration_in_their_own_fields(tmp_path):
    """meta.json's items keep status and duration apart (they were swapped: a launch cut by the
    output cap was recorded, and replayed, as a timeout; its duration as 'ok')."""
    from nodegate.crossnode.evidence import EvidenceStore
    rec = LaunchRecord("fake", ["fake"], ["g0", "g1"], {}, {"launch": Item(b"x\n", b"", 0, "ok", 2.5),
                                                          "bw_client": Item(b"y\n", b"", None, "truncated", 1.25)})
    store = EvidenceStore(tmp_path, "r1")
    store.write_job("j1", {"job_id": "j1"}, rec)
    items = json.loads((tmp_path / "crossnode" / "r1" / "jobs" / "j1" / "meta.json").read_text())["items"]
    assert items["launch"]["status"] == "ok" and items["launch"]["duration_s"] == 2.5
    assert items["bw_client"]["status"] == "truncated" and items["bw_client"]["duration_s"] == 1.25
    b = store.load_job("j1")
    assert (b.items["launch"].status, b.items["launch"].duration_s) == ("ok", 2.5)
    assert (b.items["bw_client"].status, b.items["bw_client"].rc) == ("truncated", None)


def test_replay_refuses_evidence_that_is_a_link_and_accepts_nothing_from_it(tmp_path):
    ns = nodes(4)
    fl = FakeLauncher()
    run_phase(ns, PhaseConfig(SPEC, run_id="r2", stages=("nodes",)), launcher=fl, evidence_dir=tmp_path)
    out = tmp_path / "crossnode" / "r2" / "jobs" / fl.launched[0] / "launch.out"
    os.unlink(out)
    os.symlink("/etc/passwd", out)                           # a hostile bundle
    res = replay_phase(ns, PhaseConfig(SPEC, run_id="r2", stages=("nodes",)), tmp_path)
    assert res.outcome is Outcome.ERROR and "not usable" in res.errors[0] and "symbolic link" in res.errors[0]
    assert "cleared" not in {n.state.value for n in res.nodes}


@pytest.mark.parametrize("spoil, why", [
    (lambda run, job: (run / "plan.json").write_text('{"nodes": ["g0", '), "plan.json is not JSON"),
    (lambda run, job: (run / "plan.json").write_text("[" * 100000 + "]" * 100000), "plan.json is not JSON"),
    (lambda run, job: ((run / "plan.json").rename(run / "p.json"), os.symlink(run / "p.json", run / "plan.json")),
     "plan.json is a symbolic link"),
    (lambda run, job: (run / "jobs" / job / "meta.json").unlink(), "meta.json names no job"),
    (lambda run, job: ((run / "jobs" / job).rename(run / "elsewhere"),
                       os.symlink(run / "elsewhere", run / "jobs" / job)),
     "bundle directory not opened"),
])
def test_replay_of_spoiled_evidence_says_what_is_wrong_with_it(tmp_path, spoil, why):
    """Each refusal names its cause (it said 'plan.json missing' for a plan.json that is not JSON,
    'evidence is of another job (None)' for a job directory that is a link or has no meta.json)."""
    ns = nodes(4)
    fl = FakeLauncher()
    run_phase(ns, PhaseConfig(SPEC, run_id="r2", stages=("nodes",)), launcher=fl, evidence_dir=tmp_path)
    spoil(tmp_path / "crossnode" / "r2", fl.launched[0])
    try:
        res = replay_phase(ns, PhaseConfig(SPEC, run_id="r2", stages=("nodes",)), tmp_path)
    except PhaseError as e:
        msg = str(e)
    else:
        assert res.outcome is Outcome.ERROR and "cleared" not in {n.state.value for n in res.nodes}
        msg = res.errors[0]
    assert why in msg, msg


def test_evidence_is_never_written_through_a_planted_link(tmp_path):
    (tmp_path / "crossnode" / "r3").mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "crossnode" / "r3" / "jobs")
    res = run_phase(nodes(4), PhaseConfig(SPEC, run_id="r3", stages=("nodes",)), launcher=FakeLauncher(),
                    evidence_dir=tmp_path)
    assert list(target.iterdir()) == []
    assert res.outcome is Outcome.ERROR and "symbolic link" in res.errors[0]


def test_excluded_nodes_are_not_used_and_say_why(tmp_path):
    ns = nodes(5)
    ns[1].excluded = "IB port mlx5_1 Down (per-node check ib.port_state)"
    fl = FakeLauncher(unreachable={"g3": "unreachable over SSH from the launcher (10.0.0.3): Connection refused"})
    res = run_phase(ns, PhaseConfig(SPEC, run_id="r4", stages=("nodes",)), launcher=fl, evidence_dir=tmp_path)
    assert res.node("g1").state is NodeState.NOT_USED and "ib.port_state" in res.node("g1").why
    assert res.node("g3").state is NodeState.NOT_USED and "Connection refused" in res.node("g3").why
    assert not any({"g1", "g3"} & set(j.hosts) for j in res.jobs)
    assert {res.node(n).state for n in ("g0", "g2", "g4")} == {NodeState.CLEARED}


def test_a_topology_file_that_does_not_parse_is_an_error_naming_it(tmp_path):
    sp = SPEC.model_copy(update={"topology_file": "site/fabric.topo"})
    cfg = PhaseConfig(sp, run_id="r5", stages=("static",), expected_topology='[1]\t"S-0002c9"[2]\t# no node\n',
                      discovered_topology="")
    res = run_phase(nodes(2), cfg, launcher=FakeLauncher(), evidence_dir=tmp_path)
    assert any(e.startswith("topology file site/fabric.topo:1 does not parse: ibnetdiscover: port line outside")
               for e in res.errors), res.errors
    assert res.outcome is Outcome.ERROR and len(res.cables) == 4           # the per-node rows are kept


X5 = (Path(__file__).parent / "data" / "ibnetdiscover-x5-qdr.topo").read_text()


def test_a_topology_file_cut_short_names_its_line_and_nothing_of_it_is_compared(tmp_path):
    # the real X5 fabric discovered; the site's copy of its topology file stopped mid-line 14
    lines = X5.splitlines()
    cut = "\n".join(lines[:13] + [lines[13][:20]]) + "\n"
    sp = SPEC.model_copy(update={"topology_file": "site/x5.topo"})
    cfg = PhaseConfig(sp, run_id="r9", stages=("static", "nodes"), expected_topology=cut, discovered_topology=X5)
    res = run_phase(nodes(4), cfg, launcher=FakeLauncher(), evidence_dir=tmp_path)
    assert res.errors == ["topology file site/x5.topo:14 does not parse: ibnetdiscover: not a port line of the "
                          f"topology format: {lines[13][:20].strip()!r}"]
    assert not [c for c in res.cables if c.source == "ibnetdiscover"]    # no link judged against half a plan
    assert len(res.cables) == 8 and {n.state for n in res.nodes} == {NodeState.CLEARED}   # the rest is kept
    assert res.outcome is Outcome.ERROR                                   # never PASS with the file unread


def test_a_discovered_topology_that_does_not_parse_leaves_the_cables_it_would_name_error(tmp_path):
    ns = nodes(2)
    for n in ns:                                   # no iblinkinfo on the nodes: only ibnetdiscover names neighbours
        del n.bundle.items["ib.iblinkinfo"]
    cfg = PhaseConfig(SPEC, run_id="r10", stages=("static",), discovered_topology="ibnetdiscover: command not found\n",
                      discovered_topology_file="fabric/ibnetdiscover.out")
    res = run_phase(ns, cfg, launcher=FakeLauncher(), evidence_dir=tmp_path)
    assert res.errors == ["file fabric/ibnetdiscover.out:1 does not parse: ibnetdiscover: no node line (Switch/Ca/Rt) "
                          "in the text: not an ibnetdiscover topology (its default format, not --ports or --list "
                          "output)"]
    assert {(c.verdict, c.problem) for c in res.cables} == {(Outcome.ERROR, "no-neighbour-evidence")}
    assert len(res.cables) == 4 and res.outcome is Outcome.ERROR


@pytest.mark.parametrize("tool, launcher", [("mpirun", "MpirunLauncher"), ("srun", "SrunLauncher")])
def test_a_launcher_missing_from_path_is_an_error_naming_it_and_the_other_results_are_kept(
        tmp_path, monkeypatch, tool, launcher):
    from nodegate.crossnode import launchers
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))         # the tool is not installed on this host
    ns = nodes(4)
    ns[3].excluded = "driver not loaded (per-node check driver.loaded)"
    res = run_phase(ns, PhaseConfig(SPEC.model_copy(update={"launcher": tool}), run_id="m", stages=("static", "nodes")),
                    launcher=getattr(launchers, launcher)(), evidence_dir=tmp_path / "ev")
    assert res.errors == [f"{tool}: {tool} not found ({tool!r} is not on PATH): " + {
        "mpirun": "install Open MPI or HPC-X on this host", "srun": "this host is not a Slurm submit host"}[tool]]
    assert res.outcome is Outcome.ERROR and res.jobs == []                # nothing launched, nothing accepted
    assert len(res.cables) == 8 and {c.verdict for c in res.cables} == {Outcome.PASS}   # Stage A is kept
    assert res.node("g3").state is NodeState.NOT_USED and "driver.loaded" in res.node("g3").why
    for n in ("g0", "g1", "g2"):
        assert res.node(n).state is NodeState.UNTESTED and f"{tool} not found" in res.node(n).why
    kept = json.loads((tmp_path / "ev" / "crossnode" / "m" / "result.json").read_text())
    assert kept["outcome"] == "error" and len(kept["cables"]) == 8 and kept["errors"] == res.errors


def test_a_cable_plan_naming_unknown_nodes_is_an_error_naming_them(tmp_path):
    cfg = PhaseConfig(SPEC, run_id="r6", stages=("static",),
                      cable_plan={"gpu99": [CableSpec(hca="mlx5_0", switch="leaf-r0", switch_port=9, rail=0)]})
    res = run_phase(nodes(2), cfg, launcher=FakeLauncher(), evidence_dir=tmp_path)
    assert res.errors == ["cable plan names a node not in the inventory: gpu99"]
    (ghost,) = [c for c in res.cables if c.node_end.startswith("gpu99")]
    assert ghost.verdict is Outcome.ERROR and ghost.problem == "unknown-node"


def test_entry_point_reports_every_bad_input_by_name_and_keeps_the_rest(tmp_path, capsys, monkeypatch):
    """mpirun missing, a cable plan naming a node the node list does not have, a topology file
    that does not parse: one run, an ERROR line for each naming it (file:line), exit 3 (ERROR)."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    (tmp_path / "nodes.txt").write_text("g0 10.0.0.1 gpus=8 gpu=H100\ng1 10.0.0.2 gpus=8 gpu=H100\n")
    (tmp_path / "plan.yaml").write_text("g0:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1, rail: 0}\n"
                                        "gpu99:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 9, rail: 0}\n")
    (tmp_path / "x5.topo").write_text("\n".join(X5.splitlines()[:13] + ["[3]\t\"S-0008f105001"]) + "\n")
    (tmp_path / "spec.yaml").write_text(f"crossnode:\n  fabric: ib-ndr400\n  cable_plan: {tmp_path}/plan.yaml\n"
                                        f"  topology_file: {tmp_path}/x5.topo\n")
    rc = cli.main(["--nodes", str(tmp_path / "nodes.txt"), "--spec", str(tmp_path / "spec.yaml"),
                   "--ibnetdiscover", str(tmp_path / "x5.topo"), "--evidence", str(tmp_path / "ev"), "--run-id", "c"])
    out = capsys.readouterr().out
    assert rc == 3
    assert f"ERROR file {tmp_path}/x5.topo:14 does not parse: ibnetdiscover: not a port line" in out
    assert f"ERROR topology file {tmp_path}/x5.topo:14 does not parse" in out
    assert f"ERROR cable plan names a node not in the inventory: gpu99 ({tmp_path}/plan.yaml:3)" in out
    assert "ERROR mpirun: mpirun not found ('mpirun' is not on PATH)" in out
    assert "CABLE ERROR gpu99:mlx5_0/1 <-> leaf-r0:9: unknown-node" in out
    assert "CABLE ERROR g0:mlx5_0/1 <-> leaf-r0:1: no-evidence" in out     # kept, not compared, not PASS
    assert "ERROR g0: untested (no job it was in was judged (mpirun: mpirun not found" in out
    assert (tmp_path / "ev" / "crossnode" / "c" / "result.json").is_file()


@pytest.mark.parametrize("name, text, why", [
    ("nodes.txt", "g0 10.0.0.1 gpus=8\ng1 10.0.0.2 gpus=eight\n", "nodes.txt:2: node 'g1': gpus='eight' is not a number"),
    ("nodes.txt", "g0 10.0.0.1 gpus=8\ng1 10.0.0.2 rack=4\n", "nodes.txt:2: node 'g1': unknown key 'rack'"),
    ("nodes.txt", "g0\ng1\ng0\n", "duplicate node names in the phase's node list: g0"),
    ("spec.yaml", "crossnode:\n  fabric: [ib\n", "spec.yaml:3: not YAML"),
    ("plan.yaml", "g0:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1}\n  - {hca: mlx5_1, switch: leaf-r1}\n",
     "cable plan {d}/plan.yaml:3: g0 cable 2: switch_port: Field required"),
    ("plan.yaml", "g0: [\n", "cable plan {d}/plan.yaml:2: not YAML"),
    ("x5.topo", None, "topology file {d}/x5.topo: [Errno 2] No such file or directory"),
])
def test_entry_point_refuses_input_that_makes_no_run_possible_naming_file_and_line(tmp_path, capsys, name, text, why):
    files = {"nodes.txt": "g0 10.0.0.1 gpus=8\ng1 10.0.0.2 gpus=8\n",
             "spec.yaml": f"crossnode:\n  fabric: ib-ndr400\n  cable_plan: {tmp_path}/plan.yaml\n"
                          f"  topology_file: {tmp_path}/x5.topo\n",
             "plan.yaml": "g0:\n  - {hca: mlx5_0, switch: leaf-r0, switch_port: 1}\n", "x5.topo": X5}
    files[name] = text
    for f, t in files.items():
        if t is not None:
            (tmp_path / f).write_text(t)
    rc = cli.main(["--nodes", str(tmp_path / "nodes.txt"), "--spec", str(tmp_path / "spec.yaml"),
                   "--evidence", str(tmp_path / "ev")])
    err = capsys.readouterr().err
    assert rc == 2 and why.format(d=tmp_path) in err, err
    assert not (tmp_path / "ev").exists()                  # nothing launched, nothing written


BW_OUT = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_0
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 8388608    5000           392.39             392.00\t\t   0.005841
---------------------------------------------------------------------------------------
"""
LAT_OUT = """\
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   \
99% percentile[usec]   99.9% percentile[usec] 
 2       5000          1.80           4.20         1.90     \t       1.94       \t0.05   \t\t2.10    \t\t3.15   
---------------------------------------------------------------------------------------
"""


class FakePairs:
    """perftest pairs as the stand-in prints them; a pair with a ``lost`` node fails to connect
    to it (nodegate's SSH transport: status "error"), as SshPairLauncher records it."""

    name = "ssh"

    def __init__(self, lost=()):
        self.lost, self.pairs = set(lost), []

    def run_pair(self, job_id, server, client, cmds, deadline_s, stop=None):
        self.pairs.append((server, client))
        rec = LaunchRecord(self.name, [" ".join(c) for c in cmds.values()], [server, client])
        for test, out in (("bw", BW_OUT), ("lat", LAT_OUT)):
            for side, node in (("server", server), ("client", client)):
                if node in self.lost:
                    rec.items[f"{test}_{side}"] = Item(b"", b"connect to 10.0.0.3 timed out", None, "error")
                    rec.unreachable[node] = "connect to 10.0.0.3 timed out"
                else:
                    rec.items[f"{test}_{side}"] = Item(out.encode() if side == "client" else b"", b"", 0)
        return rec


def test_a_node_lost_during_the_per_hca_rounds_is_not_judged_and_no_hca_of_it_is_blamed(tmp_path):
    ns = nodes(6)
    fp = FakePairs(lost={"g3"})
    res = run_phase(ns, PhaseConfig(SPEC, run_id="r11", stages=("static", "links")), launcher=FakeLauncher(),
                    pair_launcher=fp, evidence_dir=tmp_path)
    assert any("g3" in p for p in fp.pairs)
    g3 = res.node("g3")
    assert g3.state is NodeState.NOT_USED and "could not reach it during the run (connect to 10.0.0.3" in g3.why
    assert g3.jobs and all(res.job(j).verdict is Outcome.ERROR for j in g3.jobs)
    assert res.faults == [] and res.outcome is Outcome.ERROR          # never an "hca" fault of what was not measured
    good = [j for j in res.jobs if "g3" not in j.hosts]
    assert good and {j.verdict for j in good} == {Outcome.PASS}


def test_fewer_than_two_usable_nodes_is_untested_never_pass(tmp_path):
    res = run_phase(nodes(1), PhaseConfig(SPEC, run_id="r7", stages=("nodes",)), launcher=FakeLauncher(),
                    evidence_dir=tmp_path)
    assert res.nodes[0].state is NodeState.UNTESTED and res.outcome is Outcome.ERROR


def test_duplicate_node_names_are_refused(tmp_path):
    with pytest.raises(PhaseError, match="duplicate"):
        run_phase(nodes(2) + nodes(1), PhaseConfig(SPEC), launcher=FakeLauncher(), evidence_dir=tmp_path)


def test_plan_prints_jobs_and_rounds_without_launching():
    fl = FakeLauncher()
    text = plan_text(nodes(16), PhaseConfig(SPEC))
    assert "16 nodes in 4 domains" in text and "round 1 (screen): 4 jobs" in text
    assert "round 2 (representatives)" in text and "all pairs would be 120 jobs" in text
    assert "perftest jobs over 8 node pairs" in text and fl.launched == []


def test_entry_point_plan_and_bad_input(tmp_path, capsys):
    (tmp_path / "nodes.txt").write_text("".join(f"g{i} 10.0.0.{i} gpus=8 gpu=H100\n" for i in range(9)))
    (tmp_path / "spec.yaml").write_text("crossnode:\n  fabric: ib-ndr400\n")
    assert cli.main(["--nodes", str(tmp_path / "nodes.txt"), "--spec", str(tmp_path / "spec.yaml"), "--plan"]) == 0
    assert "9 nodes in 3 domains" in capsys.readouterr().out
    (tmp_path / "bad.yaml").write_text("crossnode:\n  fabric: ib-ndr400\n  lanucher: mpirun\n")
    assert cli.main(["--nodes", str(tmp_path / "nodes.txt"), "--spec", str(tmp_path / "bad.yaml"), "--plan"]) == 2
    assert "lanucher" in capsys.readouterr().err


def test_a_node_without_an_active_infiniband_port_is_not_used_as_a_partner(tmp_path):
    from .helpers import Hca
    ns = nodes(4)
    ns[2].bundle = node_bundle("g2", [Hca("mlx5_0", 0, "leaf-r0", 3, state="DOWN"),
                                      Hca("mlx5_1", 1, "leaf-r1", 3, state="DOWN")])
    res = run_phase(ns, PhaseConfig(SPEC, run_id="r8", stages=("static", "nodes")), launcher=FakeLauncher(),
                    evidence_dir=tmp_path)
    g2 = res.node("g2")
    assert g2.state is NodeState.NOT_USED and "no Active InfiniBand port" in g2.why and "mlx5_0 DOWN" in g2.why
    assert not any("g2" in j.hosts for j in res.jobs)
    assert [c.problem for c in res.cables if c.node_end.startswith("g2")] == ["down", "down"]


def test_each_mpirun_gets_a_session_directory_base_of_its_own_and_it_is_removed(tmp_path, monkeypatch):
    """Concurrent mpiruns on one host race on <TMPDIR>/ompi.<host>.<uid> (open-mpi/ompi#8510: "A
    call to mkdir was unable to create the desired directory"; seen in this project's CI with
    the screen rounds' jobs side by side): each launch runs mpirun with a private TMPDIR."""
    import shutil
    import threading

    from nodegate.crossnode.launchers import LaunchRequest, MpirunLauncher
    if shutil.which("ssh") is None:
        pytest.skip("ssh (OpenSSH client) not installed: MpirunLauncher.available() refuses without it")
    fake = tmp_path / "mpirun"
    fake.write_text('#!/bin/sh\necho "TMPDIR=$TMPDIR"\ntest -d "$TMPDIR" && echo is-a-dir\n')
    fake.chmod(0o755)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    m = MpirunLauncher(mpirun=str(fake))
    recs = [None] * 4

    def one(i):
        recs[i] = m.launch(LaunchRequest(f"j{i}", ["a", "b"], {"a": "10.0.0.1", "b": "10.0.0.2"}, 1, ["true"]))
    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outs = [r.items["launch"].stdout.decode().split() for r in recs]
    dirs = {o[0].removeprefix("TMPDIR=") for o in outs}
    assert all(o[1:] == ["is-a-dir"] for o in outs)
    assert len(dirs) == 4 and str(tmp_path) not in dirs          # one each, never the shared one
    assert not any(os.path.exists(d) for d in dirs)              # removed with the hostfile
