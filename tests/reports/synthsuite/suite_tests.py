"""Synthetic suite tests: each asserts the check's verdict (the suite plugin evaluates it)."""

from nodegate.outcomes import Outcome


def test_driver_version(verdict):
    assert verdict.outcome is Outcome.PASS, verdict.message


def test_gpu_health(verdict):
    assert verdict.outcome is Outcome.PASS, verdict.message
