"""A peer that hangs up mid-handshake (sshd's LoginGraceTime, a dropped connection): paramiko
raises a bare EOFError/SSHException; the node's error says where and when, never an empty text."""

from __future__ import annotations

from types import SimpleNamespace

import paramiko
import pytest

from nodegate.transport import paramiko_ssh as P


class _Dl:
    fired_stage = None

    def expired(self) -> bool:
        return False


@pytest.mark.parametrize("kex_done,stage", [(False, "key exchange"), (True, "authentication")])
@pytest.mark.parametrize("exc", [EOFError(), paramiko.SSHException()])
def test_a_bare_hangup_names_the_stage_and_the_time(exc, kex_done, stage):
    owner = P.SecureParamikoBackend
    fake = SimpleNamespace(target="127.0.0.9:22", host=SimpleNamespace(name="n", user="root"))
    fake._ng_transport = SimpleNamespace(remote_version="SSH-2.0-OpenSSH_9.2", initial_kex_done=kex_done)
    err = owner._connect_error(fake, exc, _Dl(), 53.36)
    assert err.kind == "ssh"
    assert err.message == (f"127.0.0.9:22: connection closed by the peer during {stage} "
                           f"({type(exc).__name__}, after 53.4s)")


def test_a_hangup_with_a_text_keeps_it():
    owner = P.SecureParamikoBackend
    fake = SimpleNamespace(target="127.0.0.9:22", host=SimpleNamespace(name="n", user="root"))
    fake._ng_transport = SimpleNamespace(remote_version="SSH-2.0-OpenSSH_9.2", initial_kex_done=True)
    err = owner._connect_error(fake, paramiko.SSHException("No existing session"), _Dl(), 1.0)
    assert err.message == "127.0.0.9:22: No existing session"
