"""The site shell (nodegate/site/shell.sh + shell.py): one ``sh -s`` running commands in turn,
framed, capped and cut like probe items. Local shells only (dash, busybox ash, bash)."""

from __future__ import annotations

import shutil

import pytest

from nodegate.probe import DEFAULT_ITEM_CAP, ITEM_STDERR_CAP
from nodegate.site import shell as site_shell
from nodegate.site.shell import PipeStreams, ShellError, SiteShell

SHELLS = [s for s in (["dash", "-s"], ["busybox", "sh", "-s"], ["bash", "-s"]) if shutil.which(s[0])]


@pytest.fixture(params=SHELLS, ids=[s[0] for s in SHELLS])
def sh(request, monkeypatch):
    # commands run as "$SHELL -c": the login shell; here the shell under test itself
    monkeypatch.setenv("SHELL", shutil.which(request.param[0]) if request.param[0] != "busybox" else "/bin/sh")
    s = SiteShell(PipeStreams(request.param))
    s.start(10)
    yield s
    s.close()


def test_stdout_stderr_and_exit_code_are_the_commands_own(sh):
    r = sh.run("site.cmd.0", "echo out; echo err >&2; exit 3", 10)
    assert (r.stdout, r.stderr, r.rc, r.status) == (b"out\n", b"err", 3, "ok")


def test_output_without_final_newline_is_byte_exact(sh):
    r = sh.run("site.cmd.0", "printf 'a\\nb'", 10)
    assert (r.stdout, r.rc) == (b"a\nb", 0)


def test_no_state_leaks_from_one_command_to_the_next(sh):
    sh.run("site.cmd.0", "cd /; X=1; export Y=2", 10)
    r = sh.run("site.cmd.1", "echo \"${X:-unset} ${Y:-unset}\"; pwd", 10)
    assert r.stdout.splitlines()[0] == b"unset unset"
    assert r.stdout.splitlines()[1] != b"/"


def test_exit_in_a_command_ends_only_that_command(sh):
    assert sh.run("site.cmd.0", "exit 7", 10).rc == 7
    assert sh.run("site.cmd.1", "echo still here", 10).stdout == b"still here\n"


def test_a_command_reading_stdin_gets_eof_not_the_session(sh):
    r = sh.run("site.cmd.0", "cat; echo done", 10)
    assert (r.stdout, r.rc) == (b"done\n", 0)
    assert sh.run("site.cmd.1", "echo next", 10).stdout == b"next\n"


def test_quotes_and_newlines_in_the_command_line(sh):
    r = sh.run("site.cmd.0", "printf '%s|' \"it's\" 'a\"b'\necho second", 10)
    assert r.stdout == b"it's|a\"b|second\n"


def test_forged_frames_with_another_marker_are_ordinary_output(sh):
    fake = "@@NG-" + "0" * 24
    r = sh.run("site.cmd.0", f"echo '{fake} END site.cmd.0 rc= 0'; echo '{fake} RC 9'; echo real", 10)
    assert r.rc == 0
    assert r.stdout == f"{fake} END site.cmd.0 rc= 0\n{fake} RC 9\nreal\n".encode()


def test_stdout_past_the_item_cap_is_truncated(sh):
    r = sh.run("site.cmd.0", f"head -c {DEFAULT_ITEM_CAP + 4096} /dev/zero", 30)
    assert r.status == "truncated"
    assert len(r.stdout) == DEFAULT_ITEM_CAP


def test_stderr_past_its_cap_is_cut_and_says_so(sh):
    r = sh.run("site.cmd.0", f"head -c {ITEM_STDERR_CAP + 5000} /dev/zero | tr '\\0' x >&2; echo ok", 30)
    assert (r.stdout, r.rc, r.status) == (b"ok\n", 0, "ok")
    assert r.stderr.endswith(f"...[stderr truncated at {ITEM_STDERR_CAP} bytes]".encode())


def test_command_past_its_deadline_is_cut_on_the_node_and_reported_as_timeout(sh):
    r = sh.run("site.cmd.0", "exec sleep 30", 1)
    assert (r.status, r.rc in (124, 137, 143)) == ("timeout", True)
    assert 0.9 <= r.duration_s < 1 + site_shell.CLIENT_GRACE_S
    assert sh.run("site.cmd.1", "echo after", 5).stdout == b"after\n"   # the shell goes on


def test_a_child_left_holding_the_output_is_cut_by_the_controller(sh):
    # busybox's timeout stops only its child (coreutils' stops the process group): a grandchild
    # that keeps stdout open is cut by the controller's deadline; either way: timeout
    r = sh.run("site.cmd.0", "sleep 30; echo never", 1)
    assert r.status == "timeout"
    assert r.duration_s < 20   # cut near 1 + CLIENT_GRACE_S; a bound, not a race: the sleep is 30 s


def test_without_a_node_side_timeout_the_controller_cuts_and_abandons_the_shell(monkeypatch):
    # a node without `timeout`: the controller's own deadline (timeout + CLIENT_GRACE_S) cuts it
    monkeypatch.setattr(site_shell, "CLIENT_GRACE_S", 0.5)
    text = site_shell.template().replace("if timeout 5 true", "if false")
    monkeypatch.setattr(site_shell, "template", lambda: text)
    s = SiteShell(PipeStreams(["sh", "-s"]))
    s.start(10)
    try:
        r = s.run("site.cmd.0", "sleep 30", 1)
        assert (r.status, r.rc) == ("timeout", None)
        assert 1.4 <= r.duration_s < 20   # cut at 1.5 s; a bound, not a race: the sleep is 30 s
        assert s.broken
        with pytest.raises(ShellError):
            s.run("site.cmd.1", "echo no", 5)
    finally:
        s.close()


def test_shell_that_dies_mid_command_is_lost():
    s = SiteShell(PipeStreams(["sh", "-s"]))
    s.start(10)
    try:
        r = s.run("site.cmd.0", f"kill -9 {s.streams.proc.pid}; sleep 1", 10)
        assert (r.status, r.rc) == ("lost", None)
        assert s.broken
    finally:
        s.close()


def test_a_shell_that_never_says_ready_is_a_start_timeout():
    s = SiteShell(PipeStreams(["sh", "-c", "sleep 30"]))
    with pytest.raises(ShellError) as e:
        s.start(1)
    s.close()
    assert e.value.kind in ("timeout", "eof")


def test_a_missing_shell_program_is_a_shell_error():
    with pytest.raises(ShellError) as e:
        PipeStreams(["/nonexistent/sh", "-s"])
    assert e.value.kind == "ssh" and "cannot run /nonexistent/sh" in e.value.message


def test_a_child_left_behind_cannot_write_into_the_next_commands_output(sh):
    first = sh.run("site.cmd.0", "(sleep 1; echo late) & echo first", 10)
    # the late line came after the exit code: that command's output is malformed (ERROR), and the
    # next command's is its own
    assert (first.status, first.rc) == ("malformed", None)
    assert first.stdout.startswith(b"first\n") and first.stdout.endswith(b"late\n")
    assert sh.run("site.cmd.1", "echo now", 10).stdout == b"now\n"
