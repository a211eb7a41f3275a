"""The fast lane (nodegate.session.fastlane): a check item runs with pytest's public runtest hooks
but without every plugin's phase hooks, and nothing a report, a hook or the terminal sees
differs from pytest's own protocol (NODEGATE_PYTEST_PROTOCOL=1). The hook-sequence comparison
fails the day pytest's runner reports its phases another way; the fallbacks keep every plugin,
fixture, mark and option that could tell the difference on pytest's protocol."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .test_folded_items import AER, ROOT, SAMPLES, _reports

TIME = re.compile(r" in [0-9.]+s\b.*$", re.M)


def _run(tmp: Path, fleet: Path, name: str, *extra: str, pytest_protocol=False, plugins=(), env_extra=None,
         rc=(0, 1)):
    """One replay with the hook recorder; (reports dir, terminal output, hook sequence)."""
    rep, seq = tmp / name, tmp / f"{name}.seq"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200", HOOKSEQ_OUT=str(seq),
               PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp / "plugins")]))
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("NODEGATE_PYTEST_PROTOCOL", None)
    if pytest_protocol:
        env["NODEGATE_PYTEST_PROTOCOL"] = "1"
    env.update(env_extra or {})
    argv = [sys.executable, "-m", "pytest", "suites", "-q", "-rfEs", "-p", "no:cacheprovider",
            "-p", "tests.engine.plugins.hookseq", "--replay", str(fleet), "--reports-dir", str(rep)]
    for p in plugins:
        argv += ["-p", p]
    r = subprocess.run(argv + list(extra), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode in rc, r.stdout[-3000:] + r.stderr[-3000:]
    lines = seq.read_text().splitlines()
    return rep, TIME.sub("", r.stdout.replace(str(rep), "REP")), [json.loads(ln) for ln in lines]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo fleet (passes, FAILs, SKIPs and ERRORs), fast lane and pytest's protocol."""
    base = tmp_path_factory.mktemp("fastlane")
    return {mode: _run(base, SAMPLES, mode, pytest_protocol=(mode == "pytest")) for mode in ("fast", "pytest")}


def test_the_demo_fleet_runs_in_the_fast_lane(demo):
    fast, std = demo["fast"][2][0]["fast"], demo["pytest"][2][0]["fast"]
    assert std == 0
    assert fast == sum(1 for s in demo["fast"][2][1:] if s[0] == "logstart") > 1000   # every item of the run


def test_every_report_file_is_the_same_as_with_pytests_protocol(demo):
    fast, std = _reports(demo["fast"][0]), _reports(demo["pytest"][0])
    assert sorted(fast) == sorted(std) and "junit.xml" in fast and "results.jsonl" in fast
    for f in std:
        assert fast[f] == std[f], f


def test_the_terminal_says_the_same(demo):
    assert demo["fast"][1] == demo["pytest"][1]
    assert "FAILED suites/" in demo["fast"][1] and "ERROR suites/" in demo["fast"][1]
    assert "SKIPPED" in demo["fast"][1]


def test_every_hook_call_and_report_is_the_same_as_with_pytests_protocol(demo):
    """logstart, makereport (its phase, PYTEST_CURRENT_TEST then, the exception), logreport (every
    attribute of the report but its timings), exception_interact, logfinish: in the same order."""
    fast, std = demo["fast"][2][1:], demo["pytest"][2][1:]
    assert len(fast) == len(std)
    for a, b in zip(fast, std):
        assert a == b
    kinds = {s[0] for s in fast}
    assert kinds == {"logstart", "makereport", "logreport", "exception_interact", "logfinish"}
    whens = {s[2] for s in fast if s[0] == "makereport"}
    assert whens == {"setup", "call", "teardown"}
    # pytest's documented PYTEST_CURRENT_TEST, '<test id> (<phase>)', gone after the item
    cur = [(s[2], s[3]) for s in fast if s[0] == "makereport"]
    assert all(c and c.endswith(f" ({w})") for w, c in cur if w != "teardown")
    assert all(c is None for w, c in cur if w == "teardown")   # removed at the end of the teardown
    assert all(s[3] is None for s in fast if s[0] == "logfinish")


def test_maxfail_stops_where_pytests_protocol_stops(tmp_path):
    runs = [_run(tmp_path, SAMPLES, m, "--maxfail", "2", "--shard-nodes", "0", pytest_protocol=(m == "pytest"))
            for m in ("fast", "pytest")]
    assert runs[0][2][0]["fast"] > 0
    assert runs[0][1] == runs[1][1] and "stopping after 2 failures" in runs[0][1]
    assert runs[0][2][1:] == runs[1][2][1:]
    assert _reports(runs[0][0])["results.jsonl"] == _reports(runs[1][0])["results.jsonl"]


