"""Pure parts of the burn-in: duration grammar, spec model, DCGM JSON, stream splitting, SVG."""

from __future__ import annotations

import json
import pytest

from nodegate.bundle import Bundle, Evidence
from nodegate.burnin import rules as R
from nodegate.burnin.dcgm import parse_dcgm
from nodegate.burnin.plot import svg_for_node
from nodegate.burnin.script import render, split
from nodegate.burnin.series import parse_samples
from nodegate.burnin.spec import BurninSpec, burnin_spec, load_burnin_spec, parse_duration
from nodegate.errors import ParseError, SpecError


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("90", 90), ("10m", 600), ("2h", 7200), ("1h30m", 5400),
                                          (45, 45)], ids=["s", "bare", "m", "h", "hm", "int"])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "ten minutes", "0s", "100h", "5d"], ids=["empty", "words", "zero", "too_long", "days"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        parse_duration(text)


def test_spec_defaults():
    s = BurninSpec()
    assert (s.load, s.interval_s, s.fail_mask, s.early_tolerance, s.max_temperature_c) == ("auto", 5, 0xE8, 10, None)


def test_spec_unknown_key_names_it():
    with pytest.raises(SpecError, match=r"nodegate\.burnin\.intervall: unknown key"):
        load_burnin_spec({"intervall": 3}, "inv.yml")


def test_spec_command_load_needs_a_command():
    with pytest.raises(SpecError, match="burnin.command is not set"):
        load_burnin_spec({"load": "command"})


def test_spec_rejects_shell_in_binary_and_unknown_reason():
    with pytest.raises(SpecError, match="gpu_burn"):
        load_burnin_spec({"gpu_burn": "gpu_burn; rm -rf /"})
    with pytest.raises(SpecError, match="unknown clocks event reason"):
        load_burnin_spec({"fail_reasons": ["hw_melting"]})


def test_burnin_spec_from_mounted_section_or_raw():
    class S:
        burnin = BurninSpec(interval_s=2)
    assert burnin_spec(S()).interval_s == 2
    assert burnin_spec(None, {"burnin": {"interval_s": 7}}).interval_s == 7
    assert burnin_spec(None, {}).interval_s == 5


def test_render_quotes_spec_values():
    s, mk = render(BurninSpec(load="command", command="echo 'x'; sleep {seconds}", gpu_burn_args=["-tc", "a b"]), 30)
    assert "NG_CMD='echo '\"'\"'x'\"'\"'; sleep 30'" in s
    assert "NG_DUR=30" in s and mk in s
    assert not [ln for ln in s.replace(mk, "").splitlines() if "@@" in ln and not ln.startswith("#")]


def test_split_drops_heartbeats_and_events_inside_items():
    mk = "@@NG-" + "ab" * 12
    data = (f"{mk} EV start 100 duration_s=5\n{mk} BEGIN sample.1 1.0 100\nrow1\n{mk} HB 101\nrow2\n\n"
            f"{mk} END sample.1 rc=0 1.2\n{mk} HB 102\n{mk} DONE\n").encode()
    st = split(data, mk)
    assert st.items["sample.1"].stdout == b"row1\nrow2\n"
    assert (st.heartbeats, st.events[0].name, st.events[0].fields, st.complete) == (2, "start", {"duration_s": "5"}, True)
    assert st.starts["sample.1"] == (1.0, 100)


DCGM4 = """{"DCGM Diagnostic": {"test_categories": [{"category": "Integration", "tests": [{"name": "pcie",
 "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"},
             {"entity_group": "GPU", "entity_group_id": 1, "entity_id": 1, "status": "Fail",
              "warnings": [{"warning": "PCIe replay threshold exceeded", "error_id": 21}]},
             {"entity_group": "CPU", "entity_id": 0, "status": "Pass"}]}]}]}}"""
DCGM3 = """Successfully ran diagnostic
{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{"name": "Denylist",
 "results": [{"gpu_ids": "0,1", "status": "Pass"}]}]}], "version": "3.1.7"}}"""


def test_dcgm4_per_gpu_results_non_gpu_entities_dropped():
    r = parse_dcgm(DCGM4)
    assert [(x.gpu, x.test, x.status, x.messages) for x in r] == [
        (0, "pcie", "pass", []), (1, "pcie", "fail", ["PCIe replay threshold exceeded"])]


def test_dcgm3_gpu_ids_list_expands():
    r = parse_dcgm(DCGM3)
    assert [(x.gpu, x.category, x.slug, x.status) for x in r] == [(0, "Deployment", "denylist", "pass"),
                                                                   (1, "Deployment", "denylist", "pass")]


@pytest.mark.parametrize("text", ["", "Error: unable to connect to host engine", "[1, 2]", '{"other": 1}'],
                         ids=["empty", "error_text", "array", "no_diag_key"])
def test_dcgm_unparsable_raises(text):
    with pytest.raises(ParseError):
        parse_dcgm(text)


SAMPLES = """# fields: index,pci.bus_id,pstate,clocks_event_reasons.active,pcie.link.gen.current,pcie.link.width.current,power.draw,clocks.sm,temperature.gpu
# sample 0 uptime=10.0 epoch=100 rc=0 status=ok
0, 00000000:19:00.0, P0, 0x0000000000000001, 1, 16, 84.51, 345, 35
# sample 1 uptime=11.0 epoch=101 rc=0 status=ok
0, 00000000:19:00.0, P0, 0x0000000000000008, 5, 16, 650.1, 1980, 60
# sample 2 uptime=12.0 epoch=102 rc=0 status=ok
0, 00000000:19:00.0, P0, 0x0000000000000000, 5, 16, [N/A], 1980, 61
# sample end uptime=13.5 epoch=103 rc=0 status=ok
0, 00000000:19:00.0, P0, 0x0000000000000008, 5, 16, 640.0, 1700, 62
"""


def test_parse_samples_times_and_na():
    fields, s = parse_samples(SAMPLES)
    assert [x.t for x in s] == [0.0, 1.0, 2.0, 3.5]
    assert s[2].gpus[0].power_w is not None and str(s[2].gpus[0].power_w) == "N/A"
    assert s[1].gpus[0].busy and not s[0].gpus[0].busy


def _data(text=SAMPLES):
    from nodegate.burnin.series import BurninData, LoadOutcome
    f, s = parse_samples(text)
    return BurninData("n", {"duration_s": 3}, f, s, LoadOutcome("gpu-burn", 0, "", 100, 103, None, 103), [])


def test_clocks_unconfirmed_blips_pass_and_say_so():
    # HW slowdown in sample 1 and in the last sample, never in two consecutive samples, no counters
    r = R.rule_clocks(_data(), R.Context(), 0)
    assert r.outcome.value == "pass"
    assert r.observed == "hw_slowdown seen once at t=1s, t=3.5s (not confirmed by the next sample)"


def test_clocks_confirmed_by_next_sample_fails():
    r = R.rule_clocks(_data(SAMPLES.replace("0x0000000000000000", "0x0000000000000008")), R.Context(), 0)
    assert r.outcome.value == "fail"
    assert r.observed == "hw_slowdown active in consecutive samples from t=1s (3 of 4 samples)"


def test_pcie_idle_samples_are_not_judged():
    r = R.rule_pcie_link(_data(), R.Context(expected_link={0: (5, 16, "spec")}), 0)
    assert (r.outcome.value, r.observed) == ("pass", "lowest while busy: Gen5 x16 over 3 busy samples")


def test_rules_without_expected_link_error():
    assert R.rule_pcie_link(_data(), R.Context(), 0).outcome.value == "error"


def test_svg_is_numbers_and_escaped_text():
    b = Bundle("n<script>", {"burnin.samples": Evidence("burnin.samples", SAMPLES.encode(), b"", 0)}, {})
    svg = svg_for_node(b)
    assert svg.startswith("<svg ") and svg.count("<polyline") == 4
    assert "<script>" not in svg and "n&lt;script&gt;" in svg


def test_svg_without_samples_says_why():
    assert svg_for_node(Bundle("n", {}, {})) == "<p>no burn-in plot: evidence not collected: burnin.samples [burnin.samples]</p>"


def test_dcgm_runs_are_merged_worst_status_wins_and_a_cut_run_is_left_out():
    from nodegate.burnin.dcgm import parse_dcgm

    def doc(status):
        return json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
            {"name": "memtest", "results": [{"entity_group": "GPU", "entity_id": 0, "status": status,
                                              "warnings": [{"warning": f"w-{status}"}]}]}]}]}}, indent=2)
    text = (doc("Pass")[40:] + "\nNODEGATE-BURNIN-RUN 1 rc=0 seconds=3\n" + doc("Pass")
            + "\nNODEGATE-BURNIN-RUN 2 rc=0 seconds=3\n" + doc("Fail") + "\nNODEGATE-BURNIN-RUN 3 rc=0 seconds=3\n"
            + doc("Pass")[:50])
    (r,) = parse_dcgm(text)
    assert r.status == "fail" and r.messages == ["run 3 of 4: w-Fail"]


