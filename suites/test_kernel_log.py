"""Kernel log since boot: NVRM and Xid events per node and per GPU (checks.md 'Kernel log').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_kernel_log_node(verdict):
    """NG-LOG-001 (node, critical): No driver failures in the kernel log (node-wide)."""
    assert verdict.ok, verdict.message


def test_kernel_log_gpu(verdict):
    """NG-LOG-002 (gpu, critical): No driver failures in the kernel log for this GPU."""
    assert verdict.ok, verdict.message
