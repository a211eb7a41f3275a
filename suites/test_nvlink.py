"""NVLink links and error counters (issue 19; docs/checks.md 'NVLink').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_nvlink_links(verdict):
    """NG-NVL-001 (gpu, critical): Every NVLink up at the SKU's speed."""
    assert verdict.ok, verdict.message


def test_nvlink_errors(verdict):
    """NG-NVL-002 (gpu, major): NVLink error counters below thresholds."""
    assert verdict.ok, verdict.message
