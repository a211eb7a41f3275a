"""Hostile-conditions tests: the suite run as users run it, against simulated nodes that hang,
refuse, lie about keys, drop the connection or emit junk. Each module builds its fleet once."""

from __future__ import annotations

import pytest

from tools.fleet import sshd_available

NEEDS = sshd_available()
needs_fleet = pytest.mark.skipif(NEEDS is not None, reason=f"simulated fleet unavailable: {NEEDS}")
