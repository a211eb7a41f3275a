"""``PYTEST_CURRENT_TEST`` of nodegate's check items (nodegate/session/currenttest.py): the check's
test function and phase, a bounded set of values whatever the fleet's size (glibc's ``setenv()``
keeps every distinct value it was given; docs/performance.md "Round 8"). The first test pins the
pytest behaviour the module replaces, so it fails the day pytest changes it."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

from nodegate.session import currenttest

ROOT = Path(__file__).resolve().parents[2]

#: records every value given to the C library for PYTEST_CURRENT_TEST (os.environ's item
#: assignment calls os.putenv), the phase each test saw, and whether pytest's function is back
PROBE = '''
import json, os, pytest
SEEN = []
_putenv = os.putenv

def _recording(key, value):
    if key in ("PYTEST_CURRENT_TEST", b"PYTEST_CURRENT_TEST"):
        SEEN.append(value.decode() if isinstance(value, bytes) else value)
    return _putenv(key, value)

os.putenv = _recording

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open(os.environ["CT_OUT"], "w") as fh:
        json.dump({"seen": SEEN, "left": os.environ.get("PYTEST_CURRENT_TEST")}, fh)
'''

PLAIN = '''
import os, json, pytest
OUT = os.environ["CT_PLAIN"]
SEEN = {}

@pytest.fixture
def fx():
    SEEN["setup"] = os.environ.get("PYTEST_CURRENT_TEST")
    yield
    SEEN["teardown"] = os.environ.get("PYTEST_CURRENT_TEST")
    with open(OUT, "w") as fh:
        json.dump(SEEN, fh)

@pytest.mark.parametrize("p", ["a"])
def test_one(fx, p):
    SEEN["call"] = os.environ.get("PYTEST_CURRENT_TEST")
'''


def _env(tmp_path: Path, **extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]), **extra)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def test_pytest_sets_the_item_id_and_phase_through_update_current_test_var(tmp_path):
    """What currenttest replaces: ``_pytest.runner._update_current_test_var(item, when)``, called
    with "setup", "call", "teardown" and None, sets ``"<nodeid> (<when>)"`` through os.environ
    (so through the C library) and removes it after the teardown."""
    import inspect

    import _pytest.runner as runner
    assert list(inspect.signature(runner._update_current_test_var).parameters) == ["item", "when"]
    src = inspect.getsource(runner)
    for when in ("setup", "call", "teardown"):
        assert f'_update_current_test_var(item, "{when}")' in src
    assert "_update_current_test_var(item, None)" in src
    (tmp_path / "test_plain.py").write_text(PLAIN)
    (tmp_path / "ctprobe.py").write_text(PROBE)
    out, plain = tmp_path / "ct.json", tmp_path / "plain.json"
    p = subprocess.run([sys.executable, "-m", "pytest", "test_plain.py", "-p", "no:cacheprovider", "-p", "ctprobe"],
                       cwd=tmp_path, env=_env(tmp_path, CT_OUT=str(out), CT_PLAIN=str(plain)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    nid = "test_plain.py::test_one[a]"
    assert json.loads(plain.read_text()) == {"setup": f"{nid} (setup)", "call": f"{nid} (call)",
                                             "teardown": f"{nid} (teardown)"}
    s = json.loads(out.read_text())
    assert s["seen"] == [f"{nid} (setup)", f"{nid} (call)", f"{nid} (teardown)"] and s["left"] is None


def test_a_check_item_names_its_test_function_and_the_values_stay_few(tmp_path):
    """A replay of 4 nodes x 8 GPUs: every check item's value is its test function's id and phase,
    without the node or GPU, so the C library is given (test functions x 3) distinct values, not
    one per item; removed after the last teardown; pytest's own function back after the run."""
    from bench import scale
    scale.make_copies(tmp_path / "fleet", 4)   # 4 nodes: more items than (test functions x 3) values
    (tmp_path / "ctprobe.py").write_text(PROBE)
    out = tmp_path / "ct.json"
    p = subprocess.run([sys.executable, "-m", "pytest", "suites", "-q", "-p", "no:cacheprovider", "-p", "ctprobe",
                        "--replay", str(tmp_path / "fleet"), "--reports-dir", str(tmp_path / "r")],
                       cwd=ROOT, env=_env(tmp_path, CT_OUT=str(out)), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    s = json.loads(out.read_text())
    # pytest's items (a GPU check: one a node, its GPUs folded), fewer than the records they write
    items = sum(int(n) for n in re.findall(r"(\d+) (?:passed|skipped|failed|errors?)\b", p.stdout.splitlines()[-1]))
    assert 0 < items < sum(1 for _ in open(tmp_path / "r" / "results.jsonl"))
    # every item's setup and teardown still set it (a skipped item has no call phase)
    assert sum(v.endswith(" (setup)") for v in s["seen"]) == items
    assert sum(v.endswith(" (teardown)") for v in s["seen"]) == items
    distinct = set(s["seen"])
    functions = {v.rsplit(" (", 1)[0] for v in distinct}
    assert all("[" not in f and f.startswith("suites/test_") and "::test_" in f for f in functions), functions
    # (test_retired_pages is skipped on every H200 GPU, in its setup: no call phase)
    assert distinct <= {f"{f} ({w})" for f in functions for w in ("setup", "call", "teardown")}
    assert {f"{f} (setup)" for f in functions} <= distinct and len(functions) > 20
    assert len(distinct) <= 3 * len(functions) < items, (len(distinct), items)   # not one per item
    assert s["left"] is None


class _Config:
    def __init__(self):
        self.cleanups = []

    def add_cleanup(self, f):
        self.cleanups.append(f)


class _Item:
    def __init__(self, nodeid, name, originalname):
        self.nodeid, self.name, self.originalname = nodeid, name, originalname

        def function():
            pass
        self.function = function


def test_other_items_keep_pytests_value_and_the_session_end_restores_it(monkeypatch):
    import _pytest.runner as runner
    calls = []
    monkeypatch.setattr(runner, "_update_current_test_var", lambda item, when: calls.append((item.nodeid, when)))
    original = runner._update_current_test_var
    cfg = _Config()
    currenttest.install(cfg, lambda item: item.name.startswith("test_check"))
    installed = runner._update_current_test_var
    assert installed is not original and installed.__wrapped__ is original
    currenttest.install(cfg, lambda item: True)   # twice: not wrapped again
    assert runner._update_current_test_var is installed and len(cfg.cleanups) == 1
    check = _Item("suites/test_x.py::test_check[n1-gpu3]", "test_check[n1-gpu3]", "test_check")
    site = _Item("site/test_site.py::test_site[n1]", "test_site[n1]", "test_site")
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    installed(check, "setup")
    assert os.environ["PYTEST_CURRENT_TEST"] == "suites/test_x.py::test_check (setup)"
    installed(check, None)       # the removal after the teardown: pytest's own
    installed(site, "call")
    assert calls == [(check.nodeid, None), (site.nodeid, "call")]
    cfg.cleanups[0]()
    assert runner._update_current_test_var is original


def test_function_id():
    assert currenttest.function_id(_Item("a/t.py::C::test_f[x-y]", "test_f[x-y]", "test_f")) == "a/t.py::C::test_f"
    assert currenttest.function_id(_Item("a/t.py::test_g", "test_g", "test_g")) == "a/t.py::test_g"
    # an id that does not end with the item's name is kept whole
    assert currenttest.function_id(_Item("odd", "test_h[1]", "test_h")) == "odd"
