"""Helpers for the site-check tests: a local live site host, a bundle to record into."""

from __future__ import annotations

from pathlib import Path

from testinfra.host import Host

from nodegate.bundle import Bundle
from nodegate.site.backend import LiveSource, ReplaySource, SiteBackend
from nodegate.site.connection import SiteConnection
from nodegate.site.recording import Recorder
from nodegate.transport import HostKeyPolicy


def local_host(node: str = "n1", timeout_s: float = 10.0):
    """(Host, backend, connection, recorder) on the local machine through the site shell."""
    conn = SiteConnection("local://", hostkeys=HostKeyPolicy(), connect_timeout=10)
    conn.open()
    rec = Recorder(node)
    be = SiteBackend(node, LiveSource(conn, rec), timeout_s=timeout_s)
    h = Host(be)
    be.set_host(h)
    return h, be, conn, rec


def empty_bundle(root: Path, node: str = "n1") -> Path:
    """A written bundle of ``node`` with one probe item (what a gather leaves behind)."""
    b = Bundle.from_raw(node, {}, {"node": node, "status": "ok", "spec": {}})
    from nodegate.bundle import Evidence
    b.items["meta.hostname"] = Evidence("meta.hostname", b"n1\n", b"", 0)
    return b.write(root)


def replay_host(bundle_dir: Path, node: str = "n1"):
    b = Bundle.load(bundle_dir)
    be = SiteBackend(node, ReplaySource(b))
    h = Host(be)
    be.set_host(h)
    return h, be
