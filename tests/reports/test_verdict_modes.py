"""The verdict does not depend on how the run was cut (issue 30).

- Shard size: every node's status and every item's outcome are identical with ``--shard-nodes``
  1, 4, 16 and unsharded, on the demo fleet (inventories/samples: its first shard holds failing
  nodes) and on copies of a healthy node behind one failing node (the second shard used to be
  reported "no selected item");
- a partial run never accepts a node: only the site's own tests (test paths), a check
  deselected: NOT EVALUATED with the reason in the terminal, HTML, JUnit and rma.json
  (nodegate.reports.status.verdict decides, for every run mode);
- exit 2 (a bad -k, a collection error, nothing collected) writes no report and leaves the
  previous run's reports as they were (nodegate.session.exitcodes).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from nodegate.reports.status import ACCEPTED, NEED_ACTION, NOT_EVALUATED, verdict

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples"
NODEGATE = Path(sys.executable).parent / "nodegate"


def nodegate(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([str(NODEGATE), *argv, "-p", "no:cacheprovider", "-q", "--tb=no", "-rN"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def outcome_of_run(reports: Path) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(node -> status from report.html, nodeid -> outcome from results.jsonl, node -> rma.json reason)."""
    html = (reports / "report.html").read_text()
    status = dict(re.findall(r'<tr id="n-([^"]*)" data-status="([^"]*)"', html))
    items = {}
    for ln in (reports / "results.jsonl").read_text().splitlines():
        d = json.loads(ln)
        items[d["nodeid"]] = d["outcome"]
    ne = {d["node"]: d["reason"] for d in json.loads((reports / "rma.json").read_text())["not_evaluated"]}
    return status, items, ne


# ------------------------------------------------------------------ the one verdict function
def test_verdict_needs_every_catalog_check():
    cat = ("NG-A-001", "NG-B-001")
    assert verdict(Counter(passed=0, **{"pass": 2}), 2, judged={"NG-A-001", "NG-B-001"}, catalog=cat) == (ACCEPTED, "")
    st, why = verdict(Counter({"pass": 1}), 1, judged={"NG-A-001", "SITE-1"}, catalog=cat)
    assert st == NOT_EVALUATED and "1 of 2 acceptance checks" in why and "NG-B-001" in why
    assert verdict(Counter({"pass": 1, "fail": 1}), 2, judged={"NG-A-001"}, catalog=cat)[0] == NEED_ACTION
    assert verdict(Counter({"pass": 2}), 2, run_reason="NOT EVALUATED: x", judged=set(cat), catalog=cat) == \
        (NOT_EVALUATED, "NOT EVALUATED: x")


# ------------------------------------------------------------------ shard size
def _failing_first_fleet(dst: Path) -> Path:
    """One failing node (sorts first) and nine healthy copies (bench/scale.py's copies: machines
    of their own)."""
    from bench.scale import make_copies
    shutil.copytree(SAMPLES / "fleet" / "aer-fatal-upstream", dst / "aer-fatal-upstream")
    make_copies(dst, 9)
    return dst


@pytest.fixture(scope="module")
def shard_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    fleets = {"demo": SAMPLES, "failing-first": _failing_first_fleet(base / "fleet")}
    out = {}
    for name, fleet in fleets.items():
        for size in (1, 4, 16, 0):
            rep = base / f"{name}-{size}"
            r = nodegate(["--replay", str(fleet), "--reports-dir", str(rep), "--shard-nodes", str(size)], base)
            assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]   # both fleets hold findings
            out[(name, size)] = outcome_of_run(rep) + (r.stdout,)
    return out


@pytest.mark.parametrize("fleet", ["demo", "failing-first"])
def test_shard_size_changes_no_verdict(shard_runs, fleet):
    status0, items0, ne0, _ = shard_runs[(fleet, 0)]
    assert not ne0, ne0
    assert NOT_EVALUATED not in status0.values()
    for size in (1, 4, 16):
        status, items, ne, out = shard_runs[(fleet, size)]
        assert status == status0, (size, {n: s for n, s in status.items() if status0.get(n) != s})
        assert items == items0, size
        assert ne == ne0
        assert "no selected item" not in out


def test_failing_first_fleet_verdict(shard_runs):
    status, _, _, out = shard_runs[("failing-first", 4)]
    assert status["aer-fatal-upstream"] == NEED_ACTION
    assert Counter(status.values()) == Counter({ACCEPTED: 9, NEED_ACTION: 1})
    assert "nodegate verdict: 9 accepted, 1 need action, 0 not evaluated" in out


def test_a_sharded_run_stopped_by_x_says_why_for_the_shards_it_never_collected(tmp_path):
    """-x stops a sharded replay in its first shard: the nodes of the later shards were never
    collected, so nothing deselected them (their reason said "no selected item (deselected by
    -k/-m/--lf/--deselect)"; found by a new-user trial with Ctrl-C)."""
    fleet = _failing_first_fleet(tmp_path / "fleet")
    rep = tmp_path / "rep"
    r = nodegate(["--replay", str(fleet), "--reports-dir", str(rep), "--shard-nodes", "2", "-x"], tmp_path)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    status, _, ne = outcome_of_run(rep)
    assert status["aer-fatal-upstream"] == NEED_ACTION
    later = sorted(fleet_node for fleet_node in status if status[fleet_node] == NOT_EVALUATED)
    assert len(later) == 9
    assert not any("no selected item" in why for why in ne.values()), ne
    # the second node of the first shard was collected: its items did not run; the rest never collected
    assert sum("its items were not collected: the run stopped before this node's shard" in why
               for why in ne.values()) == 8, ne
    assert "no selected item" not in r.stdout


