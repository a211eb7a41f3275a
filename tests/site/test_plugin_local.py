"""Site tests in nodegate runs on local nodes (``ansible_connection: local``, ``--target``): items
per node, outcomes, report contract, refusals. pytest subprocesses, no SSH (test_fleet_site.py)."""

from __future__ import annotations

import os
import re
import textwrap

import pytest

from .runner import inventory, run_pytest

SITE = textwrap.dedent('''
    import pytest

    def test_hostname(host):
        """node answers"""
        assert host.check_output("echo %s", "up") == "up"

    @pytest.mark.nodegate_check(id="SITE-FILE-001", severity="critical", remediation="Create the marker file.")
    def test_marker_file(host):
        """the marker file exists"""
        assert host.file("{missing}").exists, "marker file missing"

    @pytest.mark.nodegate_check(timeout=1)
    def test_hangs(host):
        host.run("exec sleep 30")

    def test_swallows_the_error(host):
        try:
            host.run("exec sleep 30", timeout=1)
        except Exception:
            pass

    def test_crashes(host):
        {{}}["no-such-key"]

    def test_skips(host):
        pytest.skip("not for this node")

    def test_skipped_by_spec(host):
        assert False

    @pytest.mark.parametrize("path", ["/", "/etc"])
    def test_dirs(host, path):
        assert host.file(path).is_directory

    def test_node_view(nodegate_node, site_evidence):
        assert nodegate_node.vars == {{"rack": "r1"}}
        assert site_evidence["hello"].text() == "hi\\n"
''')

EXPECTED = {
    "test_hostname[{n}]": "pass", "test_marker_file[{n}]": "fail", "test_hangs[{n}]": "error",
    "test_swallows_the_error[{n}]": "error", "test_crashes[{n}]": "fail", "test_skips[{n}]": "skip",
    "test_skipped_by_spec[{n}]": "skip", "test_dirs[{n}-/]": "pass", "test_dirs[{n}-/etc]": "pass",
    "test_node_view[{n}]": "pass",
}
SPEC = {"checks": {"skip": ["SITE-SKIPPED-BY-SPEC"]}, "site_vars": {"rack": "r1"},
        "site_evidence": {"hello": "echo hi"}}


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("site")
    (d / "test_site.py").write_text(SITE.format(missing=d / "no-such-marker"))
    return d


@pytest.fixture(scope="module")
def live(site_dir, tmp_path_factory):
    t = tmp_path_factory.mktemp("live")
    inv = inventory(t / "inv.yml", {"box1": {"ansible_connection": "local"},
                                    "box2": {"ansible_connection": "local"}}, SPEC)
    return run_pytest([str(site_dir / "test_site.py"), "--inventory", str(inv), "--command-timeout", "5"],
                      t / "reports")


def test_every_site_test_runs_on_every_inventory_node_with_its_outcome(live):
    want = {k.format(n=n): v for n in ("box1", "box2") for k, v in EXPECTED.items()}
    assert live.outcomes() == want, live.output[-3000:]
    assert live.rc == 1


def test_junit_properties_follow_the_suite_contract(live):
    p = live.properties("test_marker_file[box2]")
    # a FAIL's JUnit properties: the suite items' (nodegate.reports.junit.ITEM_PROPS), in their order
    from nodegate.reports.junit import ITEM_PROPS
    from tests.junit_view import cases
    props = next(pr for _, n, _, _, pr in cases(live.junit) if n == "test_marker_file[box2]")
    assert tuple(k for k, _ in props) == ITEM_PROPS
    assert (p["node"], p["check_id"], p["severity"], p["remediation"]) == (
        "box2", "SITE-FILE-001", "critical", "Create the marker file.")
    assert (p["expected"], p["observed"]) == ("the marker file exists", "marker file missing")
    assert p["spec_source"] == f"inventory {live.out.parent / 'inv.yml'}"
    ok = live.properties("test_hostname[box1]")
    assert (ok["check_id"], ok["severity"], ok["remediation"]) == ("SITE-HOSTNAME", "major", "")


