"""InfiniBand ports, GPU rails and HCA firmware (issue 19; docs/checks.md 'InfiniBand').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_infiniband_ports(verdict):
    """NG-IB-001 (node, critical): InfiniBand ports Active/LinkUp at the expected rate."""
    assert verdict.ok, verdict.message


def test_infiniband_gpu_rail(verdict):
    """NG-IB-002 (gpu, major): The GPU's InfiniBand rail is Active at the expected rate."""
    assert verdict.ok, verdict.message


def test_infiniband_firmware(verdict):
    """NG-IB-003 (node, minor): HCA firmware as specified."""
    assert verdict.ok, verdict.message
