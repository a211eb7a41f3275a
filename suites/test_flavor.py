"""Kernel module flavor, open or proprietary, loaded and on disk (checks.md 'Kernel module flavor').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_module_flavor(verdict):
    """NG-FLV-001 (node, critical): Loaded kernel module flavor as specified and supported by the GPUs."""
    assert verdict.ok, verdict.message


def test_module_flavor_on_disk(verdict):
    """NG-FLV-002 (node, major): On-disk kernel module flavor equals the loaded one."""
    assert verdict.ok, verdict.message
