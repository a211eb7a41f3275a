"""Where a run writes: an unusable output location stops the run with exit 2 before any node is
contacted; a disk that fills up while the reports are written gives a clear error, a junit.xml
that is either valid or absent (never truncated or 0 bytes), every report that fits, and no
traceback (nodegate/session/outputs.py; docs/security.md, "Outputs").

The full disks are small tmpfs mounts made and removed by the tests (root needed: skipped with
the reason otherwise), sized from a reference run of the same replay so that they keep working
when the reports change size.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.hostile import sshservers as S

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "inventories" / "samples" / "fleet"
LIMIT = "h200-580-open-healthy,row-remap-failure,smi-hang"


def _pytest(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("SSH_AUTH_SOCK", None)
    return subprocess.run([sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _can_mount() -> str | None:
    if os.geteuid() != 0:
        return "mounting a small tmpfs needs root"
    return None


needs_mount = pytest.mark.skipif(_can_mount() is not None, reason=str(_can_mount()))


@contextlib.contextmanager
def tmpfs(path: Path, size: str, *, ro: bool = False):
    """A tmpfs of ``size`` mounted at ``path`` for the block's duration (skips if mount fails)."""
    path.mkdir(parents=True, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


# ------------------------------------------------------------------------------ before anything is contacted
@pytest.fixture()
def live(tmp_path):
    """An inventory whose only node is a test SSH server counting the connections it gets."""
    srv = S.Server("healthy")
    inv = tmp_path / "inventory.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": {"n1": {
        "ansible_host": "127.0.0.1", "ansible_port": srv.port, "ansible_user": "ng",
        "ansible_ssh_private_key_file": str(S.client_key_file(tmp_path))}}}}))
    yield srv, inv
    srv.close()


def _file(tmp_path: Path) -> Path:
    f = tmp_path / "a-file"
    f.write_text("not a directory\n")
    return f


@pytest.mark.parametrize("case,args,phrase", [
    ("reports-dir is a file", lambda t: ["--reports-dir", str(_file(t))], "exists and is not a directory"),
    ("reports-dir under a file", lambda t: ["--reports-dir", str(_file(t) / "reports")], "is not a directory"),
    ("bundles-dir is a file", lambda t: ["--reports-dir", str(t / "r"), "--bundles-dir", str(_file(t))],
     "--bundles-dir: "),
    ("junitxml under a file", lambda t: ["--reports-dir", str(t / "r"), "--junitxml", str(_file(t) / "j.xml")],
     "--junitxml: "),
    ("html is a directory", lambda t: ["--reports-dir", str(t / "r"), "--html", str(t)],
     "is a directory, not a file"),
    ("html under a file", lambda t: ["--reports-dir", str(t / "r"), "--html", str(_file(t) / "x.html")],
     "--html: "),
])
def test_an_unusable_output_location_exits_2_before_any_node_is_contacted(live, tmp_path, case, args, phrase):
    srv, inv = live
    r = _pytest("--inventory", str(inv), *args(tmp_path))
    assert r.returncode == 2, (case, r.stdout[-2000:], r.stderr[-2000:])
    out = r.stdout + r.stderr
    assert phrase in out and "nothing was contacted" in out, out[-2000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out
    assert srv.accepted == 0


@needs_mount
@pytest.mark.parametrize("opt", ["--reports-dir", "--junitxml"])
def test_a_read_only_output_location_exits_2_even_for_root(live, tmp_path, opt):
    srv, inv = live
    with tmpfs(tmp_path / "ro", "1m", ro=True) as ro:
        args = ["--reports-dir", str(ro)] if opt == "--reports-dir" else \
            ["--reports-dir", str(tmp_path / "r"), "--junitxml", str(ro / "junit.xml")]
        r = _pytest("--inventory", str(inv), *args)
    out = r.stdout + r.stderr
    assert r.returncode == 2, out[-2000:]
    assert f"nodegate: {opt}: cannot create files in {ro}: Read-only file system" in out
    assert srv.accepted == 0


@S.needs_ssh_client   # the live node is reached with Ansible's default connection, ssh
def test_a_usable_location_is_created_and_the_run_goes_on(live, tmp_path):
    srv, inv = live
    reports = tmp_path / "new" / "reports"
    r = _pytest("--inventory", str(inv), "--reports-dir", str(reports), "--connect-timeout", "5")
    assert r.returncode == 1, r.stdout[-2000:]   # the test server is no GPU node: its checks ERROR
    assert srv.accepted == 1 and (reports / "junit.xml").is_file()
    assert not list(reports.glob(".nodegate-write-test-*"))


# ------------------------------------------------------------------------------ a disk that fills up
@pytest.fixture(scope="module")
def sizes(tmp_path_factory):
    """Sizes of every output of the replay used below (a reference run on a roomy disk)."""
    d = tmp_path_factory.mktemp("ref") / "reports"
    r = _pytest("--replay", str(SAMPLES), "--limit", LIMIT, "--reports-dir", str(d))
    assert r.returncode == 1, r.stdout[-2000:]
    s = {p.relative_to(d).as_posix(): p.stat().st_size for p in d.rglob("*") if p.is_file()}
    s["archives"] = sum(v for k, v in s.items() if k.endswith(".tar.gz"))
    return s


def _kib(n: int) -> str:
    return f"{(n + 4095) // 4096 * 4}k"


def _full_run(tmp_path: Path, size: str):
    with tmpfs(tmp_path / "disk", size) as disk:
        r = _pytest("--replay", str(SAMPLES), "--limit", LIMIT, "--reports-dir", str(disk / "reports"))
        files = {p.relative_to(disk / "reports").as_posix(): p.read_bytes()
                 for p in (disk / "reports").rglob("*") if p.is_file()}
    return r, files


def _no_traceback(r):
    out = r.stdout + r.stderr
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]


