"""DKMS for the booted kernel and every other installed kernel (checks.md 'DKMS').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_dkms_booted_kernel(verdict):
    """NG-DKMS-001 (node, major): NVIDIA module built and installed for the booted kernel."""
    assert verdict.ok, verdict.message


def test_dkms_other_kernels(verdict):
    """NG-DKMS-002 (node, minor): NVIDIA module installed for every other installed kernel."""
    assert verdict.ok, verdict.message