# ------------------------------------------------------------------ a partial run never accepts
SITE_TEST = '''import pytest


@pytest.mark.nodegate_check(id="SITE-OK-001", severity="minor", remediation="nothing to do")
def test_site_ok(host):
    assert host is not None
'''


def test_site_tests_alone_accept_no_node(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "test_ok.py").write_text(SITE_TEST)
    rep = tmp_path / "rep"
    r = nodegate(["site/", "--replay", str(SAMPLES / "fleet" / "h200-580-open-healthy"), "--reports-dir", str(rep)],
                 tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "nodegate verdict: 0 accepted, 0 need action, 1 not evaluated" in r.stdout
    status, items, ne = outcome_of_run(rep)
    assert status == {"h200-580-open-healthy": NOT_EVALUATED}
    assert list(items.values()) == ["pass"]
    assert "acceptance checks of the catalog did not run" in ne["h200-580-open-healthy"]
    props = {p.get("name"): p.get("value") for p in ET.parse(rep / "junit.xml").getroot().iter("property")}
    assert props["status"] == NOT_EVALUATED and "acceptance checks of the catalog" in props["not_evaluated"]
    page = (rep / "nodes" / "h200-580-open-healthy.html").read_text()
    assert "acceptance checks of the catalog did not run" in page


# ------------------------------------------------------------------ exit 2 writes nothing
def _previous_reports(rep: Path) -> dict[str, bytes]:
    (rep / "bundles").mkdir(parents=True)
    files = {"report.html": b"previous html", "junit.xml": b"<testsuites/>", "rma.json": b"{}",
             "results.jsonl": b"", "bundles/old.tar.gz": b"previous archive"}
    for k, v in files.items():
        (rep / k).write_bytes(v)
    return files


def _untouched(rep: Path, files: dict[str, bytes]) -> None:
    got = {str(p.relative_to(rep)): p.read_bytes() for p in rep.rglob("*") if p.is_file()}
    assert got == files


@pytest.mark.parametrize("case", ["bad -k", "bad -m", "collection error", "nothing collected", "nothing selected"])
def test_exit_2_leaves_the_previous_reports_untouched(tmp_path, case):
    rep = tmp_path / "rep"
    files = _previous_reports(rep)
    argv = ["--replay", str(SAMPLES / "fleet" / "h200-580-open-healthy"), "--reports-dir", str(rep)]
    if case == "bad -k":
        argv += ["-k", "(("]
    elif case == "bad -m":
        argv += ["-m", "critical and"]
    elif case == "collection error":
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "test_bad.py").write_text("def test_x(:\n")
        argv = ["site/", *argv]
    elif case == "nothing collected":
        (tmp_path / "empty").mkdir()
        argv = ["empty/", *argv]
    else:
        argv += ["-k", "no_such_check_anywhere"]
    r = nodegate(argv, tmp_path)
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-2000:]
    _untouched(rep, files)


def test_a_path_without_tests_is_exit_2_not_5(tmp_path):
    (tmp_path / "empty").mkdir()
    r = nodegate(["empty/"], tmp_path)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
    assert "no nodegate check collected" in r.stdout + r.stderr or "no test collected" in r.stderr
    rep = tmp_path / "reports"   # its folders are created (empty) when checked at start-up: no file
    assert not rep.exists() or not any(p.is_file() for p in rep.rglob("*"))


# ------------------------------------------------------------------ a collection error in a later shard
_SHARD_ERROR = '''
from nodegate.run import RUN_KEY


def pytest_generate_tests(metafunc):
    # collected again for every shard: fails only while the shard holding {bad!r} is collected
    run = metafunc.config.stash.get(RUN_KEY, None)
    if run is not None and {bad!r} in run.nodes:
        raise RuntimeError("site file cannot be collected for {bad}")


def test_site_ok():
    pass
'''


@pytest.mark.parametrize("where", ["first", "later"])
def test_a_collection_error_in_any_shard_is_exit_2_with_the_reports_untouched(tmp_path, where):
    """Issue 40.8: a collection error in the second shard gives what one in the first gives: exit
    2, and no report written over the previous ones (a later shard's error used to exit 2 after
    the first shard's reports were half written)."""
    fleet = tmp_path / "fleet"
    fleet.mkdir()
    names = ["h100-535-healthy", "h200-580-open-healthy"]
    for n in names:
        shutil.copytree(SAMPLES / "fleet" / n, fleet / n)
    bad = names[0] if where == "first" else names[1]
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "test_shard_bad.py").write_text(_SHARD_ERROR.format(bad=bad))
    rep = tmp_path / "rep"
    files = _previous_reports(rep)
    r = nodegate(["suites", "site/", "--replay", str(fleet), "--reports-dir", str(rep), "--shard-nodes", "1"],
                 tmp_path)
    assert r.returncode == 2, r.stdout[-3000:] + r.stderr[-2000:]
    assert "1 error" in r.stdout, r.stdout[-2000:]   # the collection error, reported by pytest
    _untouched(rep, files)
