"""The real suites (suites/) on replayed bundles: the sample H200 capture, a hostile copy of it
(markup in node name, hostname, GPU name and serial; control characters in the kernel log)
and an unreachable node. Asserts that every output agrees with JUnit and carries no hostile
markup or control characters."""

from __future__ import annotations

import csv
import json
import re
import shutil

import pytest
from junitparser.xunit2 import JUnitXml

from .fleetgen import CTRL, HOSTILE_NODE, IMG_SERIAL, SCRIPT_NAME, make_bundle
from .runner import ROOT, run_pytest
from .test_run_outputs import CONTROL, PAYLOADS, PROPS, _output_texts

SAMPLE = ROOT / "inventories" / "samples" / "h200-vm"


def hostile_copy(dst):
    shutil.copytree(SAMPLE, dst)
    meta = json.loads((dst / "meta.json").read_text())
    meta["node"] = HOSTILE_NODE
    (dst / "meta.json").write_text(json.dumps(meta))
    (dst / "meta.hostname.out").write_text(HOSTILE_NODE + "\n")
    qx = (dst / "smi.qx.out").read_text()
    # XML-escaped in the file, as nvidia-smi would write it: the parser hands the raw markup on
    qx = re.sub(r"<product_name>[^<]*</product_name>",
                "<product_name>" + SCRIPT_NAME.replace("<", "&lt;").replace(">", "&gt;") + "</product_name>", qx)
    qx = re.sub(r"<serial>[^<]*</serial>",
                "<serial>" + IMG_SERIAL.replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
                + "</serial>", qx, count=1)
    (dst / "smi.qx.out").write_text(qx)
    with (dst / "kernel.log.out").open("a") as fh:
        fh.write(f"[  12.000000] NVRM: {CTRL} {SCRIPT_NAME}\n")
    # meta.json records each item's size: an edited item must agree with it, or it is ERROR
    # (inconsistent evidence, docs/security.md)
    meta = json.loads((dst / "meta.json").read_text())
    for key in ("meta.hostname", "smi.qx", "kernel.log"):
        meta["items"][key]["bytes"] = (dst / f"{key}.out").stat().st_size
    (dst / "meta.json").write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("suites")
    fleet = base / "fleet"
    shutil.copytree(SAMPLE, fleet / "h200-vm")
    hostile_copy(fleet / "hostile")
    make_bundle(fleet, "down", status="unreachable", error="connect timeout after 10s")
    # -p: harmless when the root conftest already registers the plugin
    return run_pytest(ROOT, "suites", fleet, base / "out", "-p", "plugins.nodegate_reports")


def _cases(run):
    out = []
    for suite in JUnitXml.fromfile(str(run.junit)):
        for case in suite:
            props = {p.name: p.value for p in case.properties()}
            kind = type(case.result[0]).__name__.lower() if case.result else "pass"
            out.append((case, props, kind))
    return out


def test_run_has_every_node_and_properties(suite_run):
    assert suite_run.rc == 1, suite_run.output[-3000:]
    cases = _cases(suite_run)
    assert {p["node"] for _, p, _ in cases} == {"h200-vm", HOSTILE_NODE, "down"}
    for case, props, _ in cases:
        assert list(props) == PROPS, case.name
    assert {k for _, p, k in cases if p["node"] == "down"} == {"error"}


def test_rma_rows_are_exactly_the_junit_failures(suite_run):
    cases = _cases(suite_run)
    failed = {(p["node"], p["gpu_index"], p["check_id"]) for _, p, k in cases if k == "failure"}
    errors = {(p["node"], p["gpu_index"], p["check_id"]) for _, p, k in cases if k == "error" and p}
    doc = json.loads((suite_run.out / "rma.json").read_text())
    from_rma = {(r["node"], "" if r["gpu_index"] is None else str(r["gpu_index"]), c["check_id"])
                for r in doc["rows"] for c in r["checks"]}
    assert from_rma == failed
    assert {(e["node"], "" if e["gpu_index"] is None else str(e["gpu_index"]), e["check_id"])
            for e in doc["errors"] if e["check_id"]} == errors
    assert len(doc["errors"]) == sum(1 for _, _, k in cases if k == "error")
    rows = list(csv.DictReader((suite_run.out / "rma.csv").open()))
    assert len(rows) == len(doc["rows"])


def test_hostile_strings_never_markup_or_control_characters(suite_run):
    for name, text in _output_texts(suite_run):
        assert not CONTROL.search(text), name
        if name in ("report.html", "junit.xml"):
            for payload in PAYLOADS:
                assert payload not in text, (name, payload)


def test_terminal_summary_lists_nodes(suite_run):
    summary = suite_run.output.split("nodegate summary", 1)[1]
    assert "3 node(s):" in summary
    assert re.search(r"\ndown +0 +0 +0 +\d+  unreachable: connect timeout after 10s\n", summary)


def test_real_report_in_browser_runs_no_node_string(suite_run, tmp_path):
    from .test_browser import CHROMIUM, PWNED, chromium
    if CHROMIUM is None:
        pytest.skip("chromium not installed (CI: apt-get install chromium)")
    dom = chromium(tmp_path, suite_run.html.as_uri(), "--dump-dom")
    assert PWNED not in dom
    assert len(re.findall(r'<td class="col-node">', dom)) == len(_cases(suite_run))
    assert "&lt;script&gt;document.documentElement.dataset.pwned=1&lt;/script&gt;" in dom
    chromium(tmp_path, suite_run.html.as_uri(), "--window-size=1600,2400", f"--screenshot={tmp_path / 'real.png'}")
    assert (tmp_path / "real.png").stat().st_size > 10_000
