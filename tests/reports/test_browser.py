"""The HTML report in a real browser (Debian's chromium, headless): hostile node strings do not
run as script; the first screen (verdict line, node x check matrix, findings) renders, at 4,096
nodes too (screenshot + DOM assertions). CI installs chromium with apt; the tests skip only where
chromium is not installed. How long it takes to open is measured by the benchmark
(``make bench --scale``, docs/performance.md), not asserted here."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from nodegate.reports.render import RenderContext, render_all

from .runner import run_pytest, synth_suite
from .scalegen import info, write_results
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
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
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
    assert len(re.findall(r'<tr id="n-', dom)) == 4
    assert '<b class="st-bad">3 need action</b>' in dom
    assert 'id="ng-findings"' in dom and 'id="ng-drift"' in dom
    assert "evil&lt;img src=x onerror=document.documentElement.dataset.pwned=1&gt;" in dom
    for page in (run.out / "nodes").glob("*.html"):
        assert PWNED not in chromium(tmp_path, page.as_uri(), "--dump-dom"), page.name
    shot = tmp_path / "report.png"
    chromium(tmp_path, run.html.as_uri(), "--window-size=1600,2000", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000


@pytest.fixture(scope="module")
def report4096(tmp_path_factory):
    """4,096 gathered nodes (``info_for``: as a live run's, gather ok with their DMI identity; without it
    every node would be "not gathered", a problem with an evidence archive each: ~70% of the CPU)."""
    d = tmp_path_factory.mktemp("html4096")
    results = d / "results.jsonl"
    nodes = write_results(results, 4096, failing_every=64, erroring_every=1024)
    out = render_all(RenderContext(reports_dir=d, results_path=results, nodes=nodes, html_path=d / "report.html",
                                   title="nodegate acceptance: 4096 nodes", write_rma=False,
                                   info_for=lambda n: info(n, "accepted")))
    return d, out


def test_first_screen_at_4096_nodes(report4096, tmp_path):
    d, out = report4096
    assert (out.statuses["accepted"], out.statuses["need action"], out.statuses["not evaluated"]) == (4028, 68, 0)
    assert len(out.archives) == 68   # the nodes that need action have an evidence archive, the accepted none
    dom = chromium(tmp_path, (d / "report.html").as_uri(), "--dump-dom")
    assert ('<b class="st-ok">4028 accepted</b>, <b class="st-bad">68 need action</b>, '
            '<b class="st-ne">0 not evaluated</b>') in dom
    rows = re.findall(r'<tr id="n-([^"]*)" data-status="([^"]*)" data-cells="[^"]*"><td class="nm"><a href="([^"]*)">', dom)
    assert len(rows) == 4096
    # need action first, the erroring nodes (critical ERRORs) before the major FAILs; accepted last
    assert [s for _, s, _ in rows[:68]] == ["need action"] * 68 and rows[68][1] == "accepted"
    assert rows[0][0] == "n00002" and rows[0][2] == "nodes/n00002.html"
    # a failing node's row: its NG-PCIE-002 cell coloured fail, the others pass or skip
    failing = re.search(r'<tr id="n-n00001".*?</tr>', dom, re.S).group(0)   # the DOM has every end tag
    assert failing.count('class="f"') == 1 and 'title="NG-PCIE-002: fail (8)"' in failing
    from nodegate.checks import load_all
    n = len(load_all())
    assert failing.count("<td></td>") == n - 2 and failing.count('class="s"') == 1
    # an accepted node: the fleet's most common pattern, one cell drawn in the same colours
    ok = re.search(r'<tr id="n-n00000".*?</tr>', dom, re.S).group(0)
    assert 'data-status="accepted"' in ok and f'<td class="same" colspan="{n}"></td>' in ok
    want = "".join("s" if cid == "NG-MEM-002" else "p" for cid in load_all())   # scalegen skips NG-MEM-002
    assert f'data-cells="{want}"' in ok
    # findings: one row per root cause, its remediation once
    assert dom.count("nvidia-smi cannot talk to the loaded driver") == 1
    assert re.search(r"<b>NG-PCIE-002</b>[^<]*: FAIL</td><td>major</td><td>reseat</td><td>64: ", dom)
    node_dom = chromium(tmp_path, (d / rows[0][2]).as_uri(), "--dump-dom")
    assert '<b class="st st-bad" id="ng-status">need action</b>' in node_dom
    shot = tmp_path / "report4096.png"
    chromium(tmp_path, (d / "report.html").as_uri(), "--window-size=1600,1200", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
