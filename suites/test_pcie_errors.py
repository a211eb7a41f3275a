"""PCIe replays and AER counters (issue 19; docs/checks.md 'PCIe errors').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_pcie_errors(verdict):
    """NG-PCIERR-001 (gpu, major): No PCIe replays or AER errors beyond thresholds."""
    assert verdict.ok, verdict.message
