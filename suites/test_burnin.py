"""Burn-in: checks under load (collected with --burn-in DURATION, or --replay of burn-in bundles).

Each test asserts the rule's verdict for one node or GPU (nodegate.burnin.rules; docs/burnin.md).
"""

from nodegate.outcomes import Outcome


def _ok(v):
    assert v.outcome is Outcome.PASS, v.message


def test_burnin_load(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_gpu_count(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_clocks(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_pcie_link(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_ecc(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_remapped_rows(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_xid(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_temperature(burnin_verdict):
    _ok(burnin_verdict)


def test_burnin_dcgm(burnin_verdict):
    _ok(burnin_verdict)
