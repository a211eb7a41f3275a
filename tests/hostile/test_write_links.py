"""Never write through a link anywhere on the path (issue 31, item 6; docs/security.md).

Every directory nodegate writes into is opened relative to its parent without following a link
(``nodegate.safeio.open_dir``): a node directory, ``reports/nodes``, ``reports/junit``,
``reports/bundles``, a ``nodegate-collect --out`` node folder, a site recording's node folder.
A link planted at any of them is refused with a clear error naming it; the link's target is
never written into and nothing in it is removed. What a test asserts is the bound itself: the
target holds exactly the files it held before (names and bytes)."""

from __future__ import annotations

import os

import pytest

from nodegate import safeio
from nodegate.bundle import Bundle, Evidence
from nodegate.collect_cli import EXIT_WRITE, main as collect_main
from nodegate.cmdline import unusable_dir
from nodegate.site.recording import CommandRecord, Recorder

from tests.reports.runner import run_pytest, synth_suite
from tests.reports.test_run_outputs import build_fleet


def _victim(tmp_path, name="victim"):
    """An operator's folder holding files a write through a link would delete or add to."""
    v = tmp_path / name
    v.mkdir()
    (v / "smi.qx.out").write_bytes(b"the operator's own file\n")
    (v / "notes.txt").write_text("keep me\n")
    return v


def _snapshot(d):
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _bundle(node="gpu007"):
    items = {"uname": Evidence("uname", b"Linux\n", b"", 0, "ok", 0.0),
             "lspci": Evidence("lspci", b"", b"denied\n", 1, "ok", 0.0)}
    return Bundle(node, items, {"status": "ok", "spec": {}})


def test_a_node_directory_planted_as_a_link_is_refused_by_bundle_write(tmp_path):
    v = _victim(tmp_path)
    before = _snapshot(v)
    out = tmp_path / "out"
    out.mkdir()
    (out / "gpu007").symlink_to(v)
    with pytest.raises(safeio.LinkRefused) as e:
        _bundle().write(out)
    assert str(e.value) == (f"{out / 'gpu007'} is a symbolic link (to {str(v)!r}); "
                            "nodegate never writes through a link")
    assert _snapshot(v) == before                       # nothing added, its .out not deleted
    assert (out / "gpu007").is_symlink()


def test_a_link_two_levels_up_between_the_anchor_and_the_node_is_refused(tmp_path):
    """Another link position: a folder between the operator's directory and the node's."""
    v = _victim(tmp_path)
    before = _snapshot(v)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "bundles").symlink_to(v)
    with pytest.raises(safeio.LinkRefused, match="bundles is a symbolic link"):
        safeio.makedirs(tmp_path / "reports" / "bundles" / "gpu007", anchor=tmp_path / "reports")
    with pytest.raises(safeio.LinkRefused):
        safeio.put(tmp_path / "reports" / "bundles" / "x.out", b"x", anchor=tmp_path / "reports")
    assert _snapshot(v) == before
    # a file (no directory) at a component is refused too, naming what is there
    (tmp_path / "reports" / "plain").write_text("")
    with pytest.raises(safeio.LinkRefused, match="exists and is not a directory"):
        safeio.makedirs(tmp_path / "reports" / "plain" / "n", anchor=tmp_path / "reports")


def test_a_real_node_directory_is_rewritten_and_only_stale_item_files_go(tmp_path):
    """What nodegate deletes: item files of an earlier run in the node's own directory (opened
    without following a link), never anything else in it."""
    d = _bundle().write(tmp_path)
    (d / "old.item.out").write_bytes(b"stale\n")
    (d / "README.txt").write_text("the operator's note\n")
    _bundle().write(tmp_path)
    assert sorted(p.name for p in d.iterdir()) == ["README.txt", "lspci.err", "lspci.out", "lspci.rc",
                                                   "meta.json", "uname.out"]


def test_nodegate_collect_refuses_a_planted_node_link_with_a_clear_error(tmp_path, capsys):
    v = _victim(tmp_path)
    before = _snapshot(v)
    out = tmp_path / "run42"
    out.mkdir()
    (out / "gpu007").symlink_to(v)
    rc = collect_main(["--out", str(out), "--node", "gpu007", "--missing", "slurmd did not answer"])
    assert rc == EXIT_WRITE
    err = capsys.readouterr().err
    assert f"{out / 'gpu007'} is a symbolic link" in err and "never writes through a link" in err
    assert _snapshot(v) == before


def test_a_site_recording_never_flushes_through_a_planted_node_link(tmp_path):
    v = _victim(tmp_path)
    (v / "meta.json").write_text('{"node": "gpu007", "items": {}}\n')
    before = _snapshot(v)
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    (bundles / "gpu007").symlink_to(v)
    r = Recorder("gpu007")
    r.add(CommandRecord("site.cmd.0", "uname -n", b"gpu007\n", b"", 0, "ok", 0.01, "SITE-A"))
    with pytest.raises(safeio.LinkRefused):
        r.flush(bundles / "gpu007")
    assert _snapshot(v) == before


def test_a_default_bundles_folder_planted_as_a_link_stops_a_live_run_before_contact(tmp_path):
    v = _victim(tmp_path)
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "bundles").symlink_to(v)
    why = unusable_dir(tmp_path / "reports" / "bundles", anchor=tmp_path / "reports")
    assert why == (f"{tmp_path / 'reports' / 'bundles'} is a symbolic link (to {str(v)!r}); "
                   "nodegate never writes through a link")
    assert unusable_dir(tmp_path / "reports" / "fresh", anchor=tmp_path / "reports") is None


def test_report_subfolders_planted_as_links_are_refused_and_the_other_reports_written(tmp_path):
    """reports/nodes, reports/junit and reports/bundles (the evidence archives) all links, in a
    run too large for one JUnit file: each of those outputs fails naming the link, their
    targets stay as they were, and results.jsonl, the RMA files and a valid junit.xml are
    written."""
    fleet = build_fleet(tmp_path / "fleet")
    suite = synth_suite(tmp_path / "suite")
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for sub in ("nodes", "junit", "bundles"):
        victims[sub] = _victim(tmp_path, f"victim-{sub}")
        (victims[sub] / f"part-001.xml").write_text("<operator/>\n")
        (victims[sub] / "a1.html").write_text("operator page\n")
        (out / sub).symlink_to(victims[sub])
    before = {k: _snapshot(v) for k, v in victims.items()}
    r = run_pytest(suite, ".", fleet, out, "--junit-max-objects", "40")
    assert r.rc == 1, r.output[-3000:]
    assert {k: _snapshot(v) for k, v in victims.items()} == before
    for sub in ("nodes", "junit", "bundles"):
        assert f"{out / sub} is a symbolic link" in r.output, (sub, r.output[-3000:])
    for name in ("results.jsonl", "rma.csv", "rma.json", "actions.csv", "junit.xml"):
        p = out / name
        assert p.is_file() and not p.is_symlink(), name
    assert "never writes through a link" in (out / "junit.xml").read_text()
