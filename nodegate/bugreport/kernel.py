"""Kernel messages of a bug report: the current boot (judged) apart from earlier boots (history).

A bug report holds the same kernel events several times: ``dmesg:`` (this boot's ring buffer),
the "Scanning kernel log files" block's ``/var/log/kern.log`` / ``messages`` (every boot the files
keep, ``[uptime]`` stamps) and ``journalctl -b -0/-1/-2`` (wall-clock stamps, localised month
names). The kernel-log checks judge the current boot as on a live node; earlier boots are history.
One event seen in two sources is counted once:

- current boot = the dmesg lines, plus the ``journalctl -b -0`` lines whose message dmesg does not
  already hold (as many times as the journal has it beyond dmesg: a multiset difference); with no
  dmesg section, the journal alone;
- a syslog-file line belongs to the current boot when its ``[uptime] message`` is a dmesg line, or
  its time and message are a ``journalctl -b -0`` line's;
- history = the other syslog-file lines and ``journalctl -b -1/-2``, one per (day, time, message):
  kern.log's ``Nov 15 12:43:10 ... [ 1428.4] NVRM: Xid ...`` and the journal's ``11月 15 12:43:10 ...
  NVRM: Xid ...`` are one event (the month is localised, the day and time are not).

Only lines the probe's own kernel-log filter keeps are used (``nvrm|nvidia|xid|nouveau|fallen
off|gsp``, nodegate/probe/probe.sh).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

_KEEP = re.compile(r"nvrm|nvidia|xid|nouveau|fallen off|gsp", re.I)
_DMESG = re.compile(r"^\[\s*(?P<up>\d+\.\d+)\]\s?(?P<msg>.*)$")
# "Nov 16 11:34:34 host kernel: [  524.93] NVRM: ..." / "11月 16 11:34:34 host kernel: NVRM: ..." /
# "2019-11-16T11:34:34+0800 host kernel: ..."
_SYSLOG = re.compile(r"^(?:\S+\s+(?P<day>\d{1,2})\s+(?P<time>\d\d:\d\d:\d\d)|(?P<iso>\d{4}-\d\d-(?P<iday>\d\d)T"
                     r"(?P<itime>\d\d:\d\d:\d\d))\S*)\s+\S+\s+(?P<rest>.*)$")
_KERNEL = re.compile(r"^kernel:\s*(?:\[\s*(?P<up>\d+\.\d+)\]\s?)?(?P<msg>.*)$")


def keep(line: str) -> bool:
    return bool(_KEEP.search(line))


def _syslog(line: str) -> tuple[str, str, str | None] | None:
    """(day time, message, uptime) of a syslog/journal line; None when it is not one."""
    m = _SYSLOG.match(line)
    if not m:
        return None
    when = f"{m.group('day') or m.group('iday')} {m.group('time') or m.group('itime')}"
    rest = m.group("rest")
    k = _KERNEL.match(rest)
    if k:
        return when, k.group("msg").strip(), k.group("up")
    return when, rest.strip(), None


def _dmesg_msg(line: str) -> tuple[str, str] | None:
    m = _DMESG.match(line)
    return (m.group("up"), m.group("msg").strip()) if m else None


def split_boots(dmesg: Iterable[str] | None, journal: dict[int, Iterable[str]],
                syslog_files: dict[str, Iterable[str]]) -> tuple[list[str], list[str], dict[str, int]]:
    """(current boot lines, history lines, counts) from the dmesg block (None when absent), the
    ``journalctl -b -N`` parts by N (0, 1, 2) and the scanned syslog files. ``counts`` says how
    many lines each source gave and how many duplicates were dropped."""
    d_lines = [l for l in (dmesg or []) if keep(l)]
    d_msgs: Counter = Counter()
    d_stamped: set[tuple[str, str]] = set()
    if journal or syslog_files:   # only other sources need dmesg's messages (memory: one entry per line)
        for m in map(_dmesg_msg, d_lines):
            if m:
                d_msgs[m[1]] += 1
                d_stamped.add(m)
    j0 = [l for l in journal.get(0, []) if keep(l)]
    j0_keys = {(p[0], p[1]) for p in map(_syslog, j0) if p}
    current = list(d_lines)
    seen = Counter()
    dup = 0
    for l in j0:
        p = _syslog(l)
        msg = p[1] if p else l.strip()
        seen[msg] += 1
        if seen[msg] <= d_msgs.get(msg, 0):
            dup += 1
            continue
        current.append(l)
    history: list[str] = []
    hist_keys: set[tuple[str, str]] = set()
    for src in list(syslog_files):
        for l in syslog_files[src]:
            if not keep(l):
                continue
            p = _syslog(l)
            if p is None:
                continue
            when, msg, up = p
            if (up is not None and (up, msg) in d_stamped) or (when, msg) in j0_keys:
                dup += 1
                continue
            if (when, msg) in hist_keys:
                dup += 1
                continue
            hist_keys.add((when, msg))
            history.append(l)
    for n in sorted(k for k in journal if k != 0):
        for l in journal[n]:
            if not keep(l):
                continue
            p = _syslog(l)
            key = (p[0], p[1]) if p else ("", l.strip())
            if key in hist_keys:
                dup += 1
                continue
            hist_keys.add(key)
            history.append(l)
    counts = {"dmesg": len(d_lines), "journalctl -b -0": len(j0), "history": len(history), "duplicates": dup}
    return current, history, counts


# the pid is bounded in the pattern (a 5,000-digit one made int() raise ValueError: INTERNALERROR);
# pid_max is at most 2^22 (4194304, 7 digits)
_PD_START = re.compile(r"nvidia-persistenced\[(?P<pid>\d{1,10})\]:\s+Started\b")
_PD_STOP = re.compile(r"nvidia-persistenced\[(?P<pid>\d{1,10})\]:\s+Shutdown\b")


def persistenced_from_journal(lines: Iterable[str]) -> list[int]:
    """PIDs of nvidia-persistenced that the current boot's journal shows started and not shut down
    (the daemon logs 'Started (<pid>)' and 'Shutdown (<pid>)' to syslog), in start order. Linear:
    a count per pid (the former list ``in``/``remove`` was quadratic: an 806 KB log held a replay
    3 min 36 s)."""
    running: dict[int, int] = {}
    for l in lines:
        if "nvidia-persistenced[" not in l:
            continue
        if (m := _PD_START.search(l)) is not None:
            pid = int(m.group("pid"))
            running[pid] = running.get(pid, 0) + 1
        elif (m := _PD_STOP.search(l)) is not None and (pid := int(m.group("pid"))) in running:
            running[pid] -= 1
            if not running[pid]:
                del running[pid]
    return [pid for pid, n in running.items() for _ in range(n)]
