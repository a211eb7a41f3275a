"""Helpers for the hostile-conditions tests: run the suite as a subprocess against a simulated
fleet, read its JUnit outcomes, measure its peak memory, and make nodes misbehave.

Nodes misbehave through shims written into their roots after ``Fleet.start()`` (the roots are
read by sshd at each session): ``wrap_tool`` puts a hostile body in front of a fleet shim for
one argument string and hands every other invocation to the original shim.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.measure import TreePeak

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SuiteRun:
    """One ``pytest suites`` run: exit code, terminal output, wall time, peak RSS of the pytest
    process and its children since their exec (KiB, VmHWM: bench.measure.TreePeak), JUnit outcomes."""

    rc: int
    out: str
    err: str
    wall_s: float
    maxrss_kb: int
    reports: Path
    outcomes: dict[str, str] = field(default_factory=dict)   # test id -> pass|fail|skip|error
    messages: dict[str, str] = field(default_factory=dict)   # test id -> failure/error/skip text

    @property
    def bundles(self) -> Path:
        return self.reports / "bundles"

    def meta(self, node: str) -> dict:
        import json
        return json.loads((self.bundles / node / "meta.json").read_text())

    def node_outcomes(self, node: str) -> dict[str, str]:
        """Outcomes of every item of ``node`` (ids ``test_x[node]`` and ``test_x[node-gpuN]``)."""
        return {t: o for t, o in self.outcomes.items() if _node_of(t) == node}

    def output_files(self) -> list[Path]:
        return sorted(p for p in self.reports.rglob("*") if p.is_file())


def _node_of(test_id: str) -> str | None:
    if "[" not in test_id:
        return None
    inner = test_id.split("[", 1)[1].rstrip("]")
    head, sep, tail = inner.rpartition("-gpu")
    return head if sep and tail.isdigit() else inner


def parse_junit(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(outcomes, messages) per item of nodegate's JUnit file (tests/junit_view.py)."""
    from tests.junit_view import cases
    outcomes, messages = {}, {}
    for _, name, kind, msg, _ in cases(path):
        outcomes[name] = kind
        messages[name] = msg or ""
    return outcomes, messages


def default_sigint() -> None:
    """In the child before its exec: SIGINT back to its default action. A shell without job
    control starts a background command (``make test &``, nohup) with SIGINT ignored, and the
    child would inherit that: Python then installs no KeyboardInterrupt handler, and the tests
    that send Ctrl-C to a run would see it ignored (as the operator's shell meant)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_suite(reports: Path, *args: str, inventory: Path | None = None, known_hosts: Path | None = None,
              timeout: float = 240.0, during=None, env: dict | None = None) -> SuiteRun:
    """Run ``python -m pytest suites`` as the brief's command line; ``during(pid)`` runs in a
    thread while the suite runs (e.g. to drop a connection mid-probe); ``env``: variables
    added to the suite's environment."""
    reports.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q",
           "--reports-dir", str(reports), "--junitxml", str(reports / "junit.xml")]
    if inventory is not None:
        cmd += ["--inventory", str(inventory)]
    if known_hosts is not None:
        cmd += ["--known-hosts", str(known_hosts)]
    cmd += list(args)
    outp, errp = reports.parent / (reports.name + ".stdout"), reports.parent / (reports.name + ".stderr")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    env.pop("SSH_AUTH_SOCK", None)
    t0 = time.monotonic()
    with open(outp, "wb") as fo, open(errp, "wb") as fe:
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, env=env,
                             preexec_fn=default_sigint)
        th = None
        if during is not None:
            th = threading.Thread(target=during, args=(p.pid,), daemon=True)
            th.start()
        rusage = None
        # the suite's own peak RSS: a waited child's ru_maxrss also counts this (xdist worker)
        # process's memory, which it had before its exec (bench/measure.py)
        peak = TreePeak()
        while True:
            peak.poll(p.pid)
            pid, status, rusage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                pid, status, rusage = os.wait4(p.pid, 0)
                break
            time.sleep(0.05)
        p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    if th is not None:
        th.join(timeout=5)
    run = SuiteRun(p.returncode, outp.read_text(errors="replace"), errp.read_text(errors="replace"), wall,
                   peak.kib(rusage.ru_maxrss), reports)
    junit = reports / "junit.xml"
    if junit.is_file():
        run.outcomes, run.messages = parse_junit(junit)
    return run


