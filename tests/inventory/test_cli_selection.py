"""The ``nodegate`` command and selection as pytest users expect, on the bundled sample fleet
(--replay: nothing is contacted) and with --collect-only on inventories of unreachable
addresses (nothing is contacted either: a run that did would fail these tests on the bundles
directory it writes).

- ``nodegate`` runs the installed suites from any directory, whatever its pytest.ini/conftest.py;
- ``pytest --inventory /elsewhere/hosts.yml`` from the checkout collects only the suites;
- ``-k NG-CLK-001`` / ``-k clocks_event_reasons`` select one check, ``-m critical`` and
  ``-m "pcie and not minor"`` by marker (registered, listed by ``--markers``);
- a node without a selected item is NOT EVALUATED in the summary, HTML, JUnit and rma.json;
- no nodegate check selected: exit 2 with the reason; ``--collect-only`` writes no report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples"
NODEGATE = Path(sys.executable).parent / "nodegate"
NODES = sorted(p.name for p in (SAMPLES / "fleet").iterdir() if (p / "meta.json").is_file())
#: the sample nodes a replay is limited to where the whole fleet is not the property (docs/contributing.md,
#: "the smallest size where the property holds"): a healthy node, one with a clocks finding (the -k node
#: below) and one with a PCIe finding; the whole fleet takes ~1 min of CPU a replay, these ~3 s
SUBSET = ["clocks-power-brake", "h100-535-healthy", "pcie-gen4-slot"]
LIMIT = ("--limit", ",".join(SUBSET))


def run(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="160")
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def elsewhere(tmp_path):
    """A working directory with a hostile pytest.ini and conftest.py of its own."""
    d = tmp_path / "site"
    d.mkdir()
    (d / "pytest.ini").write_text("[pytest]\naddopts = --strict-markers -p no:nodegate\ntestpaths = nothing\n")
    (d / "conftest.py").write_text("raise SystemExit('the working directory conftest.py was loaded')\n")
    return d


def no_bundle(reports: Path) -> bool:
    """No node's evidence was written (the output locations are checked, and so created, at start)."""
    d = reports / "bundles"
    return not d.exists() or not any(d.iterdir())


def junit_cases(path: Path) -> list[ET.Element]:
    return list(ET.parse(path).getroot().iter("testcase"))


def test_nodegate_runs_the_installed_suites_from_any_directory(elsewhere):
    r = run([str(NODEGATE), "--replay", str(SAMPLES / "fleet"), *LIMIT, "-q", "--tb=no", "-p", "no:cacheprovider"],
            elsewhere)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]   # the samples hold findings on purpose
    assert "conftest.py was loaded" not in r.stdout + r.stderr
    assert (elsewhere / "reports" / "junit.xml").is_file() and (elsewhere / "reports" / "rma.json").is_file()
    names = {c.get("classname") for c in junit_cases(elsewhere / "reports" / "junit.xml")}
    assert names and all(n.startswith("suites.test_") for n in names)


def test_nodegate_list_hosts_from_any_directory_contacts_nobody(elsewhere):
    inv = ROOT / "tests" / "inventory" / "data" / "precedence" / "hosts.yml"
    r = run([str(NODEGATE), "--inventory", str(inv), "--limit", "h200", "--list-hosts=json"], elsewhere)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(h["name"], h["address"], h["port"], h["user"], h["connection"], h["password_set"]) for h in rows] == [
        ("gpu004", "gpu004", 2403, "all_ssh_user", "ssh", False),
        ("gpu002", "gpu002", 2403, "all_ssh_user", "ssh", False)]
    assert set(rows[0]) == {"name", "address", "port", "user", "key_file", "connection", "ansible_connection",
                            "password_set", "become", "groups"}
    assert not (elsewhere / "reports").exists()
    t = run([str(NODEGATE), "--inventory", str(inv), "--limit", "gpu001", "--list-hosts"], elsewhere)
    assert t.returncode == 0 and "gpu001  paramiko    10.1.0.1  2201  all_ssh_user" in t.stdout
    assert "from-host-vars" not in t.stdout + t.stderr   # the password itself is never shown


