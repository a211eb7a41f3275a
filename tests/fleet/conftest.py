"""Fixtures for the simulated fleet: one fleet of every profile per test session (module scope)."""

from __future__ import annotations

import pytest

from tools.fleet import Fleet, load_profiles, sshd_available

NEEDS = sshd_available()
needs_fleet = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

#: Profiles whose nvidia-smi hangs: probed in their own tests with short timeouts.
HANG = ("smi-hang", "smi-hang-no-timeout")


@pytest.fixture(scope="session")
def profiles():
    return load_profiles()


@pytest.fixture(scope="module")
def fleet(profiles):
    if NEEDS is not None:
        pytest.skip(f"simulated fleet unavailable: {NEEDS}")
    with Fleet(profiles.values()) as f:
        yield f
