"""Bundles: write/read round trip, hand-built bundles, missing evidence, hostile names."""

from __future__ import annotations

import json

import pytest

from nodegate.bundle import Bundle, discover, safe_node_dirname
from nodegate.errors import EvidenceError
from nodegate.probe import RawItem


def _bundle():
    raw = {"meta.uname_r": RawItem("meta.uname_r", b"6.8.0-1\n", b"", 0, 0.01),
           "dkms.status": RawItem("dkms.status", b"", b"dkms: command not found", 127),
           "smi.qx": RawItem("smi.qx", b"<nvidia_smi_log>", b"", None, status="timeout")}
    return Bundle.from_raw("node07", raw, {"target": "paramiko://root@10.0.0.7"})


def test_round_trip_keeps_bytes_rc_and_status(tmp_path):
    d = _bundle().write(tmp_path)
    b = Bundle.load(d)
    assert b.node == "node07"
    assert b.items["meta.uname_r"].stdout == b"6.8.0-1\n"
    assert b.items["dkms.status"].rc == 127 and b.items["dkms.status"].stderr == b"dkms: command not found"
    assert b.items["smi.qx"].rc is None and b.items["smi.qx"].status == "timeout"
    meta = json.loads((d / "meta.json").read_text())
    assert meta["items"]["meta.uname_r"] == {"rc": 0, "status": "ok", "duration_s": 0.01, "bytes": 8}


def test_reasons_name_the_problem(tmp_path):
    b = Bundle.load(_bundle().write(tmp_path))
    assert b.text("meta.uname_r") == "6.8.0-1\n"
    with pytest.raises(EvidenceError, match=r"tool missing \(dkms: command not found\)") as e:
        b.text("dkms.status")
    assert e.value.key == "dkms.status"
    with pytest.raises(EvidenceError, match="timed out"):
        b.text("smi.qx")
    with pytest.raises(EvidenceError, match="evidence not collected: modinfo.nvidia"):
        b.text("modinfo.nvidia")


def test_hand_built_bundle_needs_only_out_files(tmp_path):
    d = tmp_path / "mybundles" / "nodeA"
    d.mkdir(parents=True)
    (d / "meta.uname_r.out").write_text("5.15.0-91-generic\n")
    (d / "dkms.status.out").write_text("")
    (d / "dkms.status.rc").write_text("3\n")
    (d / "notes.txt").write_text("ignored")
    assert discover(tmp_path / "mybundles") == [d]
    b = Bundle.load(d)
    assert b.node == "nodeA" and b.meta == {}
    assert b.text("meta.uname_r") == "5.15.0-91-generic\n"
    with pytest.raises(EvidenceError, match="exit code 3"):
        b.text("dkms.status")


def test_unreachable_node_bundle_errors_every_key(tmp_path):
    b = Bundle("node09", {}, {"status": "refused", "error": "connection refused by 10.0.0.9:22"})
    b = Bundle.load(b.write(tmp_path))
    assert b.gather_error == "refused: connection refused by 10.0.0.9:22"
    with pytest.raises(EvidenceError, match="node not gathered"):
        b.text("smi.qx")


def test_corrupt_meta_json_is_reported_not_raised(tmp_path):
    d = tmp_path / "n1"
    d.mkdir()
    (d / "meta.json").write_text("{not json")
    b = Bundle.load(d)
    assert b.meta["status"] == "malformed"
    assert "meta.json unreadable" in b.gather_error


@pytest.mark.parametrize("name", ["../etc", "a/b", "", "..", "x" * 300, "node\n1"])
def test_node_names_cannot_escape_the_bundle_root(name):
    with pytest.raises(ValueError):
        safe_node_dirname(name)


def test_discover_walks_a_tree_of_fleets(tmp_path):
    for rel in ("samples/h200-vm", "samples/fleet/n1", "samples/fleet/n2"):
        Bundle(rel.split("/")[-1], {}, {"status": "ok"}).write(tmp_path / rel.rsplit("/", 1)[0])
    (tmp_path / "samples" / "fleet" / "expected.yaml").write_text("x: 1\n")
    found = discover(tmp_path / "samples")
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "samples/fleet/n1", "samples/fleet/n2", "samples/h200-vm"]


def test_missing_item_names_where_and_why_the_probe_stopped():
    b = Bundle("n", {}, {"status": "ok", "cut_at": "smi.qx",
                         "cut_reason": "probe output ended early (connection dropped or shell died)"})
    with pytest.raises(EvidenceError) as e:
        b.text("kernel.log")
    assert str(e.value) == ("evidence not collected: kernel.log (probe stopped at smi.qx: probe output ended early "
                            "(connection dropped or shell died)) [kernel.log]")


def test_a_reused_directory_never_lends_an_earlier_runs_items(tmp_path):
    """reports/bundles is reused run after run: a probe cut short now must not be judged with the
    items (or the stderr) the last run left there."""
    from nodegate.probe import RawItem
    first = Bundle.from_raw("n1", {"a": RawItem("a", b"1\n", b"old warning", 3),
                                   "smi.qx": RawItem("smi.qx", b"<xml/>", b"", 0)}, {"node": "n1"})
    first.write(tmp_path)
    now = Bundle.from_raw("n1", {"a": RawItem("a", b"2\n", b"", 0)}, {"node": "n1", "cut_at": "a"})
    d = now.write(tmp_path)
    # exit code 0 now: no .rc (absent means 0), the earlier run's "3" gone with its stderr
    assert sorted(p.name for p in d.iterdir()) == ["a.out", "meta.json"]
    back = Bundle.load(d)
    assert list(back.items) == ["a"] and back.items["a"].stderr == b"" and back.items["a"].rc == 0
    # a hand-placed file beside a bundle whose meta.json lists its items is not read either
    (d / "smi.qx.out").write_bytes(b"<xml/>")
    assert "smi.qx" not in Bundle.load(d).items


def test_an_item_without_exit_code_keeps_why(tmp_path):
    from nodegate.probe import RawItem
    raw = {"t": RawItem("t", b"x" * 10, b"", None, status="truncated"),
           "h": RawItem("h", b"", b"", None, status="timeout")}
    d = Bundle.from_raw("n2", raw, {"node": "n2"}).write(tmp_path)
    assert (d / "t.rc").read_text() == "truncated\n" and (d / "h.rc").read_text() == "timeout\n"
    back = Bundle.load(d)
    assert (back.items["t"].status, back.items["t"].rc) == ("truncated", None)
    assert "per-item cap" in back.items["t"].problem()
    assert (back.items["h"].status, back.items["h"].rc) == ("timeout", None)
