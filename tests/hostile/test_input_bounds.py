"""Issue 31 items 1, 2, 3 (budget) and 5: every way GPU evidence enters is held to one GPU cap, no
number from a node raises out of a parser, a node's parsing has a budget, and a field named twice
is unreadable. Unit level (NodeFacts on copies of the real H200 bundle, parsers on text); the
replay of the same kinds end to end is tests/hostile/test_replay_bounds.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nodegate import collect
from nodegate.baseline.engine import compare_node
from nodegate.bundle import Bundle
from nodegate.checks.slots import gpu_slots
from nodegate.collect import NodeFacts
from nodegate.errors import EvidenceError, ParseError
from nodegate.nvml import mapping as NV
from nodegate.outcomes import Outcome
from nodegate.parsers import (ibstat, lspci, modinfo, nvlink_errors, nvlink_status, pci, pci_aer, persistenced,
                              smi_csv, smi_list, smi_summary, smi_text, smi_xml, sysfs_lists, systemd)
from nodegate.parsers._limits import MAX_GPUS, TooManyGpus
from tests.bundle_edit import add_item
from tests.checks.fakes import run, spec

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "inventories" / "samples" / "h200-vm"
BIG = "9" * 5000


# ------------------------------------------------------------------ hostile texts, one per GPU source
def csv_gpus(n: int) -> str:
    return "index, pci.bus_id, name\n" + "".join(f"{i}, 00000000:{i // 256:02X}:{i % 256:02X}.0, NVIDIA H200\n"
                                                 for i in range(n))


def q_text_gpus(n: int) -> str:
    return ("==============NVSMI LOG==============\n\nDriver Version                            : 580.159.04\n"
            + "".join(f"\nGPU 00000000:{i // 256:02X}:{i % 256:02X}.0\n    Product Name                          : "
                      "NVIDIA H200\n" for i in range(n)))


def lspci_gpus(n: int) -> str:
    return "".join(f"0000:{i // 256:02x}:{i % 256:02x}.0 3D controller [0302]: NVIDIA Corporation GH100 [10de:2335]\n"
                   "\tLnkCap:\tPort #0, Speed 32GT/s, Width x16\n\tLnkSta:\tSpeed 32GT/s, Width x16\n\n"
                   for i in range(n))


def xml_gpus(n: int) -> str:
    return ("<nvidia_smi_log><driver_version>580.159.04</driver_version>"
            + "".join(f'<gpu id="00000000:{i // 256:02x}:{i % 256:02x}.0"><product_name>NVIDIA H200</product_name></gpu>'
                      for i in range(n)) + "</nvidia_smi_log>")


def nvml_gpus(n: int) -> str:
    return json.dumps({"schema": "nodegate.nvml", "version": 1, "gpus": [{"index": i} for i in range(n)]})


def nvlink_gpus(n: int, line: str) -> str:
    return "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})\n\t {line}\n" for i in range(n))


def summary_gpus(n: int) -> str:
    return "| NVIDIA-SMI 580.159.04   Driver Version: 580.159.04   CUDA Version: 13.0 |\n" + "".join(
        f"|   {i}  NVIDIA H200   On  |   00000000:{i // 256:02X}:{i % 256:02X}.0 Off |   0 |\n" for i in range(n))


SOURCES = {
    "smi_xml": (smi_xml.parse_smi_xml, xml_gpus),
    "smi_text": (smi_text.parse_smi_text, q_text_gpus),
    "smi_csv": (smi_csv.parse_query_gpu, csv_gpus),
    "lspci": (lspci.parse_lspci_vvv, lspci_gpus),
    "nvml": (NV.gpus_from_nvml_json, nvml_gpus),
    "nvlink_status": (nvlink_status.parse_nvlink_status, lambda n: nvlink_gpus(n, "Link 0: 26.562 GB/s")),
    "nvlink_errors": (nvlink_errors.parse_nvlink_errors, lambda n: nvlink_gpus(n, "Link 0: Replay Errors: 0")),
    "smi_summary": (smi_summary.parse_smi_summary, summary_gpus),
    "smi_list": (smi_list.parse_smi_list, lambda n: "".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})\n" for i in range(n))),
    "gpus_information": (sysfs_lists.parse_gpus_information,
                         lambda n: "".join(f"== /proc/driver/nvidia/gpus/0000:{i // 256:02x}:{i % 256:02x}.0/information\n"
                                           f"Model: NVIDIA H200\nBus Location: 0000:{i // 256:02x}:{i % 256:02x}.0\n"
                                           for i in range(n))),
    "pci_sysfs": (pci.parse_pci_sysfs, lambda n: "".join(f"== 0000:{i // 256:02x}:{i % 256:02x}.0 gpu\n" for i in range(n))),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_gpu_source_has_one_cap(source):
    parser, text = SOURCES[source]
    assert len(parser(text(MAX_GPUS)) if source != "smi_summary" else parser(text(MAX_GPUS)).gpus) == MAX_GPUS \
        if source not in ("smi_xml", "smi_text") else len(parser(text(MAX_GPUS)).gpus) == MAX_GPUS
    for n in (MAX_GPUS + 1, 2000):
        with pytest.raises(TooManyGpus, match=f"more than any node has \\({MAX_GPUS}\\)"):
            parser(text(n))


def _bundle(tmp_path: Path, name: str, drop=("smi.qx",), add: dict | None = None) -> NodeFacts:
    d = tmp_path / name
    shutil.copytree(SAMPLE, d)
    meta = json.loads((d / "meta.json").read_text())
    meta["node"] = name
    for key in drop:
        for suffix in ("out", "err", "rc"):
            (d / f"{key}.{suffix}").unlink(missing_ok=True)
        meta.get("items", {}).pop(key, None)
    (d / "meta.json").write_text(json.dumps(meta))
    for key, text in (add or {}).items():
        add_item(d, key, text)
    return NodeFacts(Bundle.load(d))


PHANTOMS = {   # key -> text of 2,000 GPUs, as a hand-built or converted bundle carries it
    "smi.query_csv": csv_gpus(2000),
    "smi.q": q_text_gpus(150),
    "pci.lspci_vvv": lspci_gpus(150),
    "nvml.json": nvml_gpus(2000),
}


@pytest.mark.parametrize("key", sorted(PHANTOMS))
def test_phantom_gpus_make_the_node_gpu_facts_error_and_no_item_per_gpu(tmp_path, key):
    f = _bundle(tmp_path, "n", drop=("smi.qx",) if key != "nvml.json" else (), add={key: PHANTOMS[key]})
    with pytest.raises(EvidenceError, match="GPUs: more than any node has"):
        f.gpus
    assert len(gpu_slots(f, spec(gpu={"count": 1}))) == 1          # one slot per spec count, not per phantom
    r = run("NG-ECC-001", f, spec(gpu={"count": 1}), gpu=0)
    assert r.outcome is Outcome.ERROR and "more than any node has" in r.message


def test_a_baseline_of_phantom_gpus_compares_one_gpu_slot_not_two_thousand(tmp_path):
    before = _bundle(tmp_path, "before", add={"smi.query_csv": csv_gpus(2000)})
    after = _bundle(tmp_path, "after", drop=())
    cmp = compare_node("n", before, after, spec(gpu={"count": 1}))
    assert len(cmp.gpus) <= 1
    cmp2 = compare_node("n", after, _bundle(tmp_path, "after2", add={"smi.q": q_text_gpus(150)}), spec(gpu={"count": 1}))
    assert len(cmp2.gpus) == 1


# ------------------------------------------------------------------ item 2: numbers never raise
NUMBERS = {
    "smi_csv": (smi_csv.parse_query_gpu, f"index, temperature.gpu\n0, {BIG}\n"),
    "smi_csv mask": (smi_csv.parse_query_gpu, f"index, clocks_event_reasons.active\n0, 0x{'f' * 5000}\n"),
    "smi_text": (smi_text.parse_smi_text, f"GPU 00000000:19:00.0\n    Temperature\n        GPU Current Temp : {BIG} C\n"),
    "smi_xml": (smi_xml.parse_smi_xml, f"<nvidia_smi_log><attached_gpus>{BIG}</attached_gpus></nvidia_smi_log>"),
    "systemctl show": (systemd.parse_systemctl_show, f"MainPID={BIG}\n"),
    "systemctl status": (systemd.parse_systemctl_status, f"   Active: active (running)\n   Main PID: {BIG} (x)\n"),
    "persistenced": (persistenced.parse_persistenced_process, f"== pid {BIG}\n"),
    "passwd": (persistenced.parse_passwd, f"nvidia:x:{BIG}:1:x:/:/bin/false\n"),
    "ibstat": (ibstat.parse_ibstat, f"CA 'mlx5_0'\n\tPort {BIG}:\n"),
    "nvlink -e": (nvlink_errors.parse_nvlink_errors, f"GPU 0: H200\n\t Link {BIG}: Replay Errors: 0\n"),
    "nvlink -s": (nvlink_status.parse_nvlink_status, f"GPU {BIG}: H200\n"),
    "lspci width": (lspci.parse_lspci_vvv, f"19:00.0 3D controller: NVIDIA Corporation Device 2330\n\tLnkSta: Width x{BIG}\n"),
    "pci.aer": (pci_aer.parse_pci_aer, f"== 0000:19:00.0 gpu aer={BIG}\n"),
}


@pytest.mark.parametrize("name", sorted(NUMBERS))
def test_a_number_of_five_thousand_digits_is_a_parse_error_or_ignored_never_value_error(name):
    parser, text = NUMBERS[name]
    try:
        parser(text)
    except ParseError:
        pass


def test_a_five_thousand_digit_counter_is_unreadable_not_value_error(tmp_path):
    with pytest.raises(ParseError, match="a number of 5000 digits"):
        smi_csv.parse_query_gpu(f"index, ecc.errors.uncorrected.volatile.total\n0, {BIG}\n")
    f = _bundle(tmp_path, "n", add={"smi.query_csv": f"index, ecc.errors.uncorrected.volatile.total\n0, {BIG}\n"})
    assert run("NG-ECC-001", f, spec(gpu={"count": 1}), gpu=0).outcome is Outcome.ERROR


# ------------------------------------------------------------------ item 3: the node's parse budget
class FakeClock:
    """A CPU clock that advances ``step`` seconds per reading: the budget is tested without timing."""

    def __init__(self, step: float):
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_past_the_parse_budget_the_nodes_facts_error_and_another_node_is_judged(tmp_path, monkeypatch):
    f = _bundle(tmp_path, "slow", drop=())
    monkeypatch.setattr(collect, "cpu_clock", FakeClock(collect.PARSE_BUDGET_S / 4))  # each parser "takes" 1/4
    assert f.modules and f.smi_report                  # 2 parsers, then 1: 3/4 of the budget
    with pytest.raises(EvidenceError, match="parse budget exceeded"):
        f.persistenced                                # reaches it: this fact and every later one ERROR
    for attr in ("firmware", "kernel_events", "pci_links", "ib_devices"):
        with pytest.raises(EvidenceError, match="parse budget exceeded"):
            getattr(f, attr)
    r = run("NG-LOG-001", f)
    assert r.outcome is Outcome.ERROR and "parse budget exceeded" in r.message
    monkeypatch.setattr(collect, "cpu_clock", FakeClock(0.0))
    other = _bundle(tmp_path, "other", drop=())                    # the budget is per node
    assert other.modules.loaded and run("NG-LOG-001", other).outcome is not Outcome.ERROR


def test_the_budget_covers_the_nvml_document_too(tmp_path, monkeypatch):
    f = _bundle(tmp_path, "n", drop=(), add={"nvml.json": nvml_gpus(1)})
    monkeypatch.setattr(collect, "cpu_clock", FakeClock(collect.PARSE_BUDGET_S))
    with pytest.raises(EvidenceError, match="parse budget exceeded"):
        f.gpus


# ------------------------------------------------------------------ item 5: a field named twice
ECC2 = "index, ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.volatile.total\n0, 7, 0\n"


@pytest.mark.parametrize("header, row", [
    ("ecc.errors.uncorrected.volatile.total, ecc.errors.uncorrected.volatile.total", "7, 0"),   # the issue's
    ("retired_pages.dbe, retired_pages.double_bit.count", "7, 0"),                                # alias pair
    ("remapped_rows.uncorrectable, remapped_rows.dbe", "3, 0"),                                   # another alias
    ("clocks_throttle_reasons.hw_slowdown, clocks_event_reasons.hw_slowdown", "Active, Not Active"),  # renamed
    ("ecc.errors.uncorrected.aggregate.total [count], ecc.errors.uncorrected.aggregate.total", "5, 0"),  # unit
])
def test_a_csv_field_named_twice_is_unreadable_never_last_one_wins(header, row):
    with pytest.raises(ParseError, match="named more than once"):
        smi_csv.parse_query_gpu(f"index, {header}\n0, {row}\n")


def test_a_csv_field_named_twice_errors_the_ecc_check_instead_of_passing(tmp_path):
    f = _bundle(tmp_path, "n", add={"smi.query_csv": ECC2})
    r = run("NG-ECC-001", f, spec(gpu={"count": 1}), gpu=0)
    assert r.outcome is Outcome.ERROR and "named more than once" in r.message


Q_BASE = "GPU 00000000:19:00.0\n    Product Name                          : NVIDIA H200\n"


@pytest.mark.parametrize("block, attr", [
    ("    Retired Pages\n        Double Bit ECC                    : 7\n        Double Bit ECC                    : 0\n",
     "retired_pages"),
    ("    Remapped Rows\n        Uncorrectable Error               : 3\n        Uncorrectable Error               : 0\n",
     "remapped_rows"),
    ("    Persistence Mode                      : Enabled\n    Persistence Mode                      : Disabled\n",
     "persistence_mode"),
    ("    Clocks Event Reasons\n        HW Slowdown                       : Active\n"
     "        HW Slowdown                       : Not Active\n", "clocks_event_reasons"),
])
def test_a_q_text_field_named_twice_voids_that_fact(block, attr):
    g = smi_text.parse_smi_text(Q_BASE + block).gpus[0]
    assert attr in g.field_errors and "more than once" in g.field_errors[attr] or "twice" in g.field_errors[attr]
    assert g.name == "NVIDIA H200"                      # the other facts of the GPU stand


def test_an_xml_field_named_twice_voids_that_fact():
    doc = ('<nvidia_smi_log><gpu id="00000000:19:00.0"><product_name>NVIDIA H200</product_name><retired_pages>'
           "<double_bit_retirement><retired_count>7</retired_count><retired_count>0</retired_count>"
           "</double_bit_retirement></retired_pages></gpu></nvidia_smi_log>")
    g = smi_xml.parse_smi_xml(doc).gpus[0]
    assert "more than once" in g.field_errors["retired_pages"]


@pytest.mark.parametrize("parser, text", [
    (systemd.parse_systemctl_show, "ActiveState=failed\nActiveState=active\n"),
    (ibstat.parse_ibstat, "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Down\n\t\tState: Active\n"),
    (nvlink_errors.parse_nvlink_errors, "GPU 0: H200\n\t Link 0: Replay Errors: 9\n\t Link 0: Replay Errors: 0\n"),
    (pci_aer.parse_pci_aer, "== 0000:19:00.0 gpu aer=3\n/sys/bus/pci/devices/0000:19:00.0/aer_dev_fatal:DLP 2\n"
                            "/sys/bus/pci/devices/0000:19:00.0/aer_dev_fatal:DLP 0\n"),
    (modinfo.parse_modinfo, "license:        NVIDIA\nlicense:        Dual MIT/GPL\n"),
    (sysfs_lists.parse_gpus_information, "== /proc/driver/nvidia/gpus/0000:19:00.0/information\nModel: A\nModel: B\n"),
])
def test_other_key_value_parsers_refuse_a_key_named_twice_with_two_values(parser, text):
    with pytest.raises(ParseError, match="twice"):
        parser(text)
