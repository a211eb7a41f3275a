"""NVLink fabric state and the NVSwitch count (issue 19; docs/checks.md 'Fabric').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_fabric_state(verdict):
    """NG-FAB-001 (gpu, critical): GPU registered with the NVLink fabric (Completed/Success)."""
    assert verdict.ok, verdict.message


def test_nvswitch_count(verdict):
    """NG-NVSW-001 (node, critical): NVSwitch count as the board has."""
    assert verdict.ok, verdict.message


def test_imex_daemon(verdict):
    """NG-FAB-002 (node, critical): IMEX daemon active on an NVLink-domain node (NVL72)."""
    assert verdict.ok, verdict.message
