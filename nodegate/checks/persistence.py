"""nvidia-persistenced: unit, drop-in, user, and per-GPU persistence mode (catalog "Persistence daemon")."""

from __future__ import annotations

import shlex

from ..errors import EvidenceError
from ..outcomes import Result
from ..spec import expectations
from . import check
from ._util import fmt, gpu_for, gpu_label, lines, optional, spec_or_default
from ..parsers.persistenced import option_spellings, parse_daemon_argv
from ..parsers.systemd import effective_exec_start

_UNIT = "nvidia-persistenced.service"


def _gh200_present(facts, spec) -> bool:
    """GH200 needs the daemon as root (NUMA auto-online; nvidia-persistenced issue #11)."""
    gpus, _ = optional(facts, "gpus")
    return any(expectations(spec, g).persistenced_root for g in (gpus or []))


def _daemon_not_applicable(spec) -> Result | None:
    if spec.persistence.mode == "legacy":
        return Result.skipped("persistence.mode=legacy: the persistence daemon is not used",
                              expected="persistence.mode=legacy")
    return None


def _root_allowed(facts, spec) -> tuple[bool, str]:
    if spec.persistence.allow_root:
        return True, "persistence.allow_root=true"
    if _gh200_present(facts, spec):
        return True, ("recorded exception: GH200 needs nvidia-persistenced as root for NUMA auto-online "
                      "(NVIDIA/nvidia-persistenced#11)")
    return False, ""


@check(id="NG-PER-001", name="persistenced_unit", title="nvidia-persistenced unit loaded, running, starts at boot",
       scope="node", severity="major", evidence=("systemd.persistenced_show",),
       remediation="Fix the unit (a broken drop-in shows as LoadState=bad-setting: one ExecStart= reset then one "
                   "command), run systemctl daemon-reload, enable and start nvidia-persistenced; check its journal.",
       rule="LoadState=loaded (bad-setting = broken unit, e.g. two non-empty ExecStart= in a Type=forking "
            "service); ActiveState=active and SubState=running (SubState not reported -> ERROR); UnitFileState enabled, or static where the "
            "distro starts it from udev. persistence.mode=legacy -> SKIP; any + unit not-found -> SKIP.")