def test_errors_are_junit_errors_naming_the_check_and_the_reason(live):
    # nodegate's JUnit (nodegate.reports.junit): "[check id] could not evaluate: why"
    assert live.message("test_hangs[box1]") == (
        "[SITE-HANGS] could not evaluate: 'exec sleep 30': timed out (the command "
        "deadline was reached before it finished)")
    assert "could not evaluate: 'exec sleep 30': timed out" in live.message("test_swallows_the_error[box1]")
    # an exception in the test's body is the test's failure, as pytest and testinfra report it
    assert live.message("test_crashes[box1]") == "[SITE-CRASHES] KeyError: 'no-such-key'"
    assert live.properties("test_crashes[box1]")["observed"] == "KeyError: 'no-such-key'"
    assert live.message("test_skipped_by_spec[box1]") == (
        "[SITE-SKIPPED-BY-SPEC] checks.skip lists SITE-SKIPPED-BY-SPEC: not applicable to this node")


def test_site_failures_are_rows_of_the_rma_sheets(live):
    """A site FAIL whose remediation is the site's own work ("Create the marker file.": fix
    configuration) is a row of actions.csv, as nodegate's checks are (rma.csv holds only what
    needs the vendor: nodegate.reports.rma)."""
    import csv
    assert live.rma() == []
    rows = [r for r in csv.DictReader((live.out / "actions.csv").open()) if "SITE-FILE-001" in r["failed_checks"]]
    assert sorted(r["node"] for r in rows) == ["box1", "box2"]
    assert {(r["severity"], r["action"]) for r in rows} == {("critical", "fix configuration")}


def test_html_report_lists_site_checks_per_node_and_per_check(live):
    html = (live.out / "report.html").read_text()
    assert "SITE-FILE-001" in html and "the marker file exists" in html
    assert "box1" in html and "box2" in html


def test_terminal_summary_counts_site_items_per_node(live):
    assert "box1      4     2     2     2  ok" in live.output


def test_the_run_records_every_command_in_each_nodes_bundle(live):
    import json
    meta = json.loads((live.out / "bundles" / "box1" / "meta.json").read_text())
    cmds = [c["command"] for c in meta["site"]["commands"]]
    assert cmds[0] == "echo up"
    assert "exec sleep 30" in cmds
    assert meta["site"]["results"]["SITE-FILE-001"]["outcome"] == "fail"
    assert meta["site"]["results"]["SITE-DIRS[/etc]"]["outcome"] == "pass"
    assert meta["items"]["site_evidence.hello"]["rc"] == 0


def test_replay_gives_identical_outcomes_without_network(live, site_dir, tmp_path):
    r = run_pytest([str(site_dir / "test_site.py"), "--replay", str(live.out / "bundles")], tmp_path / "r",
                   nonet=True)
    assert r.outcomes() == live.outcomes(), r.output[-3000:]


def test_replay_of_a_command_not_recorded_is_an_error(live, tmp_path):
    d = tmp_path / "vendor"
    d.mkdir()
    (d / "test_more.py").write_text("def test_new_command(host):\n    assert host.run('cat /etc/issue').rc == 0\n")
    r = run_pytest([str(d / "test_more.py"), "--replay", str(live.out / "bundles")], tmp_path / "r", nonet=True)
    assert r.outcomes() == {"test_new_command[box1]": "error", "test_new_command[box2]": "error"}
    assert r.message("test_new_command[box1]") == (
        "[SITE-NEW-COMMAND] could not evaluate: not recorded in the bundle: cat /etc/issue")


