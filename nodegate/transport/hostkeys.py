"""known_hosts verification for the paramiko transport: a changed key (or a key of another
type than the one on record) is always refused; an unknown key is refused unless
--accept-new-host-keys, which records it (OpenSSH's StrictHostKeyChecking=accept-new)."""

from __future__ import annotations

import threading

import paramiko

from .base import HostKeyPolicy, TransportError


def fingerprint(key: paramiko.PKey) -> str:
    return key.fingerprint  # "SHA256:..." (paramiko >= 3.2)


class _RejectOrRecord(paramiko.MissingHostKeyPolicy):
    def __init__(self, policy: HostKeyPolicy, lock: threading.Lock):
        self.policy = policy
        self.lock = lock

    def missing_host_key(self, client, hostname, key):
        known = client.get_host_keys().lookup(hostname)
        if known:
            # The host has a key of ANOTHER type on record: a node (or a man in the middle) that
            # now offers a different type is a changed key, never a new one (OpenSSH refuses it too).
            old = ", ".join(f"{t} {fingerprint(k)}" for t, k in known.items())
            raise TransportError(
                "hostkey-changed",
                f"host key for {hostname} CHANGED: known_hosts has {old}, node offered {key.get_name()} "
                f"{fingerprint(key)}; no command was sent")
        if not self.policy.accept_new:
            raise TransportError(
                "hostkey-unknown",
                f"host key for {hostname} is not in known_hosts ({key.get_name()} {fingerprint(key)}); "
                "add it or run with --accept-new-host-keys")
        if self.policy.files:
            dest = self.policy.files[0]
            with self.lock:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with open(dest, "a") as fh:
                    fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)


_KH_LOCK = threading.Lock()
_KH_CACHE: dict[str, tuple[tuple, paramiko.HostKeys]] = {}
_KH_CACHE_LOCK = threading.Lock()


def known_hosts_entries(path, name: str):
    """Keys recorded for ``name`` (``host`` or ``[host]:port``) in the known_hosts file ``path``:
    a ``{key type: PKey}`` mapping, or None. The file is parsed once and shared by every connection
    of the run (reloaded when its size, mtime or inode change): parsing it per connection made a
    fleet gather O(nodes^2), ~11 ms per connection at 256 hosts (docs/performance.md). Same
    matching as ``SSHClient.load_host_keys`` (paramiko's HostKeys: hashed names, comma lists)."""
    st = path.stat()
    sig = (st.st_size, st.st_mtime_ns, st.st_ino)
    with _KH_CACHE_LOCK:
        hit = _KH_CACHE.get(str(path))
        if hit is None or hit[0] != sig:
            hit = (sig, paramiko.HostKeys(str(path)))
            _KH_CACHE[str(path)] = hit
    return hit[1].lookup(name)