@pytest.mark.parametrize("argv,why", [
    (["--inventory", "{d}/missing.yml"], "missing.yml: no such file or directory"),
    (["--inventory", "{d}/bad.yml"], "ansible-core refused it"),
    (["--inventory", "{inv}", "--limit", "nope"], "--limit 'nope' matches no host"),
])
def test_list_hosts_errors_exit_2(elsewhere, argv, why):
    inv = ROOT / "tests" / "inventory" / "data" / "precedence" / "hosts.yml"
    (elsewhere / "bad.yml").write_text("all:\n  hosts: [unclosed\n")
    argv = [a.format(d=elsewhere, inv=inv) for a in argv]
    r = run([str(NODEGATE), *argv, "--list-hosts"], elsewhere)
    assert r.returncode == 2 and why in r.stdout + r.stderr


def _unreachable_inventory(tmp_path) -> Path:
    # loopback, a closed port: nothing may be contacted anyway, and nothing could be reached
    p = tmp_path / "outside" / "hosts.yml"
    p.parent.mkdir()
    p.write_text("all:\n  vars: {nodegate: {gpu: {count: 2}}}\n  hosts:\n"
                 "    gpu001: {ansible_host: 127.0.0.1, ansible_port: 1}\n    gpu002: {ansible_host: 127.0.0.1, ansible_port: 1}\n")
    return p