# ---------------------------------------------------------------------------- misbehaving nodes
def tool_path(fleet, node: str, tool: str) -> Path:
    """Host path of ``tool``'s shim inside ``node``'s root."""
    inner = fleet.nodes[node].render.tools[tool].path
    return fleet.root(node) / inner.lstrip("/")


def wrap_tool(fleet, node: str, tool: str, args: str, body: str) -> None:
    """Replace ``tool``'s shim so that invocation ``args`` (``"$*"``; ``"*"``: any) runs ``body``
    (POSIX sh); every other invocation runs the original shim."""
    p = tool_path(fleet, node, tool)
    orig = p.with_name(p.name + ".orig")
    if not orig.exists():
        os.rename(p, orig)
    inner_orig = "/" + str(orig.relative_to(fleet.root(node)))
    pat = "*" if args == "*" else "'" + args + "'"
    p.write_text("#!/bin/sh\n# hostile test shim (tests/hostile/harness.py)\n"
                 f'case "$*" in {pat})\n{body}\n;;\nesac\n'
                 f'exec {inner_orig} "$@"\n')
    os.chmod(p, 0o755)


#: A shim body that never returns and ignores SIGTERM (nvidia-smi in D state).
HANG = "trap '' TERM INT HUP\nwhile :; do sleep 1; done"

#: Streams an endless "XML document" (>1 GB unless something stops it): 64 KiB per write.
ENDLESS_XML = r"""printf '<?xml version="1.0" ?>\n<nvidia_smi_log>\n'
s='<gpu id="00000000:00:06.0"><product_name>NVIDIA H200</product_name></gpu>'
i=0; while [ $i -lt 10 ]; do s="$s$s"; i=$((i + 1)); done
n=0; while [ $n -lt 20000 ]; do printf '%s\n' "$s"; n=$((n + 1)); done"""

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<nvidia_smi_log><driver_version>&lol9;</driver_version></nvidia_smi_log>
"""

XXE = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<nvidia_smi_log><driver_version>&xxe;</driver_version></nvidia_smi_log>
"""


def cat_body(text: str | bytes, node_root: Path, name: str) -> str:
    """A shim body that prints ``text`` byte-exact (stored as a file in the node's root)."""
    data = text.encode() if isinstance(text, str) else text
    f = node_root / "usr/lib/nodegate-fleet" / name
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_bytes(data)
    return f"cat /usr/lib/nodegate-fleet/{name}\nexit 0"


# ---------------------------------------------------------------------------- dropping a session
def _ppid(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_session_when(node_root: Path, marker_file: str, timeout: float = 60.0) -> bool:
    """Wait until a process inside ``node_root`` runs with ``marker_file`` open as its script
    (``sh <marker_file>``), then SIGKILL that node's sshd session process (``sshd: root@notty``):
    the connection drops mid-probe. True when a session was killed."""
    root = str(node_root.resolve())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                if os.readlink(p / "root") != root:
                    continue
            except OSError:
                continue
            if marker_file not in _cmdline(int(p.name)):
                continue
            pid = int(p.name)
            while pid > 1:  # walk up to the session process sshd forked for this connection
                if _cmdline(pid).startswith(("sshd:", "sshd-session:")) and "@" in _cmdline(pid):
                    os.kill(pid, signal.SIGKILL)
                    return True
                pid = _ppid(pid)
        time.sleep(0.05)
    return False


def healthy_1gpu():
    """tools/fleet's h200-580-open-healthy with one GPU (fewer items: fleet tests stay within their
    budget). One GPU of the HGX board, its four NVSwitches still there: the SKU profile expects none
    for a single GPU (issue 19), so the spec says what this node has."""
    import copy

    from tools.fleet import Profile, load_profile
    p = load_profile("h200-580-open-healthy")
    data = copy.deepcopy(p.data)
    data["gpus"]["count"] = 1
    data["spec"]["gpu"]["count"] = 1
    data["spec"]["gpu"]["bus_ids"] = data["spec"]["gpu"]["bus_ids"][:1]
    data["spec"]["nvswitch"] = {"count": data["nvswitch"]["count"]}
    return Profile("healthy-1gpu", data, p.chain)
