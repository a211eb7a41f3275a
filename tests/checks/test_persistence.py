"""nvidia-persistenced unit, drop-in, user; per-GPU persistence mode (checks.md "Persistence daemon")."""

from dataclasses import replace

from nodegate.facts import DaemonProcess, KernelEvent, PasswdEntry, PersistencedFacts, UnitFile
from nodegate.outcomes import Outcome

from .fakes import DAEMON, DROPIN, covers, gpu, healthy, missing, run, spec


def unit(**kw):
    base = healthy().persistenced_unit
    return replace(base, **kw)


@covers("NG-PER-001")
def test_unit_loaded_active_enabled_passes():
    r = run("NG-PER-001", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "LoadState=loaded ActiveState=active SubState=running UnitFileState=enabled Result=success"


@covers("NG-PER-001")
def test_unit_static_counts_as_starting_at_boot():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(unit_file_state="static")))
    assert r.outcome is Outcome.PASS


@covers("NG-PER-001")
def test_unit_bad_setting_two_execstart_fails():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(load_state="bad-setting", active_state="inactive",
                                                         sub_state="dead")))
    assert r.outcome is Outcome.FAIL
    assert r.observed.startswith("LoadState=bad-setting ActiveState=inactive SubState=dead")
    assert "more than one ExecStart=" in r.message


@covers("NG-PER-001")
def test_unit_enabled_but_inactive_dead_fails():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(active_state="inactive", sub_state="dead", result="success")))
    assert r.outcome is Outcome.FAIL
    assert "daemon not running: inactive/dead" in r.message


@covers("NG-PER-001")
def test_unit_disabled_fails():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(unit_file_state="disabled")))
    assert r.outcome is Outcome.FAIL
    assert "UnitFileState=disabled" in r.message


@covers("NG-PER-001")
def test_gh200_nonroot_failed_unit_names_root_requirement():
    f = healthy(gpus=[gpu(name="NVIDIA GH200 480GB", pci_device_id="2342")],
                persistenced_unit=unit(active_state="failed", sub_state="failed", result="exit-code"))
    r = run("NG-PER-001", f)
    assert r.outcome is Outcome.FAIL
    assert "GH200" in r.message and "persistence.user: root" in r.message


@covers("NG-PER-001")
def test_vm_without_systemctl_is_error():
    r = run("NG-PER-001", healthy(persistenced_unit=missing("persistenced_unit")))
    assert r.outcome is Outcome.ERROR
    assert "tool missing" in r.message


@covers("NG-PER-001", "NG-PER-002", "NG-PER-003")
def test_legacy_mode_spec_skips_daemon_checks():
    for cid in ("NG-PER-001", "NG-PER-002", "NG-PER-003"):
        r = run(cid, healthy(persistenced_unit=missing("persistenced_unit")), spec(persistence={"mode": "legacy"}))
        assert r.outcome is Outcome.SKIP
        assert "persistence.mode=legacy" in r.message


@covers("NG-PER-001")
def test_mode_any_and_unit_not_found_skips():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(load_state="not-found", active_state="inactive",
                                                         unit_file_state=None)), spec(persistence={"mode": "any"}))
    assert r.outcome is Outcome.SKIP


