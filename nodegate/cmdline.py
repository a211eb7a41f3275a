"""The run's command line, checked and resolved before any node is contacted (pytest-free).

What the operator asked for, from the option values alone (``options``: pytest's parsed
``config.option``, an ``argparse.Namespace``): the transport's deadlines and host-key policy
(``gather_options``), where the reports go (``report_paths``), whether the output directories
can hold them (``check_outputs``) and a live run's options can work (``check_live_options``),
``--replay``'s repeatable option, ``--list-hosts``' table and the installed suites the
``nodegate`` command's ``suites/...`` paths name. A request that cannot be honoured raises
``UsageError`` (exit 2, no report, nothing contacted: nodegate.session.exitcodes says it once).
The pytest side (nodegate.session.jobs, nodegate.session.outputs) calls these.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from .errors import UsageError
from .gather import GatherOptions
from .transport import HostKeyPolicy


class ReplayAction(argparse.Action):
    """``--replay PATH`` (repeatable): ``replay`` keeps the first PATH (a string, as before),
    ``replay_all`` every one in order."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is None:
            setattr(namespace, self.dest, values)
        setattr(namespace, "replay_all", [*(getattr(namespace, "replay_all", None) or []), values])


def gather_options(options) -> GatherOptions:
    """Deadlines, pool size, sudo (testinfra's ``--sudo``), host-key policy and GPU source from the
    command line; GatherOptions' defaults for an option absent (the phase plugins load without
    the lead plugin's options too)."""
    o, d = options, GatherOptions()
    files = [Path(f) for f in (getattr(o, "known_hosts", None) or [])] or [Path("~/.ssh/known_hosts").expanduser()]
    return GatherOptions(connect_timeout=getattr(o, "connect_timeout", d.connect_timeout),
                         command_timeout=getattr(o, "command_timeout", d.command_timeout),
                         probe_timeout=getattr(o, "probe_timeout", d.probe_timeout),
                         forks=max(1, getattr(o, "forks", d.forks) or d.forks), sudo=bool(getattr(o, "sudo", False)),
                         hostkeys=HostKeyPolicy(files=files, accept_new=bool(getattr(o, "accept_new_host_keys", False))),
                         gpu_source=getattr(o, "gpu_source", d.gpu_source) or d.gpu_source)


def report_paths(options) -> dict:
    """Where nodegate writes the JUnit and HTML reports itself, from results.jsonl at the end
    (pytest's junitxml and pytest-html keep every test's data in memory and outgrow a
    4,096-node run: docs/performance.md): ``{"junit": path, "html": path}``. ``--junitxml PATH``
    and ``--html PATH`` keep their meaning (that file is written, by nodegate); without them
    ``<reports-dir>/junit.xml`` and ``<reports-dir>/report.html``. Both options are cleared here
    so pytest's junitxml and pytest-html stay inactive (called before their pytest_configure)."""
    o = options
    reports = Path(o.reports_dir)
    paths = {"junit": Path(os.path.expandvars(o.xmlpath)).expanduser() if getattr(o, "xmlpath", None)
             else reports / "junit.xml",
             "html": Path(os.path.expandvars(o.htmlpath)).expanduser() if getattr(o, "htmlpath", None)
             else reports / "report.html"}
    if hasattr(o, "xmlpath"):
        o.xmlpath = None
    if hasattr(o, "htmlpath"):
        o.htmlpath = None
    return paths


# ------------------------------------------------------------------ where the run writes
def unusable_dir(path: Path, anchor: Path | None = None) -> str | None:
    """Why files cannot be created in directory ``path`` (created if absent), or None.
    ``anchor``: the operator's directory ``path`` lies in (the reports directory of the default
    ``reports/bundles``): every directory below it is opened without following a link
    (nodegate.safeio.open_dir), and a link there is the reason."""
    p = Path(path)
    # the directories this test creates are removed again: a run that stops before writing
    # anything (exit 2: nothing selected) leaves no empty reports/bundles/ behind
    absent = []
    for d in (p, *p.parents):
        if os.path.lexists(d):
            break
        absent.append(d)
    try:
        return _unusable_dir(p, anchor)
    finally:
        for d in absent:   # deepest first; a directory something was written into stays
            try:
                d.rmdir()
            except OSError:
                break


def _unusable_dir(p: Path, anchor: Path | None) -> str | None:
    if anchor is not None:
        from .safeio import LinkRefused, makedirs
        try:
            makedirs(p, anchor)
        except LinkRefused as e:
            return str(e)
        except (OSError, ValueError):
            pass   # said below, in the words of the ordinary checks
    if p.exists() and not p.is_dir():
        return f"{p} exists and is not a directory"
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is not a directory"
            break
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create {p}: {e.strerror or e}"
    try:
        fd, name = tempfile.mkstemp(dir=p, prefix=".nodegate-write-test-")
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        return f"cannot create files in {p}: {e.strerror or e}"
    return None


