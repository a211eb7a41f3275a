"""rma.py: one row per failing GPU, node-level rows, errors apart, CSV injection quoted."""

import csv
import json

from nodegate.reports import rma

from .helpers import rec

HEADER = ("node,gpu_index,pci_bus_id,gpu_serial,gpu_uuid,board_part_number,vbios_version,"
          "driver_version,failed_checks,severity,action,observed,expected\n")


def test_healthy_run_writes_header_and_empty_rows(tmp_path):
    csv_p, json_p = rma.write(tmp_path, [rec(outcome="pass"), rec(outcome="skip")], inventory="inv.yml",
                              generated_at="2026-01-01T00:00:00Z")
    assert csv_p.read_text() == HEADER
    # "not_evaluated" (node -> reason, FleetRun.not_evaluated()): nodes deselected or not run
    assert json.loads(json_p.read_text()) == {"format": "nodegate-rma/1", "generated_at": "2026-01-01T00:00:00Z",
                                              "inventory": "inv.yml", "rows": [], "errors": [], "not_evaluated": []}


def test_rows_group_by_gpu_and_node_level_apart():
    recs = [rec(node="n1", gpu="1", check_id="NG-B", severity="major", remediation="Reboot the node."),
            rec(node="n1", gpu="1", check_id="NG-A", severity="critical", remediation="Open an RMA."),
            rec(node="n1", gpu="", check_id="NG-N", severity="minor"),
            rec(node="n1", gpu="0", check_id="NG-A", outcome="pass"),
            rec(node="n1", gpu="0", check_id="NG-E", outcome="error")]
    rows = rma.build_rows(recs)
    assert [(r["node"], r["gpu_index"], r["failed_checks"], r["severity"], r["action"]) for r in rows] == [
        ("n1", None, ["NG-N"], "minor", "fix configuration"),
        ("n1", 1, ["NG-A", "NG-B"], "critical", "RMA")]
    assert (rows[0]["pci_bus_id"], rows[0]["gpu_serial"], rows[0]["driver_version"]) == ("", "", "580.159.04")
    assert (rows[1]["pci_bus_id"], rows[1]["gpu_serial"], rows[1]["gpu_uuid"], rows[1]["board_part_number"],
            rows[1]["vbios_version"]) == ("0000:13:00.0", "SER1", "GPU-1", "692-2G520-0200-000", "96.00.99.00.01")
    assert rows[1]["observed"] == "NG-A: bad; NG-B: bad"


def test_gpus_sorted_numerically():
    rows = rma.build_rows([rec(gpu=str(i)) for i in (10, 2, 1)])
    assert [r["gpu_index"] for r in rows] == [1, 2, 10]


def test_errors_are_listed_not_rma_rows():
    recs = [rec(node="n2", gpu="3", check_id="NG-E", outcome="error", message="tool missing (nvidia-smi)")]
    assert rma.build_rows(recs) == []
    assert rma.build_errors(recs) == [{"node": "n2", "gpu_index": 3, "check_id": "NG-E", "title": "A check",
                                      "message": "tool missing (nvidia-smi)"}]


def test_csv_quotes_formula_cells_and_markup_stays_text(tmp_path):
    csv_p, _ = rma.write(tmp_path, [rec(node="=cmd|' /C calc'!A0", gpu="0", gpu_serial="<script>x</script>",
                                        observed="-1+2")])
    rows = list(csv.DictReader(csv_p.open()))
    assert (rows[0]["node"], rows[0]["gpu_serial"], rows[0]["observed"]) == (
        "'=cmd|' /C calc'!A0", "<script>x</script>", "NG-X-001: -1+2")
