"""Every site command of a node, recorded in its bundle and answered from there on ``--replay``.

Layout (docs/bundle.md "Site checks"), beside the probe's items in ``<bundles>/<node>/``:

    site.cmd.<n>.out / .err / .rc   the n-th command's stdout, stderr and exit code, written like a
                                    probe item (``.rc`` only when not 0, or why it has none)
    meta.json ``items``             one entry per command (rc, status, duration_s, bytes), as for items
    meta.json ``site.commands``     ``[{"key": "site.cmd.<n>", "command": "...", "status": "ok",
                                    "check_id": "...", "note": "..."}]`` in the order they ran: the
                                    index a replay reads
    meta.json ``site.results``      ``{result key: {"check_id", "outcome", "title"}}``: the site checks'
                                    outcomes, compared by ``--baseline``

``command`` is the command line testinfra built (its module's quoting and ``host.sudo()``
wrapper included; nodegate's own ``--sudo`` is not part of it), so a replay with or without
``--sudo`` finds it. Sizes: each command's stdout and stderr are capped on the node as a probe
item's are (``probe.DEFAULT_ITEM_CAP``, ``probe.ITEM_STDERR_CAP``); a node's recordings together
at ``RECORD_BUDGET`` bytes (past it a command is ERROR, never unrecorded).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..transport import STREAM_CAP

KEY_PREFIX = "site.cmd."
SITE_META = "site"
#: stdout + stderr of all site commands of one node, bytes (the probe's stream cap per exec)
RECORD_BUDGET = STREAM_CAP
#: commands read back from one bundle's index at most; longest command line kept
MAX_COMMANDS = 100_000
MAX_COMMAND_LEN = 64 * 1024

_KEY_RE = re.compile(r"^site\.cmd\.[0-9]{1,9}$")
_PROBLEM = {
    "timeout": "timed out (the command deadline was reached before it finished)",
    "truncated": "output exceeded the per-item cap; not evaluated",
    "malformed": "its output was malformed (frames missing)",
    "lost": "the connection ended before the command did",
    "error": "it could not be run",
    "missing": "its output is missing from the bundle",
    # nodegate.bundle's own verdicts on the files (an untrusted bundle): the reason is in ``note``
    "refused": "its bundle file was refused",
    "inconsistent": "its bundle files contradict meta.json",
}


@dataclass
class CommandRecord:
    """One site command as it ran (live) or as the bundle recorded it (replay).

    ``status``: ok | timeout | truncated | malformed | lost (session ended) | error (could not
    be run at all: ``note`` says why) | missing (listed in meta.json, no file). ``rc`` None
    when it did not finish; ``duration_s`` seconds on the controller, from sending the command
    to its last frame."""

    key: str
    command: str
    stdout: bytes = b""
    stderr: bytes = b""
    rc: int | None = 0
    status: str = "ok"
    duration_s: float | None = None
    check_id: str = ""
    note: str = ""

    def problem(self) -> str | None:
        """Why the command's result cannot be used (then the site test is ERROR), or None."""
        if self.status == "ok":
            return None
        why = _PROBLEM.get(self.status, f"status {self.status}")
        return f"{why}{': ' + self.note if self.note else ''}"


