"""Persistence daemon and per-GPU persistence mode (checks.md 'Persistence daemon').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_persistenced_unit(verdict):
    """NG-PER-001 (node, major): nvidia-persistenced unit loaded, running, starts at boot."""
    assert verdict.ok, verdict.message


def test_persistenced_dropin(verdict):
    """NG-PER-002 (node, major): nvidia-persistenced drop-in sets one command with --user."""
    assert verdict.ok, verdict.message


def test_persistenced_user(verdict):
    """NG-PER-003 (node, major): nvidia-persistenced runs as the specified non-root user."""
    assert verdict.ok, verdict.message


def test_persistence_mode(verdict):
    """NG-PER-004 (gpu, major): Persistence mode Enabled (by the daemon)."""
    assert verdict.ok, verdict.message
