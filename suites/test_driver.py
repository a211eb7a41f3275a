"""Driver stack: kernel module, NVML, fabric manager versions (checks.md 'Driver stack consistency').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_driver_stack(verdict):
    """NG-DRV-001 (node, critical): Driver stack versions consistent and as specified."""
    assert verdict.ok, verdict.message


def test_fabricmanager(verdict):
    """NG-DRV-002 (node, critical): Fabric manager running at the driver version."""
    assert verdict.ok, verdict.message
