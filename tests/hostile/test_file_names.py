"""Distinct nodes, distinct files (issue 31, item 10; docs/security.md).

A node's page (``reports/nodes/<name>.html``) and evidence archive (``bundles/<name>.tar.gz``)
are named by ``safe_filename``: a plain name as it is, an unsafe one as a slug plus a digest. A
bundle could name its node exactly what another node's unsafe name becomes, and both nodes then
shared one page and one archive. Now no plain name looks like a digested one (it is digested
too), and ``FileNames`` makes the names injective over the run whatever collides (a digest
prefix found by search, names that differ only in case, a node folder named like an archive):
the later node gets ``~2``, and the clash is said in the terminal."""

from __future__ import annotations

import json
import tarfile

import pytest

from nodegate.reports import text
from nodegate.reports.text import FileNames, safe_filename

from tests.reports.fleetgen import HEALTHY_GPUS, make_bundle
from tests.reports.runner import run_pytest, synth_suite

UNSAFE = "evil node/<x>"


def test_a_node_named_like_another_nodes_digested_name_gets_its_own_page_and_archive(tmp_path):
    twin = safe_filename(UNSAFE)          # "evil_node_x-<12 hex>": what the unsafe name becomes
    fleet = tmp_path / "fleet"
    bad = list(HEALTHY_GPUS)
    bad[1] = bad[1][:6] + ("xid79",)      # a finding for both: both get an archive
    make_bundle(fleet, "unsafe", node=UNSAFE, gpus=bad)
    make_bundle(fleet, "lookalike", node=twin, gpus=bad)
    out = tmp_path / "out"
    r = run_pytest(synth_suite(tmp_path / "suite"), ".", fleet, out)
    assert r.rc == 1, r.output[-2000:]
    pages = sorted(p.name for p in (out / "nodes").iterdir())
    archives = sorted(p.name for p in (out / "bundles").glob("*.tar.gz"))
    # the lookalike's plain-looking name is digested itself: two names, neither shared
    assert pages == sorted([f"{twin}.html", f"{safe_filename(twin)}.html"]), pages
    assert archives == sorted([f"{twin}.tar.gz", f"{safe_filename(twin)}.tar.gz"]), archives
    # each archive holds its own node's results, each page names its own node
    held = set()
    for a in archives:
        with tarfile.open(out / "bundles" / a) as t:
            m = next(m for m in t.getmembers() if m.name.endswith("results.json"))
            held.add(json.loads(t.extractfile(m).read())["node"])
    assert held == {UNSAFE, twin}


def test_a_plain_name_that_looks_digested_is_digested_itself():
    twin = safe_filename(UNSAFE)
    assert twin != UNSAFE and text._DIGESTED_RE.search(twin)
    assert safe_filename(twin) != twin            # no plain name equals a digested one
    assert safe_filename(twin) != safe_filename(UNSAFE)
    assert safe_filename("gpu001") == "gpu001"     # ordinary names stay as they are
    assert safe_filename("rack-0123456789") == "rack-0123456789"   # 10 hex digits: not the digest's shape


def test_a_digest_prefix_collision_is_suffixed_and_recorded(monkeypatch):
    """The 48-bit digest prefix can be searched for: the registry, not the digest, makes the
    names injective. Forced here: every unsafe name digests alike."""
    monkeypatch.setattr(text.hashlib, "sha256", lambda b: type("H", (), {"hexdigest": lambda s: "0" * 64})())
    names = FileNames()
    stems = [names.stem(f"n<{i}>") for i in range(1000)]
    assert len(set(stems)) == 1000                         # the bound: 1,000 nodes, 1,000 names
    assert stems[:3] == ["n_0-000000000000", "n_1-000000000000", "n_2-000000000000"]
    same = FileNames()
    got = [same.stem(n) for n in ("a<b", "a>b", "a|b")]   # one slug, one (forced) digest
    assert got == ["a_b-000000000000", "a_b-000000000000~2", "a_b-000000000000~3"]
    assert same.clashes == [("a>b", "a_b-000000000000", "a_b-000000000000~2"),
                            ("a|b", "a_b-000000000000", "a_b-000000000000~3")]
    assert same.stem("a>b") == "a_b-000000000000~2"       # one node, one name, asked twice


@pytest.mark.parametrize("first,second", [("GPU01", "gpu01"), ("Node.A", "node.a")])
def test_names_that_differ_only_in_case_get_distinct_files(first, second):
    """A reports folder on a case-insensitive share (SMB, a macOS laptop) would merge them."""
    names = FileNames()
    assert names.stem(first) == first
    assert names.stem(second) == f"{second}~2"
    assert names.clashes == [(second, second, f"{second}~2")]


def test_an_archive_never_takes_a_node_folders_name():
    """A live run's bundles/ holds bundles/<node>/ and bundles/<node>.tar.gz side by side: the
    node ``a1.tar.gz``'s folder is not node a1's archive."""
    names = FileNames(reserved=["a1"])
    assert names.stem("a1") == "a1~2"
    many = FileNames()
    stems = {many.stem(n) for n in [f"x{i}" for i in range(300)] + [f"X{i}" for i in range(300)]
             + [safe_filename(f"x<{i}>") for i in range(300)] + [f"x<{i}>" for i in range(300)]}
    assert len(stems) == 1200                      # 1,200 nodes of every kind: 1,200 names
