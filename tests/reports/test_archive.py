"""archive.py: per-node tar.gz of the bundle plus results.json."""

import json
import os
import tarfile

from nodegate.reports.archive import archive_path, write_node_archive
from nodegate.reports.text import safe_filename

from .fleetgen import HOSTILE_NODE, make_bundle


def test_archive_holds_bundle_files_and_results(tmp_path):
    d = make_bundle(tmp_path / "fleet", "n1")
    out = write_node_archive(tmp_path / "reports" / "bundles", "n1", d, [{"check_id": "NG-A", "outcome": "fail"}])
    assert out == tmp_path / "reports" / "bundles" / "n1.tar.gz"
    with tarfile.open(out) as t:
        names = sorted(t.getnames())
        results = json.load(t.extractfile("n1/results.json"))
        hostname = t.extractfile("n1/meta.hostname.out").read()
    assert names == ["n1/driver.proc_version.out", "n1/meta.hostname.out", "n1/meta.json",
                     "n1/meta.uname_r.out", "n1/results.json", "n1/test.gpus.out"]
    assert results == {"node": "n1", "spec_source": "", "results": [{"check_id": "NG-A", "outcome": "fail"}]}
    assert hostname == b"n1\n"


def test_archive_skips_symlinks_and_foreign_files(tmp_path):
    d = make_bundle(tmp_path / "fleet", "n1")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not ship")
    os.symlink(secret, d / "smi.qx.out")
    (d / "notes.txt").write_text("x")
    (d / "sub").mkdir()
    out = write_node_archive(tmp_path / "a", "n1", d, [])
    with tarfile.open(out) as t:
        names = t.getnames()
    assert "n1/smi.qx.out" not in names and "n1/notes.txt" not in names
    assert all(m.isfile() for m in tarfile.open(out).getmembers())


def test_hostile_node_name_stays_inside_archive_dir(tmp_path):
    out = write_node_archive(tmp_path / "a", HOSTILE_NODE, None, [])
    assert out == archive_path(tmp_path / "a", HOSTILE_NODE)
    assert out.parent == tmp_path / "a"
    with tarfile.open(out) as t:
        assert t.getnames() == [f"{safe_filename(HOSTILE_NODE)}/results.json"]
        assert json.load(t.extractfile(t.getnames()[0]))["node"] == HOSTILE_NODE
