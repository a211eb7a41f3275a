"""A replayed bundle is untrusted (issue 17, items 1, 6, 8): it is read only through regular
files inside the bundle directory, within a byte budget, and its files must agree with its
meta.json. Each kind with several variants: a link to a secret in .out/.err/.rc/meta.json, a
symlinked bundle directory or parent, FIFO, socket, directory, device; hard links and sparse
files; files that contradict meta.json."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from nodegate.bundle import BUNDLE_BUDGET, META_CAP, READ_CAP, Bundle, discover
from nodegate.errors import EvidenceError
from nodegate.probe import RawItem

SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-operator-secret\n"


def written(root: Path, node: str = "n1") -> Path:
    """A bundle as a probe run writes it (meta.json lists every item)."""
    raw = {"meta.uname_r": RawItem("meta.uname_r", b"6.8.0-51-generic\n", b"", 0, 0.01),
           "kernel.log": RawItem("kernel.log", b"# source: dmesg\n# lines: seen=0 kept=0 dropped_severe=0\n", b"", 0),
           "dkms.status": RawItem("dkms.status", b"", b"dkms: permission denied\n", 1)}
    return Bundle.from_raw(node, raw, {"target": "paramiko://root@10.0.0.1"}).write(root)


@pytest.fixture
def secret(tmp_path) -> Path:
    p = tmp_path / "home" / ".ssh" / "id_ed25519"
    p.parent.mkdir(parents=True)
    p.write_text(SECRET)
    return p


def _replace_with_link(p: Path, target: Path) -> None:
    p.unlink()
    p.symlink_to(target)


def _load_in_thread(d: Path, root: Path | None = None, timeout: float = 10.0) -> Bundle:
    """Bundle.load in a thread: a FIFO that blocked would leave the thread alive."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(Bundle.load(d, root=root)), daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "Bundle.load blocked"
    return out[0]


# ---------------------------------------------------------------------------- links never followed
@pytest.mark.parametrize("name,key", [("meta.uname_r.out", "meta.uname_r"), ("dkms.status.err", "dkms.status"),
                                      ("dkms.status.rc", "dkms.status")], ids=["out", "err", "rc"])
def test_an_item_file_linked_to_a_secret_is_never_read(tmp_path, secret, name, key):
    d = written(tmp_path / "b")
    _replace_with_link(d / name, secret)
    b = Bundle.load(d, root=tmp_path / "b")
    ev = b.items[key]
    assert (ev.status, ev.stdout, ev.stderr, ev.rc) == ("refused", b"", b"", None)
    assert ev.why == f"bundle file {name} is a symbolic link, not a regular file; not read"
    with pytest.raises(EvidenceError, match=f"bundle file {name} is a symbolic link") as e:
        b.text(key)
    assert e.value.key == key
    assert "operator-secret" not in repr(b.items) + json.dumps(b.meta)


def test_a_link_to_a_secret_in_a_hand_built_bundle_is_refused_too(tmp_path, secret):
    d = tmp_path / "hand" / "n9"
    d.mkdir(parents=True)
    (d / "meta.uname_r.out").symlink_to(secret)
    (d / "kernel.log.out").write_text("# source: dmesg\n")
    b = Bundle.load(d, root=tmp_path / "hand")
    assert b.items["meta.uname_r"].status == "refused"
    assert b.text("kernel.log") == "# source: dmesg\n"


def test_meta_json_linked_to_a_secret_refuses_the_node(tmp_path, secret):
    d = written(tmp_path / "b")
    _replace_with_link(d / "meta.json", secret)
    b = Bundle.load(d, root=tmp_path / "b")
    assert b.meta == {"status": "bundle-refused", "error": "meta.json is a symbolic link, not a regular file; not read"}
    assert b.gather_error == "bundle-refused: meta.json is a symbolic link, not a regular file; not read"


def test_a_symlinked_bundle_directory_is_not_discovered_and_not_loaded(tmp_path, secret):
    root = tmp_path / "replay"
    root.mkdir()
    written(root, "good")
    (root / "evil").symlink_to(secret.parent, target_is_directory=True)
    (secret.parent / "meta.uname_r.out").write_text(SECRET)
    skipped: list = []
    assert discover(root, skipped=skipped) == [root / "good"]
    assert skipped == [root / "evil"]
    b = Bundle.load(root / "evil", root=root)
    assert b.items == {} and b.meta["status"] == "bundle-refused"
    assert b.meta["error"].startswith("bundle directory not opened: ")


