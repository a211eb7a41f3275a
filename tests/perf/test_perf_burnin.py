"""``--perf --burn-in`` end to end over SSH (issue 29: the performance phase "composes with
--burn-in (perf before and after the soak is a common acceptance recipe)"; docs/perf.md).

One healthy simulated 8x H200 node (tools/fleet perf-healthy, built on the ``_perf-h200`` test profile:
the perf shims answer at once), its perf tests cut to nvbandwidth, nccl and one HCA's ib_write_bw
(gpu_burn's 5 s minimum twice is left out: this file runs in ``make test``), a 3 s gpu_burn soak. ONE
``python -m pytest suites --perf --burn-in 3s`` run; the tests read its bundle, results.jsonl and
reports, then replay the bundles. Outcomes only, never timings. Needs root, sshd and busybox (skips
otherwise)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = "perf-burnin"
LABELS = ("before", "after")
#: the perf tests of this node and the bundle keys each leaves per label (nodegate/perf/perf.sh)
PERF_SPEC = {"tests": ["nvbandwidth", "nccl", "ib_write_bw"], "ib_hcas": ["mlx5_0"]}
PERF_KEYS = ("run", "tools", "nvbandwidth", "nvbandwidth.state", "nccl", "nccl.state", "ib_write_bw.mlx5_0",
             "ib_write_bw.mlx5_0.state")
#: docs/burnin.md "Bundle keys" (burnin.samples etc. exist only when the load ran)
BURNIN_KEYS = ("run", "tools", "fields", "samples", "load", "events", "klog_start", "klog_end")
#: exec channels per node: the probe, perf before the soak, the burn-in, perf after it (docs/perf.md
#: "What runs on the node": ONE exec per node per perf phase; docs/burnin.md: ONE exec for the burn-in)
EXECS = 4
#: deadlines for a loaded 2-core machine (tests/conftest.py: the shared fleet run's figures)
CONNECT_TIMEOUT, PROBE_TIMEOUT = 60, 90


def _suite(args: list[str], reports: Path) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """``python -m pytest suites`` (every item: the catalog, perf and burn-in); {test id: record}."""
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "--reports-dir", str(reports),
           *args]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    res = reports / "results.jsonl"
    assert res.is_file(), f"no results (exit {r.returncode}):\n{r.stdout[-4000:]}\n{r.stderr[-3000:]}"
    out = {}
    for line in res.read_text().splitlines():
        d = json.loads(line)
        out[d["nodeid"].split("::", 1)[1]] = d
    return r, out


def _exec_counts(fleet, want: int) -> dict[str, int]:
    """The fleet's exec channels per node, once sshd's forked children have logged them (late on a
    busy machine): waits until every node shows ``want`` or 30 s pass, then returns what is there."""
    end = time.monotonic() + 30
    while True:
        got = fleet.exec_counts()
        if all(v >= want for v in got.values()) or time.monotonic() > end:
            return got
        time.sleep(0.2)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from tools.fleet import Fleet, Profile, sshd_available
    from tools.fleet.perf_profiles import load_perf_profiles
    why = sshd_available()
    if why is not None:
        pytest.skip(f"simulated fleet unavailable: {why}")
    base = load_perf_profiles()["perf-healthy"]
    spec = dict(base.spec)
    spec["perf"] = {**spec["perf"], **PERF_SPEC}
    # gpu_burn is the soak (the shim sleeps the duration on its command line, as the real one runs):
    # dcgmi, which `auto` would pick first, answers at once here and would end the window early
    spec["burnin"] = {"load": "gpu-burn", "interval_s": 1, "grace_s": 5, "stop_grace_s": 1}
    prof = Profile(NODE, {**base.data, "spec": spec}, base.chain)
    tmp = tmp_path_factory.mktemp("perf-burnin")
    with Fleet([prof]) as f:
        r, results = _suite(["--perf", "--burn-in", "3s", "--inventory", str(f.inventory_path),
                             "--known-hosts", str(f.known_hosts_path), "--bundles-dir", str(tmp / "bundles"),
                             "--connect-timeout", str(CONNECT_TIMEOUT), "--probe-timeout", str(PROBE_TIMEOUT)],
                            tmp / "reports")
        execs = _exec_counts(f, EXECS)
        replay_r, replay = _suite(["--replay", str(tmp / "bundles")], tmp / "replay")
        yield {"proc": r, "results": results, "bundle": tmp / "bundles" / NODE, "reports": tmp / "reports",
               "execs": execs, "execs_after_replay": f.exec_counts(), "replay_proc": replay_r, "replay": replay}


def _keys(bundle: Path) -> set[str]:
    return set(json.loads((bundle / "meta.json").read_text())["items"])


def test_the_bundle_holds_perf_before_and_after_the_soak_and_the_burnin(run):
    keys = _keys(run["bundle"])
    for lab in LABELS:
        assert {f"perf.{lab}.{k}" for k in PERF_KEYS} <= keys, lab
        meta = json.loads((run["bundle"] / f"perf.{lab}.run.out").read_text())
        assert (meta["label"], meta["status"], meta["tests"]) == (lab, "ok", PERF_SPEC["tests"])
    assert {f"burnin.{k}" for k in BURNIN_KEYS} <= keys
    assert not any(k.startswith("perf.") and k.split(".")[1] not in LABELS for k in keys), \
        "with --burn-in every perf key carries its label"
    burn = json.loads((run["bundle"] / "burnin.run.out").read_text())
    assert (burn["status"], burn["duration_s"]) == ("ok", 3)
    assert "load: gpu-burn" in (run["bundle"] / "burnin.tools.out").read_text()
    assert (run["bundle"] / "burnin.samples.out").read_text().count("# sample ") >= 2
    # the order of the three phases (the records' own clocks: ISO UTC strings compare as times)
    before = json.loads((run["bundle"] / "perf.before.run.out").read_text())
    after = json.loads((run["bundle"] / "perf.after.run.out").read_text())
    assert before["finished_at"] <= burn["started_at"] and burn["finished_at"] <= after["started_at"]


def test_perf_items_exist_for_both_labels_and_pass(run):
    res = run["results"]
    by_label: dict[str, dict[str, str]] = {lab: {} for lab in LABELS}
    for k, d in res.items():
        if not k.startswith("test_perf_"):
            continue
        scope, rest = k.removeprefix("test_perf_").split("[", 1)
        assert rest.startswith(NODE + "-"), k
        lab, item = rest.removeprefix(NODE + "-").split("-", 1)
        assert lab in LABELS, k
        by_label[lab][f"{scope}[{item}"] = d["outcome"]
    assert by_label["before"] and by_label["before"].keys() == by_label["after"].keys()
    assert {o for lab in LABELS for o in by_label[lab].values()} == {"pass"}
    scopes = {s: sum(1 for k in by_label["before"] if k.startswith(s + "[")) for s in ("gpu", "link", "hca", "node")}
    # 8 GPUs x (host-to-device, device-to-host); 8 x 7 read pairs; one HCA; the all-reduce's
    # out-of-place and in-place halves, its data check, and the P2P matrix's localisation
    assert scopes == {"gpu": 16, "link": 56, "hca": 1, "node": 4}
    t = res[f"test_perf_gpu[{NODE}-after-nvbandwidth-h2d-ce-gpu0]"]
    assert "(after burn-in)" in t["title"], t["title"]


def test_burnin_items_pass_and_the_node_is_accepted(run):
    res = run["results"]
    burn = {k: d["outcome"] for k, d in res.items() if k.startswith("test_burnin_")}
    # dcgm SKIPs: the load was gpu_burn, not dcgmi (docs/burnin.md "Rules")
    assert burn.pop(f"test_burnin_dcgm[{NODE}]") == "skip"
    # load and gpu_count per node; clocks, pcie_link, ecc, remapped_rows, xid, temperature per GPU
    assert len(burn) == 2 + 6 * 8 and set(burn.values()) == {"pass"}
    assert {d["outcome"] for d in res.values()} <= {"pass", "skip"}
    assert run["proc"].returncode == 0, run["proc"].stdout[-3000:]
    assert "nodegate verdict: 1 accepted, 0 need action, 0 not evaluated" in run["proc"].stdout
    rma = json.loads((run["reports"] / "rma.json").read_text())
    assert (rma["rows"], rma["not_evaluated"]) == ([], [])
    with open(run["reports"] / "actions.csv", newline="") as fh:
        assert list(csv.DictReader(fh)) == []


def test_one_exec_per_phase_per_node(run):
    assert run["execs"] == {NODE: EXECS}, "probe + perf before + burn-in + perf after"


def test_replay_gives_identical_outcomes_without_the_network(run):
    assert run["replay_proc"].returncode == 0, run["replay_proc"].stdout[-3000:]
    assert {k: d["outcome"] for k, d in run["replay"].items()} == \
        {k: d["outcome"] for k, d in run["results"].items()}
    assert run["execs_after_replay"] == run["execs"], "the replay opened no channel"


def _raise_h2d(bundle: Path, key: str, gpu: int, drop: float) -> None:
    """Make baseline ``bundle``'s ``key`` (an nvbandwidth output) read GPU ``gpu``'s host-to-device
    figure so that the run's 55.20 is ``drop`` below it (meta.json's byte count kept in step)."""
    out = bundle / f"{key}.out"
    text = out.read_text()
    row = " 0" + "".join(f"{55.2:10.2f}" for _ in range(8))
    assert row in text
    vals = [55.2 / (1 - drop) if i == gpu else 55.2 for i in range(8)]
    text = text.replace(row, " 0" + "".join(f"{v:10.2f}" for v in vals), 1)
    out.write_text(text)
    meta = json.loads((bundle / "meta.json").read_text())
    meta["items"][key]["bytes"] = len(text.encode())   # the files must agree with meta.json
    (bundle / "meta.json").write_text(json.dumps(meta))


def test_baseline_from_a_perf_burnin_run_compares_each_phase_with_its_own(run, tmp_path):
    """A baseline taken by this recipe holds perf.before/after, no perf.run: each phase of the run is
    compared with the same phase there (a 6 % drop FAILs rule baseline), a plain --perf run with its
    before phase (nodegate/perf/judge.py baseline_label)."""
    import shutil
    from nodegate.bundle import Bundle
    from nodegate.perf.judge import baseline_label
    base = tmp_path / "baseline" / NODE
    shutil.copytree(run["bundle"], base)
    _raise_h2d(base, "perf.before.nvbandwidth", 1, 0.06)
    _raise_h2d(base, "perf.after.nvbandwidth", 0, 0.06)
    b = Bundle.load(base)
    assert [baseline_label(b, lab) for lab in ("", "before", "after")] == ["before", "before", "after"]
    r, got = _suite(["--replay", str(run["bundle"].parent), "--baseline", str(base.parent)], tmp_path / "reports")
    bad = {k: d for k, d in got.items() if k.startswith("test_perf_") and d["outcome"] != "pass"}
    assert {k: d["outcome"] for k, d in bad.items()} == {
        f"test_perf_gpu[{NODE}-before-nvbandwidth-h2d-ce-gpu1]": "fail",
        f"test_perf_gpu[{NODE}-after-nvbandwidth-h2d-ce-gpu0]": "fail"}, r.stdout[-3000:]
    assert all(d["rule"] == "baseline" and "6.0% below this node's baseline" in d["message"] for d in bad.values())
