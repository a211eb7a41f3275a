"""Site checks in --baseline: a site test that passed on the baseline and fails now is a
regression (test_regression_site FAILs, changes.json lists it); fixed, new and not-run checks
are changes (nodegate/site/baseline.py)."""

from __future__ import annotations

import json
import textwrap

from nodegate.site.baseline import compare

from .runner import inventory, run_pytest


def _r(outcome, title="t", message=""):
    return {"check_id": "X", "outcome": outcome, "title": title, "message": message}


def test_compare_pass_to_fail_is_the_only_regression():
    regs, changes, rows, notes = compare(
        {"A": _r("pass", "a"), "B": _r("fail"), "C": _r("pass"), "D": _r("pass"), "E": _r("pass")},
        {"A": _r("fail", "a", "fm inactive"), "B": _r("pass"), "C": _r("pass"), "D": _r("error"), "F": _r("pass")})
    assert [(r.kind, r.field, r.before, r.after, r.message) for r in regs] == [
        ("site", "A", "pass", "fail", "site check A (a) passed on the baseline and fails now: fm inactive")]
    assert [(c.field, c.before, c.after, c.note) for c in changes] == [
        ("B", "fail", "pass", "fixed since the baseline"), ("D", "pass", "error", "pass -> error"),
        ("E", "pass", None, "site check not run in this run"), ("F", None, "pass", "new site check (not in the baseline)")]
    assert [(r.field, r.status) for r in rows] == [("A", "regression"), ("B", "change"), ("C", "same"),
                                                   ("D", "change"), ("E", "change"), ("F", "change")]
    assert notes == []


def test_compare_with_a_baseline_without_site_results_compares_nothing_and_says_so():
    regs, changes, rows, notes = compare(None, {"A": _r("fail")})
    assert (regs, changes) == ([], [])
    assert notes == ["the baseline bundle has no site results (taken without site tests, or by --replay)"]


SITE = textwrap.dedent('''
    def test_marker_present(host, nodegate_node):
        """marker file present"""
        assert host.file(nodegate_node.vars["marker"]).exists, "marker file gone"

    def test_flag_absent(host, nodegate_node):
        assert not host.file(nodegate_node.vars["flag"]).exists
''')


def test_a_site_check_that_passed_on_the_baseline_and_fails_now_is_a_regression(tmp_path):
    marker, flag = tmp_path / "marker", tmp_path / "flag"
    marker.write_text("")
    flag.write_text("")
    (tmp_path / "site").mkdir()
    site = tmp_path / "site" / "test_site.py"
    site.write_text(SITE)
    inv = inventory(tmp_path / "inv.yml", {"box": {"ansible_connection": "local"}},
                    {"site_vars": {"marker": str(marker), "flag": str(flag)}})
    base = run_pytest([str(site), "--inventory", str(inv)], tmp_path / "base")
    assert base.outcomes() == {"test_marker_present[box]": "pass", "test_flag_absent[box]": "fail"}
    marker.unlink()     # the upgrade broke it ...
    flag.unlink()       # ... and fixed the other
    now = run_pytest(["suites/test_regressions.py", str(site), "--inventory", str(inv), "--baseline",
                      str(tmp_path / "base" / "bundles")], tmp_path / "now")
    got = now.outcomes()
    assert (got["test_marker_present[box]"], got["test_flag_absent[box]"], got["test_regression_site[box]"]) == (
        "fail", "pass", "fail"), now.output[-3000:]
    assert now.properties("test_regression_site[box]")["check_id"] == "NG-REG-SITE"
    assert now.message("test_regression_site[box]").startswith(
        "[NG-REG-SITE] site check SITE-MARKER-PRESENT (marker file present) passed on the baseline and fails "
        "now: marker file gone")
    doc = json.loads((tmp_path / "now" / "changes.json").read_text())
    node = doc["nodes"]["box"]
    assert [(r["kind"], r["check_id"], r["item"], r["field"]) for r in node["regressions"] if r["kind"] == "site"] == [
        ("site", "NG-REG-SITE", "test_regression_site[box]", "SITE-MARKER-PRESENT")]
    assert [(c["field"], c["before"], c["after"], c["note"]) for c in node["changes"] if c["kind"] == "site"] == [
        ("SITE-FLAG-ABSENT", "fail", "pass", "fixed since the baseline")]
    assert now.rc == 1    # the site check's own FAIL: not "regressions only"


def test_without_site_tests_there_is_no_site_regression_item(tmp_path):
    inv = inventory(tmp_path / "inv.yml", {"box": {"ansible_connection": "local"}})
    base = run_pytest(["suites/test_driver.py", "--inventory", str(inv)], tmp_path / "base")
    assert base.junit.exists()
    now = run_pytest(["suites/test_regressions.py", "--inventory", str(inv), "--baseline",
                      str(tmp_path / "base" / "bundles")], tmp_path / "now")
    got = now.outcomes()
    assert "test_regression_checks[box]" in got and "test_regression_site[box]" not in got
