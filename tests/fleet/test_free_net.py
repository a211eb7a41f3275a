"""The fleet's free-network check never connects to another fleet's sshd.

A connect is logged by that sshd as ``Connection from ...`` and the tests that count a node's
connections from its log (tests/site/test_fleet_site.py) then count one too many: CI saw 3 for 2 on
the first node of a fleet while another xdist worker's fleet drew the same network."""
import os
import socket

import pytest

from tools.fleet.fleet import _listening

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="binding port 22 needs root (as the fleet does)")


def test_a_held_address_is_seen_without_a_connection():
    with socket.socket() as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.253.9.1", 22))
        srv.listen()
        srv.setblocking(False)
        assert _listening("127.253.9.1") is True
        with pytest.raises(BlockingIOError):    # nothing connected: no accept pending
            srv.accept()
    assert _listening("127.253.9.1") is False
