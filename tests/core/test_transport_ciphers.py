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
        except (paramiko.SSHException, EOFError, OSError):
            pass   # the client hangs up once the key exchange is done (or has failed): EOF, or
            # a reset socket when the hang-up comes mid-read (ConnectionResetError, seen under load)

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


def test_without_gcm_paramikos_order_is_kept(monkeypatch):
    no_gcm = tuple(c for c in paramiko.Transport._preferred_ciphers if c not in AEAD_CIPHERS)
    monkeypatch.setattr(paramiko.Transport, "_preferred_ciphers", no_gcm)
    a, b = socket.socketpair()
    try:
        assert tuple(_transport(a).get_security_options().ciphers) == no_gcm
    finally:
        a.close()
        b.close()


class _PasswordServer(paramiko.ServerInterface):
    def get_allowed_auths(self, username):
        return "password"

    def check_auth_password(self, username, password):
        return paramiko.AUTH_SUCCESSFUL if (username, password) == ("ng", "pw") else paramiko.AUTH_FAILED


def test_nodegate_client_connects_through_the_factory(tmp_path):
    """SecureParamikoBackend's own connect (host key checked against known_hosts, login) goes
    through ``_transport`` with whatever arguments this paramiko's ``connect`` passes it, and
    gets AES-GCM from a server that has it."""
    from nodegate.transport import HostKeyPolicy, SecureParamikoBackend, Target

    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    key = _host_key()
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n")
    done = threading.Event()

    def serve():
        conn, _ = lsock.accept()
        t = paramiko.Transport(conn)
        t.add_server_key(key)
        try:
            t.start_server(server=_PasswordServer())
            done.wait(20)
        except (paramiko.SSHException, EOFError):
            pass
        finally:
            t.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    policy = HostKeyPolicy(files=[kh])
    target = Target(f"paramiko://ng:pw@127.0.0.1:{port}", hostkeys=policy, connect_timeout=10)
    be = SecureParamikoBackend(target.host, hostkeys=policy, connect_timeout=10)
    try:
        tr = be.client.get_transport()
        assert tr.is_authenticated()
        assert (tr.local_cipher, tr.remote_cipher) == ("aes128-gcm@openssh.com", "aes128-gcm@openssh.com")
    finally:
        done.set()    # the server side closes first: its thread ends before the client hangs up
        th.join(5)
        be.close()
        lsock.close()
