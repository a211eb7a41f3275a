"""Trap: the real H200 VM capture (../shared/captures/h200-vm-580.159.04) through NodeFacts and every check.

No lsmod/modinfo/systemctl/dkms/lspci; ib_core built in; GSP firmware under firmware_class.path; legacy
persistence; idle Gen5 x16. Each must give the right outcome, none may crash (checks.md "Traps").
"""

import sys
from pathlib import Path

import pytest

from nodegate.checks import evaluate, gpu_slots, load_all
from nodegate.outcomes import Outcome
from nodegate.spec import load_spec

from .fakes import covers

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "tests" / "captures" / "h200-vm-580.159.04"   # copy of ../shared/captures

P, F, S, E = Outcome.PASS, Outcome.FAIL, Outcome.SKIP, Outcome.ERROR
EXPECTED = {
    "NG-DRV-001": P,   # module, NVML, nvidia-smi all 580.159.04
    "NG-DRV-002": S,   # no nv-fabricmanager, fabricmanager.required=auto
    "NG-PER-001": F,   # no systemctl, but no daemon process at all: not running is certain
    "NG-PER-002": F,   # no drop-in file at the spec path (files are read without systemctl)
    "NG-PER-003": F,   # no nvidia-persistenced user, no daemon
    "NG-PER-004": F,   # legacy persistence mode (kernel log: "Persistence mode is deprecated")
    "NG-MOD-001": F,   # nvidia_modeset, nvidia_drm not loaded
    "NG-MOD-002": S,   # /sys/class/infiniband empty, modules.peermem=auto
    "NG-MOD-003": P,   # '- -' columns; nvidia below nvidia_uvm
    "NG-MOD-004": S,
    "NG-DKMS-001": E,  # no dkms, no modinfo
    "NG-DKMS-002": S,  # driver.install=any and not DKMS-managed
    "NG-FLV-001": P,   # open 580.159.04
    "NG-FLV-002": E,   # no modinfo
    "NG-GSP-001": P,   # under firmware_class.path; sizes not listed, but the GPU runs GSP 580.159.04
    "NG-GSP-002": P,
    "NG-PCIE-001": P, "NG-PCIE-002": P, "NG-PCIE-003": P,
    "NG-CLK-001": P, "NG-ECC-001": P, "NG-ECC-002": P, "NG-MEM-001": P,
    "NG-MEM-002": S,   # retired pages N/A on Hopper (row remapping)
    "NG-MEM-003": P, "NG-LOG-001": P, "NG-LOG-002": P, "NG-INV-001": P, "NG-INV-002": P, "NG-INV-003": P,
    # issue 19: the VM shows no NVLink (nvidia-smi nvlink -s printed nothing) while the H200 SKU has 18 links,
    # and no AER counters (not in the capture): ERROR until the spec says nvlink.links: 0 / pcie.errors:
    # not_verified; one GPU and no NVSwitch, no InfiniBand device, no CUDA toolkit in the spec: SKIP
    "NG-NVL-001": E, "NG-NVL-002": E, "NG-PCIERR-001": E,
    "NG-FAB-001": S, "NG-FAB-002": S, "NG-IB-001": S, "NG-IB-002": S, "NG-IB-003": S, "NG-CUDA-001": S,
    "NG-NVSW-001": P,  # 0 expected for one H200
    "NG-CFG-001": P, "NG-CFG-002": P, "NG-CFG-003": P, "NG-CFG-004": P,  # 96.00.A5.00.1A, 700/700 W, MIG off
    "NG-CUDA-002": P,  # 580.159.04 >= Hopper's 520.61.05
}


@pytest.fixture(scope="module")
def facts():
    if not CAPTURE.is_dir():
        pytest.skip("capture not available")
    sys.path.insert(0, str(ROOT / "tools"))
    import capture_to_bundle
    from nodegate.collect import NodeFacts
    return NodeFacts(capture_to_bundle.build(CAPTURE))


@covers(*EXPECTED)
def test_h200_vm_capture_each_check_outcome(facts):
    sp = load_spec(None)
    got = {}
    for cid, c in load_all().items():
        rs = [evaluate(cid, facts, sp)] if c.scope == "node" else [evaluate(cid, facts, sp, s)
                                                                    for s in gpu_slots(facts, sp)]
        assert all("internal error" not in r.message for r in rs), cid
        got[cid] = rs[0].outcome
    assert got == EXPECTED


def test_h200_legacy_persistence_names_kernel_log(facts):
    r = evaluate("NG-PER-004", facts, load_spec(None), gpu_slots(facts, load_spec(None))[0])
    assert r.observed == "Enabled by the legacy driver flag (no nvidia-persistenced process)"
    assert "kernel log confirms" in r.message


def test_h200_gsp_found_under_firmware_class_path(facts):
    r = evaluate("NG-GSP-001", facts, load_spec(None))
    assert r.outcome is Outcome.PASS
    assert r.observed == ("/usr/local/nvidia/firmware/nvidia/580.159.04/gsp_ga10x.bin (size not listed); "
                          "loaded: 1 GPU(s) run GSP firmware 580.159.04")


def test_h200_persistence_daemon_fails_as_legacy_only_without_systemctl(facts):
    sp = load_spec(None)
    unit = evaluate("NG-PER-001", facts, sp)
    assert unit.outcome is Outcome.FAIL
    assert unit.message.startswith("daemon not running (no nvidia-persistenced process in /proc)")
    assert "systemctl: command not found" in unit.observed
    dropin = evaluate("NG-PER-002", facts, sp)
    assert dropin.outcome is Outcome.FAIL
    assert dropin.message.startswith("drop-in /etc/systemd/system/nvidia-persistenced.service.d/override.conf missing")
