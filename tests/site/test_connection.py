"""SiteConnection: the node's target (testinfra URL) -> how the site shell is started."""

from __future__ import annotations

import pytest

from nodegate.site.connection import SiteConnection, _openssh_error
from nodegate.site.shell import ShellError
from nodegate.transport import HostKeyPolicy


def _conn(url: str, sudo: bool = False) -> SiteConnection:
    return SiteConnection(url, hostkeys=HostKeyPolicy(), connect_timeout=7, sudo=sudo)


def test_local_and_chroot_and_sudo_commands():
    assert _conn("local://")._argv() == ["sh", "-s"]
    assert _conn("local://", sudo=True)._argv() == ["sudo", "-n", "sh", "-s"]
    assert _conn("chroot:///host")._argv() == ["chroot", "/host", "sh", "-s"]
    assert _conn("paramiko://root@10.0.0.1:2222")._shell_command() == "sh -s"
    assert _conn("paramiko://root@10.0.0.1?sudo=true")._shell_command() == "sudo -n sh -s"


def test_openssh_argv_is_the_probes_with_the_site_shell():
    argv = _conn("ssh://ops@10.0.0.1:2222?ssh_identity_file=/k")._argv()
    assert argv[0] == "ssh" and argv[-3:] == ["--", "10.0.0.1", "sh -s"]   # "--": the host is never an option
    joined = " ".join(argv)
    for opt in ("BatchMode=yes", "StrictHostKeyChecking=yes", "ConnectTimeout=", "-l ops", "-p 2222", "-i /k"):
        assert opt in joined


@pytest.mark.parametrize("stderr, kind", [
    ("@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@", "hostkey-changed"),
    ("Host key verification failed.", "hostkey-unknown"),
    ("ops@10.0.0.1: Permission denied (publickey).", "auth"),
    ("ssh: connect to host 10.0.0.1 port 22: Connection refused", "refused"),
    ("ssh: Could not resolve hostname gpu9: Name or service not known", "dns"),
], ids=["changed", "unknown", "auth", "refused", "dns"])
def test_openssh_failures_get_the_probes_kinds(stderr, kind):
    e = _openssh_error(ShellError("eof", f"the site shell ended before it was ready (stderr: {stderr})"))
    assert e.kind == kind


def test_an_unknown_connection_type_is_refused():
    with pytest.raises(ValueError, match="unsupported connection type 'docker'"):
        _conn("docker://c1")
