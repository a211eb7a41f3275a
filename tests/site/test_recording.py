"""The bundle's site section read back: hostile shapes skipped, statuses kept, results_of."""

from __future__ import annotations

import json

from nodegate.bundle import Bundle
from nodegate.site.recording import CommandRecord, Recorder, load_recording, results_of

from .helpers import empty_bundle


def _meta(bdir):
    return json.loads((bdir / "meta.json").read_text())


def test_flush_writes_item_files_meta_items_and_the_index(tmp_path):
    bdir = empty_bundle(tmp_path)
    r = Recorder("n1")
    r.add(CommandRecord("site.cmd.0", "uname -n", b"n1\n", b"", 0, "ok", 0.01, "SITE-A"))
    r.add(CommandRecord("site.cmd.1", "false", b"", b"no\n", 1, "ok", 0.02, "SITE-B"))
    r.add(CommandRecord("site.cmd.2", "sleep 99", b"", b"", None, "lost", 3.0, "SITE-B", "connection ended"))
    r.flush(bdir, {"SITE-A": {"check_id": "SITE-A", "outcome": "pass", "title": "a"}})
    m = _meta(bdir)
    assert m["items"]["site.cmd.1"] == {"rc": 1, "status": "ok", "duration_s": 0.02, "bytes": 0}
    assert [c["command"] for c in m["site"]["commands"]] == ["uname -n", "false", "sleep 99"]
    assert m["site"]["results"]["SITE-A"]["outcome"] == "pass"
    assert sorted(p.name for p in bdir.glob("site.cmd.*")) == [
        "site.cmd.0.out", "site.cmd.1.err", "site.cmd.1.out", "site.cmd.1.rc", "site.cmd.2.out", "site.cmd.2.rc"]
    got = load_recording(Bundle.load(bdir))
    assert got["sleep 99"][0].status == "lost"           # a status no .rc file can say, from the index
    assert got["sleep 99"][0].problem() == "the connection ended before the command did: connection ended"
    assert got["false"][0].stderr == b"no\n"


def test_second_flush_adds_only_new_files_and_keeps_one_index(tmp_path):
    bdir = empty_bundle(tmp_path)
    r = Recorder("n1")
    r.add(CommandRecord("site.cmd.0", "a", b"1"))
    r.flush(bdir)
    (bdir / "site.cmd.0.out").write_bytes(b"kept")   # not rewritten
    r.add(CommandRecord("site.cmd.1", "b", b"2"))
    r.flush(bdir)
    assert (bdir / "site.cmd.0.out").read_bytes() == b"kept"
    assert [c["key"] for c in _meta(bdir)["site"]["commands"]] == ["site.cmd.0", "site.cmd.1"]


def test_a_gather_into_the_same_directory_later_drops_the_old_recordings(tmp_path):
    bdir = empty_bundle(tmp_path)
    r = Recorder("n1")
    r.add(CommandRecord("site.cmd.0", "a", b"1"))
    r.flush(bdir)
    empty_bundle(tmp_path)          # the next run's probe writes the bundle again
    assert not (bdir / "site.cmd.0.out").exists()
    assert load_recording(Bundle.load(bdir)) == {}


def test_hostile_index_entries_are_skipped(tmp_path):
    bdir = empty_bundle(tmp_path)
    r = Recorder("n1")
    r.add(CommandRecord("site.cmd.0", "good", b"ok"))
    r.flush(bdir)
    m = _meta(bdir)
    m["site"]["commands"] += ["text", {"key": "../../etc/passwd", "command": "x"}, {"key": "site.cmd.5"},
                              {"key": "site.cmd.6", "command": 7}, {"key": "site.cmd.7", "command": "gone"}]
    (bdir / "meta.json").write_text(json.dumps(m))
    got = load_recording(Bundle.load(bdir))
    assert sorted(got) == ["gone", "good"]
    assert got["gone"][0].status == "missing"
    assert got["gone"][0].problem() == "its output is missing from the bundle"


def test_site_section_of_the_wrong_type_means_no_recording(tmp_path):
    bdir = empty_bundle(tmp_path)
    m = _meta(bdir)
    m["site"] = ["not", "a", "mapping"]
    (bdir / "meta.json").write_text(json.dumps(m))
    b = Bundle.load(bdir)
    assert load_recording(b) == {}
    assert results_of(b) is None


def test_results_of_keeps_well_formed_results_only(tmp_path):
    bdir = empty_bundle(tmp_path)
    m = _meta(bdir)
    m["site"] = {"results": {"SITE-A": {"check_id": "SITE-A", "outcome": "fail", "title": "t"},
                             "SITE-B": {"outcome": 3}, "SITE-C": "pass"}}
    (bdir / "meta.json").write_text(json.dumps(m))
    assert results_of(Bundle.load(bdir)) == {"SITE-A": {"check_id": "SITE-A", "outcome": "fail", "title": "t"}}


def test_two_writers_of_one_node_add_to_one_recording(tmp_path):
    # pytest-xdist workers given one node's items apart each flush what they ran
    bdir = empty_bundle(tmp_path)
    a, b = Recorder("n1"), Recorder("n1")
    a.add(CommandRecord("site.cmd.0", "from a", b"A"))
    b.add(CommandRecord("site.cmd.0", "from b", b"B"))
    b.add(CommandRecord("site.cmd.1", "from b again", b"BB"))
    a.flush(bdir, {"SITE-A": {"check_id": "SITE-A", "outcome": "pass", "title": "a"}})
    b.flush(bdir, {"SITE-B": {"check_id": "SITE-B", "outcome": "fail", "title": "b"}})
    got = load_recording(Bundle.load(bdir))
    assert {c: [(r.key, r.stdout) for r in rs] for c, rs in got.items()} == {
        "from a": [("site.cmd.0", b"A")], "from b": [("site.cmd.1", b"B")], "from b again": [("site.cmd.2", b"BB")]}
    assert sorted(results_of(Bundle.load(bdir))) == ["SITE-A", "SITE-B"]


def test_a_recording_whose_files_contradict_meta_json_is_an_error_not_an_answer(tmp_path):
    bdir = empty_bundle(tmp_path)
    r = Recorder("n1")
    r.add(CommandRecord("site.cmd.0", "cat /etc/x", b"real\n"))
    r.flush(bdir)
    (bdir / "site.cmd.0.out").write_bytes(b"forged, longer than recorded\n")   # edited after the run
    got = load_recording(Bundle.load(bdir))["cat /etc/x"][0]
    assert got.status == "inconsistent"
    assert got.problem().startswith("its bundle files contradict meta.json: meta.json says site.cmd.0.out holds 5")
