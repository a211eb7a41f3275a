"""Exec channels per simulated node, counted from the fleet's sshd logs (LogLevel VERBOSE).

sshd logs ``Changed root directory to "<root>"`` in every session's child when it applies the
node's ``ChrootDirectory``: one line per exec channel, naming the node's root, so the count needs
no matching of client ports (a client may reuse one source port towards two node addresses at
the same time, which makes port-based attribution ambiguous at fan-out).
"""

from __future__ import annotations

import re
from collections import Counter

_CHROOT = re.compile(r'Changed root directory to "([^"]+)"')


def sessions_per_node(fleet) -> dict[str, int]:
    """{node: sessions since the fleet started} for every reachable node of a tools.fleet.Fleet."""
    seen: Counter[str] = Counter()
    for g in fleet.groups:
        if g.log.exists():
            seen.update(_CHROOT.findall(g.log.read_text(errors="replace")))
    return {n.name: seen.get(str(n.root), 0) for n in fleet.nodes.values() if n.reachable}
