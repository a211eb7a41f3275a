"""Issue 39.5: PCI domains above 0000 wherever a bus id is matched (GB200 trays 0018/0019,
GB10 0000000F as nvidia-smi prints it, NVIDIA/dcgm-exporter#581 and NVIDIA/nccl#2202; Intel VMD
domains 10000 and up)."""

import pytest

from nodegate.checks._util import same_bus
from nodegate.facts import normalize_bus_id
from nodegate.parsers._values import bus_id
from nodegate.parsers.kernel_log import parse_kernel_log


@pytest.mark.parametrize("raw, want", [
    ("00000018:01:00.0", "0018:01:00.0"), ("00000019:01:00.0", "0019:01:00.0"), ("0000000F:01:00.0", "000f:01:00.0"),
    ("000f:01:00.0", "000f:01:00.0"), ("PCI:0018:01:00", "0018:01:00.0"), ("00000000:19:00.0", "0000:19:00.0"),
    ("10000:01:00.0", "10000:01:00.0"), ("00010000:01:00.0", "10000:01:00.0"),
])
def test_bus_ids_keep_their_domain(raw, want):
    assert bus_id(raw) == want


def test_a_vmd_domain_is_not_domain_zero():
    assert normalize_bus_id("10000:01:00.0") != normalize_bus_id("0000:01:00.0")
    assert not same_bus("10000:01:00.0", "0000:01:00.0")
    assert same_bus("00000018:01:00.0", "0018:01:00.0")


def test_a_kernel_log_xid_on_a_gb200_tray_domain_maps_to_its_gpu():
    (ev,) = parse_kernel_log("NVRM: Xid (PCI:0018:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.")
    assert ev.bus_id == "0018:01:00.0" and same_bus(ev.bus_id, "00000018:01:00.0")
