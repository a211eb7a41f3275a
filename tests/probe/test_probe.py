"""The probe script: framing, shells, caps, missing tools, forged frames, deadlines."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from nodegate.probe import ITEMS, render_script, split_stream, template
from nodegate.transport import Target

SHELLS = [s for s in (["dash", "-s"], ["bash", "-s"], ["busybox", "sh", "-s"]) if shutil.which(s[0])]


def _run(shell, script, env=None, timeout=60):
    p = subprocess.run(shell, input=script.encode(), capture_output=True, timeout=timeout, env=env)
    return p


def _item_script(body: str, **kw) -> tuple[str, str]:
    """A probe script whose item list is replaced by ``body`` (functions kept)."""
    s, m = render_script(**kw)
    head = s.split("\nng_lite meta.uname_r")[0] + "\n"
    done = "printf '%s DONE\\n' \"$M\"\n"
    tail = s.rsplit(done, 1)[1]   # closes the items' group: their stderr through the capped reader
    return head + body + "\n" + done + tail, m


def _split(p, m, **kw):
    """split_stream of a finished probe process: its stdout frames and its stderr stream."""
    return split_stream(p.stdout, m, stderr=p.stderr, **kw)


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_full_probe_runs_under_each_posix_shell(shell):
    script, marker = render_script(user="nvidia-persistenced")
    p = _run(shell, script)
    items, complete = split_stream(p.stdout, marker, stderr=p.stderr)
    assert p.returncode == 0
    assert complete is True
    assert set(items) == set(ITEMS) - {"nvml.json"}
    assert items["meta.uname_r"].rc == 0
    assert items["meta.uname_r"].stdout.decode().strip() == os.uname().release
    # this machine has no nvidia-smi: recorded as a missing tool, never fatal
    assert items["smi.qx"].rc == 127
    assert b"nvidia-smi" in items["smi.qx"].stderr


def test_every_item_key_is_in_the_script_and_documented():
    text = template()
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bundle.md").read_text()
    for key in ITEMS:
        if key != "nvml.json":
            assert f" {key} " in text, key
        assert f"`{key}`" in doc, key


def test_bundle_doc_is_generated_from_items():
    from tools.gen_bundle_doc import render
    doc = (Path(__file__).resolve().parents[2] / "docs" / "bundle.md").read_text()
    assert doc == render()


#: ng_item caps a tool on the node; ng_lite frames pseudo-files and the probe's own functions
#: without the caps' processes: both must give the controller the same items
FRAMERS = ("ng_item", "ng_lite")


@pytest.mark.parametrize("framer", FRAMERS)
@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_stdout_stderr_rc_are_kept_exactly(shell, framer):
    body = r"""
ng_f_a() { printf 'no newline at end'; echo oops >&2; return 3; }
ng_f_b() { printf 'two\n\nlines\n\n'; }
ng_f_c() { :; }
ng_item t.a ng_f_a
ng_item t.b ng_f_b
ng_item t.c ng_f_c
""".replace("ng_item", framer)
    script, m = _item_script(body)
    items, complete = _split(_run(shell, script), m)
    assert complete
    assert (items["t.a"].stdout, items["t.a"].stderr, items["t.a"].rc) == (b"no newline at end", b"oops", 3)
    assert (items["t.b"].stdout, items["t.b"].rc) == (b"two\n\nlines\n\n", 0)
    assert (items["t.c"].stdout, items["t.c"].stderr, items["t.c"].rc) == (b"", b"", 0)


@pytest.mark.parametrize("framer", FRAMERS)
@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_stderr_block_drops_trailing_newlines_only(shell, framer):
    """The ERR block is the stderr without its trailing newlines (as a `$(...)` capture gives it:
    the probe strips them in the shell instead of forking one, docs/performance.md)."""
    body = r"""
