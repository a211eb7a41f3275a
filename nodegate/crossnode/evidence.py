"""The phase's evidence on disk: one directory per job, read back by ``--replay`` only through
nodegate's safe readers (a job directory is a bundle: nodegate/bundle.py).

Layout (docs/crossnode.md "Evidence")::

    <evidence>/crossnode/<run_id>/
        plan.json                   the nodes, domains, rails and seed the localisation started from
        result.json                 every row (PhaseResult.to_dict())
        jobs/<job_id>/meta.json     the job (stage, round, hosts, HCAs), the launcher, the exact
                                    command, hosts, environment, rc, duration, versions
        jobs/<job_id>/launch.out    stdout of mpirun/srun (.err: stderr, .rc: the exit code)
        jobs/<job_id>/bw_server.out / bw_client.out / lat_server.out / lat_client.out   a perftest pair
        jobs/<job_id>/hostfile      the hostfile mpirun was given

``meta.json`` is the bundle's (node = the job id); a replay reads it and the item files with
``Bundle.load`` (regular files only, sizes capped, never a link) and launches nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import safeio
from ..bundle import Bundle, Evidence, read_regular
from ..probe import RawItem

PLAN_CAP = 64 * 1024 * 1024
#: the longest a recorded job can have run (a year): a larger duration_s is no duration
MAX_DURATION_S = 366 * 24 * 3600


@dataclass
class Item:
    """One captured stream set: stdout, stderr, rc (None: cut), status, duration."""

    stdout: bytes = b""
    stderr: bytes = b""
    rc: int | None = None
    status: str = "ok"
    duration_s: float | None = None


@dataclass
class LaunchRecord:
    """What one launch did. ``items``: key -> Item (``launch`` for mpirun/srun; ``bw_server``,
    ``bw_client``, ``lat_server``, ``lat_client`` for a perftest pair). ``setup_error``: the
    launch could not start at all (launcher missing, a partition that does not exist): not a
    node's fault. ``missing``: a replay found no evidence for the job. ``unreachable``: nodes the
    launcher could not reach, with why."""

    launcher: str
    command: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    items: dict[str, Item] = field(default_factory=dict)
    duration_s: float = 0.0
    timed_out: bool = False
    interrupted: str = ""
    setup_error: str = ""
    missing: str = ""
    unreachable: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    extra_files: dict[str, bytes] = field(default_factory=dict)


class EvidenceStore:
    """Writes (a live run) or reads (a replay) one run's evidence under ``root``."""

    def __init__(self, root: Path | str, run_id: str):
        self.anchor = Path(root)
        self.dir = self.anchor / "crossnode" / run_id
        self.jobs = self.dir / "jobs"

    def rel(self, job_id: str) -> str:
        return str(Path("crossnode") / self.dir.name / "jobs" / job_id)

    def write_job(self, job_id: str, job_meta: dict, rec: LaunchRecord) -> str:
        """The job's directory (created through safeio: nothing written through a link)."""
        raw = {k: RawItem(k, it.stdout, it.stderr, it.rc, duration_s=it.duration_s, status=it.status)
               for k, it in rec.items.items()}
        meta = dict(job_meta, launcher=rec.launcher, command=rec.command, hosts=rec.hosts, env=rec.env,
                    duration_s=round(rec.duration_s, 3), timed_out=rec.timed_out, interrupted=rec.interrupted,
                    setup_error=rec.setup_error, unreachable=rec.unreachable, versions=rec.versions,
                    origin="nodegate-crossnode")
        b = Bundle.from_raw(job_id, raw, meta)
        safeio.makedirs(self.jobs, anchor=self.anchor)   # a link planted on the way is refused
        d = b.write(self.jobs)
        for name, data in rec.extra_files.items():
            safeio.put(d / name, data, anchor=self.anchor)
        return self.rel(job_id)

    def load_job(self, job_id: str) -> Bundle | None:
        """The recorded job, or None when there is none (never raises for what is on disk)."""
        d = self.jobs / job_id
        if not (d / "meta.json").exists() and not d.is_dir():
            return None
        return Bundle.load(d, root=self.anchor)

    def write_json(self, name: str, obj) -> None:
        safeio.makedirs(self.dir, anchor=self.anchor)
        safeio.put(self.dir / name, (json.dumps(obj, indent=1, sort_keys=True, default=str) + "\n").encode(),
                   anchor=self.anchor)

    def read_json(self, name: str, why: list[str] | None = None) -> dict | None:
        """``plan.json``/``result.json`` through the safe reader (regular file, capped), or None;
        then ``why`` (when given) gets the reason (missing, a link, not JSON ...)."""
        import os

        def no(reason: str) -> None:
            if why is not None:
                why.append(reason[:300])
            return None
        try:
            fd = safeio.open_dir(self.dir, anchor=self.anchor, create=False)
        except (OSError, ValueError) as e:
            return no(f"not read: its directory {self.dir} could not be opened ({type(e).__name__}: {e})")
        try:
            data = read_regular(fd, name, PLAN_CAP)
        except Exception as e:   # UnsafeFile's why: missing, a link or FIFO (not read), over the cap ...
            return no(str(getattr(e, "why", None) or f"not read: {type(e).__name__}: {e}"))
        finally:
            os.close(fd)
        try:
            obj = json.loads(data.decode("utf-8", "replace"))
        except ValueError as e:
            return no(f"is not JSON ({e})")
        except RecursionError:
            return no("is not JSON (nested too deep)")
        return obj if isinstance(obj, dict) else no("is not a JSON object")


def record_from_bundle(b: Bundle) -> LaunchRecord:
    """A replayed job: its recorded streams and meta as a LaunchRecord (nothing launched)."""
    m = b.meta if isinstance(b.meta, dict) else {}

    def item(e: Evidence) -> Item:
        return Item(e.stdout, e.stderr, e.rc, e.status, e.duration_s)

    rec = LaunchRecord(str(m.get("launcher", "replay")),
                       [str(x) for x in m.get("command", [])] if isinstance(m.get("command"), list) else [],
                       [str(x) for x in m.get("hosts", [])] if isinstance(m.get("hosts"), list) else [],
                       {str(k): str(v) for k, v in m.get("env", {}).items()} if isinstance(m.get("env"), dict) else {},
                       {k: item(e) for k, e in b.items.items()})
    d = m.get("duration_s")
    # meta.json is node-side evidence on a replay: a duration that is no finite, bounded figure
    # (10**400 made float() raise OverflowError and stopped the whole phase; NaN, -Infinity) is 0
    rec.duration_s = (float(d) if isinstance(d, (int, float)) and not isinstance(d, bool)
                      and -1 < d < MAX_DURATION_S and d == d else 0.0)
    rec.timed_out = m.get("timed_out") is True
    rec.interrupted = str(m.get("interrupted") or "")
    rec.setup_error = str(m.get("setup_error") or "")
    if isinstance(m.get("versions"), dict):
        rec.versions = {str(k): str(v) for k, v in m["versions"].items()}
    if isinstance(m.get("unreachable"), dict):   # a replay judges a lost node as the run did
        rec.unreachable = {str(k)[:256]: str(v)[:300] for k, v in list(m["unreachable"].items())[:1000]}
    if b.gather_error:
        rec.missing = f"recorded evidence not usable: {b.gather_error}"
    for k, e in b.items.items():
        if e.status in ("refused", "inconsistent"):
            rec.missing = f"recorded evidence not usable: {e.why}"
    return rec