def test_a_symlinked_parent_between_the_replay_root_and_the_bundle_is_refused(tmp_path):
    real = tmp_path / "elsewhere"
    written(real, "n1")
    root = tmp_path / "replay"
    root.mkdir()
    (root / "fleet").symlink_to(real, target_is_directory=True)
    b = Bundle.load(root / "fleet" / "n1", root=root)
    assert b.items == {} and b.meta["status"] == "bundle-refused"
    # the operator's own --replay path may itself be a link: it is theirs
    (tmp_path / "mylink").symlink_to(real, target_is_directory=True)
    assert Bundle.load(tmp_path / "mylink" / "n1", root=tmp_path / "mylink").text("meta.uname_r") == "6.8.0-51-generic\n"


# ---------------------------------------------------------------------------- other file types
def _fifo(p: Path) -> None:
    p.unlink()
    os.mkfifo(p)


def _socket(p: Path) -> None:
    p.unlink()
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(p))
    s.close()


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _chardev(p: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    p.unlink()
    os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(1, 3))   # /dev/null's numbers


@pytest.mark.parametrize("make,kind", [(_fifo, "FIFO"), (_socket, "socket"), (_directory, "directory"),
                                       (_chardev, "character device")], ids=["fifo", "socket", "dir", "chardev"])
@pytest.mark.parametrize("name,key", [("meta.uname_r.out", "meta.uname_r"), ("dkms.status.err", "dkms.status")],
                         ids=["out", "err"])
def test_a_file_that_is_not_regular_is_error_naming_key_and_type_and_never_blocks(tmp_path, make, kind, name, key):
    d = written(tmp_path / "b")
    make(d / name)
    b = _load_in_thread(d, tmp_path / "b")
    ev = b.items[key]
    assert ev.status == "refused"
    assert ev.why == f"bundle file {name} is a {kind}, not a regular file; not read"
    assert b.text("kernel.log").startswith("# source: dmesg")   # the other items are read


def test_a_fifo_meta_json_never_blocks(tmp_path):
    d = written(tmp_path / "b")
    _fifo(d / "meta.json")
    b = _load_in_thread(d, tmp_path / "b")
    assert b.meta == {"status": "bundle-refused", "error": "meta.json is a FIFO, not a regular file; not read"}


# ---------------------------------------------------------------------------- sizes, hard links, budget
def test_forty_hard_links_to_one_sparse_file_are_never_read(tmp_path):
    """The issue's reproduction: 40 links to one sparse file over the per-item cap made 2.7 GB."""
    d = tmp_path / "b" / "n1"
    d.mkdir(parents=True)
    big = d / "smi.qx.out"
    with open(big, "wb") as fh:
        fh.truncate(READ_CAP + 1)
    for i in range(40):
        os.link(big, d / f"x{i}.out")
    b = Bundle.load(d, root=tmp_path / "b")
    assert len(b.items) == 41
    assert {(e.status, len(e.stdout)) for e in b.items.values()} == {("truncated", 0)}
    assert b.items["x7"].why == f"x7.out holds {READ_CAP + 1} bytes, over the cap of {READ_CAP}; not read (bundle.READ_CAP)"
    with pytest.raises(EvidenceError, match="output exceeded the per-item cap"):
        b.text("smi.qx")


def test_hard_links_are_counted_once_and_held_once(tmp_path):
    d = tmp_path / "b" / "n1"
    d.mkdir(parents=True)
    (d / "a.out").write_bytes(b"x" * (3 * 1024 * 1024))
    for i in range(40):   # 40 x 3 MiB would pass the budget counted naively; once, 3 MiB
        os.link(d / "a.out", d / f"l{i}.out")
    b = Bundle.load(d, root=tmp_path / "b")
    assert b.meta == {} and len(b.items) == 41
    assert len({id(e.stdout) for e in b.items.values()}) == 1


@pytest.mark.parametrize("sizes", [[40, 40, 40], [97], [60, 60]], ids=["three_40MiB", "one_97MiB_over_cap", "two_60MiB"])
def test_a_bundle_over_its_byte_budget_errors_and_the_others_are_read(tmp_path, sizes):
    root = tmp_path / "replay"
    d = written(root, "fat")
    written(root, "thin")
    meta = json.loads((d / "meta.json").read_text())
    for i, mib in enumerate(sizes):
        with open(d / f"pad{i}.out", "wb") as fh:
            fh.truncate(mib * 1024 * 1024)   # sparse: no disk, the apparent size counts
        meta["items"][f"pad{i}"] = {"rc": 0, "status": "ok", "duration_s": 0, "bytes": mib * 1024 * 1024}
    (d / "meta.json").write_text(json.dumps(meta))
    total = sum(m * 1024 * 1024 for m in sizes if m * 1024 * 1024 <= READ_CAP)
    b = Bundle.load(d, root=root)
    if total + (d / "meta.json").stat().st_size > BUNDLE_BUDGET:
        assert b.items == {} and b.meta["status"] == "bundle-refused"
        assert b.meta["error"].startswith("bundle files hold ")
        assert f"over the per-bundle budget of {BUNDLE_BUDGET} bytes" in b.meta["error"]
    else:   # the one file over the per-item cap is left unread: the rest fits
        assert b.items["pad0"].status == "truncated" and b.meta["status"] == "ok"
    assert Bundle.load(root / "thin", root=root).text("meta.uname_r") == "6.8.0-51-generic\n"