@needs_mount
def test_junit_that_does_not_fit_is_replaced_by_a_valid_one_naming_the_error(tmp_path, sizes):
    """Room for results.jsonl (written as the run goes) and a little more, not for junit.xml:
    nodegate renders its reports from results.jsonl at the end, each writer on its own."""
    room = sizes["results.jsonl"] + 64 * 1024
    assert room < sizes["results.jsonl"] + sizes["junit.xml"]
    r, files = _full_run(tmp_path, _kib(room))
    _no_traceback(r)
    assert r.returncode == 1
    assert "nodegate: reports NOT written" in r.stdout
    assert "JUnit XML " in r.stdout and "NOT written: No space left on device (errno 28)" in r.stdout
    root = ET.fromstring(files["junit.xml"])   # valid XML, not a truncated original
    err = root.find("testsuite/testcase/error")
    assert err is not None and err.get("message") == "JUnit XML not written: No space left on device (errno 28)"
    assert "passed" in err.text
    assert len(files["results.jsonl"]) == sizes["results.jsonl"]   # every item's line is kept
    assert not any(Path(k).name.startswith(".") for k in files), files.keys()   # no temporaries left


@needs_mount
def test_a_full_disk_gives_its_room_to_junit_rma_and_archives_before_the_html(tmp_path, sizes):
    """Room for everything but the HTML (report.html and the node pages): the node pages, the
    largest output, are removed to make room, the rest is written whole."""
    def blocks(n: int) -> int:   # tmpfs gives each file whole 4 KiB pages
        return (n + 4095) // 4096 * 4096
    pages = sum(blocks(v) for k, v in sizes.items() if k.startswith("nodes/")) + blocks(sizes["report.html"])
    kept = sum(blocks(v) for k, v in sizes.items() if not k.startswith("nodes/") and k not in ("report.html", "archives"))
    room = kept + pages // 3
    assert room < kept + pages
    r, files = _full_run(tmp_path, _kib(room))
    _no_traceback(r)
    assert r.returncode == 1
    assert len(files["junit.xml"]) == sizes["junit.xml"]   # the real one, whole
    ET.fromstring(files["junit.xml"])
    for k in ("rma.csv", "rma.json", "actions.csv"):
        assert len(files[k]) == sizes[k], k
    assert sum(1 for k in files if k.endswith(".tar.gz")) == sum(1 for k in sizes if k.endswith(".tar.gz"))
    assert "report.html" not in files and not any(k.startswith("nodes/") for k in files)
    assert "HTML report " in r.stdout and "NOT written: No space left on device" in r.stdout
    assert "JUnit XML " not in r.stdout.split("nodegate: reports NOT written", 1)[1]
    assert not any(Path(k).name.startswith(".") for k in files), files.keys()


@needs_mount
def test_a_disk_with_no_room_at_all_leaves_no_truncated_junit(tmp_path, sizes):
    r, files = _full_run(tmp_path, "4k")
    _no_traceback(r)
    assert r.returncode == 1
    assert "nodegate: reports NOT written" in r.stdout
    assert all(len(v) > 0 for v in files.values()), {k: len(v) for k, v in files.items()}
    if "junit.xml" in files:   # only ever the small valid one
        assert ET.fromstring(files["junit.xml"]).find("testsuite/testcase/error") is not None


@needs_mount
def test_a_live_run_on_a_full_disk_errors_its_nodes_with_the_reason(tmp_path):
    """The bundles cannot be written: the node ERRORs naming why (no crash, no silent pass)."""
    with tmpfs(tmp_path / "disk", "8k") as disk:
        (disk / "filler").write_bytes(b"x" * 4096)
        r = _pytest("--target", "local://", "--reports-dir", str(disk / "reports"), "--probe-timeout", "60")
    _no_traceback(r)
    assert r.returncode == 1
    assert "bundle not written to" in r.stdout and "No space left on device" in r.stdout