def test_dcgm_no_run_parses_names_the_first_runs_reason():
    from nodegate.burnin.dcgm import parse_dcgm
    with pytest.raises(ParseError, match="run 1 of 2: dcgmi"):
        parse_dcgm("garbage\nNODEGATE-BURNIN-RUN 1 rc=0 seconds=0\n{\"a\": ")


@pytest.mark.parametrize("ran, outcome", [(1, "error"), (110, "pass"), (119, "pass")])
def test_a_load_that_ran_less_than_the_window_is_error_not_soaked(ran, outcome):
    # a bundle whose load ran once, exit 0, for `ran` seconds of a 120 s window (the shape of a
    # version that did not repeat the load): issue 37.6
    from nodegate.burnin.series import BurninData, LoadOutcome
    load = LoadOutcome(kind="dcgmi", rc=0, output="{}", started_epoch=1000, exit_epoch=1000 + ran, stopped=None,
                       window_end_epoch=1120)
    data = BurninData("n1", {"duration_s": 120}, [], [], load, [])
    ctx = R.Context(bspec=BurninSpec(interval_s=1))
    res = R.rule_load(data, ctx, None)
    assert res.outcome.value == outcome, res
    if outcome == "error":
        assert "not soaked" in res.message and "ran 1s of the 120s window" in res.message