def test_meta_json_over_its_cap_is_not_read(tmp_path):
    d = written(tmp_path / "b")
    with open(d / "meta.json", "ab") as fh:
        fh.truncate(META_CAP + 1)
    b = Bundle.load(d, root=tmp_path / "b")
    assert b.meta == {"status": "bundle-refused", "error": f"meta.json holds {META_CAP + 1} bytes, over the cap of "
                                                    f"{META_CAP}; not read"}


# ---------------------------------------------------------------------------- meta.json and the files agree
def _meta(d: Path, fn) -> None:
    m = json.loads((d / "meta.json").read_text())
    fn(m["items"])
    (d / "meta.json").write_text(json.dumps(m))


@pytest.mark.parametrize("edit,why", [
    # the case: .rc deleted, meta.json says rc 1 (permission denied): was exit 0, PASS
    (lambda d: (d / "dkms.status.rc").unlink(),
     "meta.json says dkms.status ended with exit code 1, but dkms.status.rc is absent (exit code 0)"),
    (lambda d: (d / "meta.uname_r.rc").write_text("3\n"),
     "meta.json says meta.uname_r ended with exit code 0, but meta.uname_r.rc says 3"),
    (lambda d: (d / "meta.uname_r.rc").write_text("timeout\n"),
     "meta.json says meta.uname_r ended with exit code 0, but meta.uname_r.rc says timeout"),
    (lambda d: (d / "meta.uname_r.out").write_text("6.8.0-99-generic-edited\n"),
     "meta.json says meta.uname_r.out holds 17 bytes, but it holds 24"),
    (lambda d: (d / "meta.uname_r.out").unlink(),
     "meta.json lists meta.uname_r but meta.uname_r.out is missing"),
    (lambda d: _meta(d, lambda it: it["meta.uname_r"].update(rc="0")),
     "meta.json gives meta.uname_r the exit code '0', not a number"),
], ids=["rc_file_deleted", "rc_file_added", "rc_word_added", "out_edited", "out_deleted", "rc_not_a_number"])
def test_files_that_contradict_meta_json_are_error(tmp_path, edit, why):
    d = written(tmp_path / "b")
    edit(d)
    b = Bundle.load(d, root=tmp_path / "b")
    key = why.split(" ")[2].removesuffix(".out")   # the item the message names
    ev = b.items[key]
    assert (ev.status, ev.why, ev.stdout) == ("inconsistent", why, b"")
    with pytest.raises(EvidenceError, match="^" + why.replace("(", r"\(").replace(")", r"\)")):
        b.text(key)


def test_truncated_status_disagreeing_with_the_rc_word_is_error(tmp_path):
    d = tmp_path / "b"
    raw = {"smi.qx": RawItem("smi.qx", b"<nvidia", b"", None, status="truncated")}
    d = Bundle.from_raw("n1", raw, {}).write(d)
    assert Bundle.load(d).items["smi.qx"].status == "truncated"
    (d / "smi.qx.rc").write_text("timeout\n")
    ev = Bundle.load(d).items["smi.qx"]
    assert (ev.status, ev.why) == ("inconsistent", "meta.json says smi.qx is truncated, but smi.qx.rc says timeout")


def test_a_bundle_of_ours_round_trips_unchanged(tmp_path):
    d = written(tmp_path / "b")
    b = Bundle.load(d, root=tmp_path / "b")
    assert {k: (e.status, e.rc) for k, e in b.items.items()} == {
        "dkms.status": ("ok", 1), "kernel.log": ("ok", 0), "meta.uname_r": ("ok", 0)}
    assert b.items["dkms.status"].stderr == b"dkms: permission denied\n"


def test_a_partial_meta_json_record_claims_only_what_it_holds(tmp_path):
    d = tmp_path / "b" / "n1"
    d.mkdir(parents=True)
    (d / "meta.json").write_text(json.dumps({"node": "n1", "items": {"dkms.status": {"status": "ok"}}}))
    (d / "dkms.status.out").write_text("")
    (d / "dkms.status.rc").write_text("3\n")
    ev = Bundle.load(d, root=tmp_path / "b").items["dkms.status"]
    assert (ev.status, ev.rc) == ("ok", 3)


def test_meta_json_nested_past_the_recursion_limit_errors_that_node_only(tmp_path):
    """400 KB of nested arrays, under META_CAP: json's decoder raises RecursionError; the node is
    ERROR (malformed meta.json), the replay goes on."""
    d = written(tmp_path)
    (d / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    b = Bundle.load(d)
    assert b.gather_error and "meta.json unreadable: RecursionError" in b.gather_error
