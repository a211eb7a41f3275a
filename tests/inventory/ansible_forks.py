"""ansible-core's ``ansible`` CLI run ~100 times without paying its start-up ~100 times.

Each ``ansible`` command is ~0.85 s of CPU, ~0.65 s of it importing ansible-core; the reference
of test_compat.py runs about a hundred of them (134 s of fixture set-up on the loaded 2-core
machine: issue 30). A server process imports ``ansible.cli.adhoc`` once, under the reference's
environment (compat._env: ansible-core reads most settings into ``ansible.constants`` at import)
and ``PYTHONHASHSEED=0``; each request then forks a child that runs ``ansible.cli.adhoc.main``,
which is what the ``ansible`` console script runs, as a new command would: its own argv, working
directory, stdout/stderr files and the few variables the request sets (read by ansible-core at
call time: the tree callback's directory). Nothing of one command survives into the next: every
child starts from the freshly imported server, never from an earlier child.

Protocol (one JSON object a line): request ``{"argv": [...], "env": {...}, "cwd": "..."}`` on the
server's stdin; answer ``{"rc": n, "stdout": "...", "stderr": "..."}`` on its stdout.
test_compat.py checks that the answers equal the plain CLI's for a --list-hosts and a raw call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading


def serve() -> int:
    """The server loop (``python -m tests.inventory.ansible_forks``)."""
    import ansible.cli.adhoc  # noqa: F401 - the import is the point: paid once, inherited by the children
    reply = os.fdopen(os.dup(1), "w")
    for line in sys.stdin:
        req = json.loads(line)
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child: one `ansible` command
                rc = 250
                try:
                    os.dup2(out.fileno(), 1)
                    os.dup2(err.fileno(), 2)
                    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                    os.environ.update(req.get("env") or {})
                    os.chdir(req.get("cwd") or ".")
                    sys.argv = ["ansible", *req["argv"]]
                    from ansible.cli.adhoc import main
                    try:
                        rc = main() or 0
                    except SystemExit as e:
                        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                finally:
                    try:
                        sys.stdout.flush()
                        sys.stderr.flush()
                    finally:
                        os._exit(rc)
            _, status = os.waitpid(pid, 0)
            out.seek(0)
            err.seek(0)
            reply.write(json.dumps({"rc": os.waitstatus_to_exitcode(status),
                                    "stdout": out.read().decode(errors="replace"),
                                    "stderr": err.read().decode(errors="replace")}) + "\n")
            reply.flush()
    return 0


class Forks:
    """A client of one server; ``run`` is thread-safe (one command at a time per server)."""

    def __init__(self, env: dict, cwd: str):
        self._lock = threading.Lock()
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        self._p = subprocess.Popen([sys.executable, "-m", "tests.inventory.ansible_forks"], cwd=root,
                                   env=dict(env, PYTHONPATH=root), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        self._cwd = cwd

    def run(self, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        with self._lock:
            if self._p.poll() is not None:
                raise RuntimeError(f"ansible fork server ended (exit {self._p.returncode})")
            self._p.stdin.write(json.dumps({"argv": argv, "env": env or {}, "cwd": self._cwd}) + "\n")
            self._p.stdin.flush()
            line = self._p.stdout.readline()
        if not line:
            raise RuntimeError("ansible fork server ended without an answer")
        d = json.loads(line)
        return subprocess.CompletedProcess(["ansible", *argv], d["rc"], d["stdout"], d["stderr"])

    def close(self) -> None:
        if self._p.poll() is None:
            self._p.stdin.close()
            try:
                self._p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._p.kill()
                self._p.wait()


if __name__ == "__main__":
    sys.exit(serve())
