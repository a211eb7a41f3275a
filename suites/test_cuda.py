"""CUDA compatibility and the SKU's minimum driver (issue 19; docs/checks.md 'CUDA').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_cuda_compatibility(verdict):
    """NG-CUDA-001 (node, critical): Driver meets the specified CUDA toolkit's minimum."""
    assert verdict.ok, verdict.message


def test_driver_sku_minimum(verdict):
    """NG-CUDA-002 (node, critical): Driver branch supports every GPU of the node."""
    assert verdict.ok, verdict.message
