"""Exec channels per simulated node, counted from the fleet's sshd logs (LogLevel VERBOSE).

sshd logs ``Changed root directory to "<root>"`` in every session's child when it applies the
node's ``ChrootDirectory``: one line per exec channel, naming the node's root, so the count needs
no matching of client ports (a client may reuse one source port towards two node addresses at
the same time, which makes port-based attribution ambiguous at fan-out).
"""

from __future__ import annotations


def sessions_per_node(fleet) -> dict[str, int]:
    """{node: sessions since the fleet started} for every reachable node of a tools.fleet.Fleet
    (Fleet.exec_counts: one ``Changed root directory`` log line per exec channel)."""
    return fleet.exec_counts()
