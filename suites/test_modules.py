"""Kernel modules: required modules, nvidia_peermem, load order, modules-load.d (checks.md 'Kernel modules').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_required_modules(verdict):
    """NG-MOD-001 (node, critical): Required NVIDIA kernel modules loaded."""
    assert verdict.ok, verdict.message


def test_peermem(verdict):
    """NG-MOD-002 (node, major): nvidia_peermem loaded and registered (GPUDirect RDMA)."""
    assert verdict.ok, verdict.message


def test_module_load_order(verdict):
    """NG-MOD-003 (node, minor): Kernel modules loaded in dependency order."""
    assert verdict.ok, verdict.message


def test_peermem_modules_load_d(verdict):
    """NG-MOD-004 (node, minor): Peer-memory module listed in modules-load.d."""
    assert verdict.ok, verdict.message
