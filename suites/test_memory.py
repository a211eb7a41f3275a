"""ECC mode and counters, row remapping, retired pages, recovery action (checks.md 'ECC and memory health').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_ecc_mode(verdict):
    """NG-ECC-001 (gpu, critical): ECC mode current and pending as specified."""
    assert verdict.ok, verdict.message


def test_ecc_counters(verdict):
    """NG-ECC-002 (gpu, critical): ECC error counters below thresholds."""
    assert verdict.ok, verdict.message


def test_row_remapping(verdict):
    """NG-MEM-001 (gpu, critical): Row remapping: no failure, nothing pending, spare rows left."""
    assert verdict.ok, verdict.message


def test_retired_pages(verdict):
    """NG-MEM-002 (gpu, critical): Retired pages below DCGM limits, none pending."""
    assert verdict.ok, verdict.message


def test_gpu_recovery_action(verdict):
    """NG-MEM-003 (gpu, critical): GPU recovery action is None."""
    assert verdict.ok, verdict.message