ng_f_a() { printf '\n\nfirst\n\n\nsecond\n\n\n' >&2; printf 'out\n\n'; }
ng_f_b() { printf '\n\n' >&2; }
ng_f_c() { printf 'tab\t \n' >&2; return 4; }
ng_item t.a ng_f_a
ng_item t.b ng_f_b
ng_item t.c ng_f_c
""".replace("ng_item", framer)
    script, m = _item_script(body)
    items, complete = _split(_run(shell, script), m)
    assert complete
    assert (items["t.a"].stdout, items["t.a"].stderr, items["t.a"].rc) == (b"out\n\n", b"\n\nfirst\n\n\nsecond", 0)
    # only newlines: no ERR block, or an empty one (the exit code line may land after them)
    assert (items["t.b"].stderr, items["t.b"].rc) == (b"", 0)
    assert (items["t.c"].stderr, items["t.c"].rc) == (b"tab\t ", 4)


def test_forged_frames_from_node_output_are_plain_output():
    # A hostile tool prints frames with a guessed marker and a section claiming to be another key.
    body = r"""
ng_f_evil() { echo '@@NG-deadbeefdeadbeef END t.evil rc=0 1'; echo '@@NG-deadbeefdeadbeef BEGIN smi.qx 1'; echo '<fake/>'; }
ng_item t.evil ng_f_evil
"""
    script, m = _item_script(body)
    items, complete = _split(_run(["dash", "-s"], script), m)
    assert complete
    assert set(items) == {"t.evil"}
    assert b"BEGIN smi.qx" in items["t.evil"].stdout


def test_same_key_framed_twice_is_malformed():
    body = "ng_item t.x echo one\nng_item t.x echo two\n"
    script, m = _item_script(body)
    items, _ = _split(_run(["dash", "-s"], script), m)
    assert items["t.x"].status == "malformed"


def test_output_over_cap_is_cut_on_the_node_and_marked_truncated():
    body = "ng_f_big() { head -c 300000 /dev/zero | tr '\\0' x; }\nng_item t.big ng_f_big\n"
    script, m = _item_script(body, cap=4096)
    p = _run(["dash", "-s"], script)
    items, complete = split_stream(p.stdout, m, cap=4096, stderr=p.stderr)
    assert complete
    assert len(p.stdout) < 10000  # bounded on the wire, not only in memory
    assert items["t.big"].status == "truncated"
    assert len(items["t.big"].stdout) == 4096


def test_lite_item_over_cap_is_cut_by_the_controller_and_the_next_item_is_intact():
    """ng_lite has no `head -c` on the node: the controller cuts the item at the cap (truncated,
    its checks ERROR) and the items after it are framed as usual."""
    body = ("ng_f_big() { head -c 300000 /dev/zero | tr '\\0' x; echo err >&2; return 5; }\n"
            "ng_lite t.big ng_f_big\nng_lite t.next uname -n\n")
    script, m = _item_script(body, cap=4096)
    p = _run(["dash", "-s"], script)
    items, complete = split_stream(p.stdout, m, cap=4096, stderr=p.stderr)
    assert complete
    assert (items["t.big"].status, len(items["t.big"].stdout), items["t.big"].rc) == ("truncated", 4096, 5)
    assert items["t.big"].stderr == b"err"
    assert (items["t.next"].status, items["t.next"].rc) == ("ok", 0)
    assert items["t.next"].stdout.decode().strip() == os.uname().nodename


def _fake_pci_sysfs(root: Path) -> None:
    """root/sys: one NVIDIA GPU (3D controller) behind one bridge, linked from bus/pci/devices."""
    bridge = root / "sys/devices/pci0000:00/0000:00:01.0"
    gpu = bridge / "0000:01:00.0"
    gpu.mkdir(parents=True)
    for d, attrs in ((bridge, {"vendor": "0x1022", "class": "0x060400"}),
                     (gpu, {"vendor": "0x10de", "class": "0x030200", "device": "0x2335"})):
        for k, v in {**attrs, "current_link_speed": "32.0 GT/s PCIe", "current_link_width": "16",
                     "max_link_speed": "32.0 GT/s PCIe", "max_link_width": "16"}.items():
            (d / k).write_text(v + "\n")
    links = root / "sys/bus/pci/devices"
    links.mkdir(parents=True)
    (links / "0000:01:00.0").symlink_to("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0")


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_lite_items_leave_the_probe_shell_as_they_found_it(shell, tmp_path):
    """ng_lite runs the probe's functions in the probe's own shell: the PCI walk (which changes
    directory to resolve each device's physical path) must not move the items after it."""
    _fake_pci_sysfs(tmp_path / "fake")
    work = tmp_path / "work"
    work.mkdir()
    body = f"cd {work}\nng_lite pci.sysfs ng_f_pci\nng_lite t.where pwd\n"
    script, m = _item_script(body)
    script = script.replace("/sys/bus/pci/devices/*", f"{tmp_path}/fake/sys/bus/pci/devices/*") \
                   .replace("!= /sys/devices ]", f"!= {tmp_path}/fake/sys/devices ]")
    items, complete = _split(_run(shell, script), m)
    assert complete
    pci = items["pci.sysfs"].stdout.decode()
    assert "== 0000:01:00.0 gpu" in pci and "== 0000:00:01.0 upstream-of 0000:01:00.0" in pci, pci
    assert pci.rstrip().endswith("gpus: 1")
    assert items["t.where"].stdout.decode().strip() == str(work)


def test_invalid_user_is_refused_before_it_reaches_the_script():
    with pytest.raises(ValueError):
        render_script(user="x'; rm -rf /; '")


def test_unfinished_item_is_kept_as_timeout():
    data = b"@@NG-abcdefabcdef BEGIN a.b 1.0\nhello\n\n@@NG-abcdefabcdef END a.b rc=0 1.5\n@@NG-abcdefabcdef BEGIN c.d 1.5\npartial"
    items, complete = split_stream(data, "@@NG-abcdefabcdef")
    assert not complete
    assert items["a.b"].stdout == b"hello\n" and items["a.b"].rc == 0 and items["a.b"].duration_s == 0.5
    assert items["c.d"].status == "timeout" and items["c.d"].rc is None and items["c.d"].stdout == b"partial"


def test_node_side_timeout_kills_a_tool_that_ignores_sigterm(tmp_path):
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n")
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    body = "ng_tool smi.qx nvidia-smi -q -x\nng_item t.after echo after\n"
    script, m = _item_script(body, timeout_s=1)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    t0 = time.monotonic()
    items, complete = _split(_run(["dash", "-s"], script, env=env), m)
    assert time.monotonic() - t0 < 60   # killed at 1 + 3 s; the tool itself never ends
    assert complete
    assert items["smi.qx"].rc in (124, 137)
    assert items["t.after"].stdout == b"after\n"


# busybox sh runs its own applets (timeout among them) before PATH: the wrapper below is not called
@pytest.mark.parametrize("shell", [s for s in SHELLS if s[0] != "busybox"], ids=lambda s: s[0])
def test_no_command_of_the_probe_inherits_its_output_descriptors(shell, tmp_path):
    """No command the probe starts holds the probe's own stdout (fd 5) or an item's stdout (fd
    4): a tool that leaves a process behind would keep the stream open after the probe ended.
    busybox's `timeout` does (a watchdog that sleeps a second after the command): with fd 5 it
    held every probe open ~1 s past its last item. A `timeout` on PATH records what it got."""
    log = tmp_path / "fds.log"
    real = shutil.which("timeout")
    if real is None:
        pytest.skip("no timeout(1) on this machine")
    wrapper = tmp_path / "timeout"
    wrapper.write_text("#!/bin/sh\n"
                       f"for fd in 4 5; do [ -e /proc/$$/fd/$fd ] && echo \"$* holds fd $fd\" >>{log}; done\n"
                       f"echo \"$*\" >>{log}.calls\n"
                       f"exec {real} \"$@\"\n")
    wrapper.chmod(0o755)
    for tool in ("nvidia-smi", "modinfo", "dkms", "systemctl"):
        (tmp_path / tool).write_text("#!/bin/sh\necho fake\n")
        (tmp_path / tool).chmod(0o755)
    script, m = render_script(user="nvidia-persistenced")
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    items, complete = _split(_run(shell, script, env=env), m)
    assert complete
    calls = (tmp_path / "fds.log.calls").read_text().splitlines()
    assert "5 true" in calls and any("nvidia-smi -q -x" in c for c in calls), calls
    assert not log.exists(), log.read_text()


def test_controller_deadline_keeps_evidence_gathered_before_the_hang():
    # local:// with a hang that no node-side timeout covers (a shell builtin loop)
    body = "ng_item t.first echo first\nng_f_hang() { while :; do :; done; }\nng_item t.hang ng_f_hang\n"
    script, m = _item_script(body)
    t0 = time.monotonic()
    r = Target("local://").run_probe(script, deadline_s=2)
    elapsed = time.monotonic() - t0
    items, complete = split_stream(r.stdout, m, stderr=r.stderr)
    assert r.timed_out and elapsed < 60   # cut at 2 s; the hang itself never ends
    assert not complete
    assert items["t.first"].stdout == b"first\n"
    assert items["t.hang"].status == "timeout"


def _fake_smi(tmp_path, body: str) -> dict:
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(0o755)
    return dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")


def _clocks(env, samples=3, timeout_s=30):
    script, m = _item_script("ng_need nvidia-smi smi.clocks_samples ng_f_clocks\n", samples=samples,
                             timeout_s=timeout_s)
    items, _ = _split(_run(["dash", "-s"], script, env=env), m)
    return items["smi.clocks_samples"]


def test_clocks_one_sample_when_no_failing_bit(tmp_path):
    env = _fake_smi(tmp_path, 'echo "0, 00000000:19:00.0, P0, 0x0000000000000004"\n')
    it = _clocks(env)
    assert it.rc == 0
    assert it.stdout == b"0, 00000000:19:00.0, P0, 0x0000000000000004\n"


def test_clocks_failing_bit_is_confirmed_by_more_samples(tmp_path):
    # first call reports HW power brake (0x80); the later ones have cleared it
    body = ('c=$(cat "$0.count" 2>/dev/null || echo 0); echo $((c + 1)) > "$0.count"\n'
            'if [ "$c" = 0 ]; then m=0x0000000000000080; else m=0x0000000000000000; fi\n'
            'echo "0, 00000000:19:00.0, P0, $m"\n')
    it = _clocks(_fake_smi(tmp_path, body))
    assert it.stdout.decode().splitlines() == [
        "0, 00000000:19:00.0, P0, 0x0000000000000080",
        "# sample 2", "0, 00000000:19:00.0, P0, 0x0000000000000000",
        "# sample 3", "0, 00000000:19:00.0, P0, 0x0000000000000000"]


def test_clocks_old_driver_field_name_is_retried(tmp_path):
    body = ('case "$1" in *clocks_event_reasons*) echo \'Field "clocks_event_reasons.active" is not a valid field to query.\'; exit 2;; esac\n'
            'echo "0, 00000000:19:00.0, P8, 0x0000000000000001"\n')
    it = _clocks(_fake_smi(tmp_path, body))
    assert (it.rc, it.stdout) == (0, b"0, 00000000:19:00.0, P8, 0x0000000000000001\n")


def test_clocks_hung_nvidia_smi_costs_one_deadline_not_two(tmp_path):
    # counted, not timed: a retry would be a second call (a wall-clock bound raced the load: issue 30)
    calls = tmp_path / "calls"
    env = _fake_smi(tmp_path, f"echo \"$*\" >>{calls}\ntrap '' TERM\nwhile :; do sleep 1; done\n")
    it = _clocks(env, timeout_s=1)
    assert it.rc in (124, 137)
    assert len(calls.read_text().splitlines()) == 1  # one kill (1 s + 3 s grace), no retry


def test_stderr_split_is_not_fooled_by_a_forged_err_line():
    """A tool's stderr ending in an ERR line of another marker, without a newline, neither hides
    the next item's real ERR line nor moves its stderr to the wrong item."""
    from nodegate.probe import split_stderr
    m = "@@NG-" + "12" * 12
    data = (f"\n{m} ERR a\nmsg a\n@@NG-{'ff' * 12} ERR c"
            f"\n{m} ERR b\n\n{m} ERR c\nmsg c\n\n[nodegate] connection dropped mid-probe\n").encode()
    errs, rest = split_stderr(data, m)
    assert errs == {"a": f"msg a\n@@NG-{'ff' * 12} ERR c".encode(), "c": b"msg c"}
    assert rest.strip() == b"[nodegate] connection dropped mid-probe"


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
@pytest.mark.parametrize("lines,extra_samples", [
    (["0, 00000000:19:00.0, P0, 0x0000000000000000", "1, 00000000:3B:00.0, P0, 0x0000000000000008"], True),
    (["0, 00000000:19:00.0, P0, 0x0000000000000004", "1, 00000000:3B:00.0, P0, 0x0000000000000001"], False),
    (["0, 00000000:19:00.0, P0, 0x0000000000000008 x"], False),      # not the line's last field
    (["0, 00000000:19:00.0, P0, 0x"], False),                        # no digits
    (["0, 00000000:19:00.0, P0, 0x00000000000000zz"], False),
    (["0, 00000000:19:00.0, P0, 0x100000000000000008"], False),      # more than 64 bits
    (["0, 00000000:19:00.0, P0, [N/A]", "1, 00000000:3B:00.0, P8, 0x0000000000000040"], True),
], ids=["second-gpu-hw-slowdown", "idle-and-app-clocks", "trailing-field", "no-digits", "not-hex", "too-long",
       "na-then-thermal"])
def test_clocks_failing_bit_is_found_on_any_line_in_each_shell(shell, tmp_path, lines, extra_samples):
    """The probe finds a failing bit (hw_slowdown 0x8, sw_thermal 0x20... in NG_FAILMASK) in the
    last field of any GPU's line, with the shell's own string operations, in every shell; a field
    that is not one hexadecimal number never triggers the extra samples."""
    env = _fake_smi(tmp_path, "cat <<'EOF'\n" + "\n".join(lines) + "\nEOF\n")
    script, m = _item_script("ng_need nvidia-smi smi.clocks_samples ng_f_clocks\n", samples=2, timeout_s=30)
    items, _ = _split(_run(shell, script, env=env), m)
    it = items["smi.clocks_samples"]
    assert it.rc == 0
    out = it.stdout.decode().splitlines()
    assert out[:len(lines)] == lines
    assert ("# sample 2" in out) is extra_samples, out


def _fake_proc_and_pci(root: Path) -> None:
    """root/proc: a persistenced, another process, and one whose comm spoofs persistenced on its
    second line; root/sys: a non-NVIDIA function, an NVIDIA GPU and a vendor file whose *second*
    line says NVIDIA."""
    for pid, comm in (("1", "systemd\n"), ("123", "nvidia-persiste\n"), ("456", "x\nnvidia-persiste\n")):
        d = root / "proc" / pid
        d.mkdir(parents=True)
        (d / "comm").write_text(comm)
        (d / "status").write_text(f"Name:\t{comm.splitlines()[0]}\nUid:\t143\t143\t143\t143\nGid:\t143\t143\t143\t143\n")
        (d / "cmdline").write_bytes(b"/usr/bin/nvidia-persistenced\0--user\0nvidia-persistenced\0")
    _fake_pci_sysfs(root)
    odd = root / "sys/devices/pci0000:00/0000:00:02.0"
    odd.mkdir(parents=True)
    (odd / "vendor").write_text("0x1022\n0x10de\n")
    (odd / "class").write_text("0x030000\n")
    (root / "sys/bus/pci/devices/0000:00:02.0").symlink_to("../../../devices/pci0000:00/0000:00:02.0")


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_process_and_pci_scans_are_the_same_with_grep_without_it_and_when_it_cannot_run(shell, tmp_path):
    """ng_cand pre-selects /proc/*/comm and PCI vendor files with one grep; every candidate is then
    read and checked as before, so the output is the same as the shell's own loop over all of
    them (no grep on the node, or a grep that cannot be run), spoofed second lines included."""
    root = tmp_path / "fake"
    _fake_proc_and_pci(root)
    body = "ng_lite persistenced.process ng_f_persistenced_proc\nng_lite pci.sysfs ng_f_pci\n"
    script, m = _item_script(body)
    script = (script.replace("/proc/[0-9]*/comm", f"{root}/proc/[0-9]*/comm")
              .replace("/sys/bus/pci/devices/*", f"{root}/sys/bus/pci/devices/*")
              .replace("!= /sys/devices ]", f"!= {root}/sys/devices ]"))
    # the probe puts the system's directories on PATH itself: the variants change ng_cand instead
    assert script.count('command -v grep >/dev/null 2>&1; then\n    ng_gl=$(grep -l -e') == 1
    variants = {
        "grep": script,
        "no-grep": script.replace('command -v grep >/dev/null 2>&1; then\n    ng_gl=$(grep -l -e',
                                  'command -v ng-no-such-tool >/dev/null 2>&1; then\n    ng_gl=$(grep -l -e'),
        # found but cannot be run (127 here; 126 for an argument list too long)
        "cannot-run": script.replace('ng_gl=$(grep -l -e', 'ng_gl=$(ng-no-such-tool -l -e'),
    }
    outs = {}
    for name, text in variants.items():
        items, complete = _split(_run(shell, text), m)
        assert complete, name
        outs[name] = (items["persistenced.process"].stdout, items["pci.sysfs"].stdout)
    proc, pci = outs["grep"]
    assert proc.decode().count("== pid ") == 1 and b"== pid 123\n" in proc and b"processes: 1" in proc
    assert b"== 0000:01:00.0 gpu" in pci and b"0000:00:02.0" not in pci and pci.rstrip().endswith(b"gpus: 1")
    for name, o in outs.items():
        assert o == outs["grep"], name


def _fake_dmi(root: Path) -> Path:
    """A /sys/class/dmi/id as the kernel lays it out (drivers/firmware/dmi-id.c): vendor and model
    world-readable, serials and product_uuid root-only."""
    d = root / "dmi" / "id"
    d.mkdir(parents=True)
    for name, value, mode in (("sys_vendor", "Supermicro", 0o444), ("product_name", "SYS-821GE-TNHR", 0o444),
                              ("product_serial", "S821GE000123", 0o400), ("product_uuid", "5c6e6a80-2d7b", 0o400),
                              ("board_serial", "OM23AS000456", 0o400)):
        (d / name).write_text(value + "\n")
        (d / name).chmod(mode)
    root.chmod(0o755)
    (root / "dmi").chmod(0o755)
    d.chmod(0o755)
    return d


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: s[0])
def test_dmi_item_reports_serials_unreadable_without_root(shell):
    import tempfile
    if os.geteuid() != 0:
        pytest.skip("needs root to run the probe as root and as another user")
    # outside pytest's tmp_path: its parents are root-only, and the other user must reach the tree
    top = Path(tempfile.mkdtemp(prefix="nodegate-dmi-", dir="/tmp"))
    request_cleanup = shutil.rmtree
    try:
        _dmi_both(shell, _fake_dmi(top))
    finally:
        request_cleanup(top, ignore_errors=True)


def _dmi_both(shell, d: Path) -> None:
    from nodegate.parsers.dmi import parse_dmi
    s, m = _item_script("ng_lite dmi.id ng_f_dmi")
    s = s.replace("/sys/class/dmi/id", str(d))
    as_root = parse_dmi(_split(_run(shell, s), m)[0]["dmi.id"].stdout)
    assert as_root.values == {"sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR",
                              "product_serial": "S821GE000123", "product_uuid": "5c6e6a80-2d7b",
                              "board_serial": "OM23AS000456"}
    assert as_root.absent == {"product_version", "board_vendor", "board_name", "chassis_serial", "bios_version"}
    p = subprocess.run(shell, input=s.encode(), capture_output=True, timeout=60, user=65534, group=65534)
    items, _ = _split(p, m)
    user = parse_dmi(items["dmi.id"].stdout)
    assert (user.values, user.unreadable) == ({"sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR"},
                                              {"product_serial", "product_uuid", "board_serial"})
    assert user.text("product_serial") == "unreadable without root (re-run with --sudo)"