# ------------------------------------------------------------------ what keeps pytest's protocol
PLUGINS = {
    # a phase hook of another plugin: every item on pytest's protocol, the hook called for each
    "setup_hook": "import os\ndef pytest_runtest_setup(item):\n"
                  "    open(os.environ['MARK_OUT'], 'a').write(item.nodeid + '\\n')\n",
    # an autouse fixture: the item has a fixture besides verdict
    "autouse": "import os, pytest\n@pytest.fixture(autouse=True)\ndef mine(request):\n"
               "    open(os.environ['MARK_OUT'], 'a').write(request.node.nodeid + '\\n')\n",
    # a plugin that runs items itself (re-runs, repeats): its protocol, not nodegate's
    "protocol": "import os\nfrom _pytest.runner import runtestprotocol\n"
                "def pytest_runtest_protocol(item, nextitem):\n"
                "    open(os.environ['MARK_OUT'], 'a').write(item.nodeid + '\\n')\n"
                "    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)\n"
                "    runtestprotocol(item, nextitem=nextitem)\n"
                "    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)\n"
                "    return True\n",
    # a skip mark added at collection: pytest's skipping plugin decides the item
    "skipmark": "import pytest\ndef pytest_collection_modifyitems(items):\n"
                "    for it in items:\n"
                "        if 'test_pcie_errors' in it.nodeid:\n"
                "            it.add_marker(pytest.mark.skip(reason='skipped by a site plugin'))\n",
}


@pytest.fixture
def one_node(tmp_path):
    fleet = tmp_path / "fleet"
    shutil.copytree(AER, fleet / AER.name)
    (tmp_path / "plugins").mkdir()
    for name, text in PLUGINS.items():
        (tmp_path / "plugins" / f"fl_{name}.py").write_text(text)
    return fleet


@pytest.mark.parametrize("plugin", ["setup_hook", "autouse", "protocol"])
def test_a_plugin_or_fixture_that_could_tell_keeps_pytests_protocol(tmp_path, one_node, plugin):
    mark = tmp_path / "mark"
    rep, out, seq = _run(tmp_path, one_node, plugin, plugins=[f"fl_{plugin}"], env_extra={"MARK_OUT": str(mark)})
    assert seq[0]["fast"] == 0
    seen = mark.read_text().splitlines()
    assert "suites/test_pcie_errors.py::test_pcie_errors[aer-fatal-upstream]" in seen   # it ran for check items
    base = _run(tmp_path, one_node, "base")
    assert base[2][0]["fast"] > 0
    assert _reports(rep)["results.jsonl"] == _reports(base[0])["results.jsonl"]


def test_a_skip_mark_is_decided_by_pytest(tmp_path, one_node):
    rep, out, seq = _run(tmp_path, one_node, "skipmark", plugins=["fl_skipmark"])
    assert seq[0]["fast"] == 0   # the collection holds an item of pytest's protocol: all are
    assert "SKIPPED [1] suites/test_pcie_errors.py" in out and "skipped by a site plugin" in out
    recs = [json.loads(ln) for ln in (rep / "results.jsonl").read_text().splitlines()]
    assert {d["outcome"] for d in recs if "test_pcie_errors" in d["nodeid"]} == {"skip"}


@pytest.mark.parametrize("opt", ["--setup-show", "--setup-plan"])
def test_options_that_show_pytests_phases_keep_its_protocol(tmp_path, one_node, opt):
    _, _, seq = _run(tmp_path, one_node, "opt", opt)
    assert seq[0]["fast"] == 0


SESSION_FINALIZER_SITE = '''
import pytest

@pytest.fixture(scope="session")
def sess():
    yield 1
    raise RuntimeError("session finalizer boom")

@pytest.mark.nodegate_check(id="SITE-MIX-001", severity="minor", title="mix")
def test_mix(host, sess):
    assert sess == 1
'''


def test_site_session_fixture_finalized_in_last_check_items_teardown(tmp_path):
    """A site item's session fixture whose finalizer raises, the last item a check item: pytest's
    protocol reports it as the last item's teardown ERROR; the fast lane once left SetupState
    alone, so the finalizer ran in pytest_sessionfinish and the run ended in an uncaught
    RuntimeError traceback (no summary)."""
    fleet = tmp_path / "fleet"
    shutil.copytree(SAMPLES / "fleet" / "aer-fatal-upstream", fleet / "aer-fatal-upstream")
    site = tmp_path / "site"
    site.mkdir()
    (site / "test_mix.py").write_text(SESSION_FINALIZER_SITE)
    outs = []
    for slow in (False, True):
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", COLUMNS="200", PYTHONPATH=str(ROOT))
        env.pop("PYTEST_ADDOPTS", None)
        env.pop("NODEGATE_PYTEST_PROTOCOL", None)
        if slow:
            env["NODEGATE_PYTEST_PROTOCOL"] = "1"
        rep = tmp_path / f"rep{int(slow)}"
        r = subprocess.run([sys.executable, "-m", "pytest", "suites", str(site), "-q", "-rA", "-p", "no:cacheprovider",
                            "--replay", str(fleet), "--reports-dir", str(rep)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        outs.append((r.returncode, TIME.sub("", r.stdout.replace(str(rep), "REP")), r.stderr))
    assert "Traceback (most recent call last)" not in outs[0][1] + outs[0][2]
    assert "1 error" in outs[0][1] and "session finalizer boom" in outs[0][1]
    assert outs[0][:2] == outs[1][:2]
