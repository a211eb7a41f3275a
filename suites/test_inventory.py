"""GPU count and model (checks.md 'Inventory').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_gpu_count(verdict):
    """NG-INV-001 (node, critical): GPU count as specified, none lost."""
    assert verdict.ok, verdict.message


def test_gpu_model(verdict):
    """NG-INV-002 (gpu, critical): GPU model as specified."""
    assert verdict.ok, verdict.message


def test_node_identity(verdict):
    """NG-INV-003 (node, critical): One machine per node of the run."""
    assert verdict.ok, verdict.message
