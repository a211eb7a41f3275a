"""pytest plugin for the replay tests (``-p nonet``): any network connection from the run's
process raises, so a replay that tried to reach a node would show as such an error."""

import socket

_orig_connect = socket.socket.connect


def _refuse(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6):
        raise OSError(f"nonet: network connection attempted to {address!r}")
    return _orig_connect(self, address)


def pytest_configure(config):
    socket.socket.connect = _refuse
    socket.socket.connect_ex = lambda self, address: _refuse(self, address)


def pytest_unconfigure(config):
    socket.socket.connect = _orig_connect
