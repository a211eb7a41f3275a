"""Hostile bundles replayed as users replay them (``pytest suites --replay DIR``, a subprocess):
each kind of issue 17 that a bundle can carry, against copies of the real H200 capture, with the
outcome every item must get and what must never reach any output.

Kinds: a link to the operator's secret (items 1), a FIFO (1), a bundle over its byte budget (6),
files that contradict meta.json and an empty kernel log (8), control characters in node names,
stderr and versions (7, 11), two nodes that are one machine (9), two GPUs with one bus id and one
serial on two nodes (3), nvidia-smi's attached count against its list (8), and a bundle's own
spec against ``--spec`` (5).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.baseline import fleet as F
from tests.bundle_edit import give_identity, write_item
from tests.hostile import harness as H

SAMPLE = H.ROOT / "inventories" / "samples" / "h200-vm"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-operator-key-material\n"
SHADOW = "root:$6$rounds=5000$operatorsaltsalt$shadowhashshadowhashshadowhash:19000:0:99999:7:::\n"
SECRETS = ("operator-key-material", "shadowhashshadowhash", "operatorsaltsalt")
#: OSC 52 (clipboard write), OSC 0 (window title), clear screen, an OSC 8 hyperlink, C1 CSI, BEL
ESC_NODE = "ctrl\x1b]52;c;cHduZWQ=\x07node\x1b[2J"
ESC_ERR = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\ dkms: command not found\x9b31m\r"
ESC_VER = "580.159.04\x1b]0;pwned-title\x07"
TERMINAL_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
#: a vendor's bundle spec that lets 17 uncorrectable ECC errors pass
VENDOR_SPEC = {"gpu": {"count": 1}, "ecc": {"max_uncorrectable_volatile": 1000, "max_uncorrectable_aggregate": 1000}}


def _clone(root: Path, node: str, *, identity: str | None = None, spec: dict | None = None) -> Path:
    d = F.clone(SAMPLE, root / node, node, spec if spec is not None else {"gpu": {"count": 1, "model": "H200"}})
    if identity is not None:
        give_identity(d, identity)   # overrides the clone's own (F.clone gives one per node)
    return d


def _meta(d: Path, fn) -> None:
    m = json.loads((d / "meta.json").read_text())
    fn(m)
    (d / "meta.json").write_text(json.dumps(m, indent=2))


def build(root: Path, secrets: Path) -> dict[str, Path]:
    secrets.mkdir(parents=True)
    (secrets / "id_ed25519").write_text(KEY)
    (secrets / "shadow").write_text(SHADOW)
    out = {}
    out["ref"] = _clone(root, "ref")
    # 1: links to the operator's files; a FIFO where the kernel log should be
    d = out["leak"] = _clone(root, "leak")
    (d / "meta.uname_r.out").unlink()
    (d / "meta.uname_r.out").symlink_to(secrets / "id_ed25519")
    (d / "modinfo.nvidia.err").unlink()
    (d / "modinfo.nvidia.err").symlink_to(secrets / "shadow")
    d = out["fifo"] = _clone(root, "fifo")
    (d / "kernel.log.out").unlink()
    os.mkfifo(d / "kernel.log.out")
    # 6: sparse files far over the per-bundle budget (apparent size counts, no disk used)
    d = out["fat"] = _clone(root, "fat")

    def pad(m):
        for i in range(3):
            m["items"][f"pad{i}"] = {"rc": 0, "status": "ok", "duration_s": 0.0, "bytes": 40 << 20}
    for i in range(3):
        with open(d / f"pad{i}.out", "wb") as fh:
            fh.truncate(40 << 20)
    _meta(d, pad)
    # 8: meta.json says the kernel log failed (rc 1, permission denied), its .rc file is gone
    d = out["norc"] = _clone(root, "norc")
    (d / "kernel.log.err").write_text("dmesg: read kernel buffer failed: Operation not permitted\n")
    _meta(d, lambda m: m["items"]["kernel.log"].update(rc=1))
    d = out["emptylog"] = _clone(root, "emptylog")
    write_item(d / "kernel.log.out", "")
    d = out["attached"] = _clone(root, "attached", spec={"gpu": {"model": "H200"}})   # gpu.count unset
    write_item(d / "smi.qx.out", (d / "smi.qx.out").read_text().replace("<attached_gpus>1</attached_gpus>",
                                                                        "<attached_gpus>2</attached_gpus>"))
    # 7, 11: control characters in the node name, stderr and the module version
    d = out["ctrl"] = _clone(root, "ctrl")
    _meta(d, lambda m: m.update(node=ESC_NODE))
    write_item(d / "modules.nvidia_version.out", ESC_VER + "\n")
    (d / "dkms.status.err").write_text(ESC_ERR + "\n")
    d = out["ctrldir"] = _clone(root, "ctrl\x1b[31mdir")
    _meta(d, lambda m: m.pop("node"))
    # 9: one machine under two names
    out["twin-a"] = _clone(root, "twin-a", identity="one-machine")
    out["twin-b"] = _clone(root, "twin-b", identity="one-machine")
    # 3: GPU 1 has 17 uncorrectable errors and GPU 0's bus id; a second node reports ref's GPU serial
    d = out["dupgpu"] = F.two_gpu(root / "dupgpu")
    F.set_meta(d, "dupgpu", {"gpu": {"count": 2, "model": "H200"}})
    give_identity(d, "dupgpu")
    F.add_ecc(d, F.BUS1, volatile=17, aggregate=17)
    write_item(d / "smi.qx.out", (d / "smi.qx.out").read_text().replace(f"0000{F.BUS1}", f"0000{F.BUS0}"))
    out["samegpu"] = _clone(root, "samegpu")   # own boot and machine id, ref's GPU serial and UUID
    # 5: a vendor's bundle judged by its own, raised ECC thresholds
    d = out["vendor"] = _clone(root, "vendor", spec=VENDOR_SPEC)
    F.add_ecc(d, F.BUS0, volatile=17, aggregate=17)
    return out


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replay-hostile")
    root = tmp / "bundles"
    nodes = build(root, tmp / "home" / ".ssh")
    strict = tmp / "strict.yaml"
    strict.write_text(yaml.safe_dump({"nodegate": {"gpu": {"model": "H200"}}}))
    # the harness runs -q: "-v" gives pytest's default output (one progress line per node), "-v -v"
    # its verbose one (a line per test id)
    own = H.run_suite(tmp / "own", "--replay", str(root), "-v", "-rA", timeout=180)
    forced = H.run_suite(tmp / "forced", "--replay", str(root), "--spec", str(strict), "-v", "-v", "-rA", timeout=180)
    return {"own": own, "forced": forced, "nodes": nodes, "strict": strict, "root": root}


def _ids(run: H.SuiteRun, node: str) -> dict[str, str]:
    return run.node_outcomes(node)


def _ref(env, node: str) -> dict[str, str]:
    """ref's outcomes under ``node``'s name."""
    return {t.replace("[ref", f"[{node}", 1): o for t, o in _ids(env["own"], "ref").items()}


def _all_texts(run: H.SuiteRun) -> list[tuple[str, str]]:
    """Every output a user sees: terminal, each report file, each member of each archive."""
    out = [("stdout", run.out), ("stderr", run.err)]
    for p in run.output_files():
        if p.name.endswith(".tar.gz"):
            with tarfile.open(p) as t:
                for m in t.getmembers():
                    if m.isfile():
                        out.append((f"{p.name}:{m.name}", t.extractfile(m).read().decode("utf-8", "replace")))
        else:
            out.append((p.name, p.read_bytes().decode("utf-8", "replace")))
    return out


# ---------------------------------------------------------------------------- the run as a whole
def test_both_runs_end_and_report_every_node(env):
    for run in (env["own"], env["forced"]):
        assert run.rc == 1, run.out[-3000:]
        nodes = {H._node_of(t) for t in run.outcomes} - {None}
        assert len(nodes) == len(env["nodes"]), sorted(nodes)
        assert "Traceback" not in run.out + run.err
        assert run.wall_s < 120


def test_the_reference_copy_keeps_the_capture_outcomes(env):
    ref = _ids(env["own"], "ref")
    assert ref["test_node_identity[ref]"] == "pass"
    assert ref["test_gpu_count[ref]"] == "pass" and ref["test_kernel_log_node[ref]"] == "pass"
    assert ref["test_ecc_counters[ref-gpu0]"] == "pass"


# ---------------------------------------------------------------------------- 1: links and FIFOs
def test_no_secret_reaches_any_output(env):
    for run in (env["own"], env["forced"]):
        for name, text in _all_texts(run):
            for s in SECRETS:
                assert s not in text, (name, s)


def test_linked_items_error_naming_key_and_file_type(env):
    run = env["own"]
    msgs = {t: run.messages[t] for t, o in _ids(run, "leak").items() if o == "error"}
    assert any("bundle file meta.uname_r.out is a symbolic link, not a regular file; not read" in m
               for m in msgs.values()), msgs
    assert "modinfo.nvidia.err is a symbolic link" in run.messages["test_module_flavor_on_disk[leak]"]
    # nothing else changed: what did not need those items is judged as on the reference copy
    ref = _ref(env, "leak")
    changed = {t for t, o in _ids(run, "leak").items() if o != ref[t]}
    assert all(_ids(run, "leak")[t] == "error" for t in changed), changed


def test_a_fifo_kernel_log_errors_its_checks_and_blocks_nothing(env):
    run = env["own"]
    for t in ("test_kernel_log_node[fifo]", "test_kernel_log_gpu[fifo-gpu0]"):
        assert run.outcomes[t] == "error"
        assert "bundle file kernel.log.out is a FIFO, not a regular file; not read [kernel.log]" in run.messages[t]
    assert run.outcomes["test_gpu_count[fifo]"] == "pass"   # gpu.count set: the log only refines it


# ---------------------------------------------------------------------------- 6: budget
def test_a_bundle_over_budget_errors_on_every_item_and_the_others_are_judged(env):
    run = env["own"]
    outs = _ids(run, "fat")
    assert outs and set(outs.values()) == {"error"}
    assert all("bundle not read: bundle files hold " in run.messages[t] for t in outs)
    assert "over the per-bundle budget of 100663296 bytes" in run.messages["test_gpu_count[fat]"]
    assert run.maxrss_kb < 400 * 1024, run.maxrss_kb


# ---------------------------------------------------------------------------- 8: contradictions
def test_meta_json_exit_code_without_its_rc_file_is_error_not_pass(env):
    run = env["own"]
    for t in ("test_kernel_log_node[norc]", "test_kernel_log_gpu[norc-gpu0]"):
        assert run.outcomes[t] == "error"
        assert ("meta.json says kernel.log ended with exit code 1, but kernel.log.rc is absent (exit code 0)"
                in run.messages[t])


def test_an_empty_kernel_log_without_its_source_line_is_error(env):
    run = env["own"]
    assert run.outcomes["test_kernel_log_node[emptylog]"] == "error"
    assert "empty, without the probe's '# source:' line" in run.messages["test_kernel_log_node[emptylog]"]


def test_attached_count_above_the_listed_gpus_fails_without_gpu_count(env):
    run = env["own"]
    assert run.outcomes["test_gpu_count[attached]"] == "fail"
    assert "nvidia-smi reports 2 attached GPU(s) but lists 1" in run.messages["test_gpu_count[attached]"]


# ---------------------------------------------------------------------------- 7, 11: control characters
def test_no_control_character_reaches_the_terminal_in_either_verbosity(env):
    for run in (env["own"], env["forced"]):
        bad = TERMINAL_CONTROLS.findall(run.out + run.err)
        assert bad == [], sorted(set(bad))


def test_control_characters_are_shown_escaped(env):
    run = env["own"]
    shown_node = "ctrl\\x1b]52;c;cHduZWQ=\\x07node\\x1b[2J"
    assert "\n" + shown_node + " " in run.out     # the per-node progress line
    assert "::test_gpu_count[ctrl\\\\x1b]52;c;cHduZWQ=\\\\x07node\\\\x1b[2J] PASSED" in env["forced"].out   # -v: test ids
    assert "\\x1b]8;;http://evil.example/" in run.out + env["forced"].out   # dkms stderr in a message
    assert "580.159.04\\x1b]0;pwned-title\\x07" in run.out   # the module version in a FAIL message
    # nodegate's JUnit names every node (its suite) and results.jsonl every item's node, escaped
    import xml.etree.ElementTree as ET
    suites = {ts.get("name") for ts in ET.parse(run.reports / "junit.xml").getroot().iter("testsuite")}
    assert shown_node in suites and "ctrl\\x1b[31mdir" in suites
    nodes = {json.loads(ln)["node"] for ln in (run.reports / "results.jsonl").read_text().splitlines()}
    assert shown_node in nodes and "ctrl\\x1b[31mdir" in nodes


def test_a_control_character_in_a_node_name_gives_one_summary_row(env):
    summary = env["own"].out.split("nodegate summary", 1)[1]
    rows = [ln for ln in summary.splitlines() if ln.startswith("ctrl")]
    assert len(rows) == 2, rows   # ctrl... and ctrl...dir: one row each
    assert f"{len(env['nodes'])} node(s):" in summary


# ---------------------------------------------------------------------------- 9: one machine, two nodes
def test_two_nodes_with_one_boot_id_error_on_every_item_naming_each_other(env):
    run = env["own"]
    for me, other in (("twin-a", "twin-b"), ("twin-b", "twin-a")):
        outs = _ids(run, me)
        assert outs and set(outs.values()) == {"error"}, me
        assert f"node {other} reports the same boot id" in run.messages[f"test_gpu_count[{me}]"]
        assert f"node {other} reports the same boot id" in run.messages[f"test_node_identity[{me}]"]
    assert run.outcomes["test_node_identity[samegpu]"] == "pass"


# ---------------------------------------------------------------------------- 3: GPU identities
def test_two_gpus_with_one_bus_id_error_on_both_and_fail_the_count(env):
    run = env["own"]
    outs = _ids(run, "dupgpu")
    gpu_items = {t: o for t, o in outs.items() if "-gpu" in t}
    assert {t.split("[")[1] for t in gpu_items} == {"dupgpu-gpu0]", "dupgpu-gpu1]"}
    assert set(gpu_items.values()) == {"error"}, gpu_items
    assert "GPU 1 shares PCI bus id 0000:00:06.0 with GPU 0" in run.messages["test_ecc_counters[dupgpu-gpu1]"]
    assert run.outcomes["test_gpu_count[dupgpu]"] == "fail"
    assert "GPU 0 shares PCI bus id 0000:00:06.0 with GPU 1" in run.messages["test_gpu_count[dupgpu]"]


def test_one_gpu_serial_on_two_nodes_is_flagged_in_the_summary(env):
    summary = env["own"].out.split("nodegate summary", 1)[1]
    # every copy of the capture reports its GPU (all but "fat", whose bundle is not read)
    line = next(ln for ln in summary.splitlines() if ln.startswith("GPU serial 1650000000001"))
    assert line.startswith(f"GPU serial 1650000000001 is reported by {len(env['nodes']) - 1} nodes: attached (gpu0), ")
    assert re.search(r"GPU UUID gpu-5e1f0c3a-\S+ is reported by \d+ nodes", summary)
    html = (env["own"].reports / "report.html").read_text()
    assert "nodegate GPUs on more than one node" in html and "serial 1650000000001: attached (gpu0)" in html


# ---------------------------------------------------------------------------- 5: whose spec
def test_a_bundle_judged_by_its_own_spec_says_so_everywhere(env):
    run = env["own"]
    assert run.outcomes["test_ecc_counters[vendor-gpu0]"] == "pass"   # its own thresholds: 1000
    assert "judged by the spec stored in their own bundle" in run.out
    assert "spec: bundle meta.json: " in run.out.split("nodegate summary", 1)[1]
    # per item in results.jsonl (nodegate's JUnit has properties only on FAIL/ERROR items and nodes)
    item = next(json.loads(ln) for ln in (run.reports / "results.jsonl").read_text().splitlines()
                if json.loads(ln)["nodeid"].endswith("::test_ecc_counters[vendor-gpu0]"))
    assert item["spec_source"] == "bundle meta.json"
    html = (run.reports / "report.html").read_text()
    assert "nodegate spec source" in html and "bundle meta.json: " in html


def test_spec_file_overrides_every_bundles_own_spec(env):
    run, strict = env["forced"], env["strict"]
    assert run.outcomes["test_ecc_counters[vendor-gpu0]"] == "fail"
    assert "17" in run.messages["test_ecc_counters[vendor-gpu0]"]
    summary = run.out.split("nodegate summary", 1)[1]
    assert f"spec: --spec {strict}: {len(env['nodes'])} node(s)" in summary
    assert "judged by the spec stored in their own bundle" not in run.out
    with tarfile.open(run.reports / "bundles" / "vendor.tar.gz") as t:
        doc = json.loads(t.extractfile("vendor/results.json").read())
    assert doc["spec_source"] == f"--spec {strict}"
    # gpu.count is not in the strict spec: the attached-count contradiction still FAILs
    assert run.outcomes["test_gpu_count[attached]"] == "fail"


def test_a_bad_spec_file_exits_2_before_anything(env, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("ecc: {max_uncorrectable_volatile: -1}\n")
    run = H.run_suite(tmp_path / "r", "--replay", str(env["root"]), "--spec", str(bad), timeout=60)
    assert run.rc == 2
    assert f"--spec {bad}: nodegate.ecc.max_uncorrectable_volatile" in run.out + run.err
    shutil.rmtree(tmp_path / "r", ignore_errors=True)