def test_limit_and_k_select_nodes_like_nodegates_checks(site_dir, tmp_path):
    inv = inventory(tmp_path / "inv.yml", {"box1": {"ansible_connection": "local"},
                                           "box2": {"ansible_connection": "local"}})
    r = run_pytest([str(site_dir / "test_site.py"), "--inventory", str(inv), "--limit", "box2", "-k", "hostname"],
                   tmp_path / "r")
    assert r.outcomes() == {"test_hostname[box2]": "pass"}


@pytest.mark.parametrize("opt", ["--hosts=local://", "--connection=ssh", "--ansible-inventory=/etc/ansible/hosts",
                                 "--ssh-config=/dev/null"])
def test_testinfras_host_options_are_refused_in_a_nodegate_run(opt, site_dir, tmp_path):
    r = run_pytest([str(site_dir / "test_site.py"), "--target", "local://", opt], tmp_path / "r")
    assert r.rc == 2
    flag = opt.split("=")[0]
    assert f"nodegate: {flag} is testinfra's; in a nodegate run site tests run on every node of --inventory FILE" \
        in r.output
    assert not (tmp_path / "r" / "junit.xml").exists()


def test_testinfras_nagios_mode_is_refused_in_a_nodegate_run(site_dir, tmp_path):
    # testinfra's --nagios replaced nodegate's summary and made a run with a FAIL exit 2 (Nagios'
    # CRITICAL), which README's table says is a usage error with no report written
    r = run_pytest([str(site_dir / "test_site.py"), "--target", "local://", "--nagios"], tmp_path / "r")
    assert r.rc == 2
    assert "nodegate: --nagios is testinfra's Nagios output" in r.output
    assert not (tmp_path / "r" / "junit.xml").exists()


def test_testinfra_hosts_nodegate_cannot_map_is_a_collection_error_naming_file_and_value(tmp_path):
    (tmp_path / "test_th.py").write_text("testinfra_hosts = ['local://']\n\ndef test_x(host):\n    pass\n")
    r = run_pytest([str(tmp_path / "test_th.py"), "--target", "local://"], tmp_path / "r")
    assert r.rc == 2
    assert (f"{tmp_path / 'test_th.py'}: testinfra_hosts entry 'local://' cannot be mapped onto the run's "
            "inventory nodes") in r.output


def test_without_inventory_host_is_the_local_node_named_as_nodegates_local_mode(site_dir, tmp_path):
    name = os.uname().nodename.split(".")[0] or "localhost"
    r = run_pytest(["suites/test_driver.py", str(site_dir / "test_site.py"), "-k", "hostname or driver_stack"],
                   tmp_path / "r")
    got = r.outcomes()
    assert got[f"test_hostname[{name}]"] == "pass"
    assert f"test_driver_stack[{name}]" in got
    assert {k.split("[")[1] for k in got} == {f"{name}]"}     # no "local" phantom node


def test_outside_a_nodegate_run_testinfra_keeps_its_own_host(site_dir, tmp_path):
    r = run_pytest([str(site_dir / "test_site.py"), "-k", "hostname"], tmp_path / "r", cwd=tmp_path)
    assert r.rc == 0, r.output[-2000:]
    assert re.search(r"^PASSED \S*test_site\.py::test_hostname\[local\]$", r.output, re.M), r.output[-2000:]
    assert not (tmp_path / "r" / "rma.csv").exists()


def test_testinfras_private_host_fixture_is_refused_too(tmp_path):
    (tmp_path / "test_th.py").write_text("def test_x(_testinfra_host):\n    pass\n")
    r = run_pytest([str(tmp_path / "test_th.py"), "--target", "local://"], tmp_path / "r")
    assert r.rc == 2
    assert "test_x: _testinfra_host is testinfra's per --hosts fixture; in a nodegate run use the host fixture" \
        in r.output


def test_bad_marker_is_a_collection_error_naming_it(tmp_path):
    (tmp_path / "test_bad.py").write_text(
        "import pytest\n\n@pytest.mark.nodegate_check(severity='urgent')\ndef test_x(host):\n    pass\n")
    r = run_pytest([str(tmp_path / "test_bad.py"), "--target", "local://"], tmp_path / "r")
    assert r.rc == 2
    assert "nodegate_check: severity 'urgent' is not one of critical, major, minor" in r.output


