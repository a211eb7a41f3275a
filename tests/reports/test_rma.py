"""rma.py: vendor rows (RMA) apart from the site's work (actions.csv), one row per part (a GPU by its
bus id) and, for the site, per GPU and one per node, DMI identity, Xids, archive and run time, CSV
injection quoted."""

import csv
import json

from nodegate.reports import rma
from nodegate.reports.records import NodeInfo

from .helpers import rec

INFO = NodeInfo(node="n1", system_vendor="Supermicro", system_model="SYS-821GE-TNHR",
                system_serial="unreadable without root (re-run with --sudo)", driver_version="580.159.04")


def _fin(r):
    from nodegate.reports.live import finalize
    return finalize(r)


def test_healthy_run_writes_headers_and_no_rows(tmp_path):
    paths = rma.write(tmp_path, [(INFO, [_fin(rec(outcome="pass")), _fin(rec(outcome="skip"))])], inventory="inv.yml",
                      generated_at="2026-01-01T00:00:00Z")
    assert paths["rma.csv"].read_text() == rma.csv_header()
    assert paths["actions.csv"].read_text() == rma.csv_header()
    assert json.loads(paths["rma.json"].read_text()) == {"format": "nodegate-rma/3",
                                                         "generated_at": "2026-01-01T00:00:00Z",
                                                         "inventory": "inv.yml", "rows": [],
                                                         "not_evaluated": []}


def test_rows_per_gpu_vendor_and_site_apart(tmp_path):
    recs = [_fin(rec(node="n1", gpu="1", check_id="NG-B", severity="major", remediation="Reboot the node.")),
            _fin(rec(node="n1", gpu="1", check_id="NG-A", severity="critical", remediation="Open an RMA.",
                     xids=[79, 48])),
            _fin(rec(node="n1", gpu="", check_id="NG-N", severity="minor")),
            _fin(rec(node="n1", gpu="0", check_id="NG-A", outcome="pass")),
            _fin(rec(node="n1", gpu="0", check_id="NG-E", outcome="error", message="tool missing (nvidia-smi)"))]
    rows = rma.node_rows(INFO, recs, archive="bundles/n1.tar.gz", started="2026-01-01T00:00:00Z")
    assert [(r["gpu_index"], r["failed_checks"], r["severity"], r["action"], rma.is_vendor(r)) for r in rows] == [
        (None, ["NG-N"], "minor", "fix configuration", False),
        (1, ["NG-A"], "critical", "RMA", True),
        (1, ["NG-B"], "major", "reboot", False),
        (0, ["NG-E"], "major", "obtain evidence", False)]
    gpu = rows[1]
    assert (gpu["system_vendor"], gpu["system_model"], gpu["system_serial"], gpu["pci_bus_id"], gpu["gpu_serial"],
            gpu["gpu_uuid"], gpu["board_part_number"], gpu["vbios_version"], gpu["xids"], gpu["evidence_archive"],
            gpu["run_started_at"]) == (
        "Supermicro", "SYS-821GE-TNHR", "unreadable without root (re-run with --sudo)", "0000:13:00.0", "SER1",
        "GPU-1", "692-2G520-0200-000", "96.00.99.00.01", [48, 79], "bundles/n1.tar.gz", "2026-01-01T00:00:00Z")
    assert (gpu["observed"], gpu["expected"]) == ("NG-A: bad", "NG-A: good")
    assert (gpu["part"], gpu["part_location"], gpu["part_serial"], gpu["if_it_persists"]) == (
        "GPU", "0000:13:00.0", "SER1", "")
    assert rows[0]["pci_bus_id"] == "" and rows[0]["driver_version"] == "580.159.04"
    err = rows[3]
    assert err["observed"] == "could not evaluate: tool missing (nvidia-smi)"
    assert err["remediation"].startswith("Install the missing tool on the node")
    w = rma.RmaWriter(tmp_path)
    w.add(rows)
    paths = w.finish()
    assert [r["failed_checks"] for r in csv.DictReader(paths["rma.csv"].open())] == ["NG-A"]
    assert [r["failed_checks"] for r in csv.DictReader(paths["actions.csv"].open())] == ["NG-N", "NG-B", "NG-E"]
    doc = json.loads(paths["rma.json"].read_text())
    assert [(r["gpu_index"], r["xids"], [c["check_id"] for c in r["checks"]]) for r in doc["rows"]] == [
        (1, [48, 79], ["NG-A"])]


def test_gpus_sorted_numerically():
    rows = rma.node_rows(INFO, [_fin(rec(gpu=str(i), pci_bus_id=f"0000:{i:02x}:00.0")) for i in (10, 2, 1)])
    assert [r["gpu_index"] for r in rows] == [1, 2, 10]


def test_a_gpu_missing_from_nvidia_smi_is_its_own_row_by_bus_id():
    # nvidia-smi's index 3 is another GPU (bus 9b); the missing one (bus 5d) has index 3 from the driver
    recs = [_fin(rec(gpu="3", pci_bus_id="0000:9b:00.0", check_id="NG-X")),
            _fin(rec(gpu="3", pci_bus_id="0000:5d:00.0", gpu_serial="", gpu_uuid="GPU-516933b0", check_id="NG-INV-002",
                     observed="absent"))]
    rows = rma.node_rows(INFO, recs)
    assert sorted((r["pci_bus_id"], r["failed_checks"][0]) for r in rows) == [
        ("0000:5d:00.0", "NG-INV-002"), ("0000:9b:00.0", "NG-X")]


def test_csv_quotes_formula_cells_and_markup_stays_text(tmp_path):
    info = NodeInfo(node="=cmd|' /C calc'!A0")
    paths = rma.write(tmp_path, [(info, [_fin(rec(node=info.node, gpu="0", gpu_serial="<script>x</script>",
                                                  observed="-1+2", remediation="Open an RMA."))])])
    rows = list(csv.DictReader(paths["rma.csv"].open()))
    assert (rows[0]["node"], rows[0]["gpu_serial"], rows[0]["observed"]) == (
        "'=cmd|' /C calc'!A0", "<script>x</script>", "NG-X-001: -1+2")
