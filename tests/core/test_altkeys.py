"""Alternative evidence keys (nodegate/altkeys.py; issue 21 item 10): smi.q, smi.query_csv, pci.lspci_vvv,
systemd.persistenced_status in place of the probe's forms. Facts from text equal facts from XML on the real H200
capture (tests/captures/h200-vm-580.159.04 has both), and every GPU check reaches the same verdict from either."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from nodegate.bundle import Bundle
from nodegate.checks import load_all
from nodegate.collect import NodeFacts
from nodegate.facts import GpuFacts
from nodegate.outcomes import Outcome
from tests.checks.fakes import run, spec

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "inventories" / "samples" / "h200-vm"        # the capture converted by tools/capture_to_bundle.py
CAP = REPO / "tests" / "captures" / "h200-vm-580.159.04"
FIX = REPO / "tests" / "fixtures"
SAMPLED = {"source", "temperature_c", "power_draw_w", "graphics_clock_mhz"}   # read ~0.1 s apart


def bundle_with(tmp_path: Path, name: str, drop=(), add: dict[str, str] | None = None) -> NodeFacts:
    d = tmp_path / name
    shutil.copytree(SAMPLE, d)
    for key in drop:
        for suffix in ("out", "err", "rc"):
            (d / f"{key}.{suffix}").unlink(missing_ok=True)
    meta = (d / "meta.json").read_text()
    import json
    m = json.loads(meta)
    for key in drop:
        m.get("items", {}).pop(key, None)
    for key, text in (add or {}).items():
        (d / f"{key}.out").write_text(text)
        m.setdefault("items", {})[key] = {"rc": 0, "status": "ok"}
    (d / "meta.json").write_text(json.dumps(m))
    return NodeFacts(Bundle.load(d))


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    t = tmp_path_factory.mktemp("alt")
    xml = bundle_with(t, "xml")
    text = bundle_with(t, "text", drop=("smi.qx",), add={"smi.q": (CAP / "smi_q.out").read_text()})
    return xml, text


def test_text_source_is_chosen_when_the_bundle_has_no_xml(pair):
    xml, text = pair
    assert (xml.smi_key, xml.gpu_source) == ("smi.qx", "smi_xml")
    assert (text.smi_key, text.gpu_source) == ("smi.q", "smi_text")


@pytest.mark.parametrize("field", [f.name for f in dataclasses.fields(GpuFacts) if f.name not in SAMPLED])
def test_facts_from_text_equal_facts_from_xml_on_the_h200_capture(pair, field):
    xml, text = pair
    assert getattr(text.gpus[0], field) == getattr(xml.gpus[0], field)


GPU_CHECKS = sorted(c.id for c in load_all().values() if c.scope == "gpu")


@pytest.mark.parametrize("check_id", GPU_CHECKS)
def test_every_gpu_check_reaches_the_same_verdict_from_text_and_xml(pair, check_id):
    xml, text = pair
    sp = spec()
    a, b = run(check_id, xml, sp, gpu=0), run(check_id, text, sp, gpu=0)
    assert (b.outcome, b.observed) == (a.outcome, a.observed)


def test_query_csv_serves_the_fields_it_carries(tmp_path):
    csv = (CAP / "smi_query_wide.out").read_text()
    f = bundle_with(tmp_path, "csv", drop=("smi.qx",), add={"smi.query_csv": csv})
    g = f.gpus[0]
    assert (f.smi_key, f.gpu_source, f.smi_driver_version) == ("smi.query_csv", "smi_csv", "580.159.04")
    assert (g.pci_bus_id, g.name, g.link.current_gen, g.link.max_width) == ("0000:00:06.0", "NVIDIA H200", 5, 16)
    assert run("NG-PCIE-001", f).outcome is Outcome.ERROR          # no pci.device_id in this query: no SKU profile
    assert run("NG-PCIE-001", f, spec(gpu={"sku": "2335"})).outcome is Outcome.PASS
    assert run("NG-CLK-001", f).outcome is Outcome.PASS
    r = run("NG-GSP-002", f)
    assert r.outcome is Outcome.ERROR
    assert r.message.startswith("GPU 0 (0000:00:06.0, serial 1650000000001): gsp_firmware_version not reported")


def test_query_csv_with_units_in_header_and_values(tmp_path):
    csv = (FIX / "smi_csv" / "public-netdata-tesla-p100.txt").read_text()
    f = bundle_with(tmp_path, "csv", drop=("smi.qx",), add={"smi.query_csv": csv})
    g = f.gpus[0]
    assert (g.name, g.pstate, g.utilization_gpu, g.graphics_clock_mhz, g.power_draw_w) == \
        ("Tesla P100-PCIE-16GB", "P0", 0, 405, 28.16)


LSPCI_H100 = (FIX / "lspci" / "h100_stanza_gen5_x16.txt").read_text()


def test_lspci_alone_serves_the_pcie_capability_and_trained_link(tmp_path):
    f = bundle_with(tmp_path, "lspci", drop=("smi.qx", "nvml.json"), add={"pci.lspci_vvv": LSPCI_H100})
    assert f.gpu_source == "lspci"
    g = f.gpus[0]
    assert (g.pci_bus_id, g.pci_device_id, g.link.max_gen, g.link.current_width) == ("0000:19:00.0", "2330", 5, 16)
    r = run("NG-PCIE-001", f)
    assert (r.outcome, r.observed) == (Outcome.PASS, "Gen5 x16 max")
    assert run("NG-PCIE-002", f).outcome is Outcome.PASS
    r = run("NG-ECC-001", f)
    assert r.outcome is Outcome.ERROR
    assert "ECC mode not reported" in r.message


def test_lspci_downgraded_link_without_activity_evidence_is_error(tmp_path):
    text = (FIX / "lspci" / "downgraded_old_speed_form.txt").read_text()
    f = bundle_with(tmp_path, "lspci", drop=("smi.qx", "nvml.json", "smi.clocks_samples"),
                    add={"pci.lspci_vvv": text})
    assert [l.downgraded for l in f.lspci_links] == [True]
    # LnkSta "Speed 2.5GT/s (downgraded), Width x8 (downgraded)": the width FAILs at any activity ...
    r = run("NG-PCIE-002", f, spec(pcie={"gen": 3, "width": 16}))
    assert r.outcome is Outcome.FAIL
    assert r.observed == "Gen1 x8 at P-state unknown, GpuIdle unknown"
    assert "trained link width x8 below x16" in r.message
    # ... the speed alone needs busy/idle evidence lspci does not carry
    r = run("NG-PCIE-002", f, spec(pcie={"gen": 3, "width": 8}))
    assert r.outcome is Outcome.ERROR
    assert "cannot tell busy from idle" in r.message


def test_lspci_fills_only_the_link_values_the_gpu_source_lacks(tmp_path):
    # -q text with the PCI section cut (a pasted -d PERFORMANCE excerpt) + lspci of the same bus
    perf = (CAP / "smi_q_perf.out").read_text()
    stanza = LSPCI_H100.replace("19:00.0 3D controller", "00:06.0 3D controller")
    f = bundle_with(tmp_path, "mixed", drop=("smi.qx", "nvml.json"), add={"smi.q": perf, "pci.lspci_vvv": stanza})
    g = f.gpus[0]
    assert f.gpu_source == "smi_text"
    assert (g.pstate, g.link.current_gen, g.link.current_width) == ("P0", 5, 16)


def test_systemctl_status_serves_the_unit_states_not_the_dropin_check(tmp_path):
    status = ("● nvidia-persistenced.service - NVIDIA Persistence Daemon\n"
              "     Loaded: loaded (/lib/systemd/system/nvidia-persistenced.service; enabled; vendor preset: enabled)\n"
              "     Active: active (running) since Tue 2024-03-05 09:12:01 UTC; 2h ago\n"
              "   Main PID: 2860 (nvidia-persiste)\n")
    f = bundle_with(tmp_path, "status", drop=("systemd.persistenced_show",),
                    add={"systemd.persistenced_status": status})
    u = f.persistenced_unit
    assert (u.load_state, u.active_state, u.sub_state, u.unit_file_state) == ("loaded", "active", "running", "enabled")
    assert run("NG-PER-001", f, spec(persistence={"mode": "daemon"})).outcome is Outcome.PASS
    r = run("NG-PER-002", f)
    assert r.outcome is Outcome.ERROR
    assert "evidence not collected: systemd.persistenced_show (systemctl status shows no effective ExecStart" \
        in r.message


def test_probe_key_wins_over_an_alternative(tmp_path):
    f = bundle_with(tmp_path, "both", add={"smi.q": "garbage that would not parse"})
    assert f.smi_key == "smi.qx"
    assert len(f.gpus) == 1


def test_no_nvidia_smi_form_at_all_names_the_probe_key(tmp_path):
    from nodegate.errors import EvidenceError
    f = bundle_with(tmp_path, "none", drop=("smi.qx", "nvml.json"))
    with pytest.raises(EvidenceError, match="evidence not collected: smi.qx"):
        f.gpus  # noqa: B018