def output_dirs(options, taken: dict) -> list[tuple[str, Path]]:
    """(option, directory) of every place the run writes: the reports directory, a live run's
    bundles directory, ``--save-bundles``, the JUnit and HTML files' directories (``taken``:
    ``report_paths``); a file option naming a directory: ``(option, <dir>/"is a directory, not a
    file")``."""
    o = options
    reports = Path(o.reports_dir)
    out = [("--reports-dir", reports)]
    if not getattr(o, "replay", None):
        out.append(("--bundles-dir", Path(o.bundles_dir) if getattr(o, "bundles_dir", None) else reports / "bundles"))
    # every node directory below the bundles directory is opened without following a link
    # (Bundle.write); the default one below --reports-dir likewise (nodegate.safeio)
    if getattr(o, "save_bundles", None):
        out.append(("--save-bundles", Path(o.save_bundles)))
    for opt, attr, key in (("--junitxml", "xmlpath", "junit"), ("--html", "htmlpath", "html")):
        f = (taken or {}).get(key) or getattr(o, attr, None)
        if f:
            p = Path(os.path.expandvars(str(f))).expanduser()
            if p.is_dir():
                out.append((opt, p / "is a directory, not a file"))
            out.append((opt, p.parent))
    return out


def check_outputs(options, taken: dict) -> None:
    """UsageError when a place the run writes (``output_dirs``) is not a directory this process
    can create files in (tried for real: root ignores permission bits but not a read-only
    mount): the evidence of a run that cannot be kept is worth no SSH session."""
    for opt, d in output_dirs(options, taken):
        if d.name == "is a directory, not a file":
            raise UsageError(f"{opt} {d.parent}: is a directory, not a file (nothing was contacted)")
        anchor = Path(options.reports_dir) if (
            opt == "--bundles-dir" and not getattr(options, "bundles_dir", None)) else None
        why = unusable_dir(d, anchor)
        if why:
            raise UsageError(f"{opt}: {why} (nothing was contacted)")


#: the deadlines a run takes (seconds): each must be a number above 0
DEADLINES = (("--connect-timeout", "connect_timeout"), ("--command-timeout", "command_timeout"),
             ("--probe-timeout", "probe_timeout"), ("--site-timeout", "site_timeout"))


def check_values(options) -> None:
    """UsageError for an option value no run can use, before anything is contacted or written: a
    deadline that is not a finite number of seconds above 0 (``--connect-timeout -5`` reached
    ssh as "invalid time value" and the node was reported unreachable), ``--shard-nodes`` below 0,
    ``--junit-max-objects`` below 1."""
    import math
    for opt, dest in DEADLINES:
        v = getattr(options, dest, None)
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise UsageError(f"{opt} {v}: a deadline in seconds above 0 (nothing was contacted)")
    n = getattr(options, "shard_nodes", None)
    if isinstance(n, int) and n < 0:
        raise UsageError(f"--shard-nodes {n}: 0 (never shard) or a number of nodes (nothing was contacted)")
    n = getattr(options, "junit_max_objects", None)
    if isinstance(n, int) and n < 1:
        raise UsageError(f"--junit-max-objects {n}: at least 1 (nothing was contacted)")


def check_live_options(options) -> None:
    """UsageError when a live run's option cannot work: a ``--known-hosts FILE`` that does not
    exist (every host key would be "unknown", with no word of the file), ``--forks`` below 1."""
    o = options
    if getattr(o, "replay", None):
        return
    for f in getattr(o, "known_hosts", None) or []:
        p = Path(f).expanduser()
        if not p.is_file():
            raise UsageError(f"--known-hosts {f}: {'not a file' if p.exists() else 'no such file'} "
                             "(nothing was contacted)")
    if getattr(o, "forks", 1) < 1:
        raise UsageError(f"--forks {o.forks}: at least 1 (nothing was contacted)")


# ------------------------------------------------------------------ --list-hosts, the installed suites
def render_hosts(hosts: list[dict]) -> str:
    """A table, one host a line: name, connection (nodegate's transport; ``paramiko (password;
    Ansible: ssh)`` for a password login Ansible does with ssh + sshpass), address, port, user,
    key file, password set, become."""
    from .reports.text import one_line
    cols = ("name", "connection", "address", "port", "user", "key_file", "password_set", "become")
    heads = ("host", "connection", "address", "port", "user", "key file", "password", "become")
    rows = [[one_line(_cell(h, c), 200) for c in cols] for h in hosts]
    w = [max([len(heads[i])] + [len(r[i]) for r in rows]) for i in range(len(cols))]
    lines = ["  ".join(heads[i].ljust(w[i]) for i in range(len(cols))).rstrip()]
    lines += ["  ".join(r[i].ljust(w[i]) for i in range(len(cols))).rstrip() for r in rows]
    return f"  hosts ({len(hosts)}):\n" + "\n".join("    " + ln for ln in lines) + "\n"


