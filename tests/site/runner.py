"""Run a site file (and optionally nodegate's suites) in a pytest subprocess, as an operator does,
and read back what it wrote: JUnit outcomes and properties, rma.json, the bundles."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import defusedxml.ElementTree as DET
import yaml

ROOT = Path(__file__).resolve().parents[2]
NONET = Path(__file__).resolve().parent / "nonet.py"


@dataclass
class Run:
    rc: int
    output: str
    out: Path           # --reports-dir

    @property
    def junit(self) -> Path:
        return self.out / "junit.xml"

    def outcomes(self) -> dict[str, str]:
        """{testcase name: pass|fail|error|skip} (a name reported twice keeps the worst)."""
        rank = {"pass": 0, "skip": 1, "fail": 2, "error": 3}
        out: dict[str, str] = {}
        for tc in DET.parse(self.junit).getroot().iter("testcase"):
            tags = {c.tag for c in tc}
            o = "error" if "error" in tags else "fail" if "failure" in tags else "skip" if "skipped" in tags else "pass"
            n = tc.get("name")
            if n not in out or rank[o] > rank[out[n]]:
                out[n] = o
        return out

    def testcase(self, name: str):
        for tc in DET.parse(self.junit).getroot().iter("testcase"):
            if tc.get("name") == name:
                return tc
        raise KeyError(name)

    def record(self, name: str) -> dict:
        """The item's line of results.jsonl (nodegate.reports.results): ``name`` is the test id's
        last part, e.g. ``test_x[n1]``."""
        for ln in (self.out / "results.jsonl").read_text().splitlines():
            d = json.loads(ln)
            if d["nodeid"].rsplit("::", 1)[-1] == name:
                return d
        raise KeyError(name)

    def properties(self, name: str) -> dict[str, str]:
        """The item's values as every report has them (results.jsonl: node, check_id, severity,
        observed, expected, remediation, ...); a FAIL or ERROR item's JUnit properties (on the
        testsuite around its testcase: junit-10.xsd) must agree with them."""
        rec = self.record(name)
        from tests.junit_view import cases
        for _, n, _, _, props in cases(self.junit):
            if n == name and props:
                junit = dict(props)
                assert all(str(rec.get(k) if rec.get(k) is not None else "") == v
                           for k, v in junit.items() if k in rec), (junit, rec)
        return {k: "" if v is None else str(v) for k, v in rec.items()}

    def message(self, name: str) -> str:
        tc = self.testcase(name)
        for c in tc:
            if c.tag in ("failure", "error", "skipped"):
                return c.get("message") or ""
        return ""

    def rma(self) -> list[dict]:
        doc = json.loads((self.out / "rma.json").read_text())
        return doc["rows"]


def inventory(path: Path, hosts: dict[str, dict], spec: dict | None = None) -> Path:
    # hosts without ansible_connection get nodegate's paramiko transport, as the fleet's do (unset
    # means OpenSSH, as for Ansible: nodegate/inventory.py)
    hosts = {n: ({"ansible_connection": "paramiko", **v} if "ansible_connection" not in (v or {}) else v)
             for n, v in hosts.items()}
    inv = {"all": {"hosts": hosts}}
    if spec:
        inv["all"]["vars"] = {"nodegate": spec}
    path.write_text(yaml.safe_dump(inv, sort_keys=False))
    return path


def run_pytest(args: list[str], out: Path, *, cwd: Path = ROOT, nonet: bool = False, timeout: float = 600,
               env: dict | None = None) -> Run:
    """``python -m pytest ARGS -p nodegate.plugins --reports-dir OUT`` (plus ``-p nonet``: every
    network connect raises, so a replay that tried to connect would show). ``-p nodegate.plugins``
    as an operator's plain pytest run of a site folder outside the checkout needs it (README,
    "Installation": installing nodegate registers no plugin)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(NONET.parent)]), COLUMNS="200",
               **(env or {}))
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", *args, "-p", "nodegate.plugins", "-p", "no:cacheprovider",
           "-o", "junit_family=xunit2", "--reports-dir", str(out), "-rA"]
    if nonet:
        cmd += ["-p", "nonet"]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Run(p.returncode, p.stdout + p.stderr, out)