def persistenced_unit(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if (r := _daemon_not_applicable(spec)) is not None:
        return r
    u, err = optional(facts, "persistenced_unit")
    if err is not None:
        # No systemctl (or it failed): the unit cannot be read, but a daemon that is not running
        # at all is a definite FAIL; a running one leaves the unit state unknown (ERROR).
        procs, perr = optional(facts, "persistenced")
        if procs is not None and not procs.processes:
            return Result.failed("nvidia-persistenced running from its unit",
                                 f"no nvidia-persistenced process; unit state unreadable ({err.reason})",
                                 "daemon not running (no nvidia-persistenced process in /proc)",
                                 evidence=f"persistenced.process: processes: 0\nsystemd.persistenced_show: {err.reason}",
                                 evidence_keys=("persistenced.process", "systemd.persistenced_show"))
        raise err
    obs = (f"LoadState={fmt(u.load_state)} ActiveState={fmt(u.active_state)} SubState={fmt(u.sub_state)} "
           f"UnitFileState={fmt(u.unit_file_state)}" + (f" Result={u.result}" if u.result else ""))
    expected = "LoadState=loaded ActiveState=active SubState=running UnitFileState=enabled|static"
    ev = lines(*(f"{k}={v}" for k, v in u.raw.items())) or obs
    kw = dict(evidence=ev, evidence_keys=("systemd.persistenced_show",))
    if spec.persistence.mode == "any" and u.load_state == "not-found":
        return Result.skipped("persistence.mode=any and nvidia-persistenced is not installed", expected,
                              obs, **kw)
    problems = []
    if u.load_state != "loaded":
        hint = " (broken unit: systemd refused it, e.g. more than one ExecStart=)" if u.load_state == "bad-setting" else ""
        problems.append(f"unit not loaded: LoadState={fmt(u.load_state)}{hint}")
    if u.active_state != "active" or u.sub_state not in (None, "running"):
        problems.append(f"daemon not running: {fmt(u.active_state)}/{fmt(u.sub_state)}"
                        + (f", Result={u.result}" if u.result and u.result != "success" else ""))
    if u.unit_file_state not in ("enabled", "static"):
        problems.append(f"will not start at boot: UnitFileState={fmt(u.unit_file_state)}")
    if problems:
        msg = "; ".join(problems)
        if _gh200_present(facts, spec) and spec.persistence.user != "root":
            msg += ("; GH200: a non-root daemon fails on NUMA auto_online_blocks (Permission denied): run it "
                    "as root (persistence.user: root)")
        return Result.failed(expected, obs, msg, **kw)
    if u.sub_state is None:  # ActiveState=active alone does not show the daemon running
        return Result.errored("nvidia-persistenced SubState not reported by systemctl show: cannot confirm "
                              "SubState=running", expected, obs, **kw)
    return Result.passed(expected, obs, **kw)


def _dropin_problems(text_exec: list[str]) -> list[str]:
    """The drop-in's shape: one empty ExecStart= reset first, then exactly one command."""
    p = []
    if not text_exec or text_exec[0].strip() != "":
        p.append("does not reset ExecStart= with an empty assignment first")
    cmds = [c for c in text_exec if c.strip()]
    resets = [c for c in text_exec if not c.strip()]
    if len(cmds) != 1 or len(resets) != 1:
        dup = " (duplicate lines: override appended twice?)" if len(set(cmds)) < len(cmds) or len(resets) > 1 else ""
        p.append(f"has {len(resets)} ExecStart= reset(s) and {len(cmds)} command(s), expected 1 and 1{dup}")
    return p


def _split_cmd(cmd: str) -> list[str]:
    """An ExecStart= value as argv (systemd.service(5) splits it with shell-like quoting)."""
    try:
        return shlex.split(cmd)
    except ValueError:
        return cmd.split()


_ALWAYS_OK = {"path", "user", "group", "verbose", "persistence-mode"}


def _flag(key: str, value) -> str:
    """The option as it is written on a command line (``--persistence-mode``, ``--user x``)."""
    if key == "unknown":
        return " ".join(value)
    if isinstance(value, bool):
        return f"--{key}" if value else f"--no-{key}" if key.endswith("persistence-mode") else f"(no --{key})"
    return f"--{key} {value}" if key != "path" else str(value)


def _command_problems(argv: list[str], spec, root_ok: bool) -> list[str]:
    """What in one command line differs from the spec's expected flags: --user persistence.user,
    the persistence flag (persistence.flag; ``--persistence-mode`` is also the daemon's default when
    neither flag is given, nvidia-persistenced option-table.h, so NVIDIA's own sample unit
    ``--user __USER__`` meets it), --verbose/--group optional, nothing else unless listed in
    persistence.extra_flags."""
    c = parse_daemon_argv(argv)
    user, mode, want = spec.persistence.user, spec.persistence.mode, spec.persistence.flag
    p = []
    u = c.get("user")
    if u != user and not (u is None and user == "root" and root_ok):
        p.append(f"runs as {u or 'root (no --user)'}, expected --user {user}")
    pm = c.get("persistence-mode")
    if mode == "daemon" and pm is False:
        p.append("disables persistence mode (--no-persistence-mode)")
    elif want == "--persistence-mode" and pm is False:
        p.append("carries --no-persistence-mode (persistence.flag=--persistence-mode)")
    elif want == "--no-persistence-mode" and pm is not False:
        p.append("lacks --no-persistence-mode (persistence.flag)")
    elif want == "none" and pm is not None:
        p.append(f"carries {_flag('persistence-mode', pm)} (persistence.flag=none)")
    extra = set(spec.persistence.extra_flags)
    for key, value in c.items():
        if key in _ALWAYS_OK:
            continue
        if key == "unknown":
            bad = [t for t in value if t not in extra]
            if bad:
                p.append(f"carries unexpected {' '.join(bad)} (not an nvidia-persistenced option we expect; "
                         "list it in persistence.extra_flags)")
        elif not (extra & option_spellings(key)):
            p.append(f"carries unexpected {_flag(key, value)} (persistence.extra_flags)")
    return p


def _differences(dropin: list[str], effective: list[str]) -> list[str]:
    """The options in which the effective command differs from the drop-in's, e.g.
    ``--persistence-mode only in the drop-in``."""
    d, e = parse_daemon_argv(dropin), parse_daemon_argv(effective)
    out = []
    for key in dict.fromkeys(list(d) + list(e)):
        dv, ev = d.get(key), e.get(key)
        if dv == ev:
            continue
        if ev is None:
            out.append(f"{_flag(key, dv)} only in the drop-in")
        elif dv is None:
            out.append(f"{_flag(key, ev)} only in the effective ExecStart")
        else:
            out.append(f"{_flag(key, ev)} in the effective ExecStart, {_flag(key, dv)} in the drop-in")
    return out


@check(id="NG-PER-002", name="persistenced_dropin", title="nvidia-persistenced drop-in sets the specified command",
       scope="node", severity="major", evidence=("persistenced.unit_files", "systemd.persistenced_show"),
       remediation="Rewrite the drop-in (do not append with tee -a): [Service] / ExecStart= / ExecStart=<daemon> "
                   "--user <user>; then systemctl daemon-reload and restart nvidia-persistenced.",
       rule="The drop-in (persistence.dropin) exists, resets ExecStart= with an empty assignment, then sets "
            "exactly one command whose flags are the spec's: --user/-u persistence.user, persistence.flag "
            "(--persistence-mode by default, which is also the daemon's default without either flag; never "
            "--no-persistence-mode with persistence.mode=daemon), "
            "--verbose and --group optional, anything else only when listed in persistence.extra_flags; "
            "duplicate lines (override appended twice) FAIL; so do unit files that resolve to more than one "
            "command (an empty ExecStart= resets the list, systemd.service(5): a second drop-in without it makes "
            "systemd refuse the unit). The effective ExecStart from systemctl show "
            "(ground truth) is that whole command line (a flag that differs is named), and DropInPaths lists "
            "the drop-in (not reported -> ERROR).")
def persistenced_dropin(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if (r := _daemon_not_applicable(spec)) is not None:
        return r
    path, user = spec.persistence.dropin, spec.persistence.user
    root_ok, _ = _root_allowed(facts, spec)
    files = facts.persistenced_unit_files
    unit, uerr = optional(facts, "persistenced_unit")
    flag = "" if spec.persistence.flag == "none" else f" {spec.persistence.flag}"
    expected = (f"{path}: ExecStart= reset + one command with --user {user}{flag} (--verbose optional); effective "
                "ExecStart = that command")
    eff = [" ".join(a) for a in unit.exec_start] if unit is not None else ["unreadable: " + uerr.reason]
    keys = ("persistenced.unit_files", "systemd.persistenced_show")
    dropin = next((f for f in files if f.path == path), None)
    if dropin is not None and unit is None:
        raise uerr  # the file is there but the effective ExecStart (ground truth) is unknown
    if unit is not None and not unit.raw:
        # states read from systemctl status (alternative key): no ExecStart, no DropInPaths
        raise EvidenceError("systemd.persistenced_show", "evidence not collected: systemd.persistenced_show "
                            "(systemctl status shows no effective ExecStart or DropInPaths)")
    if dropin is None:
        return Result.failed(expected, f"no drop-in at {path}; effective ExecStart: {'; '.join(eff) or 'none'}",
                             f"drop-in {path} missing", evidence=lines(*(f"== {f.path}" for f in files)),
                             evidence_keys=keys)
    problems = [f"drop-in {p}" for p in _dropin_problems(dropin.exec_start)]
    cmds = [c for c in dropin.exec_start if c.strip()]
    d_argv = _split_cmd(cmds[0]) if cmds else []
    d_probs = _command_problems(d_argv, spec, root_ok) if cmds else []
    problems += [f"drop-in command {p}" for p in d_probs]
    if len(unit.exec_start) != 1:
        problems.append(f"effective ExecStart has {len(unit.exec_start)} commands")
    else:
        e_argv = list(unit.exec_start[0])
        problems += [f"effective ExecStart {p}" for p in _command_problems(e_argv, spec, root_ok) if p not in d_probs]
        diff = _differences(d_argv, e_argv) if cmds else []
        if diff:
            problems.append("effective ExecStart differs from the drop-in (daemon-reload not done?): " + "; ".join(diff))
    merged, typ = effective_exec_start(files)
    if len(merged) > 1 and (typ or "simple") != "oneshot":
        # systemd refuses such a unit on its next load ("Service has more than one ExecStart= setting,
        # which is only allowed for Type=oneshot services"): e.g. a second drop-in without the reset
        problems.append(f"the unit files resolve to {len(merged)} ExecStart= commands (Type={typ or 'simple'} "
                        "allows one: systemd refuses the unit at its next daemon-reload)")
    listed = path in (unit.drop_in_paths or [])
    if not listed and "DropInPaths" not in unit.raw:  # cannot tell whether systemd loaded the drop-in at all
        return Result.errored("DropInPaths not reported by systemctl show: cannot tell whether systemd uses "
                              f"the drop-in {path}", expected,
                              f"drop-in ExecStart lines {dropin.exec_start!r}; effective ExecStart: "
                              f"{'; '.join(eff) or 'none'}; DropInPaths not reported",
                              evidence=lines(f"== {dropin.path}", dropin.text.strip(),
                                             f"effective ExecStart: {'; '.join(eff)}"), evidence_keys=keys)
    if not listed:
        problems.append(f"systemd does not use the drop-in (DropInPaths={' '.join(unit.drop_in_paths or []) or 'empty'})")
    obs = f"drop-in ExecStart lines {dropin.exec_start!r}; effective ExecStart: {'; '.join(eff) or 'none'}"
    ev = lines(f"== {dropin.path}", dropin.text.strip(), f"effective ExecStart: {'; '.join(eff)}")
    if problems:
        return Result.failed(expected, obs, "; ".join(problems), evidence=ev, evidence_keys=keys)
    return Result.passed(expected, obs, evidence=ev, evidence_keys=keys)


@check(id="NG-PER-003", name="persistenced_user", title="nvidia-persistenced runs as the specified non-root user",
       scope="node", severity="major", evidence=("persistenced.process", "persistenced.passwd"),
       remediation="Create the system user (useradd -r nvidia-persistenced), give it /run/nvidia-persistenced, and "
                   "start the daemon with --user <user> via the drop-in.",
       rule="persistence.user exists and is not root; the running daemon's uid is that user's (--user drops "
            "privileges inside the daemon, so User= stays empty) and /run/nvidia-persistenced is owned by it. "
            "Root is accepted only with persistence.allow_root or on GH200 (recorded exception).")
def persistenced_user(facts, spec) -> Result:
    spec = spec_or_default(spec)
    if (r := _daemon_not_applicable(spec)) is not None:
        return r
    user = spec.persistence.user
    root_ok, why_root = _root_allowed(facts, spec)
    pw = facts.persistenced_user
    pd = facts.persistenced
    keys = ("persistenced.process", "persistenced.passwd")
    expected = f"daemon uid = uid of {user} (not root), /run/nvidia-persistenced owned by it"
    procs = ", ".join(f"pid {p.pid} uid {fmt(p.uid)}" for p in pd.processes) or "no process"
    obs = (f"user {user}: " + (f"uid {pw.uid}" if pw else "absent") + f"; {procs}; rundir owner uid "
           + (fmt(pd.rundir_owner_uid) if pd.rundir_present else "absent"))
    ev = lines(*(f"pid {p.pid} uid {p.uid} cmdline: {' '.join(p.argv)}" for p in pd.processes),
               f"passwd: {pw.name}:{pw.uid}:{pw.gid}" if pw else f"passwd: no entry for {user}")
    kw = dict(evidence=ev, evidence_keys=keys)
    problems = []
    if pw is None:
        problems.append(f"user {user} does not exist")
    elif pw.uid == 0 and not root_ok:
        problems.append(f"user {user} is root")
    if not pd.processes:
        problems.append("nvidia-persistenced is not running")
    elif pw is not None:
        wrong = [p for p in pd.processes if p.uid != pw.uid]
        for p in wrong:
            if p.uid == 0 and root_ok:
                continue
            problems.append(f"daemon pid {p.pid} runs as uid {fmt(p.uid)}, not {user} ({pw.uid})")
        if len(pd.processes) > 1:
            problems.append(f"{len(pd.processes)} daemons running")
    if pw is not None and (not pd.rundir_present or pd.rundir_owner_uid != pw.uid):
        if not (root_ok and pd.rundir_owner_uid == 0):
            problems.append("/run/nvidia-persistenced " + (f"owned by uid {fmt(pd.rundir_owner_uid)}"
                                                           if pd.rundir_present else "missing"))
    if problems:
        return Result.failed(expected, obs, "; ".join(problems), **kw)
    note = why_root if any(p.uid == 0 for p in pd.processes) else ""
    return Result.passed(expected, obs, note, **kw)


def _legacy_log_line(facts) -> str | None:
    events, _ = optional(facts, "kernel_events")
    for e in events or []:
        if e.kind == "persistence_legacy":
            return e.text
    return None


@check(id="NG-PER-004", name="persistence_mode", title="Persistence mode Enabled (by the daemon)",
       scope="gpu", severity="major", evidence=("smi.qx", "nvml.json", "persistenced.process", "kernel.log"),
       remediation="Enable persistence through nvidia-persistenced (not nvidia-smi -pm 1): fix and start the "
                   "daemon, then reboot or restart it.",
       action="fix configuration",
       rule="Per GPU persistence_mode is Enabled. With persistence.mode=daemon, Enabled without a running "
            "nvidia-persistenced is the deprecated legacy mode (kernel log: 'Persistence mode is deprecated "
            "... Please use nvidia-persistenced instead') and FAILs.")
def persistence_mode(facts, spec, gpu) -> Result:
    spec = spec_or_default(spec)
    g = gpu_for(facts, gpu)
    name = gpu_label(g, gpu)
    mode = spec.persistence.mode
    expected = "Enabled" + (" by nvidia-persistenced" if mode == "daemon" else "")
    keys = ("smi.qx", "persistenced.process")
    pm = g.persistence_mode
    if pm is None:
        return Result.errored(f"{name}: persistence mode not reported", expected, "not reported",
                              evidence_keys=keys)
    if pm is not True:
        return Result.failed(expected, f"persistence mode {fmt(pm) if pm is not False else 'Disabled'}",
                             f"{name}: persistence mode is {'Disabled' if pm is False else fmt(pm)}",
                             evidence=f"persistence_mode: {fmt(pm)}", evidence_keys=keys)
    if mode != "daemon":
        return Result.passed(expected, "Enabled", evidence="persistence_mode: Enabled", evidence_keys=keys)
    pd = facts.persistenced
    if pd.processes:
        return Result.passed(expected, f"Enabled, nvidia-persistenced pid {pd.processes[0].pid}",
                             evidence="persistence_mode: Enabled", evidence_keys=keys)
    log = _legacy_log_line(facts)
    obs = "Enabled by the legacy driver flag (no nvidia-persistenced process)"
    msg = (f"{name}: persistence mode is legacy (nvidia-smi -pm 1), the daemon is not running"
           + ("; kernel log confirms: 'Persistence mode is deprecated'" if log else ""))
    return Result.failed(expected, obs, msg, evidence=lines("persistence_mode: Enabled", "processes: 0", log),
                         evidence_keys=keys + (("kernel.log",) if log else ()))
