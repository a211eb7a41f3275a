"""testinfra's Host on SiteBackend: commands live through the site shell, recorded into the
bundle, answered from it on replay (every module used here, live and replayed alike)."""

from __future__ import annotations

import os
import re

import pytest

from nodegate.bundle import Bundle
from nodegate.site.backend import SiteCommandError
from nodegate.site.recording import load_recording

from .helpers import empty_bundle, local_host, replay_host


def exercise(host, path: str) -> dict:
    """One call of each testinfra module this suite exercises -> value or the exception's type
    and message (a module that cannot work on this machine must fail the same way on replay)."""
    calls = {
        "run": lambda: (host.run("echo hi; echo err >&2; exit 4").rc, host.run("echo hi").stdout),
        "check_output": lambda: host.check_output("echo %s %s", "a  b", "c;x"),
        "exists": lambda: host.exists("sh"),
        "find_command": lambda: host.find_command("sh"),
        "file": lambda: (host.file(path).exists, host.file(path).is_file, host.file(path).content_string,
                         host.file(path).mode, host.file(path + ".none").exists),
        "system_info": lambda: (host.system_info.type, host.system_info.distribution, host.system_info.arch),
        "user": lambda: (host.user("root").uid, host.user("root").home),
        "group": lambda: (host.group("root").gid, host.group("root").exists),
        "environment": lambda: "PATH" in host.environment(),
        "sysctl": lambda: host.sysctl("kernel.ostype"),
        "mount_point": lambda: (host.mount_point("/proc").exists, host.mount_point("/proc").filesystem),
        "process": lambda: len(host.process.filter(comm="sh")) >= 0,
        "socket": lambda: host.socket("tcp://0.0.0.0:1").is_listening,
        "package": lambda: host.package("dpkg").is_installed,
        "service": lambda: host.service("nodegate-no-such-unit").is_running,
        "interface": lambda: host.interface("lo").exists,
    }
    out = {}
    for name, fn in calls.items():
        try:
            out[name] = fn()
        except Exception as e:  # noqa: BLE001 - compared as text, live vs replay
            # testinfra's message carries the CommandResult's repr, with its backend object's
            # address (e.g. `ps` absent: procps not installed): the address differs on replay
            out[name] = re.sub(r" at 0x[0-9a-f]+>", " at 0x...>", f"{type(e).__name__}: {e}")
    return out


def test_modules_live_then_replayed_from_the_bundle_give_the_same_values(tmp_path):
    f = tmp_path / "x.conf"
    f.write_text("key=1\n")
    os.chmod(f, 0o640)
    h, be, conn, rec = local_host()
    try:
        live = exercise(h, str(f))
    finally:
        conn.close()
    assert live["run"] == (4, "hi\n")
    assert live["check_output"] == "a  b c;x"
    assert live["file"] == (True, True, "key=1\n", 0o640, False)
    assert live["system_info"][0] == "linux"
    assert live["user"] == (0, "/root")
    assert live["group"] == (0, True)
    assert live["environment"] is True
    bdir = empty_bundle(tmp_path / "bundles")
    rec.flush(bdir, {"SITE-X": {"check_id": "SITE-X", "outcome": "pass", "title": "x"}})
    f.unlink()   # the replay must not look at the machine
    h2, be2 = replay_host(bdir)
    assert exercise(h2, str(f)) == live
    assert sum(len(v) for v in load_recording(Bundle.load(bdir)).values()) == len(rec.records)


def test_recording_keeps_stdout_stderr_rc_status_and_order(tmp_path):
    h, be, conn, rec = local_host()
    be.begin("SITE-A", None)
    try:
        h.run("echo one")
        h.run("echo two >&2; exit 3")
        h.run("echo one")
        with pytest.raises(SiteCommandError):
            h.run("sleep 30", timeout=1)
    finally:
        conn.close()
    bdir = empty_bundle(tmp_path / "b")
    rec.flush(bdir)
    b = Bundle.load(bdir)
    got = load_recording(b)
    assert [(r.key, r.stdout, r.rc, r.status, r.check_id) for r in got["echo one"]] == [
        ("site.cmd.0", b"one\n", 0, "ok", "SITE-A"), ("site.cmd.2", b"one\n", 0, "ok", "SITE-A")]
    two = got["echo two >&2; exit 3"][0]
    assert (two.stdout, two.stderr, two.rc, two.status) == (b"", b"two", 3, "ok")
    assert got["sleep 30"][0].status == "timeout"
    assert b.items["meta.hostname"].stdout == b"n1\n"    # the probe's items are untouched
    assert (bdir / "site.cmd.1.rc").read_text() == "3\n"


def test_replay_answers_the_kth_run_of_a_command_with_the_kth_recording(tmp_path):
    h, be, conn, rec = local_host()
    try:
        h.run("date +%N")
        h.run("date +%N")
    finally:
        conn.close()
    bdir = empty_bundle(tmp_path / "b")
    rec.flush(bdir)
    first, second = rec.records[0].stdout, rec.records[1].stdout
    h2, _ = replay_host(bdir)
    assert [h2.run("date +%N").stdout_bytes for _ in range(3)] == [first, second, second]


def test_a_command_absent_from_the_recording_is_an_error_naming_it(tmp_path):
    bdir = empty_bundle(tmp_path / "b")
    h, be = replay_host(bdir)
    with pytest.raises(SiteCommandError) as e:
        h.run("cat /etc/nothing-recorded")
    assert str(e.value) == "not recorded in the bundle: cat /etc/nothing-recorded"
    assert be.errors == [e.value]


def test_a_timed_out_command_replays_as_the_same_error(tmp_path):
    h, be, conn, rec = local_host()
    try:
        with pytest.raises(SiteCommandError) as live:
            h.run("exec sleep 30", timeout=1)
    finally:
        conn.close()
    bdir = empty_bundle(tmp_path / "b")
    rec.flush(bdir)
    h2, _ = replay_host(bdir)
    with pytest.raises(SiteCommandError) as replayed:
        h2.run("exec sleep 30")
    assert str(replayed.value) == str(live.value) == \
        "'exec sleep 30': timed out (the command deadline was reached before it finished)"


def test_host_sudo_wraps_with_sudo_n_and_is_part_of_the_recorded_command(tmp_path):
    h, be, conn, rec = local_host()
    try:
        with h.sudo("nobody"):
            h.run("id -u")
    finally:
        conn.close()
    assert rec.records[0].command == "sudo -n -u nobody /bin/sh -c 'id -u'"


def test_hostname_and_pytest_id_are_the_inventory_node(tmp_path):
    h, be = replay_host(empty_bundle(tmp_path / "b"))
    assert (h.backend.get_hostname(), h.backend.get_pytest_id()) == ("n1", "n1")


def test_the_node_recording_budget_turns_further_commands_into_errors(tmp_path):
    h, be, conn, rec = local_host()
    rec.budget = 10
    try:
        h.run("echo 0123456789abc")
        with pytest.raises(SiteCommandError) as e:
            h.run("echo more")
    finally:
        conn.close()
    assert "site recordings reached 10 bytes" in str(e.value)
    assert rec.records[-1].status == "error"
