"""Cross-node job outputs that look like a measurement but are not one job's: the launcher's
stdout is node output (untrusted): every result table in it is read, never only the first
(nodegate's rule: contradictory evidence is ERROR, corruption anywhere is FAIL)."""

from __future__ import annotations

from nodegate.crossnode.evidence import Item, LaunchRecord
from nodegate.crossnode.payloads import measure_nccl
from nodegate.crossnode.thresholds import fail_closed

HEAD = """# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1 on     nodeA device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on     nodeB device  0 [0x1b] NVIDIA H100 80GB HBM3
"""
TABLE = """#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   {bw}      {w}    100.0   10.49   {bw}      {w}
  1073741824     268435456     float     sum      -1   20000.0   53.69   {bw}      {w}   20000.0   53.69   {bw}      {w}
# Out of bounds values : 0 OK
# Avg bus bandwidth    : {bw}
#
"""


def _measure(text: str):
    rec = LaunchRecord("srun", items={"launch": Item(text.encode(), b"", 0)})
    return measure_nccl(rec, "all_reduce_perf", 2, 1 << 20)


def test_one_clean_table_is_a_measurement():
    m = _measure(HEAD + TABLE.format(bw="45.00", w=0))
    assert (m.value, m.corruption, m.problems) == (45.0, "", [])
    assert fail_closed(m).passed is True


def test_wrong_rows_in_a_second_table_are_corruption_not_ignored():
    # the first table was the only one read: a job whose output also held a table with #wrong 7 passed
    m = _measure(HEAD + TABLE.format(bw="45.00", w=0) + TABLE.format(bw="44.00", w=7))
    assert m.corruption.startswith("#wrong = ") and fail_closed(m).passed is False


def test_two_tables_with_different_figures_are_error_naming_them():
    m = _measure(HEAD + TABLE.format(bw="5.00", w=0) + TABLE.format(bw="45.00", w=0))
    assert fail_closed(m).passed is None
    assert any(p.startswith("2 result tables in one output") for p in m.problems), m.problems


def _recorded_then_replayed(tmp_path, edit):
    """A fake-launched run recorded under ``tmp_path``, its first job's meta.json edited, replayed."""
    from nodegate.crossnode.phase import PhaseConfig, replay_phase, run_phase
    from tests.crossnode.test_phase import SPEC, FakeLauncher, nodes

    ns, fl = nodes(4), FakeLauncher()
    run_phase(ns, PhaseConfig(SPEC, run_id="r", stages=("nodes",)), launcher=fl, evidence_dir=tmp_path)
    meta = tmp_path / "crossnode" / "r" / "jobs" / fl.launched[0] / "meta.json"
    meta.write_text(edit(meta.read_text()))
    return replay_phase(ns, PhaseConfig(SPEC, run_id="r", stages=("nodes",)), tmp_path)


def test_a_replayed_duration_that_is_no_figure_never_stops_the_phase(tmp_path):
    # json reads 1 followed by 400 zeros as an int: float() of it raised OverflowError, out of
    # replay_phase and out of the plugin (which caught only PhaseError): no node was reported
    import re
    res = _recorded_then_replayed(tmp_path, lambda s: re.sub(r'"duration_s": [0-9.]+', '"duration_s": 1' + "0" * 400, s,
                                                             count=1))
    assert {n.state.value for n in res.nodes} == {"cleared"} and not res.errors


def test_the_plugin_turns_any_replay_exception_into_an_error_not_a_crash(monkeypatch, tmp_path):
    # the general guard: whatever a recorded run's evidence reaches, the replay branch reports it
    # as the live branch does (the phase's items ERROR naming it), never an exception out of the hook
    from types import SimpleNamespace

    import nodegate.crossnode.phase as phase
    import plugins.nodegate_crossnode as plug

    def boom(*a, **k):
        raise OverflowError("int too large to convert to float")

    monkeypatch.setattr(phase, "replay_phase", boom)
    monkeypatch.setattr(plug, "phase_nodes", lambda config, run, spec: [])
    st = {"config": phase.PhaseConfig(), "result": None, "why_not": "the cross-node phase did not run", "items": None}
    config = SimpleNamespace(stash={plug.XN_KEY: st, plug.RUN_KEY: SimpleNamespace(mode="replay", bundles_dir=tmp_path)},
                             pluginmanager=SimpleNamespace(get_plugin=lambda name: None),
                             option=SimpleNamespace(collectonly=False, crossnode_plan=False, crossnode_live=False,
                                                    crossnode_run_id="r"))
    plug._run_phase(config)
    assert st["result"] is None
    assert st["why_not"] == ("replay of r: internal error in the cross-node phase: OverflowError: int too large to "
                             "convert to float")


_BW = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
_LAT = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
        "99% percentile[usec]   99.9% percentile[usec]\n")


def _pair(bw_rows: str, lat_rows: str):
    from nodegate.crossnode.payloads import measure_perftest
    rec = LaunchRecord("ssh", items={"bw_server": Item(b"", b"", 0), "lat_server": Item(b"", b"", 0),
                                     "bw_client": Item((_BW + bw_rows).encode(), b"", 0),
                                     "lat_client": Item((_LAT + lat_rows).encode(), b"", 0)})
    m = measure_perftest(rec)
    return m, m.extra[0]


_GOOD_BW = " 8388608    5000           392.39             392.00\t\t   0.005\n"
_GOOD_LAT = " 2       5000          3.00           9.00         3.20              3.30             0.07            3.40        5.00\n"


def test_a_clean_perftest_pair_is_a_measurement():
    bw, lat = _pair(_GOOD_BW, _GOOD_LAT)
    assert (bw.value, bw.problems, lat.value, lat.problems) == (392.0, [], 3.4, [])


def test_a_zero_latency_is_not_measured_not_a_pass_of_the_ceiling():
    bw, lat = _pair(_GOOD_BW, " 2       5000          0.00           0.00         0.00              0.00             "
                               "0.00            0.00        0.00\n")
    assert fail_closed(lat).passed is None and "nothing was measured" in lat.problems[0]


def test_a_zero_bandwidth_is_not_measured_not_a_fail_of_the_floor():
    bw, _ = _pair(" 8388608    5000           0.00             0.00\t\t   0.000\n", _GOOD_LAT)
    assert fail_closed(bw).passed is None and "nothing was measured" in bw.problems[-1]


def test_two_bandwidth_rows_of_one_size_that_disagree_are_error_not_the_best():
    bw, _ = _pair(_GOOD_BW + " 8388608    5000           100.39             100.00\t\t   0.001\n", _GOOD_LAT)
    assert fail_closed(bw).passed is None and "disagree" in bw.problems[0]


def test_two_latency_rows_of_one_size_that_disagree_are_error_not_the_last():
    _, lat = _pair(_GOOD_BW, _GOOD_LAT.replace("3.40", "90.40") + _GOOD_LAT)
    assert fail_closed(lat).passed is None and "disagree" in lat.problems[0]