@pytest.mark.parametrize("how", ["=", "-p"])
def test_pytest_with_an_inventory_outside_the_checkout_collects_only_the_suites(tmp_path, how):
    """``--inventory=PATH`` (README): pytest keeps the checkout as rootdir and its conftest.py
    loads nodegate. ``-p nodegate.plugins --inventory PATH``: pytest reads PATH as a test path
    and moves the rootdir beside it (no conftest.py of the checkout there), but the plugin is
    loaded by name and collects the suites, with a warning."""
    inv = _unreachable_inventory(tmp_path)
    opt = [f"--inventory={inv}"] if how == "=" else ["-p", "nodegate.plugins", "--inventory", str(inv)]
    r = run([sys.executable, "-m", "pytest", *opt, "--collect-only", "-q",
             "-p", "no:cacheprovider", "--reports-dir", str(tmp_path / "reports")], ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    ids = [ln for ln in r.stdout.splitlines() if "::" in ln]
    suites = {p.name for p in (ROOT / "suites").glob("test_*.py")}
    assert ids and all(i.split("::")[0].rsplit("/", 1)[-1] in suites for i in ids), ids[:5]
    assert not any("tests/" in i for i in ids)
    assert {i.split("[")[1].split("-")[0].rstrip("]") for i in ids if "[" in i} == {"gpu001", "gpu002"}
    assert not (tmp_path / "reports").exists()   # --collect-only: no report, no bundle


def test_collect_only_contacts_nobody_and_writes_nothing(tmp_path, elsewhere):
    inv = _unreachable_inventory(tmp_path)
    r = run([str(NODEGATE), "--inventory", str(inv), "--collect-only", "-q"], elsewhere)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "gathering" not in r.stdout
    assert not (elsewhere / "reports").exists()


def test_no_check_selected_exits_2_before_contacting(tmp_path, elsewhere):
    inv = _unreachable_inventory(tmp_path)
    r = run([str(NODEGATE), "--inventory", str(inv), "-k", "no_such_check", "-q"], elsewhere)
    assert r.returncode == 2
    assert "no nodegate check selected" in r.stdout + r.stderr and "-k 'no_such_check'" in r.stdout + r.stderr
    assert no_bundle(elsewhere / "reports")


def test_gather_first_learns_the_selection_before_gathering(tmp_path, elsewhere):
    inv = _unreachable_inventory(tmp_path)
    r = run([str(NODEGATE), "--inventory", str(inv), "--gather-first", "-k", "no_such_check", "-q"], elsewhere)
    assert r.returncode == 2 and "no nodegate check selected" in r.stdout + r.stderr
    assert no_bundle(elsewhere / "reports")


def _replay(tmp_path, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    """The sample fleet replayed, limited to SUBSET (``extra`` after the limit)."""
    out = tmp_path / "reports"
    r = run([str(NODEGATE), "--replay", str(SAMPLES / "fleet"), *LIMIT, "--reports-dir", str(out), "-q", "--tb=no",
             "-p", "no:cacheprovider", *extra], tmp_path)
    return r, out


@pytest.fixture(scope="module")
def brake_replay(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """ONE ``-k clocks-power-brake`` replay, read by the tests below (none writes into it)."""
    return _replay(tmp_path_factory.mktemp("brake"), "-k", "clocks-power-brake")


@pytest.mark.parametrize("k", ["NG-CLK-001", "clocks_event_reasons"])
def test_k_selects_a_check_by_id_or_name(tmp_path, k):
    r, out = _replay(tmp_path, "-k", k)
    assert r.returncode in (0, 1), r.stdout[-2000:]
    cases = junit_cases(out / "junit.xml")
    assert cases and {c.get("name").split("[")[0] for c in cases} == {"test_clocks_event_reasons"}
    assert set(SUBSET) < set(NODES)
    assert {c.get("name").split("[")[1].split("-gpu")[0] for c in cases} == set(SUBSET)   # a GPU check: every node


def test_m_selects_by_severity_and_area(tmp_path):
    from nodegate import checks
    defs = checks.load_all().values()
    crit = {f"test_{c.name}" for c in defs if c.severity == "critical"}
    pcie = {f"test_{c.name}" for c in defs if c.func.__module__ == "nodegate.checks.pcie" and c.severity != "minor"}
    r, out = _replay(tmp_path, "-m", "critical")
    got = {c.get("name").split("[")[0] for c in junit_cases(out / "junit.xml")}
    assert got == crit, r.stdout[-1500:]
    (tmp_path / "2").mkdir()
    r, out = _replay(tmp_path / "2", "-m", "pcie and not minor")
    got = {c.get("name").split("[")[0] for c in junit_cases(out / "junit.xml")}
    assert got == pcie


def test_markers_are_registered_and_listed(tmp_path):
    r = run([str(NODEGATE), "--markers"], tmp_path)
    assert r.returncode == 0
    for m in ("critical:", "major:", "minor:", "pcie:", "clocks:", "ecc:", "kernel_log:", "burnin:"):
        assert f"@pytest.mark.{m}" in r.stdout


def test_deselected_nodes_are_not_evaluated_never_healthy(brake_replay):
    node = "clocks-power-brake"
    r, out = brake_replay
    assert r.returncode == 1, r.stdout[-2000:]
    text = r.stdout
    others = [n for n in SUBSET if n != node]
    assert f"{len(SUBSET)} node(s): 0 healthy" in text
    assert "NOT EVALUATED: no selected item" in text
    html = (out / "report.html").read_text()
    assert f"0 accepted, 1 need action, {len(others)} not evaluated" in html
    # the matrix's status cell of each says why (and so does its node page)
    assert html.count('title="NOT EVALUATED: no selected item') == len(others)
    assert "NOT EVALUATED: no selected item" in (out / "nodes" / f"{others[0]}.html").read_text()
    # JUnit: each node's suite has its status and why (nodegate.reports.junit)
    suites = {s.get("name"): {p.get("name"): p.get("value") for p in s.iter("property")}
              for s in ET.parse(out / "junit.xml").getroot().iter("testsuite") if s.get("hostname")}
    ne = sorted(n for n, p in suites.items() if p.get("status") == "not evaluated")
    assert ne == sorted(others)
    assert all(suites[n]["not_evaluated"].startswith("NOT EVALUATED: no selected item") for n in ne)
    doc = json.loads((out / "rma.json").read_text())
    assert sorted(e["node"] for e in doc["not_evaluated"]) == sorted(others)


def test_maxfail_leaves_the_rest_not_evaluated(tmp_path):
    r, out = _replay(tmp_path, "--maxfail", "1")
    assert r.returncode == 1
    doc = json.loads((out / "rma.json").read_text())
    reasons = {e["node"]: e["reason"] for e in doc["not_evaluated"]}
    assert len(reasons) >= len(SUBSET) - 1
    assert all("did not run" in v or "no selected item" in v for v in reasons.values())


def test_an_extracted_evidence_archive_replays_where_it_was_extracted(tmp_path, brake_replay):
    """docs/reports.md: ``tar xzf n1.tar.gz && nodegate --replay n1``, in the folder of the archive."""
    import tarfile
    node = "clocks-power-brake"
    r, out = brake_replay
    archive = out / "bundles" / f"{node}.tar.gz"
    assert archive.is_file(), r.stdout[-1500:]
    there = tmp_path / "ticket"
    there.mkdir()
    with tarfile.open(archive) as t:
        # filter= exists from Python 3.11.4 (and backports); Debian 12's 3.11.2 has none
        t.extractall(there, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    r2 = run([str(NODEGATE), "--replay", node, "-q", "--tb=no", "-p", "no:cacheprovider"], there)
    assert r2.returncode == 1, r2.stdout[-2000:] + r2.stderr[-1000:]   # the node's findings again
    assert (there / "reports" / "junit.xml").is_file()
    cases = junit_cases(there / "reports" / "junit.xml")
    assert cases and all(f"[{node}" in c.get("name") for c in cases)


def test_two_hosts_on_one_address_and_host_key_checking_off_are_warnings(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  hosts:\n    gpu001: {ansible_host: 10.0.0.1}\n    gpu002: {ansible_host: 10.0.0.1, ansible_port: 22}\n"
                   "    gpu003: {ansible_host: 10.0.0.3, ansible_host_key_checking: false}\n")
    r = run([str(NODEGATE), "--inventory", str(inv), "--list-hosts"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("nodegate: warning: inventory hosts gpu001 and gpu002 resolve to the same address and port "
            "(10.0.0.1:22)") in r.stderr
    assert "gpu003: the inventory turns host key checking off; nodegate verifies host keys all the same" in r.stderr


@pytest.mark.parametrize("opt, why", [(["--known-hosts", "NOPE"], "--known-hosts NOPE: no such file"),
                                      (["--forks", "0"], "--forks 0: at least 1"),
                                      (["--inventroy=x"], "unrecognized arguments: --inventroy=x")])
def test_unusable_options_exit_2_naming_them(tmp_path, elsewhere, opt, why):
    inv = _unreachable_inventory(tmp_path)
    r = run([str(NODEGATE), "--inventory", str(inv), *opt, "-q"], elsewhere)
    assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]   # pytest's usage error (4) is 2 here
    assert why in r.stdout + r.stderr
    assert "gathering" not in r.stdout and not (elsewhere / "reports").exists()


def test_limit_at_file_with_a_space_reads_ansibles_retry_file(tmp_path, elsewhere):
    """pytest (8.2+) expands an argument starting with @ as a file of arguments: the nodegate
    command passes ``--limit @FILE`` as ``--limit=@FILE`` so Ansible reads the retry file."""
    p = tmp_path / "hosts.yml"
    p.write_text("all:\n  hosts:\n    gpu01: {}\n    gpu02: {}\n    gpu03: {}\n")
    (elsewhere / "retry.txt").write_text("gpu01\ngpu03\n")
    r = run([str(NODEGATE), "--inventory", str(p), "--limit", "@retry.txt", "--list-hosts=json"], elsewhere)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [h["name"] for h in json.loads(r.stdout)] == ["gpu01", "gpu03"]


def test_a_missing_inventory_file_is_said_so(tmp_path, elsewhere):
    r = run([str(NODEGATE), "--inventory", str(tmp_path / "nope.yml"), "-q"], elsewhere)
    assert r.returncode == 2
    assert f"nodegate: inventory error: inventory {tmp_path / 'nope.yml'}: no such file or directory" in r.stdout + r.stderr


def test_an_inventory_node_without_a_bundle_is_error(tmp_path, elsewhere):
    """--replay with an inventory: a node the inventory names and the replay has no bundle of is
    missing evidence (ERROR on every item), never left out of the reports."""
    import shutil
    b = tmp_path / "b"
    shutil.copytree(ROOT / "inventories" / "samples" / "fleet" / "h200-580-open-healthy", b / "h200-580-open-healthy")
    inv = tmp_path / "inv.yml"
    inv.write_text("all:\n  hosts:\n    h200-580-open-healthy: {}\n    ghost: {}\n")
    r = run([str(NODEGATE), "--inventory", str(inv), "--replay", str(b), "-q", "--tb=no",
             "--reports-dir", str(elsewhere / "r")], elsewhere)
    assert r.returncode == 1, r.stdout[-2000:]
    assert "1 accepted, 1 need action, 0 not evaluated" in r.stdout
    recs = [json.loads(ln) for ln in (elsewhere / "r" / "results.jsonl").read_text().splitlines()]
    ghost = [x for x in recs if x["node"] == "ghost"]
    assert ghost and all(x["outcome"] == "error" and "no bundle for this inventory node" in x["message"]
                         for x in ghost)


@pytest.mark.parametrize("addr", ["-oProxyCommand=touch /tmp/x", "root@10.0.0.7", "10.0.0.8:2222",
                                  "10.0.0.5?sudo=true", "10.0.0.9#", "ssh://10.0.0.1"])
def test_an_address_that_is_no_address_exits_2(tmp_path, elsewhere, addr):
    inv = tmp_path / "inv.yml"
    inv.write_text(f"all:\n  hosts:\n    n1: {{ansible_host: {json.dumps(addr)}}}\n")
    r = run([str(NODEGATE), "--inventory", str(inv), "--list-hosts"], elsewhere)
    assert r.returncode == 2 and "is not a host name or IP address" in r.stdout + r.stderr
    assert addr in r.stdout + r.stderr


@pytest.mark.parametrize("addr", ["10.1.2.3", "2001:db8::1", "fe80::1%eth0", "gpu01.example.com", "gpu_01"])
def test_real_addresses_are_accepted(tmp_path, elsewhere, addr):
    inv = tmp_path / "inv.yml"
    inv.write_text(f"all:\n  hosts:\n    n1: {{ansible_host: {json.dumps(addr)}}}\n")
    r = run([str(NODEGATE), "--inventory", str(inv), "--list-hosts=json"], elsewhere)
    assert r.returncode == 0, r.stderr[-1000:]
    assert json.loads(r.stdout)[0]["address"] == addr


def test_nodegate_i_repeated_merges_sources_and_shows_password_logins(elsewhere):
    """``nodegate -i A -i B`` is ``ansible -i A -i B``; a password with Ansible's ssh is shown as
    nodegate's paramiko transport, the password never."""
    data = ROOT / "tests" / "inventory" / "data" / "multi"
    r = run([str(NODEGATE), "-i", str(data / "common" / "hosts.ini"), f"-i{data / 'site' / 'hosts.yml'}",
             "--limit", "slurm-node", "--list-hosts"], elsewhere)
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines()[2:] if ln.strip()]
    assert [x[0] for x in rows] == ["gpu01", "gpu02", "gpu03", "gpu04"]
    assert "gpu02  paramiko (password; Ansible: ssh)  10.1.0.12  2202" in r.stdout
    assert "gpu04  paramiko                           10.1.0.14  22" in r.stdout
    assert "vagrant\n" not in r.stdout and "gpu03-pass" not in r.stdout + r.stderr
