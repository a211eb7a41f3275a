"""actions.py: remediation text -> recommended action."""

import pytest

from nodegate.reports.actions import (FIX_CONFIG, REBOOT, RESEAT, RESET, RMA, action_for,
                                      highest_severity, strongest)


@pytest.mark.parametrize("remediation, expected", [
    ("Open an RMA with the vendor: row remapping failure.", RMA),
    ("Replace the GPU (SRAM threshold exceeded).", RMA),
    ("Reseat the GPU or replace the riser; RMA if it recurs.", RESEAT),
    ("Check the riser cable and slot.", RESEAT),
    ("Reboot into the installed driver.", REBOOT),
    ("Drain the node and reset the GPU (nvidia-smi -r), then re-run.", RESET),
    ("Drain and reset before acceptance.", RESET),
    ("Add a drop-in that resets ExecStart= and sets --user.", FIX_CONFIG),
    ("Install the dkms module for every kernel; the next reboot has no GPU otherwise.", FIX_CONFIG),
    ("", FIX_CONFIG),
], ids=["rma", "replace_gpu", "reseat_first", "riser", "reboot", "reset_gpu", "drain_reset",
        "execstart_reset_is_config", "reboot_as_consequence", "empty"])
def test_action_from_remediation(remediation, expected):
    assert action_for(remediation) == expected


def test_explicit_action_wins():
    assert action_for("Reboot the node.", explicit="rma") == RMA


def test_unknown_explicit_action_falls_back_to_text():
    assert action_for("Reboot the node.", explicit="pray") == REBOOT


def test_strongest_action():
    assert strongest([RESET, FIX_CONFIG, REBOOT]) == REBOOT
    assert strongest([]) == FIX_CONFIG


def test_highest_severity():
    assert highest_severity(["minor", "critical", "major"]) == "critical"
    assert highest_severity(["", "weird", "minor"]) == "minor"
    assert highest_severity([]) == ""


@pytest.mark.parametrize("remediation, expected", [
    ("echo nvidia_peermem > /etc/modules-load.d/x.conf (the fix for 'missing after reboot').", FIX_CONFIG),
    ("dkms autoinstall -k <kver> for each listed kernel so a reboot into it keeps the GPUs.", FIX_CONFIG),
    ("Install the required flavor and reboot.", REBOOT),
], ids=["after_reboot", "a_reboot_into_it", "install_and_reboot"])
def test_reboot_as_consequence_is_not_the_action(remediation, expected):
    assert action_for(remediation) == expected


REMAP = "Pending: drain and reset the GPU (or reboot). Failure occurred: RMA the GPU."


@pytest.mark.parametrize("observed, message, expected", [
    ("remapping failure occurred (RMA candidate)", "", RMA),
    ("remapped rows pending", "", RESET),
    ("Xid 79 (GPU has fallen off the bus; critical; action: drain and reboot; recurring: reseat or replace "
     "riser/GPU, check power)", "", REBOOT),
    ("Xid 64 (x; critical; action: drain; reset; if it recurs the GPU is an RMA candidate)", "", RESET),
    ("Reset", "gpu0: recovery action Reset", RESET),
    ("bad", "gpu0 bad Remediation: RMA the GPU.", RESET),
], ids=["rma_candidate", "pending_uses_remediation", "xid79_state_action", "escalation_ignored",
        "recovery_action_reset", "remediation_tail_of_message_ignored"])
def test_observed_state_names_the_action(observed, message, expected):
    assert action_for(REMAP, observed=observed, message=message) == expected


@pytest.mark.parametrize("check_id, expected", [("NG-IB-001", "fix configuration"), ("NG-PCIE-001", "fix configuration"),
                                               ("NG-PCIE-002", "reseat"), ("NG-CFG-001", "update firmware"),
                                               ("NG-IB-003", "update firmware"), ("NG-NVSW-001", "reseat"),
                                               ("NG-FAB-001", "fix configuration"),
                                               ("NG-INV-003", "fix configuration")])
def test_site_work_is_not_sent_to_the_vendor(check_id, expected):
    """An IB cable/switch port or a GPU in the wrong slot is the site's work (actions.csv); so is a
    reseat of the GPU, riser or NVSwitch tray, done before any RMA, and flashing a VBIOS (issue 32:
    the VBIOS mismatch said "reset" where the fix is the flash)."""
    from nodegate.checks import load_all
    from nodegate.reports.actions import VENDOR_ACTIONS
    c = next(c for c in load_all().values() if c.id == check_id)
    got = action_for(c.remediation, explicit=c.action)
    assert got == expected
    assert got not in VENDOR_ACTIONS


def test_earlier_label_is_read_as_today():
    """results.jsonl written before issue 32 says "reseat/replace riser"."""
    assert action_for("", explicit="reseat/replace riser") == RESEAT
    assert strongest(["reseat/replace riser", RESET]) == RESEAT
    assert strongest(["something else", FIX_CONFIG]) == FIX_CONFIG
