"""Every exit code a nodegate run can return is in README's table (nodegate.session.exitcodes):
pytest's overlapping codes are mapped (4 and 5 -> 2, INTERNAL_ERROR 3 -> 4 unless the baseline
made it "regressions only", Ctrl-C -> 130, SIGTERM/SIGHUP -> 143/129)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import signal
from pathlib import Path

import pytest

from nodegate.session import exitcodes as X

ROOT = Path(__file__).resolve().parents[2]


class _Config:
    def __init__(self, stash=None):
        self.stash = pytest.Stash()
        for k, v in (stash or {}).items():
            self.stash[k] = v


@pytest.mark.parametrize("status, stash, want", [
    (0, {}, 0), (1, {}, 1),
    (int(pytest.ExitCode.USAGE_ERROR), {}, 2), (int(pytest.ExitCode.NO_TESTS_COLLECTED), {}, 2),
    (int(pytest.ExitCode.INTERNAL_ERROR), {}, 4),
    (3, {X.REGRESSIONS_ONLY_KEY: True}, 3),
    (int(pytest.ExitCode.INTERRUPTED), {X.STOP_KEY: "ctrl-c"}, 130),
    (int(pytest.ExitCode.INTERRUPTED), {X.STOP_KEY: "usage"}, 2),
    (int(pytest.ExitCode.TESTS_FAILED), {X.STOP_KEY: "usage"}, 2),   # usage_error: pytest's Session.Failed
    (int(pytest.ExitCode.INTERRUPTED), {X.STOP_KEY: "collection"}, 2),
    (int(pytest.ExitCode.INTERRUPTED), {X.STOP_KEY: "stopped"}, 1),
])
def test_pytest_status_to_readme_table(status, stash, want):
    assert X.nodegate_status(_Config(stash), status) == want


def test_signals_keep_their_status():
    rs = X.RunSignals()
    rs.signum = signal.SIGTERM
    rs.finishing()
    c = _Config({X.STOP_KEY: "signal", X._SIGNALS_KEY: rs})
    assert X.nodegate_status(c, int(pytest.ExitCode.INTERRUPTED)) == 143


def test_usage_and_collection_stops_write_no_report():
    assert X.writes_no_report(_Config({X.STOP_KEY: "usage"}), 2)
    assert X.writes_no_report(_Config({X.STOP_KEY: "collection"}), 2)
    assert X.writes_no_report(_Config(), int(pytest.ExitCode.USAGE_ERROR))
    assert not X.writes_no_report(_Config({X.STOP_KEY: "ctrl-c"}), 2)
    assert not X.writes_no_report(_Config(), 1)


def test_readme_lists_every_code():
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Exit codes"):]
    table = table[:table.index("\n## ", 5)]
    codes = set(re.findall(r"^\| (\d+)", table, re.M))
    assert codes == {"0", "1", "2", "3", "4", "129", "130", "143"}, codes


def test_a_crash_past_pytest_is_exit_4_not_1(monkeypatch, capsys):
    """An exception escaping pytest.main (a session-finish hook: seen once in the terminal
    summary) is README's internal error 4, never Python's uncaught-exception 1 (= findings)."""
    import pytest as _pytest

    from nodegate import cli

    def boom(args):
        raise ImportError("cannot import name 'X'")
    monkeypatch.setattr(_pytest, "main", boom)
    assert cli.main(["--replay", "nowhere"]) == 4
    assert "internal error (exit 4)" in capsys.readouterr().err


def test_a_valueerror_past_pytest_that_is_no_option_clash_is_exit_4(monkeypatch, capsys):
    import pytest as _pytest

    from nodegate import cli

    def boom(args):
        raise ValueError("something else")
    monkeypatch.setattr(_pytest, "main", boom)
    assert cli.main(["--replay", "nowhere"]) == 4
    assert "internal error (exit 4)" in capsys.readouterr().err


def test_a_conftest_declaring_an_option_of_nodegates_is_a_usage_error_naming_it(tmp_path):
    """A project's own conftest.py declaring ``--inventory`` (a testinfra or molecule project) made
    pytest raise ValueError out of pytest.main: a traceback and exit 4. It is a usage error: exit 2,
    one line naming the file and the option."""
    (tmp_path / "conftest.py").write_text('def pytest_addoption(parser):\n    parser.addoption("--inventory")\n')
    (tmp_path / "test_trivial.py").write_text("def test_a():\n    pass\n")
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    p = subprocess.run([sys.executable, "-m", "nodegate.cli", "test_trivial.py", "--collect-only"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert f"nodegate: {tmp_path / 'conftest.py'} declares an option nodegate already has (option dest 'inventory'" \
        in p.stderr
    assert "Traceback" not in p.stderr + p.stdout
