"""Fixtures for the simulated fleet: the session's fleet of every profile (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tools.fleet import load_profiles, sshd_available

NEEDS = sshd_available()
needs_fleet = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")

#: Profiles whose nvidia-smi hangs: probed in their own tests with short timeouts.
HANG = ("smi-hang", "smi-hang-no-timeout")


@pytest.fixture(scope="session")
def profiles():
    return load_profiles()


@pytest.fixture(scope="module")
def fleet(profile_fleet):
    """The session's fleet of every profile (tests/conftest.py), also ``unreachable``."""
    return profile_fleet
