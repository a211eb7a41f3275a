"""The HTML report in a real browser (Debian's chromium, headless): hostile node strings do
not run as script, the nodegate columns and the per-node summary render. CI installs
chromium with apt; the test skips only where chromium is not installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .runner import run_pytest, synth_suite
from .test_run_outputs import build_fleet

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (CI: apt-get install chromium)")

#: Set on <html> by every hostile payload (fleetgen.SCRIPT_NAME, IMG_SERIAL, HOSTILE_NODE).
PWNED = 'data-pwned="1"'


def chromium(tmp_path, url: str, *args: str) -> str:
    """Run headless chromium once with a fresh profile; returns stdout."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
           f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_payload_detection_works(tmp_path):
    """Positive control: the same payload injected unescaped is seen by this harness."""
    page = tmp_path / "control.html"
    page.write_text("<html><body><div id=x></div><script>document.getElementById('x').innerHTML="
                    "'<img src=x onerror=\"document.documentElement.dataset.pwned=1\">'</script></body></html>")
    assert PWNED in chromium(tmp_path, page.as_uri(), "--dump-dom")


def test_report_renders_without_running_node_strings(tmp_path):
    run = run_pytest(synth_suite(tmp_path / "suite"), ".", build_fleet(tmp_path / "fleet"), tmp_path / "out")
    assert run.rc == 1, run.output
    dom = chromium(tmp_path, run.html.as_uri(), "--dump-dom")
    assert PWNED not in dom
    # the results table was rendered by pytest-html's script: 11 tests, one row each
    assert len(re.findall(r'<td class="col-node">', dom)) == 11
    for th in ("Node", "GPU", "Serial", "Check id", "Severity", "Expected", "Observed"):
        assert re.search(rf'data-column-type="\w+">{th}</th>', dom), th
    assert 'id="ng-nodes"' in dom and 'id="ng-drift"' in dom
    assert "evil&lt;img src=x onerror=document.documentElement.dataset.pwned=1&gt;" in dom
    shot = tmp_path / "report.png"
    chromium(tmp_path, run.html.as_uri(), "--window-size=1600,2000", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
