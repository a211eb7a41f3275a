"""Clocks event reasons: no active HW slowdown (checks.md 'Clocks event reasons').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_clocks_event_reasons(verdict):
    """NG-CLK-001 (gpu, major): No active HW slowdown clocks event reason."""
    assert verdict.ok, verdict.message
