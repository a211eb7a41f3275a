"""Site files as sites have them, run unchanged by the ``nodegate`` command from the site's folder
(local nodes; the same over SSH: test_fleet_site.py): ``testinfra_hosts`` in testinfra's and
molecule's forms restricts a module to the inventory nodes it names (ansible-core patterns, -i
twice), item ids carry the path as the user gave it (terminal, results.jsonl, JUnit, --deselect),
two files with one test name keep both outcomes, and --replay runs the same items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from .runner import ROOT, Run

NODEGATE = Path(sys.executable).parent / "nodegate"

COMMON = textwrap.dedent("""\
    # the cluster's shared layout (DeepOps-like groups)
    [slurm-node]
    gpu01
    gpu02

    [slurm-master]
    login01

    [all:vars]
    ansible_connection=local
""")
SITE_INV = textwrap.dedent("""\
    # the site's own source: one more GPU node, in the h200 group
    all:
      children:
        slurm-node:
          hosts:
            gpu03: {ansible_connection: local}
        h200:
          hosts:
            gpu03:
""")
# the three shapes of the real files: testinfra's ansible:// group, molecule's AnsibleRunner over
# MOLECULE_INVENTORY_FILE, and none (every node). Molecule's scaffolded test checks /etc/hosts; this
# one checks /etc/passwd, which every Debian machine has (base-passwd): no package ships /etc/hosts
# (the installer or the container runtime writes it), so a bare chroot has none
SLURM = textwrap.dedent('''
    testinfra_hosts = ['ansible://slurm-node:!h200']

    def test_service(host, nodegate_node):
        """slurmd's node answers"""
        assert host.check_output("echo %s", nodegate_node.name) == nodegate_node.name
''')
MOLECULE = textwrap.dedent('''
    import os

    import testinfra.utils.ansible_runner

    testinfra_hosts = testinfra.utils.ansible_runner.AnsibleRunner(
        os.environ['MOLECULE_INVENTORY_FILE']).get_hosts('all')


    def test_hosts_file(host):
        f = host.file('/etc/passwd')
        assert f.exists
        assert f.user == 'root'
''')
EVERY = textwrap.dedent('''
    def test_service(host, nodegate_node):
        """same test name as slurm/test_slurm.py's"""
        assert nodegate_node.name != "gpu02", "gpu02 is drained"

    def test_lookup(host):
        {}["no-such-key"]
''')
NAMED = textwrap.dedent('''
    testinfra_hosts = ["login01", "ssh://root@gpu03:22"]

    def test_named(host):
        assert host.run("true").rc == 0