@covers("NG-PER-002")
def test_dropin_reset_and_one_command_passes():
    r = run("NG-PER-002", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == (f"drop-in ExecStart lines ['', '{DAEMON} --user nvidia-persistenced --persistence-mode']; "
                          f"effective ExecStart: {DAEMON} --user nvidia-persistenced --persistence-mode")


@covers("NG-PER-002")
def test_dropin_missing_fails():
    f = healthy(persistenced_unit_files=[healthy().persistenced_unit_files[0]])
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith(f"drop-in {DROPIN} missing")


@covers("NG-PER-002")
def test_dropin_without_reset_fails():
    files = [UnitFile(DROPIN, [f"{DAEMON} --user nvidia-persistenced"])]
    r = run("NG-PER-002", healthy(persistenced_unit_files=files))
    assert r.outcome is Outcome.FAIL
    assert "does not reset ExecStart=" in r.message


@covers("NG-PER-002")
def test_dropin_appended_twice_duplicate_lines_fails():
    cmd = f"{DAEMON} --user nvidia-persistenced"
    files = [UnitFile(DROPIN, ["", cmd, "", cmd], text=f"[Service]\nExecStart=\nExecStart={cmd}\n" * 2)]
    r = run("NG-PER-002", healthy(persistenced_unit_files=files))
    assert r.outcome is Outcome.FAIL
    assert "duplicate lines" in r.message


@covers("NG-PER-002")
def test_dropin_short_u_flag_accepted():
    cmd = f"{DAEMON} --verbose -u nvidia-persistenced -g nvidia-persistenced"
    f = healthy(persistenced_unit_files=[UnitFile(DROPIN, ["", cmd])],
                persistenced_unit=unit(exec_start=[cmd.split()]))
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.PASS


@covers("NG-PER-002")
def test_dropin_wrong_user_fails():
    cmd = f"{DAEMON} --user nobody"
    f = healthy(persistenced_unit_files=[UnitFile(DROPIN, ["", cmd])], persistenced_unit=unit(exec_start=[cmd.split()]))
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert "runs as nobody, expected --user nvidia-persistenced" in r.message


@covers("NG-PER-002")
def test_dropin_no_persistence_mode_flag_fails():
    cmd = f"{DAEMON} --user nvidia-persistenced --no-persistence-mode"
    f = healthy(persistenced_unit_files=[UnitFile(DROPIN, ["", cmd])], persistenced_unit=unit(exec_start=[cmd.split()]))
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert "--no-persistence-mode" in r.message


@covers("NG-PER-002")
def test_effective_execstart_is_ground_truth_daemon_reload_missing():
    f = healthy(persistenced_unit=unit(exec_start=[[DAEMON, "--verbose"]]))
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert "effective ExecStart runs as root (no --user)" in r.message


@covers("NG-PER-003")
def test_daemon_runs_as_spec_user_passes():
    r = run("NG-PER-003", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "user nvidia-persistenced: uid 998; pid 1234 uid 998; rundir owner uid 998"


@covers("NG-PER-003")
def test_user_does_not_exist_fails():
    r = run("NG-PER-003", healthy(persistenced_user=None))
    assert r.outcome is Outcome.FAIL
    assert "user nvidia-persistenced does not exist" in r.message


@covers("NG-PER-003")
def test_user_is_root_fails():
    f = healthy(persistenced_user=PasswdEntry("nvidia-persistenced", 0, 0),
                persistenced=PersistencedFacts([DaemonProcess(1, 0, [DAEMON])], 0, True))
    r = run("NG-PER-003", f)
    assert r.outcome is Outcome.FAIL
    assert "user nvidia-persistenced is root" in r.message


@covers("NG-PER-003")
def test_daemon_uid_differs_from_user_fails():
    f = healthy(persistenced=PersistencedFacts([DaemonProcess(1234, 0, [DAEMON])], 998, True))
    r = run("NG-PER-003", f)
    assert r.outcome is Outcome.FAIL
    assert "daemon pid 1234 runs as uid 0, not nvidia-persistenced (998)" in r.message


@covers("NG-PER-003")
def test_rundir_owned_by_other_uid_fails():
    f = healthy(persistenced=PersistencedFacts([DaemonProcess(1234, 998, [DAEMON])], 0, True))
    r = run("NG-PER-003", f)
    assert r.outcome is Outcome.FAIL
    assert "/run/nvidia-persistenced owned by uid 0" in r.message


@covers("NG-PER-003")
def test_daemon_not_running_fails():
    r = run("NG-PER-003", healthy(persistenced=PersistencedFacts([], None, False)))
    assert r.outcome is Outcome.FAIL
    assert "nvidia-persistenced is not running" in r.message


@covers("NG-PER-003")
def test_gh200_root_daemon_is_recorded_exception():
    f = healthy(gpus=[gpu(name="NVIDIA GH200 480GB", pci_device_id="2342")],
                persistenced_user=PasswdEntry("root", 0, 0),
                persistenced=PersistencedFacts([DaemonProcess(1, 0, [DAEMON])], 0, True))
    r = run("NG-PER-003", f, spec(persistence={"user": "root"}))
    assert r.outcome is Outcome.PASS
    assert "recorded exception: GH200" in r.message


@covers("NG-PER-004")
def test_persistence_mode_enabled_by_daemon_passes():
    r = run("NG-PER-004", healthy())
    assert r.outcome is Outcome.PASS
    assert r.observed == "Enabled, nvidia-persistenced pid 1234"


@covers("NG-PER-004")
def test_persistence_mode_disabled_fails():
    r = run("NG-PER-004", healthy(gpus=[gpu(persistence_mode=False)]))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "persistence mode Disabled"
    assert "GPU 0 (0000:00:06.0, serial 1650000000001)" in r.message


@covers("NG-PER-004")
def test_legacy_persistence_without_daemon_fails_with_kernel_log_confirmation():
    ev = KernelEvent("persistence_legacy", "NVRM: Persistence mode is deprecated and will be removed in a future "
                     "release. Please use nvidia-persistenced instead.")
    f = healthy(persistenced=PersistencedFacts([], None, False), kernel_events=[ev])
    r = run("NG-PER-004", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Enabled by the legacy driver flag (no nvidia-persistenced process)"
    assert "kernel log confirms" in r.message


@covers("NG-PER-004")
def test_legacy_persistence_accepted_when_spec_mode_legacy():
    f = healthy(persistenced=PersistencedFacts([], None, False))
    r = run("NG-PER-004", f, spec(persistence={"mode": "legacy"}))
    assert r.outcome is Outcome.PASS
    assert r.observed == "Enabled"


@covers("NG-PER-001")
def test_unit_unreadable_without_systemctl_but_no_daemon_fails():
    f = healthy(persistenced_unit=missing("persistenced_unit", "tool missing (systemctl: command not found)"),
                persistenced=PersistencedFacts(processes=[]))
    r = run("NG-PER-001", f)
    assert r.outcome is Outcome.FAIL
    assert r.observed == ("no nvidia-persistenced process; unit state unreadable "
                          "(tool missing (systemctl: command not found))")


@covers("NG-PER-001")
def test_unit_unreadable_while_daemon_runs_is_error():
    f = healthy(persistenced_unit=missing("persistenced_unit", "tool missing (systemctl: command not found)"))
    r = run("NG-PER-001", f)
    assert r.outcome is Outcome.ERROR
    assert "systemctl: command not found" in r.message


@covers("NG-PER-002")
def test_dropin_present_but_effective_execstart_unreadable_is_error():
    f = healthy(persistenced_unit=missing("persistenced_unit", "tool missing (systemctl: command not found)"))
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.ERROR
    assert "systemd.persistenced_show" in r.message


@covers("NG-PER-001")
def test_unit_substate_not_reported_is_error():
    r = run("NG-PER-001", healthy(persistenced_unit=unit(sub_state=None)))
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("nvidia-persistenced SubState not reported")
    assert "ActiveState=active SubState=" in r.observed and "SubState=running" not in r.observed


@covers("NG-PER-002")
def test_dropin_paths_not_reported_is_error():
    r = run("NG-PER-002", healthy(persistenced_unit=unit(drop_in_paths=[],
                                                         raw={"LoadState": "loaded", "ActiveState": "active"})))
    assert r.outcome is Outcome.ERROR
    assert r.message == f"DropInPaths not reported by systemctl show: cannot tell whether systemd uses the drop-in {DROPIN}"
    assert r.observed.endswith("; DropInPaths not reported")


@covers("NG-PER-002")
def test_dropin_not_listed_in_empty_dropin_paths_fails():
    r = run("NG-PER-002", healthy(persistenced_unit=unit(drop_in_paths=[],
                                                         raw={"LoadState": "loaded", "DropInPaths": ""})))
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("systemd does not use the drop-in (DropInPaths=empty)")


# ---------------------------------------------------------------- issue 21 item 3: the whole command line
def _dropin(cmd_dropin, cmd_effective, **kw):
    return healthy(persistenced_unit_files=[UnitFile(DROPIN, ["", cmd_dropin])],
                   persistenced_unit=unit(exec_start=[cmd_effective.split()]), **kw)


@covers("NG-PER-002")
def test_effective_command_lacking_the_dropins_persistence_flag_fails_naming_it():
    # same --user, so the old rule (compare --user only) passed this: the drop-in was edited after
    # the last daemon-reload and the running unit still uses the old line
    f = _dropin(f"{DAEMON} --user nvidia-persistenced --persistence-mode --verbose",
                f"{DAEMON} --user nvidia-persistenced --verbose")
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert r.message.startswith("effective ExecStart differs from the drop-in (daemon-reload not done?): "
                                "--persistence-mode only in the drop-in")


@covers("NG-PER-002")
def test_effective_no_persistence_mode_differs_from_dropin_names_both():
    f = _dropin(f"{DAEMON} --user nvidia-persistenced --persistence-mode",
                f"{DAEMON} --user nvidia-persistenced --no-persistence-mode")
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert "effective ExecStart disables persistence mode (--no-persistence-mode)" in r.message
    assert "--no-persistence-mode in the effective ExecStart, --persistence-mode in the drop-in" in r.message


@covers("NG-PER-002")
def test_verbose_is_optional_and_nvidias_sample_unit_line_passes():
    # NVIDIA's sample unit: ExecStart=/usr/bin/nvidia-persistenced --user __USER__ (persistence mode is the
    # daemon's default without either flag: option-table.h)
    for cmd in (f"{DAEMON} --user nvidia-persistenced", f"{DAEMON} --user nvidia-persistenced --verbose"):
        r = run("NG-PER-002", _dropin(cmd, cmd))
        assert r.outcome is Outcome.PASS, r.message


@covers("NG-PER-002")
def test_unexpected_flag_fails_unless_listed_in_extra_flags():
    cmd = f"{DAEMON} --user nvidia-persistenced --foreground"
    r = run("NG-PER-002", _dropin(cmd, cmd))
    assert r.outcome is Outcome.FAIL
    assert "drop-in command carries unexpected --foreground (persistence.extra_flags)" in r.message
    assert run("NG-PER-002", _dropin(cmd, cmd), spec(persistence={"extra_flags": ["-f", "--foreground"]})).outcome \
        is Outcome.PASS


@covers("NG-PER-002")
def test_spec_flag_no_persistence_mode_must_be_given():
    cmd = f"{DAEMON} --user nvidia-persistenced"
    sp = spec(persistence={"flag": "--no-persistence-mode", "mode": "any"})
    r = run("NG-PER-002", _dropin(cmd, cmd), sp)
    assert r.outcome is Outcome.FAIL
    assert "drop-in command lacks --no-persistence-mode (persistence.flag)" in r.message


@covers("NG-PER-002")
def test_program_path_differs_is_named():
    f = _dropin(f"{DAEMON} --user nvidia-persistenced", "/usr/local/bin/nvidia-persistenced --user nvidia-persistenced")
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.FAIL
    assert f"/usr/local/bin/nvidia-persistenced in the effective ExecStart, {DAEMON} in the drop-in" in r.message