def _cell(h: dict, c: str) -> str:
    v = h.get(c)
    if c == "connection" and h.get("ansible_connection") == "ssh" and v == "paramiko":
        # Ansible would run ssh through sshpass: nodegate logs in with its paramiko transport
        return "paramiko (password; Ansible: ssh)"
    return "-" if v is None else ("yes" if v is True else "no" if v is False else str(v))


def installed_suites(args, here, suites: Path) -> list[str]:
    """The ``nodegate`` command's positional test paths (``args``: what pytest parsed as paths,
    never an option's value) with ``suites`` and ``suites/...`` naming the installed suites (the
    ``suites`` directory) when the working directory ``here`` has no ``suites`` of its own
    (nodegate/cli.py)."""
    args = [str(a) for a in (args or ())]
    if (Path(here) / "suites").exists():
        return args
    return [str(suites.parent / a) if a == "suites" or a.startswith(("suites/", "suites::")) else a for a in args]


# ------------------------------------------------------------------ what the run must do first, and its selection
def replay_holds(options, *patterns: str) -> bool:
    """Whether the first --replay PATH is a directory with a file matching one of ``patterns``
    (glob, relative to it): a replay of --burn-in or --perf bundles."""
    d = getattr(options, "replay", None)
    if not d:
        return False
    root = Path(d)
    return root.is_dir() and any(any(root.glob(p)) for p in patterns)


def streaming(options) -> bool:
    """Bounded memory (FleetRun.streaming): nodes loaded when their items run and released
    after; with pytest-xdist too (the controller keeps each node's ids, a worker loads the nodes
    it runs: docs/performance.md "xdist"). Not with --burn-in (it
    loads every node first), --perf or a replay of --perf bundles. --baseline streams: each current node is compared with its baseline
    node while both are loaded (nodegate.baseline.run.BaselineRun)."""
    o = options
    return not (getattr(o, "burn_in", None) or getattr(o, "perf", False)
                # --crossnode: the phase takes every node's evidence at once (its prerequisites, Stage A)
                or getattr(o, "crossnode", None)
                # a replay of --perf bundles: the fleet rule and the perf items of every node are
                # made from every node's figures at collection (plugins/nodegate_perf.py)
                or replay_holds(o, "perf*.run.out", "*/perf*.run.out"))


def why_gather_first(options) -> str | None:
    """None when the tests may run while the nodes are gathered, else why every selected node is
    gathered before the first item: the phases' items (baseline, burn-in, perf, cross-node)
    follow what the nodes report and xdist's workers load the gathered bundles, so those gather
    before collection (the selection learned by ``preselect``); ``--gather-first`` gathers after
    collection (the suite's items need only the specs) and before the first item."""
    o = options
    if getattr(o, "numprocesses", None) or getattr(o, "dist", "no") not in ("no", None):
        return "pytest-xdist (workers load the gathered bundles)"
    if getattr(o, "baseline", None):
        return "--baseline (regression items follow the gathered GPUs)"
    if getattr(o, "burn_in", None):
        return "--burn-in (runs on the gathered nodes)"
    if getattr(o, "perf", False):
        return "--perf (runs on the gathered nodes; the fleet rule needs every node)"
    if getattr(o, "crossnode", None):
        return "--crossnode (runs across the gathered nodes; their prerequisites decide the partners)"
    if getattr(o, "gather_first", False):
        return "--gather-first"
    return None


def narrows_nodes(options) -> bool:
    """An option that may deselect every item of some nodes (``-k``, ``-m``, ``--deselect``,
    ``--lf``/``--sw``: pytest's own selection)."""
    o = options
    return bool(getattr(o, "keyword", "") or getattr(o, "markexpr", "") or getattr(o, "deselect", None)
                or getattr(o, "lf", False) or getattr(o, "stepwise", False))


def why_nothing(options, n_deselected: int | None) -> str:
    """The exit-2 message; ``n_deselected`` None: not counted (learned in preselect's child:
    deselected when an option narrows the run, else nothing was collected)."""
    o = options
    sel = " ".join(f"{k} {v!r}" for k, v in (("-k", getattr(o, "keyword", "")), ("-m", getattr(o, "markexpr", ""))) if v)
    if n_deselected is None and not narrows_nodes(o):
        n_deselected = 0
    if n_deselected is None or n_deselected:
        what = "every collected item was" if n_deselected is None else f"{n_deselected} collected item(s) were all"
        return (f"nodegate: no nodegate check selected: {what} deselected"
                f"{' by ' + sel if sel else ' (-k/-m/--lf/--deselect)'}; no node was contacted")
    return ("nodegate: no nodegate check collected: the paths given hold no nodegate suite "
            "(run `nodegate` with no path for the installed suites); no node was contacted")
