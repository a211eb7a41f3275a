"""PCIe link capability, trained link and upstream ports (checks.md 'PCIe link').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_pcie_link_capability(verdict):
    """NG-PCIE-001 (gpu, major): PCIe link capability meets spec."""
    assert verdict.ok, verdict.message


def test_pcie_link_trained(verdict):
    """NG-PCIE-002 (gpu, major): PCIe link trained at spec."""
    assert verdict.ok, verdict.message


def test_pcie_upstream_link(verdict):
    """NG-PCIE-003 (gpu, major): Upstream PCIe ports not below the GPU link."""
    assert verdict.ok, verdict.message
