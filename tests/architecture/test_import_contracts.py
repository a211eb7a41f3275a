"""The layers hold (issue 40 item 3): import-linter's contracts (pyproject.toml [tool.importlinter])
and no import cycle between modules anywhere in nodegate/, plugins/, tools/ or bench/ (found with
grimp, the graph library import-linter is built on). docs/architecture.md draws the layers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("nodegate", "plugins", "tools", "bench")


def _lint_imports() -> Path:
    exe = Path(sys.executable).parent / "lint-imports"
    if not exe.exists():
        pytest.skip("import-linter is not installed in this environment (pip install -e '.[test]')")
    return exe


@pytest.fixture(scope="module")
def graph():
    grimp = pytest.importorskip("grimp", reason="grimp (with import-linter) is not installed: pip install -e '.[test]'")
    sys.path.insert(0, str(ROOT))   # plugins/, tools/, bench/ are packages of the checkout
    try:
        return grimp.build_graph(*PACKAGES, cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))


def test_every_import_contract_is_kept():
    r = subprocess.run([str(_lint_imports()), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert "0 broken" in r.stdout


def cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative): each a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.append(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_imports_itself_through_others(graph):
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    class G:   # the finder on a graph with one known cycle (a -> b -> c -> a) and a tail (c -> d)
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}

        def find_modules_directly_imported_by(self, m):
            return self.edges[m]

    assert cycles(G()) == [["a", "b", "c"]]


def test_the_engine_imports_no_pytest_at_run_time():
    """Beyond the static contract: importing the engine in a fresh interpreter loads no pytest,
    gatherer, session or report module."""
    code = ("import sys, nodegate.engine; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pytest', '_pytest') or m.startswith(('nodegate.run', 'nodegate.session', 'nodegate.reports', "
            "'nodegate.transport'))); print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


#: lines past which a module of nodegate/ must say why it is one module (issue 40 item 2)
MAX_LINES = 450


def test_a_long_module_says_why_it_is_one():
    long = []
    for p in sorted((ROOT / "nodegate").rglob("*.py")):
        text = p.read_text(encoding="utf-8")
        if text.count("\n") > MAX_LINES:
            doc = text.split('"""', 2)[1] if text.lstrip().startswith('"""') else ""
            if "One module because" not in doc:
                long.append(f"{p.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    assert not long, ("modules past ~400 lines without a reason in their docstring ('One module because ...'): "
                      + ", ".join(long))


#: docs/architecture.md's mermaid box ids -> the modules each stands for (a prefix; "-x" excludes)
BOXES = {"cli": ["nodegate.cli"], "plugins": ["plugins"], "session": ["nodegate.session", "-nodegate.session.api"],
         "session_api": ["nodegate.session.api"], "site": ["nodegate.site"], "reports": ["nodegate.reports"],
         "run": ["nodegate.run"], "fleetrun": ["nodegate.fleetrun"], "gather": ["nodegate.gather"],
         "transport": ["nodegate.transport"], "probe": ["nodegate.probe"], "collect": ["nodegate.collect"],
         "engine": ["nodegate.engine"], "checks": ["nodegate.checks"], "spec": ["nodegate.spec"],
         "parsers": ["nodegate.parsers"], "facts": ["nodegate.facts"], "perfmodel": ["nodegate.perfmodel"],
         "bundle": ["nodegate.bundle"], "perf": ["nodegate.perf", "nodegate.burnin"],
         "crossnode": ["nodegate.crossnode"], "inputs": ["nodegate.cmdline", "nodegate.jobs", "nodegate.replay"]}


def _members(graph, box: str) -> set[str]:
    inc = [p for p in BOXES[box] if not p.startswith("-")]
    exc = [p[1:] for p in BOXES[box] if p.startswith("-")]
    return {m for m in graph.modules if any(m == p or m.startswith(p + ".") for p in inc)
            and not any(m == p or m.startswith(p + ".") for p in exc)}


def test_the_architecture_picture_is_kept(graph):
    import re
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("```mermaid", 1)[1].split("```", 1)[0]
    edges = re.findall(r"^\s*(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)", block, re.M)
    assert len(edges) >= 15
    against = []
    for a, b in edges:
        assert a in BOXES and b in BOXES, f"docs/architecture.md names a box the test does not know: {a} or {b}"
        ma, mb = _members(graph, a), _members(graph, b)
        assert ma and mb, f"a box of docs/architecture.md names no module: {a} or {b}"
        for m in sorted(mb):
            hit = sorted(graph.find_modules_directly_imported_by(m) & ma)
            if hit:
                against.append(f"{m} -> {hit[0]} (against the arrow {a} --> {b})")
    assert not against, "imports against docs/architecture.md's arrows: " + "; ".join(against[:10])


def test_a_replay_loads_no_paramiko(tmp_path):
    """paramiko and testinfra's backends load where an SSH connection is made (nodegate.transport's
    lazy names), not in a --replay: ~0.2-0.6 s of its start-up (docs/performance.md)."""
    bundle = sorted((ROOT / "inventories" / "samples" / "fleet").iterdir())[0]
    code = ("import sys, pytest; rc = pytest.main(['suites', '-p', 'no:cacheprovider', '-q', '--replay', sys.argv[1], "
            "'--reports-dir', sys.argv[2]]); print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] == "
            "'paramiko' or m == 'testinfra.backend.paramiko')); sys.exit(0 if rc in (0, 1) else rc)")
    r = subprocess.run([sys.executable, "-c", code, str(bundle), str(tmp_path / "r")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "LOADED []" in r.stdout, r.stdout[-500:]