class Recorder:
    """The site commands of one node in this run, in order; ``flush`` writes them into the
    node's bundle directory (new files, then meta.json replaced atomically)."""

    def __init__(self, node: str, budget: int = RECORD_BUDGET):
        self.node = node
        self.budget = budget
        self.records: list[CommandRecord] = []
        self.used = 0
        self._written = 0

    def next_key(self) -> str:
        return f"{KEY_PREFIX}{len(self.records)}"

    def room(self) -> bool:
        return self.used < self.budget

    def add(self, rec: CommandRecord) -> None:
        self.records.append(rec)
        self.used += len(rec.stdout) + len(rec.stderr)

    def flush(self, bundle_dir: Path, results: dict | None = None) -> None:
        """Write the records not written yet and the meta.json index (``results``: the site
        checks' outcomes, see module docstring). Raises OSError when the bundle cannot be
        written (the caller reports it; the run's verdicts are not affected).

        Under an exclusive lock on the bundle directory, and after the entries already in its
        index: two writers of one node (pytest-xdist workers given a node's items apart) add to
        one recording instead of overwriting each other's; new records get their final
        ``site.cmd.<n>`` key here."""
        from ..safeio import open_dir, put_at
        # the node's directory below the bundles directory, never through a link planted there
        # (nodegate.safeio; raises LinkRefused, an OSError)
        dfd = open_dir(bundle_dir, anchor=Path(bundle_dir).parent, create=False)
        try:
            fcntl.flock(dfd, fcntl.LOCK_EX)
            mp = os.path.join(os.fspath(bundle_dir), "meta.json")
            mfd = os.open("meta.json", os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0), dir_fd=dfd)
            with os.fdopen(mfd, "rb") as fh:   # our own bundle, written by this run's gather
                meta = json.loads(fh.read(STREAM_CAP).decode("utf-8", errors="replace"))
            if not isinstance(meta, dict):
                raise OSError(f"{mp}: not a JSON object")
            site = meta.setdefault(SITE_META, {})
            index = site.get("commands") if isinstance(site.get("commands"), list) else []
            used = {int(e["key"].rsplit(".", 1)[1]) for e in index
                    if isinstance(e, dict) and isinstance(e.get("key"), str) and _KEY_RE.match(e["key"])}
            nxt = max(used, default=-1) + 1
            items = meta.setdefault("items", {})
            for rec in self.records[self._written:]:
                rec.key = f"{KEY_PREFIX}{nxt}"
                nxt += 1
                put_at(dfd, rec.key + ".out", rec.stdout)
                if rec.stderr:
                    put_at(dfd, rec.key + ".err", rec.stderr)
                if rec.rc is None:
                    put_at(dfd, rec.key + ".rc",
                           f"{rec.status if rec.status in ('truncated', 'malformed') else 'timeout'}\n".encode())
                elif rec.rc != 0:
                    put_at(dfd, rec.key + ".rc", b"%d\n" % rec.rc)
                items[rec.key] = {"rc": rec.rc, "status": rec.status, "duration_s": rec.duration_s,
                                  "bytes": len(rec.stdout)}
                index.append({"key": rec.key, "command": rec.command, "status": rec.status,
                              "check_id": rec.check_id, "note": rec.note})
            self._written = len(self.records)
            site["commands"] = index
            if results is not None:
                old = site.get("results") if isinstance(site.get("results"), dict) else {}
                site["results"] = {**old, **results}
            put_at(dfd, ".meta.json.tmp", (json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n").encode())
            os.replace(".meta.json.tmp", "meta.json", src_dir_fd=dfd, dst_dir_fd=dfd)
        finally:
            os.close(dfd)



def load_recording(bundle) -> dict[str, list[CommandRecord]]:
    """{command: [records in the order they ran]} from a Bundle (nodegate.bundle) read back from
    disk: the ``site.commands`` index of its meta.json joined with the ``site.cmd.<n>`` items.
    The bundle is untrusted: entries of the wrong shape are skipped, at most ``MAX_COMMANDS``
    are read, an entry whose files are missing is kept with status ``missing`` (ERROR when asked)."""
    site = bundle.meta.get(SITE_META) if isinstance(bundle.meta, dict) else None
    cmds = site.get("commands") if isinstance(site, dict) else None
    out: dict[str, list[CommandRecord]] = {}
    if not isinstance(cmds, list):
        return out
    for e in cmds[:MAX_COMMANDS]:
        if not isinstance(e, dict):
            continue
        key, command = e.get("key"), e.get("command")
        if not isinstance(key, str) or not _KEY_RE.match(key) or not isinstance(command, str) \
                or len(command) > MAX_COMMAND_LEN:
            continue
        note = e.get("note") if isinstance(e.get("note"), str) else ""
        check_id = e.get("check_id") if isinstance(e.get("check_id"), str) else ""
        ev = bundle.items.get(key)
        if ev is None:
            rec = CommandRecord(key, command, rc=None, status="missing", check_id=check_id, note=note[:500])
        else:
            # the index keeps the status words a .rc file cannot (lost, error); the files' own
            # status wins where it says the output itself is unusable
            st = e.get("status")
            status = st if isinstance(st, str) and (st in _PROBLEM or st == "ok") else "malformed"
            if ev.status in ("refused", "inconsistent"):
                status, note = ev.status, (getattr(ev, "why", "") or note)
            elif ev.status in ("truncated", "malformed") or (status == "ok" and ev.status != "ok"):
                status = ev.status if ev.status in _PROBLEM else "malformed"
            rec = CommandRecord(key, command, ev.stdout, ev.stderr, ev.rc, status, ev.duration_s, check_id,
                                note[:500])
        out.setdefault(command, []).append(rec)
    return out


def results_of(bundle) -> dict[str, dict] | None:
    """The site checks' outcomes recorded in a bundle (``site.results``), or None when it has
    none (taken without site tests, by an older nodegate, or hand-built)."""
    site = bundle.meta.get(SITE_META) if isinstance(getattr(bundle, "meta", None), dict) else None
    res = site.get("results") if isinstance(site, dict) else None
    if not isinstance(res, dict):
        return None
    out = {}
    for k, v in list(res.items())[:MAX_COMMANDS]:
        if isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("outcome"), str):
            out[k[:500]] = {"check_id": str(v.get("check_id", ""))[:200], "outcome": v["outcome"][:20],
                            "title": str(v.get("title", ""))[:500]}
    return out
