"""The probe's kernel.log item cuts the log without losing what decides a verdict (issue 17,
item 4): every line that can (Xid, off the bus, RmInitAdapter, GSP, API mismatch, ...) is kept
wherever it is, with its record's lines around it, in order; the cut is recorded; a node without
awk keeps the last lines and says the severe ones may be lost. Run in dash, bash and busybox sh
with a fake ``dmesg`` (and ``journalctl``) on PATH (busybox sh runs its own dmesg applet before
PATH: there the cut itself, ``ng_klog_cut``, is fed the log)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from nodegate.bundle import Bundle
from nodegate.collect import NodeFacts
from nodegate.errors import EvidenceError
from nodegate.probe import RawItem

from .test_probe import SHELLS, _item_script, _run, _split

XID48 = "[    2.000000] NVRM: Xid (PCI:0000:19:00): 48, pid=1, name=python, An uncorrectable double bit error"
API = ["[    3.000000] NVRM: API mismatch: the client has the version 580.159.04, but",
       "NVRM: this kernel module has the version 570.124.06.  Please",
       "NVRM: make sure that this kernel module and all NVIDIA driver",
       "NVRM: components have the same version."]
OPEN = ["[    4.000000] NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2335)",
        "NVRM: installed in this system requires use of the NVIDIA open kernel modules."]


#: shells that run a ``dmesg`` found on PATH
PATH_SHELLS = [s for s in SHELLS if s[0] != "busybox"]


def xid13(i: int) -> str:
    return f"[  {10 + i}.000000] NVRM: Xid (PCI:0000:19:00): 13, pid=1, name=python, Graphics Exception"


def other(i: int) -> str:
    return f"[ 9000.{i:06d}] nvidia-modeset: routine message {i}"


def _tools(tmp: Path, log: list[str], *, dmesg_rc: int = 0, with_awk: bool = True) -> Path:
    """A PATH directory: fake dmesg/journalctl printing ``log``, and this machine's tools
    (without awk when ``with_awk`` is False)."""
    d = tmp / ("bin" if with_awk else "bin-noawk")
    d.mkdir()
    (tmp / "log.txt").write_text("".join(x + "\n" for x in log))
    for tool, rc in (("dmesg", dmesg_rc), ("journalctl", 0)):
        body = (f"cat {tmp / 'log.txt'}\n" if not (tool == "dmesg" and rc) else
                "echo 'dmesg: read kernel buffer failed: Operation not permitted'\nexit 1\n")
        (d / tool).write_text("#!/bin/sh\n" + body)
        (d / tool).chmod(0o755)
    for t in ("grep", "tail", "head", "cat", "printf", "sh", "timeout") + (("awk",) if with_awk else ()):
        w = shutil.which(t)
        if w:
            (d / t).symlink_to(w)
    return d


def _klog(shell, tmp: Path, log: list[str], keep: int | None = None, **kw) -> tuple[bytes, int | None]:
    path = _tools(tmp, log, **kw)
    body = f"PATH={path}\n" + (f"NG_KLKEEP={keep}\n" if keep else "") + "ng_item kernel.log ng_f_klog\n"
    script, m = _item_script(body)
    items, complete = _split(_run(shell, script), m)
    assert complete
    return items["kernel.log"].stdout, items["kernel.log"].rc


def _facts(out: bytes) -> NodeFacts:
    return NodeFacts(Bundle.from_raw("n", {"kernel.log": RawItem("kernel.log", out, b"", 0)}, {}))


@pytest.mark.parametrize("shell", PATH_SHELLS, ids=lambda s: s[0])
def test_an_xid_48_before_6000_xid_13_and_7000_other_lines_is_kept(shell, tmp_path):
    log = [XID48] + [xid13(i) for i in range(6000)] + [other(i) for i in range(7000)]
    out, rc = _klog(shell, tmp_path, log)
    lines = out.decode().splitlines()
    assert rc == 0
    assert lines[0] == "# source: dmesg" and lines[1] == XID48
    assert lines[-1] == "# lines: seen=13001 kept=11004 dropped_severe=0"
    body = lines[1:-1]
    assert body == [x for x in log if x in set(body)]   # the node's order
    assert body[-5000:] == log[-5000:]                   # and its last lines
    assert sum(": 13," in x for x in body) == 6000
    f = _facts(out)
    assert [e.xid for e in f.kernel_events if e.kind == "xid"][:2] == [48, 13]
    assert (f.kernel_log_cut.seen, f.kernel_log_cut.kept, f.kernel_log_cut.lost_severe) == (13001, 11004, False)


@pytest.mark.parametrize("shell", PATH_SHELLS, ids=lambda s: s[0])
def test_multi_line_records_before_the_cut_keep_their_lines(shell, tmp_path):
    log = API + OPEN + [other(i) for i in range(6000)]
    out, _ = _klog(shell, tmp_path, log)
    kinds = {e.kind: e for e in _facts(out).kernel_events}
    assert kinds["api_mismatch"].details == {"client_version": "580.159.04", "kernel_version": "570.124.06"}
    assert kinds["requires_open"].details == {"pci_id": "10de:2335"}


@pytest.mark.parametrize("shell", PATH_SHELLS, ids=lambda s: s[0])
def test_severe_lines_over_the_keep_cap_are_counted_and_error(shell, tmp_path):
    # 61 severe lines and the 3 lines after the last one (its record's): 10 kept, 54 counted
    log = [XID48] + [xid13(i) for i in range(60)] + [other(i) for i in range(6000)]
    out, _ = _klog(shell, tmp_path, log, keep=10)
    assert out.decode().splitlines()[-1] == "# lines: seen=6061 kept=5010 dropped_severe=54"
    with pytest.raises(EvidenceError, match="54 line\\(s\\) of records that can decide a verdict were cut away"):
        _facts(out).kernel_events  # noqa: B018


@pytest.mark.parametrize("shell", [s for s in SHELLS if s[0] != "busybox"], ids=lambda s: s[0])  # busybox has awk built in
@pytest.mark.parametrize("n,record", [(6000, "# lines: seen=6000 kept=5000 dropped_severe=unknown"),
                                      (12, "# lines: seen=12 kept=12 dropped_severe=0")], ids=["cut", "short"])
def test_without_awk_the_last_lines_and_an_honest_record(shell, tmp_path, n, record):
    log = [XID48] + [other(i) for i in range(n - 1)]
    out, _ = _klog(shell, tmp_path, log, with_awk=False)
    lines = out.decode().splitlines()
    assert lines[-1] == record
    f = _facts(out)
    if n > 5000:
        assert XID48 not in lines
        with pytest.raises(EvidenceError, match="may have been cut away"):
            f.kernel_events  # noqa: B018
    else:
        assert lines[1] == XID48 and f.kernel_events[0].xid == 48


@pytest.mark.parametrize("shell", PATH_SHELLS, ids=lambda s: s[0])
def test_the_journal_when_dmesg_is_denied_and_an_empty_log(shell, tmp_path):
    out, rc = _klog(shell, tmp_path, ["[    1.0] unrelated line"], dmesg_rc=1)
    assert rc == 0
    assert out.decode() == "# source: journalctl -k -b\n# lines: seen=0 kept=0 dropped_severe=0\n"
    assert _facts(out).kernel_events == []


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_machine_id_item(shell):
    script, m = _item_script("ng_lite meta.machine_id ng_f_machineid\n")
    items, _ = _split(_run(shell, script), m)
    ev = items["meta.machine_id"]
    if os.path.isfile("/etc/machine-id"):
        assert (ev.stdout, ev.rc) == (Path("/etc/machine-id").read_bytes(), 0)
    else:
        assert ev.rc == 1


@pytest.mark.skipif(not shutil.which("busybox"), reason="busybox not installed (apt-get install busybox-static)")
def test_busybox_cuts_the_same_way(tmp_path):
    log = [XID48] + API + [xid13(i) for i in range(6000)] + [other(i) for i in range(7000)]
    (tmp_path / "log.txt").write_text("".join(x + "\n" for x in log))
    script, m = _item_script(f"ng_item kernel.log ng_klog_cut_file\n")
    script = script.replace("ng_item kernel.log ng_klog_cut_file",
                            f"ng_klog_cut_file() {{ ng_klog_cut <{tmp_path / 'log.txt'}; }}\nng_item kernel.log ng_klog_cut_file")
    items, _ = _split(_run(["busybox", "sh", "-s"], script), m)
    lines = items["kernel.log"].stdout.decode().splitlines()
    assert lines[-1] == "# lines: seen=13005 kept=11008 dropped_severe=0"
    assert lines[:5] == [XID48] + API