def test_a_node_that_was_not_gathered_errors_every_site_test_with_the_gather_failure(site_dir, tmp_path):
    inv = inventory(tmp_path / "inv.yml", {"gone": {"ansible_host": "127.0.1.250", "ansible_port": 9}})
    r = run_pytest([str(site_dir / "test_site.py"), "--inventory", str(inv), "-k", "hostname or marker",
                    "--connect-timeout", "2"], tmp_path / "r")
    assert r.outcomes() == {"test_hostname[gone]": "error", "test_marker_file[gone]": "error"}
    assert r.message("test_hostname[gone]").startswith(
        "[SITE-HOSTNAME] could not evaluate: node not gathered: refused: connection refused")


def test_xdist_workers_give_the_same_outcomes_and_record_into_the_bundles(live, site_dir, tmp_path):
    t = live.out.parent
    r = run_pytest([str(site_dir / "test_site.py"), "--inventory", str(t / "inv.yml"), "--command-timeout", "5",
                    "-n", "2", "--dist", "loadgroup"], tmp_path / "r")
    assert r.outcomes() == live.outcomes(), r.output[-3000:]
    import json
    meta = json.loads((tmp_path / "r" / "bundles" / "box2" / "meta.json").read_text())
    assert "echo up" in [c["command"] for c in meta["site"]["commands"]]


def test_sudo_runs_the_probe_and_the_site_shell_through_sudo_n(site_dir, tmp_path):
    # a stand-in sudo on PATH that logs how it was called and runs the command
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "sudo.log"
    (bin_ / "sudo").write_text(f'#!/bin/sh\necho "$*" >> {log}\n[ "$1" = -n ] && shift\nexec "$@"\n')
    (bin_ / "sudo").chmod(0o755)
    inv = inventory(tmp_path / "inv.yml", {"box": {"ansible_connection": "local"}})
    r = run_pytest([str(site_dir / "test_site.py"), "-k", "hostname", "--inventory", str(inv), "--sudo"],
                   tmp_path / "r", env={"PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"})
    assert r.outcomes() == {"test_hostname[box]": "pass"}, r.output[-2000:]
    from nodegate.transport import SCRIPT_RUNNER
    # the probe (read whole, then run: issue 37.8), then the site shell (streamed, one command at a time)
    assert log.read_text().splitlines() == [f"-n sh -c {SCRIPT_RUNNER}", "-n sh -s"]
    import json
    cmds = json.loads((tmp_path / "r" / "bundles" / "box" / "meta.json").read_text())["site"]["commands"]
    assert [c["command"] for c in cmds] == ["echo up"]    # --sudo is not part of the recorded command


def test_node_text_in_a_site_failure_is_escaped(tmp_path):
    """A site FAIL quoting node output prints as one escaped line (OSC 52, clear screen, bidi
    never reach the terminal), as nodegate's own checks do."""
    (tmp_path / "test_evil.py").write_text(
        "def test_evil(host):\n"
        "    out = host.check_output(\"printf '\\\\033]52;c;ZXZpbA==\\\\007\\\\033[2Jbad'\")\n"
        "    assert out == 'good', out\n")
    inv = inventory(tmp_path / "inv.yml", {"box": {"ansible_connection": "local"}})
    r = run_pytest([str(tmp_path / "test_evil.py"), "--inventory", str(inv)], tmp_path / "r")
    assert r.outcomes() == {"test_evil[box]": "fail"}, r.output[-2000:]
    assert "\x1b" not in r.output and "\x07" not in r.output
    assert "[SITE-EVIL] \\x1b]52;c;ZXZpbA==\\x07\\x1b[2Jbad" in r.output
