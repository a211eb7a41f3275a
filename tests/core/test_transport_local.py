"""Transport errors that need no SSH server: a missing controller-side program, error shape."""

import pytest

from nodegate.run import GatherOptions, NodeJob, gather_node
from nodegate.transport import TransportError, _popen_stream


def test_missing_program_on_the_controller_is_a_transport_error_not_a_crash():
    with pytest.raises(TransportError) as e:
        _popen_stream(["/nonexistent/sudo", "-n", "sh", "-s"], b"true\n", 5)
    assert e.value.kind == "probe-failed"
    assert e.value.message.startswith("cannot run /nonexistent/sudo: ")
    assert str(e.value) == f"probe-failed: {e.value.message}"


def test_gather_error_is_stored_once_with_its_kind(monkeypatch):
    import nodegate.transport as tr

    def boom(*a, **k):
        raise TransportError("timeout", "10.0.0.1:22: connect timed out after 3s")
    monkeypatch.setattr(tr.Target, "run_probe", boom)
    b = gather_node(NodeJob("n1", "paramiko://root@10.0.0.1", "paramiko://root@10.0.0.1"), GatherOptions())
    assert b.gather_error == "timeout: 10.0.0.1:22: connect timed out after 3s"