''')


def nodegate(args: list[str], cwd: Path, out: Path) -> Run:
    env = dict(os.environ, COLUMNS="200")
    for k in ("PYTEST_ADDOPTS", "MOLECULE_INVENTORY_FILE"):
        env.pop(k, None)
    # the venv's bin not on PATH, as when nodegate is run by its full path
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != Path(sys.executable).parent.resolve())
    p = subprocess.run([str(NODEGATE), *args, "-p", "no:cacheprovider", "-o", "junit_family=xunit2",
                        "--reports-dir", str(out), "-rA"], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=600)
    return Run(p.returncode, p.stdout + p.stderr, out)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    (d / "inventory").mkdir()
    (d / "inventory" / "common.ini").write_text(COMMON)
    (d / "inventory" / "site.yml").write_text(SITE_INV)
    for folder, name, text in (("slurm", "test_slurm.py", SLURM), ("molecule/default/tests", "test_default.py",
                                                                   MOLECULE),
                               ("checks", "test_every.py", EVERY), ("checks", "test_named.py", NAMED)):
        (d / folder).mkdir(parents=True, exist_ok=True)
        (d / folder / name).write_text(text)
    return d


ARGS = ["slurm/", "./molecule/default/tests", "checks", "-i", "inventory/common.ini", "-i", "inventory/site.yml"]
WANT = {
    "slurm/test_slurm.py::test_service[gpu01]": "pass", "slurm/test_slurm.py::test_service[gpu02]": "pass",
    **{f"molecule/default/tests/test_default.py::test_hosts_file[{n}]": "pass"
       for n in ("gpu01", "gpu02", "login01", "gpu03")},
    "checks/test_every.py::test_service[gpu01]": "pass", "checks/test_every.py::test_service[gpu02]": "fail",
    "checks/test_every.py::test_service[login01]": "pass", "checks/test_every.py::test_service[gpu03]": "pass",
    **{f"checks/test_every.py::test_lookup[{n}]": "fail" for n in ("gpu01", "gpu02", "login01", "gpu03")},
    "checks/test_named.py::test_named[login01]": "pass", "checks/test_named.py::test_named[gpu03]": "pass",
}


def outcomes(run: Run) -> dict[str, str]:
    return {d["nodeid"]: d["outcome"] for d in map(json.loads, (run.out / "results.jsonl").read_text().splitlines())
            if d.get("check_id", "").startswith("SITE-")}


@pytest.fixture(scope="module")
def live(site):
    return nodegate(ARGS, site, site / "live")


def test_testinfra_hosts_restricts_each_module_to_the_nodes_it_names(live):
    assert outcomes(live) == WANT, live.output[-4000:]
    assert live.rc == 1


def test_ids_carry_the_path_as_given_in_terminal_junit_and_results(live):
    assert "FAILED checks/test_every.py::test_service[gpu02] - [SITE-SERVICE] gpu02 is drained" in live.output
    assert "PASSED slurm/test_slurm.py::test_service[gpu01]" in live.output
    assert "../" not in "".join(ln for ln in live.output.splitlines() if ln.startswith(("PASSED", "FAILED")))
    import defusedxml.ElementTree as DET
    names = {(tc.get("classname"), tc.get("name")) for tc in DET.parse(live.junit).getroot().iter("testcase")}
    assert ("slurm.test_slurm", "test_service[gpu01]") in names
    assert ("checks.test_every", "test_service[gpu02]") in names
    assert ("molecule.default.tests.test_default", "test_hosts_file[gpu03]") in names


def test_an_exception_in_a_site_tests_body_is_fail_as_pytest_reports_it(live):
    rec = live.record("test_lookup[gpu01]")
    assert (rec["outcome"], rec["observed"]) == ("fail", "KeyError: 'no-such-key'")


def test_two_files_with_one_test_name_keep_both_outcomes_in_the_bundle(live):
    res = json.loads((live.out / "bundles" / "gpu02" / "meta.json").read_text())["site"]["results"]
    got = {k: v["outcome"] for k, v in res.items() if "SITE-SERVICE" in k}
    assert got == {"SITE-SERVICE": "pass", "checks/test_every.py::SITE-SERVICE": "fail"}
    groups = json.loads((live.out / "bundles" / "gpu03" / "meta.json").read_text())["groups"]
    assert set(groups) == {"all", "slurm-node", "h200"}


def test_replay_runs_the_same_items_with_the_recorded_groups(live, site):
    r = nodegate([*ARGS[:3], "--replay", "live/bundles"], site, site / "replay")
    assert outcomes(r) == WANT, r.output[-4000:]


def test_deselect_by_the_path_as_given(site):
    r = nodegate([*ARGS, "--deselect", "checks/test_every.py::test_lookup", "--deselect",
                  "checks/test_every.py::test_service[gpu02]", "--limit", "gpu02"], site, site / "deselect")
    assert outcomes(r) == {"slurm/test_slurm.py::test_service[gpu02]": "pass",
                           "molecule/default/tests/test_default.py::test_hosts_file[gpu02]": "pass"}, r.output[-3000:]


def test_testinfra_hosts_nodegate_cannot_map_are_errors_naming_file_and_value(tmp_path):
    (tmp_path / "inv.yml").write_text("all: {hosts: {n1: {ansible_connection: local}}}\n")
    bad = {"test_docker.py": "['docker://box']", "test_query.py": "['ansible://all?ansible_inventory=/x']",
           "test_str.py": "'ansible://all'"}
    for name, value in bad.items():
        (tmp_path / name).write_text(f"testinfra_hosts = {value}\n\ndef test_x(host):\n    pass\n")
    r = nodegate([*bad, "-i", "inv.yml"], tmp_path, tmp_path / "r")
    assert r.rc == 2
    for want in ("test_docker.py: testinfra_hosts entry 'docker://box' cannot be mapped onto the run's inventory nodes",
                 "test_query.py: testinfra_hosts entry 'ansible://all?ansible_inventory=/x': nodegate cannot honour "
                 "?ansible_inventory=/x",
                 "test_str.py: testinfra_hosts = 'ansible://all': a list of host specs"):
        assert want in r.output, r.output[-3000:]
