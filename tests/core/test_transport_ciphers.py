"""The cipher nodegate's SSH client offers first (nodegate.transport ``_transport``): AES-GCM
where the server has it, the server's choice of the rest where it does not. Negotiated for real
against paramiko's server side over a loopback socket pair (the key exchange; no login)."""

from __future__ import annotations

import socket
import threading

import paramiko
import pytest

from nodegate.transport import AEAD_CIPHERS, _transport

_HOST_KEY = None


def _host_key():
    global _HOST_KEY
    if _HOST_KEY is None:
        _HOST_KEY = paramiko.ECDSAKey.generate()
    return _HOST_KEY


def _negotiate(server_ciphers: tuple[str, ...] | None, client_disabled: dict | None = None) -> str:
    a, b = socket.socketpair()
    server = paramiko.Transport(b)
    server.add_server_key(_host_key())
    if server_ciphers is not None:
        server.get_security_options().ciphers = server_ciphers
    def serve():
        try:
            server.start_server(server=paramiko.ServerInterface())
        except (paramiko.SSHException, EOFError):
            pass   # the client hangs up once the key exchange is done (or has failed)

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    client = _transport(a, disabled_algorithms=client_disabled)
    try:
        client.start_client(timeout=20)
        return client.local_cipher
    finally:
        client.close()
        server.close()
        th.join(5)


def test_gcm_is_offered_first_and_nothing_is_dropped():
    a, b = socket.socketpair()
    try:
        offered = _transport(a).get_security_options().ciphers
        default = paramiko.Transport(b).get_security_options().ciphers
    finally:
        a.close()
        b.close()
    have = [c for c in AEAD_CIPHERS if c in default]
    assert have, "this paramiko has no AES-GCM"
    assert list(offered[:len(have)]) == have
    assert sorted(offered) == sorted(default)


def test_a_server_with_gcm_gets_gcm():
    assert _negotiate(None) == "aes128-gcm@openssh.com"


def test_a_server_without_gcm_still_connects_with_ctr():
    assert _negotiate(("aes256-ctr", "aes128-ctr")) == "aes128-ctr"


def test_disabled_algorithms_stay_disabled():
    assert _negotiate(None, {"ciphers": list(AEAD_CIPHERS)}) == "aes128-ctr"


def test_no_common_cipher_is_an_error_not_a_downgrade():
    with pytest.raises(paramiko.SSHException):
        _negotiate(("3des-cbc",), {"ciphers": ["3des-cbc"]})
