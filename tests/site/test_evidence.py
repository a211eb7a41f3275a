"""Declared site evidence: the spec's site_evidence commands inside the probe's one exec."""

from __future__ import annotations

import pytest

from nodegate.errors import SpecError
from nodegate.run import GatherOptions, NodeJob, gather_node
from nodegate.site.evidence import DeclaredEvidence, SiteEvidenceError, probe_items
from nodegate.spec import load_spec

SPEC = {"site_evidence": {"greeting": "echo hello; echo warn >&2", "missing": "nodegate-no-such-tool --x",
                          "quoted": "printf '%s\\n' \"it's\"", "fails": "exit 3"}}


@pytest.fixture(scope="module")
def bundle():
    job = NodeJob(name="local", url="local://", shown_url="local://", spec_raw=SPEC)
    return gather_node(job, GatherOptions(gpu_source="smi", command_timeout=10, probe_timeout=60))


def test_each_declared_command_is_an_item_of_the_one_probe_exec(bundle):
    assert bundle.meta["status"] == "ok" and bundle.meta["complete"] is True
    ev = bundle.items["site_evidence.greeting"]
    assert (ev.stdout, ev.stderr, ev.rc, ev.status) == (b"hello\n", b"warn", 0, "ok")
    assert bundle.items["site_evidence.quoted"].stdout == b"it's\n"
    assert list(bundle.items)[-4:] == ["site_evidence.greeting", "site_evidence.missing", "site_evidence.quoted",
                                       "site_evidence.fails"]


def test_fixture_value_gives_output_exit_code_and_timing(bundle):
    d = DeclaredEvidence("local", SPEC["site_evidence"], bundle)
    g = d["greeting"]
    assert (g.stdout, g.stderr, g.rc, g.status, g.text()) == ("hello\n", "warn", 0, "ok", "hello\n")
    assert isinstance(g.duration_s, float) and g.duration_s >= 0
    assert sorted(d) == sorted(SPEC["site_evidence"])


def test_text_of_a_missing_tool_or_failed_command_is_an_evidence_error(bundle):
    d = DeclaredEvidence("local", SPEC["site_evidence"], bundle)
    assert d["missing"].rc == 127
    with pytest.raises(SiteEvidenceError, match=r"site_evidence missing .*: tool missing"):
        d["missing"].text()
    with pytest.raises(SiteEvidenceError, match=r"exit code 3"):
        d["fails"].text()
    assert d["fails"].text(ok_rcs=(3,)) == ""


def test_undeclared_or_uncollected_names_are_errors(bundle):
    d = DeclaredEvidence("local", {"greeting": "x", "later": "y"}, bundle)
    with pytest.raises(SiteEvidenceError, match="'nope' is not declared in local's spec"):
        d["nope"]
    with pytest.raises(SiteEvidenceError, match=r"later .*not collected \[site_evidence.later\]"):
        d["later"]


def test_probe_items_render_in_spec_order_quoted():
    assert probe_items({"site_evidence": {"b": "echo 'x'", "a": "ibstat"}}) == (
        "# site_evidence (nodegate/site/evidence.py): the spec's declared commands\n"
        "ng_item site_evidence.b ng_to sh -c 'echo '\"'\"'x'\"'\"''\n"
        "ng_item site_evidence.a ng_to sh -c 'ibstat'\n")
    assert probe_items({}) == "" and probe_items({"site_evidence": {}}) == ""


@pytest.mark.parametrize("decl, msg", [
    ({"Bad-Name": "x"}, "nodegate.site_evidence: Value error, name 'Bad-Name'"),
    ({"ok": ""}, "ok: the command must be a non-empty string"),
    ({"ok": "a\x00b"}, "without NUL"),
    ({"ok": 5}, "site_evidence.ok: Input should be a valid string"),
], ids=["name", "empty", "nul", "type"])
def test_bad_site_evidence_is_a_spec_error_naming_the_key(decl, msg):
    with pytest.raises(SpecError) as e:
        load_spec({"site_evidence": decl}, "inv.yml")
    assert msg in str(e.value)


def test_site_vars_are_free_values():
    s = load_spec({"site_vars": {"ib_rate_gbps": 400, "nested": {"a": [1, 2]}}}, "inv.yml")
    assert s.site_vars == {"ib_rate_gbps": 400, "nested": {"a": [1, 2]}}
