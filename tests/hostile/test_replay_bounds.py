"""Issue 31 items 1-5 end to end: one replay (``pytest suites --replay DIR``, a subprocess) of
hostile bundles and bug reports next to healthy ones. A node listing thousands of GPUs (CSV, -q text,
lspci stanzas) makes no item per phantom GPU, a duplicated CSV field never PASSes, a quadratic-prone
``systemctl show`` line and 5,000-digit numbers in a bug report neither stall nor stop the run, and
every other node is judged (exit 1: findings; never 3, INTERNALERROR)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from tests.baseline import fleet as F
from tests.bundle_edit import add_item
from tests.hostile import harness as H
from tests.hostile.test_input_bounds import ECC2, csv_gpus, lspci_gpus, q_text_gpus

SAMPLE = H.ROOT / "inventories" / "samples" / "h200-vm"
LOG203 = H.ROOT / "tests" / "bugreports" / "203-quadro-k2200-workstation-510.73.08-healthy-gen1-idle-no-vermagic.log"
SEP = "_" * 44


def _node(root: Path, name: str, drop=("smi.qx",), add: dict | None = None) -> None:
    d = F.clone(SAMPLE, root / name, name, {"gpu": {"count": 1, "model": "H200"}})
    meta = json.loads((d / "meta.json").read_text())
    for key in drop:
        (d / f"{key}.out").unlink(missing_ok=True)
        meta.get("items", {}).pop(key, None)
    (d / "meta.json").write_text(json.dumps(meta))
    for key, text in (add or {}).items():
        add_item(d, key, text)


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    fleet = root / "fleet"
    fleet.mkdir()
    _node(fleet, "ref", drop=())
    _node(fleet, "csv2000", add={"smi.query_csv": csv_gpus(2000)})
    _node(fleet, "qtext150", add={"smi.q": q_text_gpus(150)})
    _node(fleet, "lspci150", add={"pci.lspci_vvv": lspci_gpus(150)})
    _node(fleet, "dupcsv", add={"smi.query_csv": ECC2})
    _node(fleet, "argv", drop=(), add={"systemd.persistenced_show": "LoadState=loaded\nExecStart={ path=/x ; argv[]="
                                       + " " * (4 * 1024 * 1024) + "x }\n"})
    shutil.copy(LOG203, fleet / "good.log")
    hostile = (f"{SEP}\n\nStart of NVIDIA bug report log file.\n\nuname: Linux bignum 6.8.0 #1 x86_64 GNU/Linux\n"
               f"{SEP}\n\nScanning kernel log files for NVIDIA kernel messages:\n\n  journalctl -b -{'9' * 5000}:\n"
               f"x nvidia-persistenced[{'9' * 5000}]: Started\n\n  journalctl -b -0:\n"
               f"x nvidia-persistenced[{'9' * 5000}]: Started\n")
    with gzip.open(fleet / "bignum.log.gz", "wb") as f:
        f.write(hostile.encode())
    return H.run_suite(root / "reports", "--replay", str(fleet), "-p", "no:randomly", timeout=600)


def test_the_run_ends_with_findings_and_every_node_reported(replay):
    assert replay.rc == 1, replay.out[-3000:] + replay.err[-3000:]
    assert "INTERNALERROR" not in replay.out + replay.err
    for node in ("ref", "csv2000", "qtext150", "lspci150", "dupcsv", "argv", "wkstn01", "bignum"):
        assert replay.node_outcomes(node), node


@pytest.mark.parametrize("node", ["csv2000", "qtext150", "lspci150"])
def test_phantom_gpus_make_no_item_of_their_own(replay, node):
    ref, got = replay.node_outcomes("ref"), replay.node_outcomes(node)
    assert len(got) <= len(ref)                           # one GPU slot (the spec's count), not 150 or 2,000
    gpu_items = {t: o for t, o in got.items() if "-gpu" in t}
    assert gpu_items and all(o == "error" for t, o in gpu_items.items() if "NG-ECC" in t or "ecc" in t)
    msgs = " ".join(replay.messages[t] for t in gpu_items)
    assert "more than any node has (64)" in msgs


def test_a_duplicated_csv_field_errors_instead_of_passing(replay):
    ecc = {t: o for t, o in replay.node_outcomes("dupcsv").items() if "ecc" in t.lower()}
    assert ecc and "pass" not in ecc.values()
    assert any("named more than once" in replay.messages[t] for t in ecc)


def test_a_hostile_systemd_line_is_parsed_and_judged(replay):
    per = {t: o for t, o in replay.node_outcomes("argv").items() if "persistence" in t}
    assert per and all(o in ("pass", "fail", "error", "skip") for o in per.values())
