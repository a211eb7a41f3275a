"""GSP firmware files and the firmware version each GPU runs (checks.md 'GSP firmware').

Each test is one check per node (or per GPU); the rule lives in nodegate/checks/, its
declaration (id, severity, evidence, remediation) in docs/checks.md. The ``verdict`` fixture
evaluates it: ERROR fails in setup, SKIP skips, and the test asserts PASS.
"""


def test_gsp_firmware_files(verdict):
    """NG-GSP-001 (node, critical): GSP firmware files present in the firmware search path."""
    assert verdict.ok, verdict.message


def test_gsp_firmware_version(verdict):
    """NG-GSP-002 (gpu, major): GPU runs GSP firmware of the driver version."""
    assert verdict.ok, verdict.message
