"""Firmware and configuration consistency (issue 19; docs/checks.md 'Configuration').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_firmware_versions(verdict):
    """NG-CFG-001 (gpu, major): VBIOS and InfoROM as specified and the same on every GPU."""
    assert verdict.ok, verdict.message


def test_power_limit(verdict):
    """NG-CFG-002 (gpu, major): Enforced power limit is the specified or default limit."""
    assert verdict.ok, verdict.message


def test_mig_mode(verdict):
    """NG-CFG-003 (gpu, major): MIG mode as specified."""
    assert verdict.ok, verdict.message


def test_compute_mode(verdict):
    """NG-CFG-004 (gpu, minor): Compute mode as specified."""
    assert verdict.ok, verdict.message
