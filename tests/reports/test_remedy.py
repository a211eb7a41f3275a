"""The remediation of an ERROR names how to obtain the evidence (nodegate.reports.remedy), never
the check's FAIL text, and a site check's command past its deadline is not blamed on nvidia-smi."""

from __future__ import annotations

import pytest

from nodegate.reports.remedy import DEFAULT, error_remediation


@pytest.mark.parametrize("message, starts", [
    ("'sleep 20': timed out (the command deadline was reached before it finished)",
     "The site check's command did not finish before its deadline"),
    ("smi.qx: timed out after 30s", "The command did not finish in time: a hung nvidia-smi"),
    ("node not gathered: hostkey-unknown: host key of n1 is not in known_hosts", "Verify the node's SSH host key"),
    ("nvidia-smi failed (driver_library_mismatch)", "nvidia-smi cannot talk to the loaded driver"),
    ("kernel.log: permission denied", "The evidence needs root: re-run with --sudo"),
    ("something nobody foresaw", DEFAULT[:40]),
])
def test_each_cause_has_its_own_remediation(message, starts):
    assert error_remediation(message).startswith(starts)
